package instance

import (
	"slices"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// booking: a transaction that books and charges (each undoable), then
// either reaches a cancel end event (cancel = true) or ends, while a
// second branch waits on an hour's timer; its cancel boundary leads to
// "cancelled", its normal end to "done". "book" before the transaction is
// undoable too, and must not be compensated by the cancel.
func booking() *model.Builder {
	b := model.NewBuilder("booking").StartEvent("s").EndEvent("done").
		CancelBoundary("onCancel", "tx").ScriptTask("mark", "'cancelled'", "outcome").EndEvent("cancelled").
		Sequence("s", "pre", "tx", "done").Sequence("onCancel", "mark", "cancelled")
	undoable(b, "pre")
	tx := b.Transaction("tx")
	tx.StartEvent("ts").ParallelGateway("fork").TimerCatchEvent("hold", model.Duration("PT1H")).EndEvent("held").
		ExclusiveGateway("ok?").CancelEndEvent("abort").EndEvent("te").
		Sequence("ts", "fork").Flow("fork", "book").Flow("fork", "hold").Sequence("book", "charge", "ok?").
		Flow("ok?", "abort", model.When("cancel")).DefaultFlow("ok?", "te").Flow("hold", "held")
	undoable(tx, "book")
	undoable(tx, "charge")
	return b
}

func TestCancelEndEventCompensatesTheTransaction(t *testing.T) {
	s, _ := run(t, booking(), map[string]any{"cancel": true})
	assertStatus(t, s, Completed)
	if got, want := compensated(s), []string{"charge", "book"}; !slices.Equal(got, want) {
		t.Fatalf("compensated %v, want the transaction's completions newest first %v", got, want)
	}
	assertVars(t, s.Variables(), map[string]any{"cancel": true, "bookUndone": true, "chargeUndone": true, "outcome": "cancelled"})
	assertNoVar(t, s.Variables(), "preUndone")
	if !slices.Contains(s.Passed, "cancelled") || slices.Contains(s.Passed, "done") || slices.Contains(s.Passed, "held") {
		t.Errorf("passed %v, want out by the cancel boundary, the timer branch cancelled", s.Passed)
	}
	if slices.ContainsFunc(s.Waits, func(w *Wait) bool { return w.Node == "hold" }) {
		t.Errorf("the transaction's timer is still armed: %s", dumpWaits(s))
	}
}

// Without the cancel the transaction completes as a sub-process: nothing
// is compensated and its completions stay in the journal for a later
// throw.
func TestTransactionCompletes(t *testing.T) {
	s, env := run(t, booking(), map[string]any{"cancel": false})
	assertStatus(t, s, Active)
	fire(t, s, env, "hold")
	assertStatus(t, s, Completed)
	if got := compensated(s); len(got) != 0 {
		t.Fatalf("compensated %v", got)
	}
	if !slices.Contains(s.Passed, "done") {
		t.Errorf("passed %v", s.Passed)
	}
}

// A handler that needs a worker holds the cancel until the job is done;
// then the token leaves by the cancel boundary.
func TestCancelWaitsForItsHandlers(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").EndEvent("done").
		CancelBoundary("onCancel", "tx").EndEvent("cancelled").
		Sequence("s", "tx", "done").Flow("onCancel", "cancelled")
	tx := b.Transaction("tx")
	tx.StartEvent("ts").Task("book").CancelEndEvent("abort").Sequence("ts", "book", "abort").
		ServiceTask("unbook", "", model.WithWorker("undo"), model.ForCompensation()).CompensationBoundary("bookComp", "book", "unbook")
	s, env := run(t, b, nil)
	assertStatus(t, s, Active)
	w := waitAt(t, s, "unbook")
	if w.Kind != JobWait {
		t.Fatalf("handler wait %+v", w)
	}
	apply(t, s, env, jobDoneEvent(w, nil))
	assertStatus(t, s, Completed)
	if !slices.Contains(s.Passed, "cancelled") {
		t.Errorf("passed %v", s.Passed)
	}
}

// Validation: a cancel end event belongs directly in a transaction with a
// cancel boundary; a cancel boundary attaches to a transaction.
func TestCancelValidation(t *testing.T) {
	for name, c := range map[string]struct {
		b    *model.Builder
		want string
	}{
		"cancel end outside": {model.NewBuilder("p").StartEvent("s").CancelEndEvent("x").Flow("s", "x"),
			"a cancel end event belongs directly in a transaction"},
		"no boundary": {func() *model.Builder {
			b := model.NewBuilder("p").StartEvent("s").EndEvent("e").Sequence("s", "tx", "e")
			b.Transaction("tx").StartEvent("ts").CancelEndEvent("x").Flow("ts", "x")
			return b
		}(), `transaction "tx" has no cancel boundary event`},
		"boundary on a task": {model.NewBuilder("p").StartEvent("s").Task("t").EndEvent("e").Sequence("s", "t", "e").
			CancelBoundary("x", "t").Flow("x", "e"), `a cancel boundary event attaches to a transaction; "t" is not one`},
	} {
		_, err := c.b.Build()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ...%s", name, err, c.want)
		}
	}
}
