package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestCrashBetweenCheckpointAndEffects kills a node (in effect) right after
// it wrote a checkpoint and before it published the step's effects or
// acknowledged the event, once after the start step and once after the
// completing step. A fresh node must publish the lost effects and finish
// every instance exactly once (docs/engine.md §5).
func TestCrashBetweenCheckpointAndEffects(t *testing.T) {
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
			nodeA, err := engine.Open(ctx, env.NewConn(t), opts)
			if err != nil {
				t.Fatal(err)
			}
			p := build(t, model.NewBuilder("crashy").StartEvent("s").
				TimerCatchEvent("pause", model.Duration("PT0.2S")).
				ScriptTask("mark", "true", "done").EndEvent("e").
				Sequence("s", "pause", "mark", "e"))
			if _, err := nodeA.Deploy(ctx, p); err != nil {
				t.Fatal(err)
			}
			if _, err := nodeA.Start(ctx, "crashy", nil, engine.InstanceID("crashy-1")); err != nil {
				t.Fatal(err)
			}
			// Wait for the crashing write, then let node A die.
			select {
			case <-crashed:
			case <-time.After(20 * time.Second):
				t.Fatal("crash point not reached")
			}
			if err := nodeA.Close(ctx); err != nil {
				t.Fatal(err)
			}

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
