package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestParallelMultiInstanceWithOneIncident fans out 50 external jobs; the
// worker fails item 13 until it is "fixed". One incident opens on that
// iteration only, the other 49 complete, and after an engine restart a
// retry of the incident completes the instance with every output in order.
func TestParallelMultiInstanceWithOneIncident(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	ctx := context.Background()
	eng := openEngine(t, env, nil)
	items := make([]any, 50)
	for i := range items {
		items[i] = i
	}
	p := build(t, model.NewBuilder("fan").StartEvent("s").
		ServiceTask("work", "", model.WithWorker("items", model.WithWorkerTrust(jobs.EngineAuthoritative),
			model.WithRetryPolicy(jobs.NoRetrySpec())),
			model.WithLoop(model.Loop{Collection: "items", ElementVariable: "item", OutputCollection: "results", OutputElement: "squared"})).
		EndEvent("e").Sequence("s", "work", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "fan", map[string]any{"items": items})
	if err != nil {
		t.Fatal(err)
	}
	w := newRawWorker(t, env, "items")
	jobIDs := map[string]bool{}
	for range 50 {
		m, job := w.fetch()
		jobIDs[job.ID] = true
		item := int(job.Input["item"].(float64))
		if item == 13 {
			w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "500", Message: "item 13 is broken"})
			continue
		}
		w.report(m, job, jobs.Report{Kind: jobs.Complete, Output: map[string]any{"squared": item * item}})
	}
	if len(jobIDs) != 50 {
		t.Fatalf("%d distinct job ids for 50 iterations; want one per iteration", len(jobIDs))
	}
	v, inc := waitIncident(t, eng, id)
	if len(v.Incidents) != 1 || inc.Node != "work" || !strings.Contains(inc.Cause, "item 13") {
		t.Fatalf("incidents %+v", v.Incidents)
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	eng = openEngine(t, env, nil)
	if err := eng.RetryIncident(ctx, inc.ID); err != nil {
		t.Fatal(err)
	}
	m, job := w.fetch()
	if job.Input["item"] != 13.0 || jobIDs[job.ID] {
		t.Fatalf("the retry should run iteration 13 again under a new job id: %+v", job)
	}
	w.report(m, job, jobs.Report{Kind: jobs.Complete, Output: map[string]any{"squared": 169}})
	v = waitDone(t, eng, id)
	results, _ := v.Variables["results"].([]any)
	if v.Status != instance.Completed || len(results) != 50 {
		t.Fatalf("%+v", v)
	}
	for i, r := range results {
		if r != int64(i*i) {
			t.Fatalf("results[%d] = %v, want %d", i, r, i*i)
		}
	}
	w.expectNone(200 * time.Millisecond)
}

// TestSequentialMultiInstance runs iterations one after another; an
// incident on iteration 2 blocks 3 until it is resolved; a completion
// condition can end the loop early.
func TestSequentialMultiInstance(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	ops.Register("visit", func(_ context.Context, in map[string]any) (map[string]any, error) {
		if in["city"] == "Atlantis" {
			return nil, fmt.Errorf("no such city")
		}
		return map[string]any{"seen": in["city"]}, nil
	})
	eng := openEngine(t, env, ops)
	ctx := context.Background()
	p := build(t, model.NewBuilder("trip").StartEvent("s").
		ServiceTask("visit", "visit", model.WithLoop(model.Loop{
			Sequential: true, Collection: "cities", ElementVariable: "city",
			OutputCollection: "visited", OutputElement: "seen", CompletionCondition: `seen == "Stop"`,
		})).
		EndEvent("e").Sequence("s", "visit", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	id, _ := eng.Start(ctx, "trip", map[string]any{"cities": []any{"Oslo", "Atlantis", "Rome"}})
	v, inc := waitIncident(t, eng, id)
	if len(v.ActiveNodes) != 1 || !strings.Contains(inc.Cause, "no such city") {
		t.Fatalf("%+v %+v", v, inc)
	}
	if err := eng.ResolveIncident(ctx, inc.ID, map[string]any{"seen": "skipped"}); err != nil {
		t.Fatal(err)
	}
	v = waitDone(t, eng, id)
	// The operator's variables complete that iteration: they feed its
	// output element and stay in its scope.
	if got := fmt.Sprint(v.Variables["visited"]); v.Status != instance.Completed || got != "[Oslo skipped Rome]" {
		t.Fatalf("visited %s: %+v", got, v)
	}
	if seen, ok := v.Variables["seen"]; ok {
		t.Fatalf("the resolved iteration's seen = %v leaked into the process scope", seen)
	}

	id, _ = eng.Start(ctx, "trip", map[string]any{"cities": []any{"Oslo", "Stop", "Rome"}})
	v = waitDone(t, eng, id)
	if got := fmt.Sprint(v.Variables["visited"]); got != "[Oslo Stop <nil>]" {
		t.Fatalf("the completion condition should stop after Stop: %s", got)
	}
}

// The Zeebe multi-instance conformance file: a sub-process per operating
// system, each with a runTests job, runs to completion.
func TestMultiInstanceConformanceFile(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := context.Background()
	if _, err := eng.DeployFile(ctx, corpus+"zeebe-process-test/automated-tests.bpmn"); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "automatedTestsProcess", nil)
	if err != nil {
		t.Fatal(err)
	}
	w := newRawWorker(t, env, "runTests")
	seen := map[any]bool{}
	for range 3 {
		m, job := w.fetch()
		seen[job.Input["operatingSystem"]] = true
		w.report(m, job, jobs.Report{Kind: jobs.Complete})
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || len(seen) != 3 || !seen["macos"] {
		t.Fatalf("%+v, jobs for %v", v, seen)
	}
}

// TestSequentialMultiInstanceAcrossRestart stops the engine (and restarts
// its server) between iterations of a sequential loop over external jobs:
// the next engine resumes at the next iteration, never repeats a finished
// one, and collects the outputs in order.
func TestSequentialMultiInstanceAcrossRestart(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	ctx := context.Background()
	eng := openEngine(t, env, nil)
	p := build(t, model.NewBuilder("tour").StartEvent("s").
		ServiceTask("visit", "", model.WithWorker("tour"), model.WithLoop(model.Loop{
			Sequential: true, Collection: "cities", ElementVariable: "city", OutputCollection: "visited", OutputElement: "seen",
		})).
		EndEvent("e").Sequence("s", "visit", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	cities := []any{"Oslo", "Bergen", "Rome"}
	id, err := eng.Start(ctx, "tour", map[string]any{"cities": cities})
	if err != nil {
		t.Fatal(err)
	}
	visit := func(w *rawWorker, want string) {
		t.Helper()
		m, job := w.fetch()
		if job.Input["city"] != want {
			t.Fatalf("job %s for city %v, want %s", job.ID, job.Input["city"], want)
		}
		if v := w.report(m, job, jobs.Report{Kind: jobs.Complete, Output: map[string]any{"seen": "saw " + want}}); !v.Accepted {
			t.Fatalf("complete %s refused: %+v", job.ID, v)
		}
	}
	// The verdict comes once the first outcome is checkpointed; whether the
	// second job was queued before the stop or is queued by the next
	// engine, it is queued once.
	visit(newRawWorker(t, env, "tour"), "Oslo")
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	env.Restart(t)
	eng = openEngine(t, env, nil)
	w := newRawWorker(t, env, "tour")
	visit(w, "Bergen")
	visit(w, "Rome")
	v := waitDone(t, eng, id)
	if got := fmt.Sprint(v.Variables["visited"]); v.Status != instance.Completed || got != "[saw Oslo saw Bergen saw Rome]" {
		t.Fatalf("visited %s: %+v", got, v)
	}
}

// tripOps are the in-process operations of the trip processes: "visit"
// fails for the cities in down, "after" records each activation of the
// node after the loop, per instance.
type tripOps struct {
	mu    sync.Mutex
	down  map[string]bool
	after map[string]map[uint64]bool
}

func newTripOps(down ...string) *tripOps {
	o := &tripOps{down: map[string]bool{}, after: map[string]map[uint64]bool{}}
	for _, c := range down {
		o.down[c] = true
	}
	return o
}

func (o *tripOps) register(ops *engine.Operations) {
	ops.Register("visit", func(_ context.Context, in map[string]any) (map[string]any, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if city, _ := in["city"].(string); o.down[city] {
			return nil, fmt.Errorf("no such city %s", city)
		}
		return map[string]any{"seen": "saw " + fmt.Sprint(in["city"])}, nil
	})
	ops.Register("after", func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		c, ok := engine.CallInfo(ctx)
		if !ok {
			return nil, fmt.Errorf("no call info")
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.after[c.InstanceID] == nil {
			o.after[c.InstanceID] = map[uint64]bool{}
		}
		o.after[c.InstanceID][c.Activation] = true
		return nil, nil
	})
}

func (o *tripOps) afterRuns(id string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.after[id])
}

func (o *tripOps) fix(city string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.down, city)
}

// An operator's resolve or retry of one iteration's incident acts on that
// iteration only, inside its loop, sequential or parallel: the loop goes
// on, leaves its node once (the node after it runs once), and collects
// every output in order — the resolved one from the operator's variables.
func TestMultiInstanceIterationIncidentActions(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	trips := newTripOps("Atlantis")
	trips.register(ops)
	eng := openEngine(t, env, ops)
	for _, sequential := range []bool{true, false} {
		process := fmt.Sprintf("trip-seq-%v", sequential)
		deployed(t, eng, model.NewBuilder(process).StartEvent("s").
			ServiceTask("visit", "visit", model.WithLoop(model.Loop{
				Sequential: sequential, Collection: "cities", ElementVariable: "city",
				OutputCollection: "visited", OutputElement: "seen",
			})).
			ServiceTask("after", "after").EndEvent("e").Sequence("s", "visit", "after", "e"))
	}
	deployed(t, eng, model.NewBuilder("trip-shout").StartEvent("s").
		ServiceTask("visit", "visit", model.WithLoop(model.Loop{
			Collection: "cities", ElementVariable: "city", OutputCollection: "visited", OutputElement: `seen + "!"`,
		})).
		ServiceTask("after", "after").EndEvent("e").Sequence("s", "visit", "after", "e"))
	cities := map[string]any{"cities": []any{"Oslo", "Atlantis", "Rome"}}
	check := func(t *testing.T, id string, want string) {
		t.Helper()
		v := waitDone(t, eng, id)
		if got := fmt.Sprint(v.Variables["visited"]); v.Status != instance.Completed || got != want {
			t.Fatalf("visited %s, want %s: %+v", got, want, v)
		}
		if _, ok := v.Variables["seen"]; ok {
			t.Errorf("an iteration's seen leaked into the process scope: %v", v.Variables)
		}
		if n := trips.afterRuns(id); n != 1 {
			t.Errorf("the node after the loop ran %d times, want once", n)
		}
	}

	t.Run("resolve", func(t *testing.T) {
		for _, sequential := range []bool{true, false} {
			id, err := eng.Start(bounded(t), fmt.Sprintf("trip-seq-%v", sequential), cities)
			if err != nil {
				t.Fatal(err)
			}
			v, inc := waitIncident(t, eng, id)
			if !slices.Equal(v.ActiveNodes, []string{"visit"}) || !strings.Contains(inc.Cause, "no such city Atlantis") {
				t.Fatalf("sequential=%v: %+v", sequential, v)
			}
			// The loop waits for its incident (sequential: iteration 3 has
			// not started; parallel: the siblings run to their end).
			if _, ok := v.Variables["visited"]; ok || trips.afterRuns(id) != 0 {
				t.Fatalf("the loop went past its incident: %+v", v)
			}
			if err := eng.ResolveIncident(bounded(t), inc.ID, map[string]any{"seen": "skipped"}); err != nil {
				t.Fatal(err)
			}
			check(t, id, "[saw Oslo skipped saw Rome]")
		}
	})

	t.Run("retry", func(t *testing.T) {
		ids := map[bool]string{}
		incs := map[bool]string{}
		for _, sequential := range []bool{true, false} {
			id, err := eng.Start(bounded(t), fmt.Sprintf("trip-seq-%v", sequential), cities)
			if err != nil {
				t.Fatal(err)
			}
			_, inc := waitIncident(t, eng, id)
			ids[sequential], incs[sequential] = id, inc.ID
		}
		trips.fix("Atlantis")
		for _, sequential := range []bool{true, false} {
			if err := eng.RetryIncident(bounded(t), incs[sequential]); err != nil {
				t.Fatal(err)
			}
			check(t, ids[sequential], "[saw Oslo saw Atlantis saw Rome]")
		}
	})

	// A resolve whose variables the output element cannot use answers,
	// and opens a new incident; the next resolve completes the loop.
	t.Run("resolve that fails again", func(t *testing.T) {
		trips.mu.Lock()
		trips.down["Atlantis"] = true
		trips.mu.Unlock()
		id, err := eng.Start(bounded(t), "trip-shout", cities)
		if err != nil {
			t.Fatal(err)
		}
		_, first := waitIncident(t, eng, id)
		if err := eng.ResolveIncident(bounded(t), first.ID, map[string]any{"seen": 5}); err != nil {
			t.Fatal(err)
		}
		v := awaitView(t, eng, id, "raised a new incident", func(v *engine.InstanceView) bool {
			return len(v.Incidents) == 1 && v.Incidents[0].ID != first.ID
		})
		second := v.Incidents[0]
		if !strings.Contains(second.Cause, "output element") {
			t.Fatalf("second incident %+v, want the output element's", second)
		}
		rec := awaitRecord(t, env, first.ID, func(r *incidents.Record) bool { return r.State.Closed() })
		if rec.State != incidents.Resolved {
			t.Fatalf("first incident %+v, want resolved", rec)
		}
		if err := eng.ResolveIncident(bounded(t), second.ID, map[string]any{"seen": "skipped"}); err != nil {
			t.Fatal(err)
		}
		check(t, id, "[saw Oslo! skipped! saw Rome!]")
	})
}
