package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// Incidents (docs/incidents.md) on a real embedded
// JetStream. Every wait is bounded; nothing sleeps to synchronise.

// openWith starts an engine on env with opts (quiet logs unless opts has a
// logger) and closes it at cleanup.
func openWith(t testing.TB, env *streamstest.Env, opts engine.Options) *engine.Engine {
	t.Helper()
	return enginetest.Open(t, env.Conn, withSync(env, opts))
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
// the node, the cause, and the record and snapshot in the bucket.
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
	t.Parallel()
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	ops.Register("fails", func(context.Context, map[string]any) (map[string]any, error) {
		return nil, errors.New("bank down")
	})
	ops.Register("panics", func(context.Context, map[string]any) (map[string]any, error) {
		var m map[string]any
		//lint:ignore SA5000 the nil-map panic is what the test raises
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
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployed(t, eng, model.NewBuilder("route").StartEvent("s").ExclusiveGateway("big").
		ScriptTask("mark", `"big"`, "size").EndEvent("e").
		Sequence("s", "big").Flow("big", "mark", model.When("amount > 5")).DefaultFlow("big", "e").Sequence("mark", "e"))
	id := startJob(t, eng, "route", map[string]any{"amount": "ten"})
	checkRaised(t, env, eng, id, "big", incidents.CauseExpression, "amount > 5")
}

func TestIncidentOnDataFlowFailure(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// --- Scheduled retries and boundaries ---

// A scheduled retry is a durable timer: it survives an engine and server
// restart and fires once.
func TestScheduledRetrySurvivesRestart(t *testing.T) {
	t.Parallel()
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

// --- Instance status vocabulary: active, incident, completed, failed, terminated ---

func TestInstanceStatusFilters(t *testing.T) {
	t.Parallel()
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
