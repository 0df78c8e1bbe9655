package engine_test

// Incidents on a parallel branch, and the operator's retry, resolve and
// abandon (docs/incidents.md §3).

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// --- The parallel branch, retry, resolve and abandon ---

// flipOp is an in-process operation that fails until ok is set.
type flipOp struct {
	ok    atomic.Bool
	calls atomic.Int64
	mu    sync.Mutex
	seen  []uint64 // activations
}

func (f *flipOp) run(ctx context.Context, _ map[string]any) (map[string]any, error) {
	f.calls.Add(1)
	if c, ok := engine.CallInfo(ctx); ok {
		f.mu.Lock()
		f.seen = append(f.seen, c.Activation)
		f.mu.Unlock()
	}
	if !f.ok.Load() {
		return nil, errors.New("gateway down")
	}
	return map[string]any{"receipt": "r-1"}, nil
}

func (f *flipOp) activations() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// A parallel branch runs to the join while its sibling holds an incident;
// the instance completes only once the incident is resolved, and the
// variables the operator set are there.
func TestParallelBranchRunsWhileSiblingHoldsIncident(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	op := &flipOp{}
	ops := &engine.Operations{}
	ops.Register("charge", op.run)
	eng := openEngine(t, env, ops)
	deployed(t, eng, model.NewBuilder("order").StartEvent("s").ParallelGateway("fork").
		ServiceTask("charge", "charge").ScriptTask("ship", `"shipped"`, "shipping").ParallelGateway("join").EndEvent("e").
		Sequence("s", "fork", "charge", "join", "e").Sequence("fork", "ship", "join"))
	id := startJob(t, eng, "order", nil)
	v := awaitView(t, eng, id, "ran the shipping branch beside the incident", func(v *engine.InstanceView) bool {
		return v.Status != instance.Active && v.Variables["shipping"] != nil
	})
	if v.Status != engine.StatusIncident || len(v.Incidents) != 1 || v.Incidents[0].Node != "charge" ||
		!slices.Equal(sorted(v.ActiveNodes), []string{"charge", "join"}) || v.Variables["shipping"] != "shipped" {
		t.Fatalf("%+v: want the shipping branch at the join and the incident on charge", v)
	}
	inc := v.Incidents[0]
	if err := eng.ResolveIncident(bounded(t), inc.ID, map[string]any{"receipt": "paid by phone"}); err != nil {
		t.Fatal(err)
	}
	v = waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["receipt"] != "paid by phone" || v.Variables["shipping"] != "shipped" || len(v.Incidents) != 0 {
		t.Fatalf("%+v: want completed with the operator's receipt", v)
	}
	if n := op.calls.Load(); n != 1 {
		t.Errorf("charge ran %d times, want 1: resolve does not run the node", n)
	}
	rec := awaitRecord(t, env, inc.ID, func(r *incidents.Record) bool { return r.State.Closed() })
	if rec.State != incidents.Resolved || !slices.Equal(recordKinds(rec), []incidents.Kind{incidents.Raised, incidents.ResolvedKind}) ||
		!strings.HasPrefix(rec.History[1].Command, "cmd:") {
		t.Fatalf("record %+v, want resolved by the command", rec)
	}
}

// Retry re-enters the node on a new track: an operation fixed in between
// completes it. The history shows raised then retried, and the lineage
// both tracks.
func TestRetryIncident(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	op := &flipOp{}
	ops := &engine.Operations{}
	ops.Register("charge", op.run)
	eng := openEngine(t, env, ops)
	deployed(t, eng, model.NewBuilder("pay").StartEvent("s").ServiceTask("charge", "charge").EndEvent("e").Sequence("s", "charge", "e"))
	id := startJob(t, eng, "pay", nil)
	_, inc := waitIncident(t, eng, id)
	first := awaitRecord(t, env, inc.ID, anyRecord)
	op.ok.Store(true)
	if err := eng.RetryIncident(bounded(t), inc.ID); err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["receipt"] != "r-1" {
		t.Fatalf("%+v, want completed by the retry", v)
	}
	rec := awaitRecord(t, env, inc.ID, func(r *incidents.Record) bool { return len(r.History) >= 2 })
	kinds := recordKinds(rec)
	if !slices.Equal(kinds[:2], []incidents.Kind{incidents.Raised, incidents.Retried}) || rec.History[1].Seq != 2 ||
		!strings.HasPrefix(rec.History[1].Command, "cmd:") || rec.Attempts != 1 {
		t.Fatalf("record %+v, want raised then retried by the command", rec)
	}
	if len(rec.Lineage) != 2 || rec.Lineage[0] != first.Lineage[0] || rec.Lineage[1] == rec.Lineage[0] {
		t.Fatalf("lineage %v, want the failed track %s then the retry's", rec.Lineage, first.Lineage[0])
	}
	if acts := op.activations(); len(acts) != 2 || acts[0] == acts[1] {
		t.Errorf("charge ran with activations %v, want two distinct visits", acts)
	}
	// Actions on it are refused once it is closed; which state it closed in
	// is TestSuccessfulRetryClosesTheIncident's (engine/instance).
	if rec.State.Closed() {
		if err := eng.RetryIncident(bounded(t), inc.ID); !errors.Is(err, engine.ErrFinished) {
			t.Errorf("retry of the closed incident: %v, want ErrFinished", err)
		}
	}
}

// An external task's incident retry enqueues a new job (new id) with a
// fresh job retry budget.
func TestRetryIncidentEnqueuesNewJob(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployed(t, eng, model.NewBuilder("ext").StartEvent("s").
		ServiceTask("work", "", model.WithWorker("rj", model.WithWorkerTrust(jobs.EngineAuthoritative),
			model.WithRetryPolicy(jobs.FixedDelaySpec(2, 0)))).
		EndEvent("e").Sequence("s", "work", "e"))
	w := newRawWorker(t, env, "rj")
	id := startJob(t, eng, "ext", nil)
	// failDelivery fails one delivery and returns the engine's verdict.
	failDelivery := func() (jobs.Job, uint64, jobs.Verdict) {
		t.Helper()
		m, job := w.fetch()
		meta, _ := m.Metadata()
		if meta.NumDelivered > 1 {
			if v := w.report(m, job, jobs.Report{Kind: jobs.CheckIn}); !v.Accepted {
				t.Fatalf("check-in refused: %+v", v)
			}
		}
		return job, meta.NumDelivered, w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "503", Message: "busy"})
	}
	firstJob, _, _ := failDelivery()
	if again, n, _ := failDelivery(); again.ID != firstJob.ID || n != 2 {
		t.Fatalf("second delivery: job %s delivery %d, want %s delivery 2", again.ID, n, firstJob.ID)
	}
	_, inc := waitIncident(t, eng, id)
	if inc.CauseClass != incidents.CauseRetriesExhausted {
		t.Fatalf("%+v", inc)
	}
	if err := eng.RetryIncident(bounded(t), inc.ID); err != nil {
		t.Fatal(err)
	}
	// The new job fails once and is retried: its budget is fresh.
	newJob, n, verdict := failDelivery()
	if newJob.ID == firstJob.ID || n != 1 || !verdict.Accepted || !strings.Contains(verdict.Reason, "retrying") {
		t.Fatalf("after the incident retry: job %s (first %s) delivery %d, verdict %+v; want a new job retried within a fresh budget",
			newJob.ID, firstJob.ID, n, verdict)
	}
	m, job := w.fetch()
	if job.ID != newJob.ID {
		t.Fatalf("redelivery of job %s, want %s", job.ID, newJob.ID)
	}
	if v := w.report(m, job, jobs.Report{Kind: jobs.CheckIn}); !v.Accepted {
		t.Fatalf("check-in refused: %+v", v)
	}
	if v := w.report(m, job, jobs.Report{Kind: jobs.Complete, Output: map[string]any{"done": true}}); !v.Accepted {
		t.Fatalf("complete refused: %+v", v)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["done"] != true {
		t.Fatalf("%+v, want completed by the retried job", v)
	}
	rec := awaitRecord(t, env, inc.ID, func(r *incidents.Record) bool { return len(r.History) >= 2 })
	if k := recordKinds(rec); !slices.Equal(k[:2], []incidents.Kind{incidents.Raised, incidents.Retried}) || len(rec.Lineage) != 2 {
		t.Fatalf("record %+v", rec)
	}
}

// Abandon dead-letters the incident and cancels its token: alone, the
// instance ends terminated; with a parallel branch, it continues.
func TestAbandonIncident(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	ops.Register("charge", (&flipOp{}).run)
	eng := openEngine(t, env, ops)
	deployed(t, eng, model.NewBuilder("single").StartEvent("s").ServiceTask("charge", "charge").EndEvent("e").Sequence("s", "charge", "e"))
	deployed(t, eng, model.NewBuilder("branches").StartEvent("s").ParallelGateway("fork").
		ServiceTask("charge", "charge").EndEvent("e1").
		ServiceTask("ship", "", model.WithWorker("ship")).EndEvent("e2").
		Sequence("s", "fork", "charge", "e1").Sequence("fork", "ship", "e2"))

	t.Run("single token", func(t *testing.T) {
		id := startJob(t, eng, "single", nil)
		_, inc := waitIncident(t, eng, id)
		if err := eng.AbandonIncident(bounded(t), inc.ID); err != nil {
			t.Fatal(err)
		}
		v := waitDone(t, eng, id)
		if v.Status != instance.Terminated || len(v.Incidents) != 0 || len(v.ActiveNodes) != 0 {
			t.Fatalf("%+v, want terminated: no token left", v)
		}
		rec := awaitRecord(t, env, inc.ID, func(r *incidents.Record) bool { return r.State.Closed() })
		if rec.State != incidents.DeadLettered || !slices.Equal(recordKinds(rec), []incidents.Kind{incidents.Raised, incidents.DeadLetterKind}) {
			t.Fatalf("record %+v, want dead-lettered and kept", rec)
		}
	})

	t.Run("parallel branch", func(t *testing.T) {
		w := newRawWorker(t, env, "ship")
		id := startJob(t, eng, "branches", nil)
		m, job := w.fetch() // the ship branch waits on its job
		v := awaitView(t, eng, id, "held an incident", func(v *engine.InstanceView) bool { return len(v.Incidents) == 1 })
		inc := v.Incidents[0]
		if err := eng.AbandonIncident(bounded(t), inc.ID); err != nil {
			t.Fatal(err)
		}
		v, err := eng.Instance(bounded(t), id)
		if err != nil || v.Status != instance.Active || !slices.Equal(v.ActiveNodes, []string{"ship"}) || len(v.Incidents) != 0 {
			t.Fatalf("after abandon: %+v, %v; want active at ship only", v, err)
		}
		if r := w.report(m, job, jobs.Report{Kind: jobs.Complete, Output: map[string]any{"shipped": true}}); !r.Accepted {
			t.Fatalf("complete refused: %+v", r)
		}
		if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["shipped"] != true {
			t.Fatalf("%+v, want the remaining branch to complete the instance", v)
		}
	})
}

// Actions on closed or unknown incidents are refused and change nothing;
// of two concurrent resolves exactly one wins.
func TestIncidentActionsRefused(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	op := &flipOp{}
	ops := &engine.Operations{}
	ops.Register("charge", op.run)
	eng := openEngine(t, env, ops)
	deployed(t, eng, model.NewBuilder("pay").StartEvent("s").ServiceTask("charge", "charge").
		TimerCatchEvent("hold", model.Duration("PT1H")).EndEvent("e").Sequence("s", "charge", "hold", "e"))
	ctx := bounded(t)

	for _, id := range []string{"nope", "nope/charge/3", "", "a.b", "*"} {
		for name, err := range map[string]error{
			"retry":   eng.RetryIncident(ctx, id),
			"resolve": eng.ResolveIncident(ctx, id, nil),
			"abandon": eng.AbandonIncident(ctx, id),
		} {
			if !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("%s of unknown incident %q: %v, want ErrNotFound", name, id, err)
			}
		}
		if _, err := eng.Incident(ctx, id); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("Incident(%q): %v, want ErrNotFound", id, err)
		}
	}

	const n = 5
	for i := range n {
		id := startJob(t, eng, "pay", nil)
		_, inc := waitIncident(t, eng, id)
		if i == 0 {
			if err := eng.ResolveIncident(ctx, inc.ID, map[string]any{"bad": func() {}}); !errors.Is(err, engine.ErrInvalid) {
				t.Errorf("resolve with an unencodable variable: %v, want ErrInvalid", err)
			}
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for j := range errs {
			wg.Go(func() { errs[j] = eng.ResolveIncident(ctx, inc.ID, map[string]any{"by": int64(j)}) })
		}
		wg.Wait()
		winner := slices.IndexFunc(errs, func(err error) bool { return err == nil })
		loser := 1 - winner
		if winner < 0 || !errors.Is(errs[loser], engine.ErrFinished) {
			t.Fatalf("concurrent resolves of %s: %v, want exactly one nil and one ErrFinished", inc.ID, errs)
		}
		v := awaitView(t, eng, id, "moved on to the timer", func(v *engine.InstanceView) bool { return slices.Equal(v.ActiveNodes, []string{"hold"}) })
		if v.Status != instance.Active || v.Variables["by"] != int64(winner) || len(v.Incidents) != 0 {
			t.Fatalf("%+v: want the winner's variable only", v)
		}
		rec := awaitRecord(t, env, inc.ID, func(r *incidents.Record) bool { return r.State.Closed() })
		if !slices.Equal(recordKinds(rec), []incidents.Kind{incidents.Raised, incidents.ResolvedKind}) {
			t.Fatalf("record %+v, want one resolution", rec)
		}
		// Every action on the closed incident is refused and changes nothing.
		for name, err := range map[string]error{
			"retry":   eng.RetryIncident(ctx, inc.ID),
			"resolve": eng.ResolveIncident(ctx, inc.ID, map[string]any{"by": 9}),
			"abandon": eng.AbandonIncident(ctx, inc.ID),
		} {
			if !errors.Is(err, engine.ErrFinished) || err.Error() != "incident "+inc.ID+" is resolved" {
				t.Errorf("%s of the resolved incident: %v, want ErrFinished %q", name, err, "incident "+inc.ID+" is resolved")
			}
		}
		after, err := eng.Incident(ctx, inc.ID)
		if err != nil || !slices.Equal(recordKinds(after.Record), recordKinds(rec)) {
			t.Errorf("record after refused actions: %+v, %v", after, err)
		}
		if v, err := eng.Instance(ctx, id); err != nil || v.Variables["by"] != int64(winner) {
			t.Errorf("instance after refused actions: %+v, %v", v, err)
		}
	}
	if got := op.calls.Load(); got != n {
		t.Errorf("charge ran %d times, want %d: no refused action ran it", got, n)
	}
}
