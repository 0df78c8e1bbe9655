package operations_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/operations"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// rig is a pool on a real server, its effects registered with a
// publisher, and a subscription to the events of instance "i-1".
type rig struct {
	pool   *operations.Pool
	pub    *outbox.Publisher
	events *nats.Subscription
	parts  int
	now    time.Time
}

func newRig(t *testing.T, reg *operations.Registry, maxEvent int) *rig {
	t.Helper()
	env := streamstest.Start(t)
	r := &rig{pub: outbox.New(env.JS), parts: env.Layout.Partitions, now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	sub, err := env.Conn.SubscribeSync(streams.EventSubject(streams.PartitionOf("i-1", r.parts), "i-1"))
	if err != nil {
		t.Fatal(err)
	}
	r.events = sub
	r.pool = operations.NewPool(operations.PoolConfig{
		Exec: reg, JS: env.JS, Partitions: r.parts, MaxEvent: maxEvent, Concurrency: 2,
		Now: func() time.Time { return r.now }, Log: slog.New(slog.DiscardHandler), Metrics: operations.NewMetrics(metrics.NewRegistry()),
	})
	r.pool.Handle(r.pub)
	t.Cleanup(func() { r.pool.Close(context.Background()) })
	return r
}

// run hands the pool one RunOperation effect of instance i-1, due at due
// on the rig's clock (zero: no deadline), through the publisher.
func (r *rig) run(wait, op string, due time.Time) error {
	s := &instance.State{ID: "i-1", Outbox: []instance.Effect{{
		ID: "run:" + wait, Kind: instance.RunOperation, Wait: wait, Due: due,
		Call: &instance.Call{InstanceID: "i-1", Node: "task", Operation: op, Activation: 7, Input: map[string]any{"n": int64(2)}},
	}}}
	return r.pub.Publish(context.Background(), 0, s)
}

// result waits for the next event the pool sent to i-1.
func (r *rig) result(t *testing.T) *instance.Event {
	t.Helper()
	m, err := r.events.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no result event: %v", err)
	}
	var env checkpoint.Envelope
	if err := streams.Unmarshal(m.Data, &env); err != nil {
		t.Fatal(err)
	}
	if env.Instance != "i-1" || env.Event == nil || env.Event.Kind != instance.OperationDone || env.Event.Result == nil {
		t.Fatalf("event %+v, want an operation result for i-1", env)
	}
	if got := m.Header.Get("Nats-Msg-Id"); got != env.Event.ID {
		t.Fatalf("Nats-Msg-Id %q, want the event's id %q", got, env.Event.ID)
	}
	return env.Event
}

// A run's result goes back to its instance as an OperationDone event for
// its wait: the output, a thrown BPMN error, a timeout at the deadline.
func TestPoolSendsEachResultToItsInstance(t *testing.T) {
	t.Parallel()
	reg := &operations.Registry{}
	reg.Register("double", func(ctx context.Context, in map[string]any) (map[string]any, error) {
		call, ok := operations.CallInfo(ctx)
		if !ok || call.InstanceID != "i-1" || call.Activation != 7 || call.Input != nil {
			return nil, errors.New("no call info")
		}
		return map[string]any{"n": in["n"].(int64) * 2}, nil
	})
	reg.Register("refuse", func(context.Context, map[string]any) (map[string]any, error) {
		return nil, operations.ThrowError("NO", "refused")
	})
	reg.Register("hang", func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	r := newRig(t, reg, 1<<20)

	if err := r.run("w1", "double", time.Time{}); err != nil {
		t.Fatal(err)
	}
	ev := r.result(t)
	if ev.Wait != "w1" || ev.Result.Kind != instance.OperationCompleted || ev.Result.Output["n"] != int64(4) {
		t.Fatalf("double: %+v %+v", ev, ev.Result)
	}
	if err := r.run("w2", "refuse", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if ev := r.result(t); ev.Wait != "w2" || ev.Result.Kind != instance.OperationThrew || ev.Result.Code != "NO" {
		t.Fatalf("refuse: %+v %+v", ev, ev.Result)
	}
	if err := r.run("w3", "hang", r.now.Add(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if ev := r.result(t); ev.Wait != "w3" || ev.Result.Kind != instance.OperationTimedOut {
		t.Fatalf("hang: %+v %+v", ev, ev.Result)
	}
}

// A result larger than an event may be fails its task, naming the limit,
// instead of being lost.
func TestPoolFailsAnOversizedResult(t *testing.T) {
	t.Parallel()
	reg := &operations.Registry{}
	reg.Register("big", func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"blob": strings.Repeat("x", 4096)}, nil
	})
	r := newRig(t, reg, 1024)
	if err := r.run("w1", "big", time.Time{}); err != nil {
		t.Fatal(err)
	}
	ev := r.result(t)
	if ev.Result.Kind != instance.OperationFailed || !strings.Contains(ev.Result.Message, "over the 1024-byte limit") {
		t.Fatalf("big: %+v", ev.Result)
	}
}

// A closed pool takes no more runs: the hand-over fails, the outbox is
// published again later (by whichever node then holds the partition).
func TestClosedPoolRefusesRuns(t *testing.T) {
	t.Parallel()
	reg := &operations.Registry{}
	reg.Register("noop", func(context.Context, map[string]any) (map[string]any, error) { return nil, nil })
	r := newRig(t, reg, 1<<20)
	r.pool.Close(context.Background())
	if err := r.run("w1", "noop", time.Time{}); !errors.Is(err, errdefs.ErrClosed) {
		t.Fatalf("run on a closed pool = %v, want ErrClosed", err)
	}
}

// Inline runs the operations registered inline inside the step and
// declines the others; with none registered inline there is no hook.
func TestInlineRunsOnlyInlineOperations(t *testing.T) {
	t.Parallel()
	now := func() time.Time { return time.Unix(0, 0) }
	m, log := operations.NewMetrics(metrics.NewRegistry()), slog.New(slog.DiscardHandler)
	reg := &operations.Registry{}
	reg.Register("pooled", func(context.Context, map[string]any) (map[string]any, error) { return nil, nil })
	if hook := operations.Inline(context.Background(), reg, now, m, log); hook != nil {
		t.Fatal("a hook without inline operations")
	}
	reg.RegisterInline("fast", func(_ context.Context, in map[string]any) (map[string]any, error) {
		return map[string]any{"ok": true}, nil
	})
	hook := operations.Inline(context.Background(), reg, now, m, log)
	if hook == nil {
		t.Fatal("no hook with an inline operation")
	}
	if _, ran := hook(instance.Call{Operation: "pooled"}, time.Time{}); ran {
		t.Fatal("a pool operation ran inline")
	}
	res, ran := hook(instance.Call{Operation: "fast"}, time.Time{})
	if !ran || res.Kind != instance.OperationCompleted || res.Output["ok"] != true {
		t.Fatalf("inline fast: ran %v, %+v", ran, res)
	}
	// Registering for the pool again takes the name out of the step.
	reg.Register("fast", func(context.Context, map[string]any) (map[string]any, error) { return nil, nil })
	if reg.Inline("fast") || reg.HasInline() {
		t.Fatal("re-registered for the pool, still inline")
	}
}

// An unknown operation is a technical failure naming it.
func TestExecuteNamesAnUnknownOperation(t *testing.T) {
	t.Parallel()
	var reg *operations.Registry
	if reg.Has("x") {
		t.Fatal("a nil registry has an operation")
	}
	_, err := (&operations.Registry{}).Execute(context.Background(), instance.Call{Operation: "ship"})
	if err == nil || !strings.Contains(err.Error(), `"ship"`) {
		t.Fatalf("Execute(ship) = %v, want the name in the error", err)
	}
}
