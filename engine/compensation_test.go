package engine_test

// Compensation with the completion journal (docs/compensation.md), on a
// real embedded JetStream: handlers newest first, once per completion,
// twice for a loop, never for uncompleted work, a failing handler's
// incident, and the operator's "abandon, then compensate".

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// ledger records what the operations of a saga did, in order.
type ledger struct {
	mu    sync.Mutex
	lines []string
	fail  map[string]bool // "op" or "op:item": fails while set
	calls map[string]int
}

func newLedger() *ledger { return &ledger{fail: map[string]bool{}, calls: map[string]int{}} }

func (l *ledger) logged() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *ledger) setFail(key string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fail[key] = on
}

// op returns an operation that logs "name:<v>" where v is the variable
// key's value, failing while name (or name:v) is marked failing; result,
// when set, is written back with the value.
func (l *ledger) op(name, key, result string) engine.Operation {
	return func(_ context.Context, in map[string]any) (map[string]any, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		v := fmt.Sprint(in[key])
		l.calls[name]++
		if l.fail[name] || l.fail[name+":"+v] {
			return nil, errors.New(name + " is down")
		}
		l.lines = append(l.lines, name+":"+v)
		if result == "" {
			return nil, nil
		}
		return map[string]any{result: v}, nil
	}
}

func sagaOps(l *ledger) *engine.Operations {
	ops := &engine.Operations{}
	ops.Register("book", l.op("book", "trip", "booking"))
	ops.Register("charge", l.op("charge", "amount", "charged"))
	ops.Register("ship", l.op("ship", "trip", ""))
	ops.Register("unbook", l.op("unbook", "booking", ""))
	ops.Register("refund", l.op("refund", "charged", ""))
	ops.Register("unship", l.op("unship", "trip", ""))
	return ops
}

// saga adds book and charge with their handlers (unbook, refund).
func saga(b *model.Builder) *model.Builder {
	return b.ServiceTask("book", "book").ServiceTask("charge", "charge").
		ServiceTask("unbook", "unbook", model.ForCompensation()).CompensationBoundary("bookUndo", "book", "unbook").
		ServiceTask("refund", "refund", model.ForCompensation()).CompensationBoundary("chargeUndo", "charge", "refund")
}

// Handlers run newest completion first, one at a time, each on the
// variables its activity saw when it completed; a completion is
// compensated once; an activity that had not completed is not; the
// compensation facts are stored.
func TestCompensationNewestFirstOncePerCompletion(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	l := newLedger()
	eng := openEngine(t, env, sagaOps(l))
	deployed(t, eng, saga(model.NewBuilder("trip")).StartEvent("s").
		ScriptTask("reprice", "0", "amount").
		CompensationThrowEvent("undoAll", "").
		ServiceTask("ship", "ship").ServiceTask("unship", "unship", model.ForCompensation()).CompensationBoundary("shipUndo", "ship", "unship").
		CompensationThrowEvent("undoBook", "book").EndEvent("e").
		Sequence("s", "book", "charge", "reprice", "undoAll", "ship", "undoBook", "e"))
	id := startJob(t, eng, "trip", map[string]any{"trip": "rome", "amount": 120})
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed {
		t.Fatalf("%+v: want completed", v)
	}
	want := []string{"book:rome", "charge:120", "refund:120", "unbook:rome", "ship:rome"}
	if got := l.logged(); !slices.Equal(got, want) {
		t.Fatalf("ledger %q, want %q (refund on the amount charged, not the repriced one; ship never compensated)", got, want)
	}
	for _, kind := range []instance.FactKind{instance.FactCompensationStarted, instance.FactCompensationCompleted} {
		if got := factsOfEach(t, env.JS, "trip", kind, 1)[id]; got != 2 {
			t.Fatalf("%d %s facts, want 2", got, kind)
		}
	}
}

// An activity completed twice (a loop through it) is compensated twice,
// newest first, each on its own completion's variables.
func TestCompensationLoopCompensatedTwice(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	l := newLedger()
	eng := openEngine(t, env, sagaOps(l))
	deployed(t, eng, saga(model.NewBuilder("twice")).StartEvent("s").
		ExclusiveGateway("again").ScriptTask("next", `trip + "+"`, "trip").
		CompensationEndEvent("undo", "").
		Sequence("s", "book", "charge", "again").Flow("again", "next", model.When(`len(trip) < 4`)).Sequence("next", "book").
		DefaultFlow("again", "undo"))
	id := startJob(t, eng, "twice", map[string]any{"trip": "ro", "amount": 5})
	v := waitDone(t, eng, id)
	want := []string{"book:ro", "charge:5", "book:ro+", "charge:5", "book:ro++", "charge:5",
		"refund:5", "unbook:ro++", "refund:5", "unbook:ro+", "refund:5", "unbook:ro"}
	if got := l.logged(); v.Status != instance.Completed || !slices.Equal(got, want) {
		t.Fatalf("%s, ledger %q; want completed and %q", v.Status, got, want)
	}
}

// A failed attempt is not in the journal: the retried charge enters once.
// A failing handler raises an incident on the handler while the throw
// waits; retried, it runs and the compensation goes on.
func TestCompensationHandlerIncidentThenRetry(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	l := newLedger()
	eng := openEngine(t, env, sagaOps(l))
	deployed(t, eng, saga(model.NewBuilder("flaky")).StartEvent("s").CompensationThrowEvent("undo", "").EndEvent("e").
		Sequence("s", "book", "charge", "undo", "e"))
	l.setFail("charge", true)
	l.setFail("refund", true)
	id := startJob(t, eng, "flaky", map[string]any{"trip": "oslo", "amount": 9})
	v := awaitView(t, eng, id, "had an incident on charge", func(v *engine.InstanceView) bool { return len(v.Incidents) == 1 })
	if v.Incidents[0].Node != "charge" {
		t.Fatalf("%+v: want the incident on charge", v.Incidents)
	}
	l.setFail("charge", false)
	if err := eng.RetryIncident(bounded(t), v.Incidents[0].ID); err != nil {
		t.Fatal(err)
	}
	v = awaitView(t, eng, id, "had an incident on the handler", func(v *engine.InstanceView) bool {
		return len(v.Incidents) == 1 && v.Incidents[0].Node == "refund"
	})
	if !slices.Contains(v.ActiveNodes, "undo") || v.Status != engine.StatusIncident {
		t.Fatalf("%+v: want the throw waiting while the handler holds an incident", v)
	}
	l.setFail("refund", false)
	if err := eng.RetryIncident(bounded(t), v.Incidents[0].ID); err != nil {
		t.Fatal(err)
	}
	v = waitDone(t, eng, id)
	want := []string{"book:oslo", "charge:9", "refund:9", "unbook:oslo"}
	if got := l.logged(); v.Status != instance.Completed || !slices.Equal(got, want) {
		t.Fatalf("%s, ledger %q; want completed and %q (one refund for the retried charge)", v.Status, got, want)
	}
}

// The operator's path: ship fails for good, the incident is abandoned;
// the instance waits with no token, and Compensate undoes the charge and
// the booking, then terminates it. Bad requests are refused by name.
func TestInstanceCompensateAfterAbandon(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	l := newLedger()
	eng := openEngine(t, env, sagaOps(l))
	deployed(t, eng, saga(model.NewBuilder("shop")).StartEvent("s").ServiceTask("ship", "ship").EndEvent("e").
		Sequence("s", "book", "charge", "ship", "e"))
	if err := eng.Compensate(bounded(t), "nope", ""); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("compensate an unknown instance: %v, want not found", err)
	}
	l.setFail("ship", true)
	id := startJob(t, eng, "shop", map[string]any{"trip": "nice", "amount": 30})
	v := awaitView(t, eng, id, "had an incident on ship", func(v *engine.InstanceView) bool { return len(v.Incidents) == 1 })
	for node, want := range map[string]string{"ghost": "has no node", "ship": "no completion"} {
		if err := eng.Compensate(bounded(t), id, node); !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Fatalf("compensate --node %s: %v, want invalid naming %q", node, err, want)
		}
	}
	if err := eng.AbandonIncident(bounded(t), v.Incidents[0].ID); err != nil {
		t.Fatal(err)
	}
	v = awaitView(t, eng, id, "dropped the abandoned token", func(v *engine.InstanceView) bool { return len(v.Incidents) == 0 })
	if v.Status != instance.Active || len(v.ActiveNodes) != 0 ||
		!slices.Equal(v.Compensable, []engine.Compensable{{Node: "charge", Handler: "refund"}, {Node: "book", Handler: "unbook"}}) {
		t.Fatalf("%+v: want active with no token, charge and book compensable, waiting for the operator", v)
	}
	if err := eng.Compensate(bounded(t), id, ""); err != nil {
		t.Fatal(err)
	}
	v = waitDone(t, eng, id)
	want := []string{"book:nice", "charge:30", "refund:30", "unbook:nice"}
	if got := l.logged(); v.Status != instance.Terminated || !slices.Equal(got, want) {
		t.Fatalf("%s, ledger %q; want terminated and %q", v.Status, got, want)
	}
	if err := eng.Compensate(bounded(t), id, ""); !errors.Is(err, engine.ErrFinished) {
		t.Fatalf("compensate a terminated instance: %v, want finished", err)
	}
	if got := factsOfEach(t, env.JS, "shop", instance.FactTerminated, 1)[id]; got != 1 {
		t.Fatalf("%d terminated facts, want 1", got)
	}
}

// Multi-instance: each completed iteration is compensated on its own item;
// the iteration whose incident was abandoned is not.
func TestInstanceCompensateMultiInstanceIterations(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	l := newLedger()
	ops := sagaOps(l)
	ops.Register("reserve", l.op("reserve", "item", ""))
	ops.Register("release", l.op("release", "item", ""))
	eng := openEngine(t, env, ops)
	deployed(t, eng, model.NewBuilder("stock").StartEvent("s").
		ServiceTask("reserve", "reserve", model.WithLoop(model.Loop{Sequential: true, Collection: "items", ElementVariable: "item"})).
		ServiceTask("release", "release", model.ForCompensation()).CompensationBoundary("undo", "reserve", "release").
		ServiceTask("wait", "", model.WithWorker("compensation-nobody")).EndEvent("e").
		Sequence("s", "reserve", "wait", "e"))
	if err := eng.Compensate(bounded(t), "x", ""); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("%v", err)
	}
	l.setFail("reserve:b", true)
	id := startJob(t, eng, "stock", map[string]any{"items": []any{"a", "b", "c"}})
	v := awaitView(t, eng, id, "had an incident on b", func(v *engine.InstanceView) bool { return len(v.Incidents) == 1 })
	if err := eng.AbandonIncident(bounded(t), v.Incidents[0].ID); err != nil {
		t.Fatal(err)
	}
	awaitView(t, eng, id, "reached the job", func(v *engine.InstanceView) bool { return slices.Equal(v.ActiveNodes, []string{"wait"}) })
	if err := eng.Compensate(bounded(t), id, "reserve"); err != nil {
		t.Fatal(err)
	}
	v = waitDone(t, eng, id)
	want := []string{"reserve:a", "reserve:c", "release:c", "release:a"}
	if got := l.logged(); v.Status != instance.Terminated || !slices.Equal(got, want) {
		t.Fatalf("%s, ledger %q; want terminated and %q", v.Status, got, want)
	}
}

// The journal's snapshots count against the checkpoint limit: an instance
// whose journal outgrows it fails with a reason naming the journal.
func TestCompensationJournalSizeLimit(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	l := newLedger()
	ops := sagaOps(l)
	eng := openWith(t, env, engine.Options{Operations: ops, MaxCheckpointBytes: 64 << 10, MaxVariableBytes: 16 << 10})
	deployed(t, eng, model.NewBuilder("big").StartEvent("s").
		Task("hold").Task("undoHold", model.ForCompensation()).CompensationBoundary("u", "hold", "undoHold").
		ExclusiveGateway("again").ScriptTask("count", "n + 1", "n").ServiceTask("book", "book").EndEvent("e").
		Sequence("s", "book", "hold", "again").Flow("again", "count", model.When("n < 40")).Sequence("count", "book").
		DefaultFlow("again", "e"))
	id := startJob(t, eng, "big", map[string]any{"n": 0, "trip": "x", "blob": strings.Repeat("z", 4000)})
	v := waitDone(t, eng, id)
	if v.Status != instance.Failed || v.Failure == nil || !strings.Contains(v.Failure.Message, "compensation journal holds") {
		t.Fatalf("%+v (failure %+v): want failed naming the compensation journal", v, v.Failure)
	}
}

// A node dies (in effect: no effects published, nothing acknowledged)
// right after each checkpoint of a running compensation: when the first
// handler parked, when the second did, and when the compensation ended.
// A fresh node finishes the instance: each handler ran at least once and
// at most once more than the kills that touched it, in order, and the
// instance completed once.
func TestCompensationSurvivesCrashWhileHandlersRun(t *testing.T) {
	t.Parallel()
	for _, crash := range []int64{3, 4, 5} { // checkpoint writes: 3 refund parked, 4 unbook parked, 5 completed
		t.Run(fmt.Sprint("after write ", crash), func(t *testing.T) {
			env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
			const id = "saga-1"
			l := newLedger()
			var writes atomic.Int64
			crashed := make(chan struct{})
			opts := engine.Options{Logger: quietLog, Operations: sagaOps(l)}
			engine.CrashAfterWrite(&opts, func(got string) bool {
				if got == id && writes.Add(1) == crash {
					close(crashed)
					return true
				}
				return false
			})
			ctx := context.Background()
			nodeA, err := engine.Open(ctx, env.NewConn(t), opts)
			if err != nil {
				t.Fatal(err)
			}
			deployed(t, nodeA, saga(model.NewBuilder("saga")).StartEvent("s").CompensationThrowEvent("undo", "").EndEvent("e").
				Sequence("s", "book", "charge", "undo", "e"))
			if _, err := nodeA.Start(ctx, "saga", map[string]any{"trip": "bern", "amount": 7}, engine.InstanceID(id)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-crashed:
			case <-time.After(20 * time.Second):
				t.Fatal("crash point not reached")
			}
			v, err := nodeA.Instance(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			handler := map[int64]string{3: "refund", 4: "unbook", 5: ""}[crash]
			if handler != "" && !slices.Equal(sorted(v.ActiveNodes), []string{handler, "undo"}) || handler == "" && v.Status != instance.Completed {
				t.Fatalf("checkpoint %d is %s at %q; want the throw waiting for %q", crash, v.Status, v.ActiveNodes, handler)
			}
			if err := nodeA.Close(ctx); err != nil {
				t.Fatal(err)
			}
			nodeB := openEngine(t, env, sagaOps(l))
			if v := waitDone(t, nodeB, id); v.Status != instance.Completed {
				t.Fatalf("%+v: want completed", v)
			}
			got := l.logged()
			for _, line := range []string{"refund:7", "unbook:bern"} {
				if n := strings.Count(strings.Join(got, " ")+" ", line+" "); n < 1 || n > 2 {
					t.Fatalf("ledger %q: %s ran %d times, want 1 or 2 (one crash)", got, line, n)
				}
			}
			if slices.Index(got, "refund:7") > slices.Index(got, "unbook:bern") {
				t.Fatalf("ledger %q: unbook ran before refund", got)
			}
			if n := factsOfEach(t, env.JS, "saga", instance.FactCompleted, 1)[id]; n != 1 {
				t.Fatalf("%d completed facts, want 1", n)
			}
			if n := factsOfEach(t, env.JS, "saga", instance.FactCompensationCompleted, 1)[id]; n != 2 {
				t.Fatalf("%d compensation-completed facts, want 2", n)
			}
		})
	}
}

// A throw inside a sub-process compensates its completed children; once
// the sub-process (which has no handler of its own) completed, a throw
// outside reaches the children it left, here from an error event
// sub-process (which compensates the scope it belongs to). A handler can
// be a sub-process.
func TestCompensationSubProcessChildren(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	l := newLedger()
	eng := openEngine(t, env, sagaOps(l))
	b := model.NewBuilder("nest").StartEvent("s").ErrorEndEvent("fail", "oops").Sequence("s", "sub", "fail")
	sub := b.SubProcess("sub")
	sub.StartEvent("ss").ServiceTask("book", "book").ServiceTask("charge", "charge").
		CompensationThrowEvent("undoCharge", "charge").EndEvent("se").
		ServiceTask("refund", "refund", model.ForCompensation()).CompensationBoundary("chargeUndo", "charge", "refund").
		CompensationBoundary("bookUndo", "book", "unbookSub").
		Sequence("ss", "book", "charge", "undoCharge", "se")
	sub.SubProcess("unbookSub", model.ForCompensation()).StartEvent("us").ServiceTask("unbookOp", "unbook").EndEvent("ue").
		Sequence("us", "unbookOp", "ue")
	b.EventSubProcess("onError", true).ErrorStartEvent("caught", "oops").CompensationEndEvent("undoAll", "").Sequence("caught", "undoAll")
	deployed(t, eng, b)
	id := startJob(t, eng, "nest", map[string]any{"trip": "lima", "amount": 3})
	v := waitDone(t, eng, id)
	want := []string{"book:lima", "charge:3", "refund:3", "unbook:lima"}
	if got := l.logged(); v.Status != instance.Completed || !slices.Equal(got, want) {
		t.Fatalf("%s, ledger %q; want completed and %q", v.Status, got, want)
	}
}

// A call activity can be a handler: its child runs on the snapshot and
// what it writes comes back (here: into the process).
func TestCompensationCallActivityHandler(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	l := newLedger()
	eng := openEngine(t, env, sagaOps(l))
	deployed(t, eng, model.NewBuilder("refunder").StartEvent("s").ScriptTask("r", `"child refunded " + charged`, "refundedBy").EndEvent("e").
		Sequence("s", "r", "e"))
	deployed(t, eng, model.NewBuilder("caller").StartEvent("s").ServiceTask("charge", "charge").
		CallActivity("refund", "refunder", model.ForCompensation()).CompensationBoundary("chargeUndo", "charge", "refund").
		CompensationThrowEvent("undo", "").EndEvent("e").Sequence("s", "charge", "undo", "e"))
	id := startJob(t, eng, "caller", map[string]any{"amount": 12})
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["refundedBy"] != "child refunded 12" {
		t.Fatalf("%+v: want completed with the child's refund", v)
	}
}
