package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// In-process operations run beside the partition loops (docs/engine.md
// §3.1): a slow one parks its instance, not its partition, and its timeout
// holds even when it ignores its context.

// samePartition returns n instance ids, prefixed prefix, that fall in the
// partition of id.
func samePartition(t testing.TB, env *streamstest.Env, id, prefix string, n int) []string {
	t.Helper()
	layout, err := streams.ReadLayout(bounded(t), env.JS)
	if err != nil {
		t.Fatal(err)
	}
	want := streams.PartitionOf(id, layout.Partitions)
	var out []string
	for i := 0; len(out) < n; i++ {
		if c := fmt.Sprintf("%s-%d", prefix, i); streams.PartitionOf(c, layout.Partitions) == want {
			out = append(out, c)
		}
	}
	return out
}

// awaitLog waits until a log record satisfies keep.
func awaitLog(t testing.TB, logs *logBook, what string, keep func(logRecord) bool) logRecord {
	t.Helper()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if got := logs.matching(keep); len(got) > 0 {
			return got[0]
		}
		select {
		case <-deadline:
			t.Fatalf("no log record: %s", what)
		case <-tick.C:
		}
	}
}

// TestSlowOperationDoesNotHoldItsPartition: one instance's operation blocks,
// ignoring its context, until the test releases it; meanwhile 100 other
// instances of the same partition run the same task to completion (were
// the partition held, they never would). The slow one times out after its
// 1 s timeout (an incident) while still blocked, and its late success,
// once released, is discarded.
func TestSlowOperationDoesNotHoldItsPartition(t *testing.T) {
	env := streamstest.Start(t)
	const slowID = "slow-op"
	slowStarted := make(chan struct{})
	var slowReturned atomic.Bool
	var once, releaseOnce sync.Once
	release := make(chan struct{})
	releaseSlow := func() { releaseOnce.Do(func() { close(release) }) }
	ops := &engine.Operations{}
	ops.Register("work", func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		if c, _ := engine.CallInfo(ctx); c.InstanceID == slowID {
			once.Do(func() { close(slowStarted) })
			<-release // the operation under test: it ignores ctx
			slowReturned.Store(true)
			return map[string]any{"late": true}, nil
		}
		return map[string]any{"done": true}, nil
	})
	logs := &logBook{}
	eng := openWith(t, env, engine.Options{Operations: ops, Logger: slog.New(&logHandler{book: logs})})
	t.Cleanup(releaseSlow) // before the engine closes, should the test fail first
	deployed(t, eng, model.NewBuilder("slowpart").StartEvent("s").
		ServiceTask("work", "work", model.Timeout(time.Second)).EndEvent("e").Sequence("s", "work", "e"))

	ctx := bounded(t)
	if _, err := eng.Start(ctx, "slowpart", nil, engine.InstanceID(slowID)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-slowStarted:
	case <-time.After(20 * time.Second):
		t.Fatal("the slow operation never started")
	}

	others := samePartition(t, env, slowID, "fast", 100)
	completed := collectFacts(t, env.Conn, "slowpart", instance.FactCompleted, len(others))
	for _, id := range others {
		if _, err := eng.Start(ctx, "slowpart", nil, engine.InstanceID(id)); err != nil {
			t.Fatal(err)
		}
	}
	completed.wait(t, 3*time.Minute) // bounded; generous for a loaded machine (the slow one is blocked meanwhile)
	for _, id := range others[:3] {
		if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["done"] != true {
			t.Fatalf("instance %s: %+v", id, v)
		}
	}

	_, sum := waitIncident(t, eng, slowID)
	if want := `operation "work" timed out after 1s`; sum.Cause != want || sum.Node != "work" {
		t.Fatalf("incident %+v, want %q on work", sum, want)
	}
	if slowReturned.Load() {
		t.Fatal("the timeout was only applied when the operation returned")
	}
	releaseSlow()
	awaitLog(t, logs, "the late result discarded", func(r logRecord) bool {
		return r.msg == "operation result discarded" && r.attrs["instance"] == slowID && r.attrs["result"] == "completed"
	})
	if !slowReturned.Load() {
		t.Fatal("a result was discarded before the operation returned")
	}
	// The late success changed nothing: the task still holds its incident.
	v, err := eng.Instance(ctx, slowID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status.Finished() || len(v.Incidents) != 1 || v.Variables["late"] != nil {
		t.Fatalf("after the late result: %+v", v)
	}
}

// TestInterruptedOperationIsCancelled: an interrupting timer boundary
// fires while the operation runs; the task leaves through the boundary at
// once and the operation's context is cancelled (it is not left to run
// until its own timeout).
func TestInterruptedOperationIsCancelled(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	stopped := make(chan error, 1)
	ops := &engine.Operations{}
	ops.Register("wait", func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		select {
		case <-ctx.Done():
			stopped <- ctx.Err()
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			stopped <- nil
			return map[string]any{"path": "op"}, nil
		}
	})
	eng := openEngine(t, env, ops)
	deployed(t, eng, model.NewBuilder("interrupt").
		StartEvent("s").ServiceTask("work", "wait", model.Timeout(time.Hour)).EndEvent("e").
		TimerBoundary("late", "work", model.Duration("PT0.3S"), true).ScriptTask("mark", `"boundary"`, "path").EndEvent("le").
		Sequence("s", "work", "e").Sequence("late", "mark", "le"))
	id := startJob(t, eng, "interrupt", nil)
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["path"] != "boundary" {
		t.Fatalf("%+v", v)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the operation ended with %v, want its context cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupted operation's context was never cancelled")
	}
}

// TestNonInterruptingBoundaryFiresWhileOperationRuns: a non-interrupting
// timer on an in-process task fires while its operation runs (impossible
// while operations ran inside the step), and the operation's result still
// completes the task.
func TestNonInterruptingBoundaryFiresWhileOperationRuns(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	reminded := make(chan struct{})
	ops := &engine.Operations{}
	ops.Register("slow", func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		select {
		case <-reminded:
			return map[string]any{"result": "done"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	var once sync.Once
	ops.Register("remind", func(context.Context, map[string]any) (map[string]any, error) {
		once.Do(func() { close(reminded) })
		return map[string]any{"reminded": true}, nil
	})
	eng := openEngine(t, env, ops)
	deployed(t, eng, model.NewBuilder("remind").
		StartEvent("s").ServiceTask("work", "slow", model.Timeout(20*time.Second)).EndEvent("e").
		TimerBoundary("nudge", "work", model.Duration("PT0.2S"), false).ServiceTask("note", "remind").EndEvent("ne").
		Sequence("s", "work", "e").Sequence("nudge", "note", "ne"))
	id := startJob(t, eng, "remind", nil)
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["result"] != "done" || v.Variables["reminded"] != true {
		t.Fatalf("%+v", v)
	}
}

// TestOperationResultTooLargeForAnEvent: a result that cannot travel as an
// event fails the task with the size and the limit instead of vanishing.
func TestOperationResultTooLargeForAnEvent(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	ops.Register("huge", func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"blob": strings.Repeat("x", 200<<10), "more": strings.Repeat("y", 200<<10)}, nil
	})
	eng := openWith(t, env, engine.Options{Operations: ops, MaxCheckpointBytes: 300 << 10})
	deployed(t, eng, model.NewBuilder("huge").StartEvent("s").ServiceTask("work", "huge").EndEvent("e").Sequence("s", "work", "e"))
	id := startJob(t, eng, "huge", nil)
	_, sum := waitIncident(t, eng, id)
	if !strings.Contains(sum.Cause, `operation "huge" returned`) || !strings.Contains(sum.Cause, "over the 307200-byte limit of an event") {
		t.Fatalf("incident %+v", sum)
	}
}
