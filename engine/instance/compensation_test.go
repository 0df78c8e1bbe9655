package instance

import (
	"slices"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

// journalNodes lists the journal's activities, oldest first, with the scope
// each is in ("root" or "sub" for any other).
func journalNodes(s *State) []string {
	var out []string
	for _, c := range s.Journal {
		scope := "sub"
		if c.Scope == RootScope {
			scope = "root"
		}
		out = append(out, c.Node+"@"+scope)
	}
	return out
}

// undoable adds a task id whose handler (a script) sets <id>Undone.
func undoable(b *model.Builder, id string) *model.Builder {
	return b.Task(id).ScriptTask(id+"Undo", "true", id+"Undone", model.ForCompensation()).
		CompensationBoundary(id+"Comp", id, id+"Undo")
}

// compensated lists the activities whose handlers started, in order.
func compensated(s *State) []string {
	var out []string
	for _, e := range s.Outbox {
		if e.Fact != nil && e.Fact.Kind == FactCompensationStarted {
			out = append(out, e.Fact.Activity)
		}
	}
	return out
}

// The journal holds what completed, in its scope; a sub-process that is
// interrupted drops its children's entries; a throw takes what it
// compensates out of the journal; the end of the instance drops the rest.
func TestJournalFollowsScopes(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").TimerBoundary("late", "sub", model.Duration("PT10M"), true).
		CompensationEndEvent("undo", "").EndEvent("e").
		Sequence("s", "book", "sub", "e").Sequence("late", "undo")
	undoable(b, "book")
	sub := b.SubProcess("sub")
	undoable(sub.StartEvent("ss").TimerCatchEvent("hold", model.Duration("PT1H")).EndEvent("se"), "charge").
		Sequence("ss", "charge", "hold", "se")
	s, env := run(t, b, nil)
	if got, want := journalNodes(s), []string{"book@root", "charge@sub"}; !slices.Equal(got, want) {
		t.Fatalf("journal %q, want %q", got, want)
	}
	fire(t, s, env, "late")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"bookUndone": true})
	assertNoVar(t, s.Variables(), "chargeUndone")
	if len(s.Journal) != 0 || len(s.Compensations) != 0 {
		t.Fatalf("journal %q, compensations %d after the end; want none", journalNodes(s), len(s.Compensations))
	}
}

// A sub-process with a handler of its own is compensated as a whole: its
// children's entries go when it completes. Without one, they move out.
func TestJournalSubProcessWithAndWithoutHandler(t *testing.T) {
	for _, own := range []bool{true, false} {
		b := model.NewBuilder("p").StartEvent("s").TimerCatchEvent("hold", model.Duration("PT1H")).EndEvent("e").
			Sequence("s", "sub", "hold", "e")
		undoable(b.SubProcess("sub").StartEvent("ss").EndEvent("se"), "charge").Sequence("ss", "charge", "se")
		want := []string{"charge@root"}
		if own {
			b.ScriptTask("subUndo", "true", "subUndone", model.ForCompensation()).CompensationBoundary("subComp", "sub", "subUndo")
			want = []string{"sub@root"}
		}
		s, _ := run(t, b, nil)
		if got := journalNodes(s); !slices.Equal(got, want) {
			t.Fatalf("own handler %v: journal %q, want %q", own, got, want)
		}
		if !own && !slices.Equal(s.Journal[0].Via, []string{"sub"}) {
			t.Fatalf("via %q, want the sub-process", s.Journal[0].Via)
		}
	}
}

// Cancelling the instance while a throw waits for a handler cancels the
// handler; the instance ends once and nothing is left to compensate.
func TestCancelDuringCompensation(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").Task("book").
		UserTask("unbook", model.ForCompensation()).CompensationBoundary("c", "book", "unbook").
		CompensationThrowEvent("undo", "").EndEvent("e").Sequence("s", "book", "undo", "e")
	s, env := run(t, b, nil)
	if !sameNodes(s.ActiveNodes(), []string{"undo", "unbook"}) || len(s.Compensations) != 1 {
		t.Fatalf("active %q, %d compensations; want the throw waiting for unbook", s.ActiveNodes(), len(s.Compensations))
	}
	apply(t, s, env, Event{ID: "c1", Kind: Cancel})
	assertStatus(t, s, Terminated)
	if len(s.Tracks) != 0 || len(s.Scopes) != 1 || len(s.Compensations) != 0 || len(s.Journal) != 0 {
		t.Fatalf("after cancel: %d tracks, %d scopes, %d compensations, %d journal entries", len(s.Tracks), len(s.Scopes), len(s.Compensations), len(s.Journal))
	}
	if n := slices.Index(factKinds(s), FactTerminated); n < 0 || slices.Contains(factKinds(s)[n+1:], FactTerminated) {
		t.Fatalf("facts %q: want one terminated", factKinds(s))
	}
}

// A compensation event sub-process is the handler of the sub-process it
// is in: the completed sub-process's children stay with its completion,
// and a throw in the event sub-process compensates them, newest first.
func TestCompensationEventSubProcess(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").TimerCatchEvent("hold", model.Duration("PT1H")).
		CompensationEndEvent("undo", "").Sequence("s", "trip", "hold", "undo")
	trip := b.SubProcess("trip")
	undoable(undoable(trip.StartEvent("ts").EndEvent("te"), "book"), "charge").Sequence("ts", "book", "charge", "te")
	trip.EventSubProcess("tripUndo", true).CompensationStartEvent("cs").ScriptTask("note", "true", "tripUndone").
		CompensationEndEvent("inner", "").Sequence("cs", "note", "inner")
	s, env := run(t, b, nil)
	if got := journalNodes(s); !slices.Equal(got, []string{"trip@root"}) || len(s.Journal[0].Children) != 2 {
		t.Fatalf("journal %q (children %d), want trip with its two children", got, len(s.Journal[0].Children))
	}
	fire(t, s, env, "hold")
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"tripUndone": true, "chargeUndone": true, "bookUndone": true})
	if got := compensated(s); !slices.Equal(got, []string{"trip", "charge", "book"}) {
		t.Fatalf("handlers started for %q, want trip, then charge and book newest first", got)
	}
}

// A handler of the operator's compensation (no thrower) whose job ends in
// an uncaught BPMN error raises an incident on the handler; abandoning it
// goes on with the next handler, and the instance ends terminated.
func TestOperatorHandlerBpmnErrorIsAnIncident(t *testing.T) {
	b := model.NewBuilder("p").StartEvent("s").Task("book").Task("charge").
		ServiceTask("unbook", "", model.WithWorker("undo"), model.ForCompensation()).CompensationBoundary("bc", "book", "unbook").
		ServiceTask("refund", "", model.WithWorker("undo"), model.ForCompensation()).CompensationBoundary("cc", "charge", "refund").
		TimerCatchEvent("hold", model.Duration("PT1H")).EndEvent("e").Sequence("s", "book", "charge", "hold", "e")
	s, env := run(t, b, nil)
	apply(t, s, env, Event{ID: "op", Kind: Compensate})
	if !sameNodes(s.ActiveNodes(), []string{"refund"}) {
		t.Fatalf("active %q, want refund first", s.ActiveNodes())
	}
	w := waitAt(t, s, "refund")
	apply(t, s, env, Event{ID: "j1", Kind: JobOutcome, Wait: w.ID, Outcome: &jobs.Terminal{Kind: jobs.Errored, ErrorCode: "NOPE"}})
	inc := assertIncident(t, s, "refund", "NOPE")
	apply(t, s, env, Event{ID: "a1", Kind: IncidentAbandon, Incident: inc.ID})
	if !sameNodes(s.ActiveNodes(), []string{"unbook"}) || s.Status != Active {
		t.Fatalf("%s at %q, want unbook next", s.Status, s.ActiveNodes())
	}
	w = waitAt(t, s, "unbook")
	apply(t, s, env, Event{ID: "j2", Kind: JobOutcome, Wait: w.ID, Outcome: &jobs.Terminal{Kind: jobs.Done}})
	assertStatus(t, s, Terminated)
}
