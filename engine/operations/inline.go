package operations

import (
	"context"
	"log/slog"
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// Inline is the step's instance.Env.Inline when reg holds operations
// registered inline (Registry.RegisterInline): it runs those inside the
// step, so a chain of inline tasks costs one step and one checkpoint write
// (docs/engine.md §3.2). Operations registered for the pool are declined
// and park as before. A call that outlives its deadline (on the clock
// now) times its task out; its result is discarded and counted in m.
func Inline(ctx context.Context, reg *Registry, now func() time.Time, m Metrics, log *slog.Logger) func(instance.Call, time.Time) (*instance.OperationResult, bool) {
	if !reg.HasInline() {
		return nil
	}
	return func(call instance.Call, due time.Time) (*instance.OperationResult, bool) {
		if !reg.Inline(call.Operation) {
			return nil, false
		}
		return invokeInline(ctx, reg, now, m, log, call, due), true
	}
}

// invokeInline calls an operation and waits for it until its deadline:
// then the task times out, and the call runs on unattended, its result
// discarded, as on the pool.
func invokeInline(ctx context.Context, reg *Registry, now func() time.Time, m Metrics, log *slog.Logger, call instance.Call, due time.Time) *instance.OperationResult {
	callCtx, cancel := context.WithCancel(ctx)
	if !due.IsZero() {
		// due is on the engine's clock; the context's deadline on the wall clock.
		callCtx, cancel = context.WithDeadline(ctx, time.Now().Add(due.Sub(now())))
	}
	defer cancel()
	results := make(chan *instance.OperationResult, 1) // the call can always send and end
	go func() { results <- instance.Invoke(callCtx, reg, call) }()
	select {
	case res := <-results:
		if callCtx.Err() == nil {
			return res
		}
	case <-callCtx.Done():
	}
	m.Results.With("discarded").Inc()
	log.Warn("inline operation timed out", "instance", call.InstanceID, "node", call.Node, "operation", call.Operation)
	return &instance.OperationResult{Kind: instance.OperationTimedOut}
}
