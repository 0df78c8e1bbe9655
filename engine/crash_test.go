package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestCrashBetweenCheckpointAndEffects kills a node (in effect) right after
// it wrote a checkpoint and before it published the step's effects or
// acknowledged the event, once after the start step and once after the
// completing step. A fresh node must publish the lost effects and finish
// every instance exactly once (docs/engine.md §5).
func TestCrashBetweenCheckpointAndEffects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		crash int // which checkpoint write of the instance crashes: 1 = start step, 2 = the step after the timer
	}{{"after start step", 1}, {"after completing step", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
			completed := collectFacts(t, env.Conn, "crashy", instance.FactCompleted, 1)
			started := collectFacts(t, env.Conn, "crashy", instance.FactStarted, 1)

			var writes atomic.Int64
			crashed := make(chan struct{})
			opts := engine.Options{Logger: quietLog}
			engine.CrashAfterWrite(&opts, func(id string) bool {
				if id == "crashy-1" && writes.Add(1) == int64(tc.crash) {
					close(crashed)
					return true
				}
				return false
			})

			ctx := context.Background()
			runToCrash(t, env, opts, build(t, model.NewBuilder("crashy").StartEvent("s").
				TimerCatchEvent("pause", model.Duration("PT0.2S")).
				ScriptTask("mark", "true", "done").EndEvent("e").
				Sequence("s", "pause", "mark", "e")), "crashy-1", crashed)

			nodeB := openEngine(t, env, nil)
			completed.wait(t, 20*time.Second)
			started.wait(t, 5*time.Second)
			v, err := nodeB.Instance(ctx, "crashy-1")
			if err != nil || v.Status != instance.Completed || v.Variables["done"] != true {
				t.Fatalf("%+v %v", v, err)
			}
			completed.mu.Lock()
			defer completed.mu.Unlock()
			if n := completed.seen["crashy-1"]; n < 1 {
				t.Fatalf("completed fact published %d times", n)
			}
		})
	}
}

// TestCrashAroundInProcessOperation kills a node (in effect) at each point
// of an in-process operation's life: after the checkpoint that parked the
// task, after the checkpoint that applied its result, and while the
// operation runs. Another node finishes the instance; the operation ran at
// least once and the instance completed once (docs/engine.md §3.1).
func TestCrashAroundInProcessOperation(t *testing.T) {
	t.Parallel()
	process := func(t *testing.T, timeout time.Duration) *model.Process {
		t.Helper()
		return build(t, model.NewBuilder("crashop").StartEvent("s").
			ServiceTask("charge", "charge", model.Timeout(timeout),
				model.WithIncidentRetry(jobs.FixedDelaySpec(3, 100*time.Millisecond))).
			EndEvent("e").Sequence("s", "charge", "e"))
	}
	deploy := func(t *testing.T, eng *engine.Engine, timeout time.Duration) {
		t.Helper()
		if _, err := eng.Deploy(context.Background(), process(t, timeout)); err != nil {
			t.Fatal(err)
		}
	}
	const id = "crashop-1"
	for _, tc := range []struct {
		name  string
		crash int // the checkpoint write after which node A dies: 1 = parked, 2 = result applied
	}{{"after parking", 1}, {"after the result", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
			completed := collectFacts(t, env.Conn, "crashop", instance.FactCompleted, 1)
			var calls atomic.Int64
			ops := &engine.Operations{}
			ops.Register("charge", func(context.Context, map[string]any) (map[string]any, error) {
				return map[string]any{"receipt": fmt.Sprintf("r-%d", calls.Add(1))}, nil
			})
			var writes atomic.Int64
			crashed := make(chan struct{})
			opts := engine.Options{Logger: quietLog, Operations: ops}
			engine.CrashAfterWrite(&opts, func(got string) bool {
				if got == id && writes.Add(1) == int64(tc.crash) {
					close(crashed)
					return true
				}
				return false
			})
			runToCrash(t, env, opts, process(t, time.Minute), id, crashed) // no timeout while node B takes over
			if tc.crash == 1 && calls.Load() != 0 {
				t.Fatalf("the operation ran %d times before its parking checkpoint was published", calls.Load())
			}

			nodeB := openEngine(t, env, ops)
			completed.wait(t, 20*time.Second)
			v := waitDone(t, nodeB, id)
			if v.Status != instance.Completed || v.Variables["receipt"] == nil || len(v.Incidents) != 0 {
				t.Fatalf("%+v", v)
			}
			if n := calls.Load(); n != 1 {
				t.Fatalf("the operation ran %d times, want 1", n)
			}
			completed.mu.Lock()
			defer completed.mu.Unlock()
			if n := completed.seen[id]; n < 1 {
				t.Fatalf("completed fact published %d times", n)
			}
		})
	}

	// Node A dies while its operation runs (it ignores its context and never
	// returns in time): its result is never published. The operation's
	// durable timeout wakes the instance on node B, the task times out, and
	// its incident retry runs the operation again there.
	t.Run("while it runs", func(t *testing.T) {
		env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
		completed := collectFacts(t, env.Conn, "crashop", instance.FactCompleted, 1)
		running, release := make(chan struct{}), make(chan struct{})
		t.Cleanup(func() { close(release) })
		opsA := &engine.Operations{}
		opsA.Register("charge", func(context.Context, map[string]any) (map[string]any, error) {
			close(running)
			<-release // hangs past the node's death, ignoring its context
			return map[string]any{"receipt": "from A"}, nil
		})
		var callsB atomic.Int64
		opsB := &engine.Operations{}
		opsB.Register("charge", func(context.Context, map[string]any) (map[string]any, error) {
			callsB.Add(1)
			return map[string]any{"receipt": "from B"}, nil
		})
		ctx := context.Background()
		// A queued start: a direct one would be swept by node B, which
		// republishes its outbox and runs the operation at once (at least
		// once, docs/engine.md §4.1); this test is about the timeout.
		nodeA, err := engine.Open(ctx, env.NewConn(t), engine.Options{Logger: quietLog, Operations: opsA, QueuedStarts: true})
		if err != nil {
			t.Fatal(err)
		}
		deploy(t, nodeA, time.Second)
		if _, err := nodeA.Start(ctx, "crashop", nil, engine.InstanceID(id)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-running:
		case <-time.After(20 * time.Second):
			t.Fatal("the operation never started")
		}
		// A Close that cannot wait stops node A with its operation running:
		// nothing of it is published, as if the process died.
		gone, cancel := context.WithCancel(ctx)
		cancel()
		if err := nodeA.Close(gone); err == nil {
			t.Fatal("Close returned no error though it could not wait for the operation")
		}

		nodeB := openEngine(t, env, opsB)
		completed.wait(t, 20*time.Second)
		v := waitDone(t, nodeB, id)
		if v.Status != instance.Completed || v.Variables["receipt"] != "from B" {
			t.Fatalf("%+v", v)
		}
		if n := callsB.Load(); n != 1 {
			t.Fatalf("node B ran the operation %d times, want 1 (the incident retry)", n)
		}
		recs, err := nodeB.Incidents(ctx, incidents.Filter{Instance: id})
		want := []incidents.Kind{incidents.Raised, incidents.RetryScheduled, incidents.Retried, incidents.ResolvedKind}
		if err != nil || len(recs) != 1 || !slices.Equal(recordKinds(recs[0]), want) ||
			recs[0].Causes[0] != `operation "charge" timed out after 1s` {
			t.Fatalf("incidents %+v, %v: want the timeout retried once and resolved", recs, err)
		}
	})
}

// runToCrash opens a node with opts, deploys p, starts instance id of it
// and, once the crash hook in opts has closed crashed, closes the node:
// as if it had died at the hook.
func runToCrash(t *testing.T, env *streamstest.Env, opts engine.Options, p *model.Process, id string, crashed <-chan struct{}) {
	t.Helper()
	ctx := bounded(t)
	node, err := engine.Open(ctx, env.NewConn(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := node.Start(ctx, p.ID, nil, engine.InstanceID(id)); err != nil {
		select {
		case <-crashed: // the start's own step crashed: its caller hears an error, as from a dead node
		default:
			t.Fatal(err)
		}
	}
	select {
	case <-crashed:
	case <-time.After(20 * time.Second):
		t.Fatal("crash point not reached")
	}
	if err := node.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
