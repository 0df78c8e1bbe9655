package engine_test

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

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// Issue 5: incidents (ADR-036, docs/incidents.md) on a real embedded
// JetStream. Every wait is bounded; nothing sleeps to synchronise.

// openWith starts an engine on env with opts (quiet logs unless opts has a
// logger) and closes it at cleanup.
func openWith(t testing.TB, env *streamstest.Env, opts engine.Options) *engine.Engine {
	t.Helper()
	return enginetest.Open(t, env.Conn, opts)
}

func deployed(t testing.TB, eng *engine.Engine, b *model.Builder) {
	t.Helper()
	if _, err := eng.Deploy(context.Background(), build(t, b)); err != nil {
		t.Fatal(err)
	}
}

// bounded is a context for one operation of a test.
func bounded(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// awaitView waits until the instance's view satisfies cond.
func awaitView(t testing.TB, eng *engine.Engine, id string, what string, cond func(*engine.InstanceView) bool) *engine.InstanceView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := eng.WaitUntil(ctx, id, cond)
	if err != nil {
		t.Fatalf("instance %s never %s: last view %+v: %v", id, what, v, err)
	}
	return v
}

// awaitRecord watches an incident's record in the incidents bucket until
// cond holds; the record is written after the checkpoint (an outbox
// effect), so a view may show an incident before its record exists.
func awaitRecord(t testing.TB, env *streamstest.Env, id string, cond func(*incidents.Record) bool) *incidents.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv, err := env.JS.KeyValue(ctx, streams.IncidentsBucket)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.Watch(ctx, streams.IncidentKey(id))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var last *incidents.Record
	for {
		select {
		case <-ctx.Done():
			t.Fatalf("incident %s: record never matched; last %+v", id, last)
		case e, ok := <-w.Updates():
			if !ok {
				t.Fatalf("incident %s: watch closed", id)
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			var r incidents.Record
			if err := streams.Unmarshal(e.Value(), &r); err != nil {
				t.Fatal(err)
			}
			if last = &r; cond(&r) {
				return &r
			}
		}
	}
}

func recordKinds(r *incidents.Record) []incidents.Kind {
	var out []incidents.Kind
	for _, h := range r.History {
		out = append(out, h.Kind)
	}
	return out
}

func anyRecord(*incidents.Record) bool { return true }

// kindsAre is a record condition: the history is exactly kinds.
func kindsAre(kinds ...incidents.Kind) func(*incidents.Record) bool {
	return func(r *incidents.Record) bool { return slices.Equal(recordKinds(r), kinds) }
}

// checkRaised waits for instance id's incident on node and checks the
// whole account of a first raise: the instance alive with its token on
// the node, the cause, and the record and snapshot in the bucket (INC-1..3).
func checkRaised(t *testing.T, env *streamstest.Env, eng *engine.Engine, id, node, class string, fragments ...string) *engine.IncidentView {
	t.Helper()
	v, sum := waitIncident(t, eng, id)
	if v.Failure != nil || v.EndedAt != nil || !slices.Contains(v.ActiveNodes, node) || len(v.Incidents) != 1 {
		t.Fatalf("instance %s = %+v: want it alive, its token on %s holding one incident", id, v, node)
	}
	if sum.Node != node || sum.CauseClass != class || sum.Attempts != 1 || !strings.HasPrefix(sum.ID, id+"/"+node+"/") {
		t.Fatalf("incident %+v: want a first %s incident on %s", sum, class, node)
	}
	for _, f := range fragments {
		if !strings.Contains(sum.Cause, f) {
			t.Errorf("cause %q lacks %q", sum.Cause, f)
		}
	}
	rec := awaitRecord(t, env, sum.ID, anyRecord)
	if rec.Instance != id || rec.ProcessID != v.ProcessID || rec.Version != v.Version || rec.Node != node ||
		rec.CauseClass != class || !slices.Equal(rec.Causes, []string{sum.Cause}) || rec.Attempts != 1 ||
		rec.State != incidents.Open || len(rec.Lineage) != 1 || rec.FirstFailure.IsZero() || !rec.FirstFailure.Equal(rec.LastFailure) ||
		!slices.Equal(recordKinds(rec), []incidents.Kind{incidents.Raised}) || rec.History[0].Seq != 1 ||
		!slices.Equal(rec.Snapshots, []int{1}) || !rec.RetryDue.IsZero() {
		t.Fatalf("record %+v", rec)
	}
	iv, err := eng.Incident(bounded(t), sum.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(iv.Variables) != 1 || iv.Variables[0].Attempt != 1 || iv.Variables[0].Incident != sum.ID {
		t.Fatalf("snapshots %+v, want the one of attempt 1", iv.Variables)
	}
	for k, want := range v.Variables {
		if got := iv.Variables[0].Vars[k]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("snapshot variable %s = %v, want %v", k, got, want)
		}
	}
	return iv
}

// --- What raises an incident (docs/incidents.md §1) ---

func TestIncidentOnOperationFailure(t *testing.T) {
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	ops.Register("fails", func(context.Context, map[string]any) (map[string]any, error) {
		return nil, errors.New("bank down")
	})
	ops.Register("panics", func(context.Context, map[string]any) (map[string]any, error) {
		var m map[string]any
		m["boom"] = 1
		return m, nil
	})
	ops.Register("hangs", func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	eng := openEngine(t, env, ops)
	for _, tc := range []struct {
		op        string
		opts      []model.NodeOption
		fragments []string
	}{
		{"fails", nil, []string{`operation "fails" failed: bank down`}},
		{"panics", nil, []string{`operation "panics" failed`, "panic", "nil map"}},
		{"hangs", []model.NodeOption{model.Timeout(50 * time.Millisecond)}, []string{`operation "hangs" timed out after 50ms`}},
	} {
		t.Run(tc.op, func(t *testing.T) {
			deployed(t, eng, model.NewBuilder("op-"+tc.op).StartEvent("s").ServiceTask("charge", tc.op, tc.opts...).
				EndEvent("e").Sequence("s", "charge", "e"))
			id := startJob(t, eng, "op-"+tc.op, map[string]any{"order": 7, "customer": "c-1"})
			checkRaised(t, env, eng, id, "charge", incidents.CauseOperation, tc.fragments...)
		})
	}
}

func TestIncidentOnExpressionError(t *testing.T) {
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployed(t, eng, model.NewBuilder("route").StartEvent("s").ExclusiveGateway("big").
		ScriptTask("mark", `"big"`, "size").EndEvent("e").
		Sequence("s", "big").Flow("big", "mark", model.When("amount > 5")).DefaultFlow("big", "e").Sequence("mark", "e"))
	id := startJob(t, eng, "route", map[string]any{"amount": "ten"})
	checkRaised(t, env, eng, id, "big", incidents.CauseExpression, "amount > 5")
}

func TestIncidentOnDataFlowFailure(t *testing.T) {
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployed(t, eng, model.NewBuilder("mapped").StartEvent("s").
		ServiceTask("work", "", model.WithWorker("df", model.WithWorkerTrust(jobs.EngineAuthoritative),
			model.WithOutputMapping(jobs.OutputRule{Path: "body.data.id", Variable: "orderId", Required: true}))).
		EndEvent("e").Sequence("s", "work", "e"))
	w := newRawWorker(t, env, "df")
	id := startJob(t, eng, "mapped", map[string]any{"n": 1})
	m, job := w.fetch()
	if v := w.report(m, job, jobs.Report{Kind: jobs.Complete, Output: map[string]any{"data": map[string]any{}}}); !v.Accepted {
		t.Fatalf("complete refused: %+v", v)
	}
	checkRaised(t, env, eng, id, "work", incidents.CauseDataFlow, "orderId")
	w.expectNone(300 * time.Millisecond) // a data-flow failure does not run the job again
}

func TestIncidentOnRetriesExhausted(t *testing.T) {
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployed(t, eng, model.NewBuilder("charge").StartEvent("s").
		ServiceTask("work", "", model.WithWorker("ex", model.WithWorkerTrust(jobs.EngineAuthoritative),
			model.WithRetryPolicy(jobs.FixedDelaySpec(2, 0)))).
		EndEvent("e").Sequence("s", "work", "e"))
	w := newRawWorker(t, env, "ex")
	id := startJob(t, eng, "charge", nil)
	for attempt := 1; attempt <= 2; attempt++ {
		m, job := w.fetch()
		if meta, _ := m.Metadata(); meta.NumDelivered > 1 {
			if v := w.report(m, job, jobs.Report{Kind: jobs.CheckIn}); !v.Accepted {
				t.Fatalf("check-in %d refused: %+v", attempt, v)
			}
		}
		if v := w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "503", Message: "unavailable"}); !v.Accepted {
			t.Fatalf("fail %d refused: %+v", attempt, v)
		}
	}
	checkRaised(t, env, eng, id, "work", incidents.CauseRetriesExhausted, `topic "ex"`, "after 2 attempts", "503", "unavailable")
	w.expectNone(300 * time.Millisecond)
}

func TestIncidentOnUncaughtBpmnError(t *testing.T) {
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	ops.Register("charge", func(context.Context, map[string]any) (map[string]any, error) {
		return nil, engine.ThrowError("FRAUD", "flagged")
	})
	eng := openEngine(t, env, ops)
	// The error boundary catches another code: FRAUD is uncaught.
	deployed(t, eng, model.NewBuilder("pay").StartEvent("s").ServiceTask("charge", "charge").EndEvent("e").
		ErrorBoundary("declined", "charge", "DECLINED").EndEvent("e2").
		Sequence("s", "charge", "e").Sequence("declined", "e2"))
	id := startJob(t, eng, "pay", nil)
	checkRaised(t, env, eng, id, "charge", incidents.CauseBpmnError, `uncaught BPMN error "FRAUD": flagged`)
}

// An error end event is the model's own verdict: reaching the root
// uncaught it fails the instance, from the root or from a sub-process, and
// raises no incident.
func TestErrorEndEventFailsInstance(t *testing.T) {
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployed(t, eng, model.NewBuilder("reject").StartEvent("s").ErrorEndEvent("no", "REJECTED").Sequence("s", "no"))
	b := model.NewBuilder("reject-sub").StartEvent("s")
	b.SubProcess("check").StartEvent("cs").ErrorEndEvent("no", "REJECTED").Sequence("cs", "no")
	b.EndEvent("e").Sequence("s", "check", "e")
	deployed(t, eng, b)
	for _, process := range []string{"reject", "reject-sub"} {
		id := startJob(t, eng, process, nil)
		v := waitDone(t, eng, id)
		if v.Status != instance.Failed || v.Failure == nil || v.Failure.Code != "REJECTED" || v.Failure.Node != "no" ||
			!strings.Contains(v.Failure.Message, `uncaught BPMN error "REJECTED"`) || len(v.Incidents) != 0 {
			t.Errorf("%s: %+v (failure %+v), want failed with REJECTED and no incident", process, v, v.Failure)
		}
		recs, err := eng.Incidents(bounded(t), incidents.Filter{Instance: id})
		if err != nil || len(recs) != 0 {
			t.Errorf("%s: incident records %+v, %v; want none", process, recs, err)
		}
	}
}

// An engine invariant violation fails the instance instead of raising an
// incident: retrying on a state the engine cannot trust would make things
// worse. The honest way to reach one from outside is a corrupt checkpoint:
// here a wait names a node its process does not have.
func TestInvariantViolationFailsInstance(t *testing.T) {
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	ctx := bounded(t)
	eng := openWith(t, env, engine.Options{})
	deployed(t, eng, model.NewBuilder("nap").StartEvent("s").TimerCatchEvent("nap", model.Duration("PT2S")).
		EndEvent("e").Sequence("s", "nap", "e"))
	id := startJob(t, eng, "nap", nil)
	awaitView(t, eng, id, "parked on the timer", func(v *engine.InstanceView) bool { return slices.Equal(v.ActiveNodes, []string{"nap"}) })
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}

	kv, err := env.JS.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var s instance.State
	if err := streams.Unmarshal(entry.Value(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Status != instance.Active || len(s.Waits) != 1 {
		t.Fatalf("checkpoint %+v: want the instance still parked on its timer", s)
	}
	s.Waits[0].Node = "ghost"
	data, err := streams.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, id, data, entry.Revision()); err != nil {
		t.Fatal(err)
	}

	eng = openWith(t, env, engine.Options{})
	v := waitDone(t, eng, id)
	if v.Status != instance.Failed || v.Failure == nil || !strings.Contains(v.Failure.Message, "invariant") ||
		!strings.Contains(v.Failure.Message, "ghost") || len(v.Incidents) != 0 {
		t.Fatalf("%+v (failure %+v), want failed by the invariant, no incident", v, v.Failure)
	}
	if recs, err := eng.Incidents(ctx, incidents.Filter{Instance: id}); err != nil || len(recs) != 0 {
		t.Fatalf("incident records %+v, %v; want none", recs, err)
	}
}

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
// fresh job retry budget (INC-4).
func TestRetryIncidentEnqueuesNewJob(t *testing.T) {
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

// --- Scheduled retries and boundaries ---

// A scheduled retry is a durable timer: it survives an engine and server
// restart and fires once (INC-4, INC-7).
func TestScheduledRetrySurvivesRestart(t *testing.T) {
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	op := &flipOp{}
	ops := &engine.Operations{}
	ops.Register("charge", op.run)
	eng := openWith(t, env, engine.Options{Operations: ops})
	const backoff = 3 * time.Second
	deployed(t, eng, model.NewBuilder("pay").StartEvent("s").
		ServiceTask("charge", "charge", model.WithIncidentRetry(jobs.FixedDelaySpec(2, backoff))).
		EndEvent("e").Sequence("s", "charge", "e"))
	id := startJob(t, eng, "pay", nil)
	_, inc := waitIncident(t, eng, id)
	rec := awaitRecord(t, env, inc.ID, kindsAre(incidents.Raised, incidents.RetryScheduled))
	if due := rec.RetryDue; due.IsZero() || !due.Equal(rec.FirstFailure.Add(backoff)) {
		t.Fatalf("retry due %v, want first failure + %v (%v)", due, backoff, rec.FirstFailure)
	}
	if err := eng.Close(bounded(t)); err != nil {
		t.Fatal(err)
	}
	env.Restart(t)
	reopened := time.Now()
	if reopened.After(rec.RetryDue) {
		t.Fatalf("the restart took until %v, past the retry due at %v: the test proves nothing", reopened, rec.RetryDue)
	}
	eng = openWith(t, env, engine.Options{Operations: ops})

	// The retry fires once, fails again (the operation still fails) and,
	// the policy spent (2 attempts), schedules nothing more.
	rec = awaitRecord(t, env, inc.ID, func(r *incidents.Record) bool { return r.Attempts == 2 })
	want := []incidents.Kind{incidents.Raised, incidents.RetryScheduled, incidents.Retried, incidents.Raised}
	if !slices.Equal(recordKinds(rec), want) || rec.History[2].Command != "" || rec.History[2].Time.Before(rec.FirstFailure.Add(backoff)) ||
		!rec.RetryDue.IsZero() || len(rec.Lineage) != 2 {
		t.Fatalf("record %+v: want %v, the retry by the timer at its due time", rec, want)
	}
	v, err := eng.Instance(bounded(t), id)
	if err != nil || v.Status != engine.StatusIncident || len(v.Incidents) != 1 || v.Incidents[0].Attempts != 2 {
		t.Fatalf("%+v, %v: want the incident open after 2 attempts", v, err)
	}
	if n := op.calls.Load(); n != 2 {
		t.Fatalf("charge ran %d times, want 2: the first run and one retry", n)
	}
	// Retry now, the operation fixed: the instance completes.
	op.ok.Store(true)
	if err := eng.RetryIncident(bounded(t), inc.ID); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed {
		t.Fatalf("%+v", v)
	}
	if n := op.calls.Load(); n != 3 {
		t.Fatalf("charge ran %d times, want 3", n)
	}
}

// boundaryProcess deploys start → external task "work" (topic, no job
// retries) → end, with a timer boundary "timer" (dur, interrupting or not)
// leading to a script that sets path=name.
func boundaryProcess(t *testing.T, eng *engine.Engine, id, topic, dur string, interrupting bool) {
	t.Helper()
	deployed(t, eng, model.NewBuilder(id).StartEvent("s").
		ServiceTask("work", "", model.WithWorker(topic, model.WithRetryPolicy(jobs.NoRetrySpec()))).EndEvent("e").
		TimerBoundary("timer", "work", model.Duration(dur), interrupting).ScriptTask("mark", `"timer"`, "path").EndEvent("e2").
		Sequence("s", "work", "e").Sequence("timer", "mark", "e2"))
}

// failJob fetches one job and fails it: with no retries, the incident.
func failJob(t *testing.T, w *rawWorker) jobs.Job {
	t.Helper()
	m, job := w.fetch()
	if v := w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "500", Message: "crashed"}); !v.Accepted {
		t.Fatalf("fail refused: %+v", v)
	}
	return job
}

// An interrupting timer boundary armed before the failure fires over the
// incident: the node is cancelled and the incident closed as overtaken.
func TestInterruptingBoundaryOvertakesIncident(t *testing.T) {
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	boundaryProcess(t, eng, "sla", "sla", "PT3S", true)
	w := newRawWorker(t, env, "sla")
	id := startJob(t, eng, "sla", nil)
	failJob(t, w)
	_, inc := waitIncident(t, eng, id) // raised before the timer fired
	awaitRecord(t, env, inc.ID, kindsAre(incidents.Raised))
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["path"] != "timer" || len(v.Incidents) != 0 {
		t.Fatalf("%+v, want completed through the boundary", v)
	}
	rec := awaitRecord(t, env, inc.ID, func(r *incidents.Record) bool { return r.State.Closed() })
	if rec.State != incidents.Overtaken || !slices.Equal(recordKinds(rec), []incidents.Kind{incidents.Raised, incidents.OvertakenKind}) {
		t.Fatalf("record %+v, want overtaken", rec)
	}
	facts := replayIncidentFacts(t, env, "sla", 2)
	if facts[1].Kind != incidents.OvertakenKind || facts[1].Incident != inc.ID || facts[1].Seq != 2 {
		t.Fatalf("facts %+v, want the overtaken fact as seq 2", facts)
	}
}

// A non-interrupting timer boundary fires while the incident is open: its
// path runs and the incident stays; resolving it then completes.
func TestNonInterruptingBoundaryFiresDuringIncident(t *testing.T) {
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	boundaryProcess(t, eng, "remind", "remind", "PT2S", false)
	w := newRawWorker(t, env, "remind")
	id := startJob(t, eng, "remind", nil)
	failJob(t, w)
	_, inc := waitIncident(t, eng, id)
	v := awaitView(t, eng, id, "ran the reminder", func(v *engine.InstanceView) bool { return v.Variables["path"] != nil })
	if v.Status != engine.StatusIncident || v.Variables["path"] != "timer" || !slices.Equal(v.ActiveNodes, []string{"work"}) ||
		len(v.Incidents) != 1 || v.Incidents[0].ID != inc.ID {
		t.Fatalf("%+v, want the reminder run and the incident still open on work", v)
	}
	if r, err := eng.Incident(bounded(t), inc.ID); err != nil || r.State != incidents.Open || !slices.Equal(recordKinds(r.Record), []incidents.Kind{incidents.Raised}) {
		t.Fatalf("record %+v, %v; want open, only raised", r, err)
	}
	if err := eng.ResolveIncident(bounded(t), inc.ID, map[string]any{"resolved": true}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["resolved"] != true {
		t.Fatalf("%+v", v)
	}
}

// --- Instance status vocabulary (INC-10) ---

func TestInstanceStatusFilters(t *testing.T) {
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	ops.Register("charge", (&flipOp{}).run)
	eng := openEngine(t, env, ops)
	deployed(t, eng, model.NewBuilder("pay").StartEvent("s").ServiceTask("charge", "charge").EndEvent("e").Sequence("s", "charge", "e"))
	deployed(t, eng, model.NewBuilder("wait").StartEvent("s").TimerCatchEvent("w", model.Duration("PT1H")).EndEvent("e").Sequence("s", "w", "e"))
	deployed(t, eng, model.NewBuilder("quick").StartEvent("s").EndEvent("e").Sequence("s", "e"))
	broken := startJob(t, eng, "pay", nil)
	waitIncident(t, eng, broken)
	parked := startJob(t, eng, "wait", nil)
	awaitView(t, eng, parked, "parked", func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 })
	done := startJob(t, eng, "quick", nil)
	waitDone(t, eng, done)

	ids := func(status instance.Status) []string {
		t.Helper()
		list, err := eng.Instances(bounded(t), engine.Filter{Status: status})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range list {
			out = append(out, v.ID)
		}
		return sorted(out)
	}
	for status, want := range map[instance.Status][]string{
		instance.Active:       sorted([]string{broken, parked}),
		engine.StatusIncident: {broken},
		instance.Completed:    {done},
		"":                    sorted([]string{broken, parked, done}),
	} {
		if got := ids(status); !slices.Equal(got, want) {
			t.Errorf("status %q: %v, want %v", status, got, want)
		}
	}
	recs, err := eng.Incidents(bounded(t), incidents.Filter{State: "open"})
	if err != nil || len(recs) != 1 || recs[0].Instance != broken {
		t.Errorf("open incidents %+v, %v; want the one of %s", recs, err, broken)
	}
}

// An activity whose input mapping fails holds an incident before it could
// arm its boundaries on entry: they are armed at the raise, counted from
// the entry, so an SLA timer still fires over the stuck token (INC-5).
func TestBoundaryArmedWhenInputMappingFails(t *testing.T) {
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployed(t, eng, model.NewBuilder("gated").StartEvent("s").
		ServiceTask("work", "", model.WithWorker("gated"), model.Input("twice", "amount * 2")).EndEvent("e").
		TimerBoundary("timer", "work", model.Duration("PT2S"), true).ScriptTask("mark", `"timer"`, "path").EndEvent("e2").
		Sequence("s", "work", "e").Sequence("timer", "mark", "e2"))
	id := startJob(t, eng, "gated", map[string]any{"amount": "ten"})
	_, inc := waitIncident(t, eng, id)
	if inc.CauseClass != incidents.CauseExpression || inc.Node != "work" {
		t.Fatalf("incident %+v, want an expression incident on work", inc)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["path"] != "timer" {
		t.Fatalf("%+v, want completed through the timer boundary", v)
	}
	rec := awaitRecord(t, env, inc.ID, func(r *incidents.Record) bool { return r.State.Closed() })
	if rec.State != incidents.Overtaken {
		t.Fatalf("record %+v, want overtaken", rec)
	}
}
