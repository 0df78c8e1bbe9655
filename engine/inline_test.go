package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// writeCounter counts each instance's checkpoint writes.
type writeCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func countWrites(opts *engine.Options) *writeCounter {
	wc := &writeCounter{n: map[string]int{}}
	engine.CrashAfterWrite(opts, func(id string) bool {
		wc.mu.Lock()
		wc.n[id]++
		wc.mu.Unlock()
		return false
	})
	return wc
}

func (wc *writeCounter) of(id string) int {
	wc.mu.Lock()
	defer wc.mu.Unlock()
	return wc.n[id]
}

// settled returns id's writes once there are at least want: the hook runs
// after a write is acknowledged, so a watcher may see the write first.
func (wc *writeCounter) settled(t *testing.T, id string, want int) int {
	t.Helper()
	testwait.Until(t, 10*time.Second, fmt.Sprintf("%d checkpoint writes of %s to be counted", want, id), func() error {
		if n := wc.of(id); n < want {
			return fmt.Errorf("%d counted", n)
		}
		return nil
	})
	return wc.of(id)
}

// chain builds start → tasks (operation op each, in order) → end.
func chain(t *testing.T, id string, ops ...string) *model.Process {
	b := model.NewBuilder(id).StartEvent("s")
	seq := []string{"s"}
	for i, op := range ops {
		task := fmt.Sprintf("t%d", i)
		b.ServiceTask(task, op)
		seq = append(seq, task)
	}
	return build(t, b.EndEvent("e").Sequence(append(seq, "e")...))
}

// TestInlineOperationsRunInOneStep: ten inline tasks cost the instance one
// step and one checkpoint write, run in order once each, and leave no
// timer behind; a pool operation between inline ones parks as before.
func TestInlineOperationsRunInOneStep(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	var calls atomic.Int64
	ops := &engine.Operations{}
	ops.RegisterInline("step", func(_ context.Context, in map[string]any) (map[string]any, error) {
		calls.Add(1)
		n, _ := in["n"].(int64)
		return map[string]any{"n": n + 1}, nil
	})
	ops.Register("pooled", func(_ context.Context, in map[string]any) (map[string]any, error) {
		return map[string]any{"pooled": in["n"]}, nil
	})
	opts := engine.Options{Logger: quietLog, Operations: ops}
	writes := countWrites(&opts)
	eng := openWith(t, env, opts)
	ctx := bounded(t)
	ten := make([]string, 10)
	for i := range ten {
		ten[i] = "step"
	}
	for _, p := range []*model.Process{chain(t, "ten", ten...), chain(t, "mixed", "step", "pooled", "step")} {
		if _, err := eng.Deploy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	timers := timersPublished(t, env, "ten-1")
	completed := collectFacts(t, env.Conn, "ten", instance.FactCompleted, 1)
	if _, err := eng.Start(ctx, "ten", map[string]any{"n": 0}, engine.InstanceID("ten-1")); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "ten-1"); v.Status != instance.Completed || v.Variables["n"] != int64(10) {
		t.Fatalf("ten-1: %+v, want completed with n = 10", v)
	}
	if n := writes.settled(t, "ten-1", 1); n != 1 {
		t.Fatalf("ten-1 wrote %d checkpoints, want 1", n)
	}
	if n := calls.Load(); n != 10 {
		t.Fatalf("the inline operation ran %d times, want 10", n)
	}
	// The operation watch, armed and cancelled in the one step, was never
	// scheduled: nothing was published on the instance's timer subjects
	// before the completed fact, the step's last effect.
	completed.wait(t, 10*time.Second)
	if n := timers(); n != 0 {
		t.Fatalf("%d timer messages published for ten-1, want none", n)
	}

	if _, err := eng.Start(ctx, "mixed", map[string]any{"n": 0}, engine.InstanceID("mixed-1")); err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, eng, "mixed-1")
	if v.Status != instance.Completed || v.Variables["n"] != int64(2) || v.Variables["pooled"] != int64(1) {
		t.Fatalf("mixed-1: %+v, want completed with n = 2, pooled = 1", v)
	}
	if n := writes.settled(t, "mixed-1", 2); n != 2 {
		t.Fatalf("mixed-1 wrote %d checkpoints, want 2 (parked at the pooled task, then to the end)", n)
	}
}

// timersPublished counts the messages published on id's timer subjects
// from now on: a core subscriber sees each publish the stream stores.
func timersPublished(t *testing.T, env *streamstest.Env, id string) func() int {
	t.Helper()
	var n atomic.Int64
	sub, err := env.Conn.Subscribe(strings.TrimSuffix(streams.TimersSubjects, ">")+"*."+id+".*", func(*nats.Msg) { n.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := env.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() int {
		if err := env.Conn.Flush(); err != nil { // what was published before is delivered before the flush's answer
			t.Fatal(err)
		}
		return int(n.Load())
	}
}

// TestInlineOperationOutcomes: an inline operation's BPMN error is caught
// by its boundary, its failure raises an incident, and one that ignores
// its context holds the step only until the task's deadline: the task
// times out into an incident and the partition goes on.
func TestInlineOperationOutcomes(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithPartitions(1))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ops := &engine.Operations{}
	ops.RegisterInline("check", func(_ context.Context, in map[string]any) (map[string]any, error) {
		switch in["mode"] {
		case "reject":
			return nil, engine.ThrowError("REJECTED", "no")
		case "fail":
			return nil, errors.New("checker down")
		case "hang":
			<-release // ignores its context
		}
		return map[string]any{"checked": true}, nil
	})
	eng := openWith(t, env, engine.Options{Logger: quietLog, Operations: ops})
	ctx := bounded(t)
	p := build(t, model.NewBuilder("checks").StartEvent("s").
		ServiceTask("check", "check", model.Timeout(200*time.Millisecond)).
		ErrorBoundary("rejected", "check", "REJECTED").
		ScriptTask("mark", `"rejected"`, "outcome").
		EndEvent("e").EndEvent("e2").
		Sequence("s", "check", "e").Sequence("rejected", "mark", "e2"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"reject", "fail", "hang", "ok"} {
		if _, err := eng.Start(ctx, "checks", map[string]any{"mode": mode}, engine.InstanceID("c-"+mode)); err != nil {
			t.Fatal(err)
		}
	}
	if v := waitDone(t, eng, "c-reject"); v.Status != instance.Completed || v.Variables["outcome"] != "rejected" {
		t.Fatalf("c-reject: %+v, want completed through the error boundary", v)
	}
	if _, sum := waitIncident(t, eng, "c-fail"); sum.Node != "check" || sum.Cause == "" {
		t.Fatalf("c-fail incident %+v, want one on check with its cause", sum)
	}
	_, sum := waitIncident(t, eng, "c-hang")
	if want := `operation "check" timed out after 200ms`; sum.Cause != want {
		t.Fatalf("c-hang incident %+v, want cause %q", sum, want)
	}
	// Started after the hanging one on the one partition: it was not held
	// beyond the deadline.
	if v := waitDone(t, eng, "c-ok"); v.Status != instance.Completed || v.Variables["checked"] != true {
		t.Fatalf("c-ok: %+v", v)
	}
}

// TestCrashAfterInlineStep: the node dies after the checkpoint of a step
// that ran inline operations and before its effects; another node finishes
// the instance once (the operations ran at least once).
func TestCrashAfterInlineStep(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	completed := collectFacts(t, env.Conn, "inlinecrash", instance.FactCompleted, 1)
	var calls atomic.Int64
	ops := &engine.Operations{}
	ops.RegisterInline("step", func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"calls": calls.Add(1)}, nil
	})
	crashed := make(chan struct{})
	var once sync.Once
	opts := engine.Options{Logger: quietLog, Operations: ops}
	engine.CrashAfterWrite(&opts, func(id string) bool {
		hit := false
		once.Do(func() { hit = id == "ic-1"; close(crashed) })
		return hit
	})
	runToCrash(t, env, opts, build(t, model.NewBuilder("inlinecrash").StartEvent("s").
		ServiceTask("a", "step").UserTask("review").ServiceTask("b", "step").EndEvent("e").
		Sequence("s", "a", "review", "b", "e")), "ic-1", crashed)
	ctx := bounded(t)
	nodeB := openEngine(t, env, ops)
	v, err := nodeB.WaitUntil(ctx, "ic-1", func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "review" })
	if err != nil {
		t.Fatalf("ic-1 did not reach review after the crash: %v", err)
	}
	if v.Variables["calls"] == nil {
		t.Fatalf("ic-1 at review without a's output: %+v", v)
	}
	if _, err := nodeB.CompleteTask(ctx, taskAt(t, nodeB, "ic-1", "review"), "", nil); err != nil {
		t.Fatal(err)
	}
	completed.wait(t, 20*time.Second)
	if v := waitDone(t, nodeB, "ic-1"); v.Status != instance.Completed {
		t.Fatalf("ic-1: %+v", v)
	}
	completed.mu.Lock()
	defer completed.mu.Unlock()
	if n := completed.seen["ic-1"]; n < 1 {
		t.Fatalf("completed fact published %d times", n)
	}
	if n := calls.Load(); n < 2 {
		t.Fatalf("the inline operation ran %d times, want at least 2 (a, then b)", n)
	}
}
