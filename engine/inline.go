package engine

import (
	"context"
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// inlineHook is the step's instance.Env.Inline when the node registered
// operations inline (Operations.RegisterInline): it runs those inside the
// step, so a chain of inline tasks costs one step and one checkpoint write
// (docs/engine.md §3.2). Operations registered for the pool are declined
// and park as before.
func (p *partition) inlineHook(ctx context.Context) func(instance.Call, time.Time) (*instance.OperationResult, bool) {
	if !p.opts.Operations.hasInline() {
		return nil
	}
	return func(call instance.Call, due time.Time) (*instance.OperationResult, bool) {
		if !p.opts.Operations.inline(call.Operation) {
			return nil, false
		}
		return p.invokeInline(ctx, call, due), true
	}
}

// invokeInline calls an operation and waits for it until its deadline:
// then the task times out, and the call runs on unattended, its result
// discarded, as on the pool.
func (p *partition) invokeInline(ctx context.Context, call instance.Call, due time.Time) *instance.OperationResult {
	callCtx, cancel := context.WithCancel(ctx)
	if !due.IsZero() {
		// due is on the engine's clock; the context's deadline on the wall clock.
		callCtx, cancel = context.WithDeadline(ctx, time.Now().Add(due.Sub(p.opts.Now())))
	}
	defer cancel()
	results := make(chan *instance.OperationResult, 1) // the call can always send and end
	go func() { results <- instance.Invoke(callCtx, p.opts.Operations, call) }()
	select {
	case res := <-results:
		if callCtx.Err() == nil {
			return res
		}
	case <-callCtx.Done():
	}
	p.metrics.opResults.With("discarded").Inc()
	p.log.Warn("inline operation timed out", "instance", call.InstanceID, "node", call.Node, "operation", call.Operation)
	return &instance.OperationResult{Kind: instance.OperationTimedOut}
}
