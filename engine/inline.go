package engine

import (
	"context"
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// maxInlineCalls bounds the inline operations one step runs; the rest of
// a longer chain goes to the pool (a loop of inline tasks still reaches a
// wait state, and a checkpoint, every so often).
const maxInlineCalls = 1000

// runInline runs, inside the step, the operations registered inline
// (Operations.RegisterInline) that the step parked, and applies each
// result at once, so a chain of inline tasks costs the instance one step
// and one checkpoint write (docs/engine.md §3.2). Operations registered
// for the pool keep their RunOperation effect and run beside the loop.
// created says the step created the instance.
func (p *partition) runInline(ctx context.Context, g *group, s *instance.State, created bool) error {
	if !p.opts.Operations.hasInline() {
		return nil
	}
	var env instance.Env
	calls := 0
	for calls < maxInlineCalls {
		var results []instance.Event
		kept := s.Outbox[:0]
		for _, eff := range s.Outbox {
			if eff.Kind != instance.RunOperation || eff.Call == nil || calls == maxInlineCalls ||
				!p.opts.Operations.inline(eff.Call.Operation) {
				kept = append(kept, eff)
				continue
			}
			calls++
			results = append(results, instance.OperationEvent(eff.Wait, p.invokeInline(ctx, eff)))
		}
		s.Outbox = kept
		if len(results) == 0 {
			break
		}
		if env.Process == nil {
			var err error
			if env, err = p.env(ctx, s.ProcessID, s.Version); err != nil {
				return err
			}
			env.Discarded = func(ev instance.Event) { g.discarded = append(g.discarded, ev) }
		}
		if _, err := instance.Apply(s, env, results...); err != nil {
			return err
		}
	}
	if calls > 0 {
		dropCancelledSchedules(s, created)
	}
	return nil
}

// invokeInline calls eff's operation and waits for it until its deadline:
// then the task times out, and the call runs on unattended, its result
// discarded, as on the pool.
func (p *partition) invokeInline(ctx context.Context, eff instance.Effect) *instance.OperationResult {
	callCtx, cancel := context.WithCancel(ctx)
	if !eff.Due.IsZero() {
		// Due is on the engine's clock; the context's deadline on the wall clock.
		callCtx, cancel = context.WithDeadline(ctx, time.Now().Add(eff.Due.Sub(p.opts.Now())))
	}
	defer cancel()
	results := make(chan *instance.OperationResult, 1) // the call can always send and end
	go func() { results <- instance.Invoke(callCtx, p.opts.Operations, *eff.Call) }()
	select {
	case res := <-results:
		if callCtx.Err() == nil {
			return res
		}
	case <-callCtx.Done():
	}
	p.metrics.opResults.With("discarded").Inc()
	p.log.Warn("inline operation timed out", "instance", eff.Call.InstanceID, "node", eff.Call.Node, "operation", eff.Call.Operation)
	return &instance.OperationResult{Kind: instance.OperationTimedOut}
}

// dropCancelledSchedules removes from the outbox each timer schedule that
// a later cancel of the same timer in it undoes: publishing both would
// store a schedule only to purge it (an inline task's operation watch,
// armed and cancelled in one step). The cancel stays, for a schedule an
// earlier step may have published, unless the step created the instance:
// then there is none.
func dropCancelledSchedules(s *instance.State, created bool) {
	cancelAt := map[string]int{} // timer wait → index of its last cancel
	for i, eff := range s.Outbox {
		if eff.Kind == instance.CancelTimer {
			cancelAt[eff.Wait] = i
		}
	}
	if len(cancelAt) == 0 {
		return
	}
	scheduled := map[string]bool{}
	kept := s.Outbox[:0]
	for i, eff := range s.Outbox {
		switch last, cancelled := cancelAt[eff.Wait]; {
		case eff.Kind == instance.ScheduleTimer && cancelled && i < last:
			scheduled[eff.Wait] = true
			continue
		case eff.Kind == instance.CancelTimer && created && scheduled[eff.Wait] && i == last:
			continue
		}
		kept = append(kept, eff)
	}
	s.Outbox = kept
}
