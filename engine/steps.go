package engine

import (
	"context"
	"fmt"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/operations"
	"github.com/jetbpm/jetbpm/streams"
)

func (p *partition) env(ctx context.Context, processID string, version int) (instance.Env, error) {
	def, err := p.defs.Get(ctx, processID, version)
	if err != nil {
		return instance.Env{}, err
	}
	return instance.Env{
		Process:        def,
		Now:            p.opts.Now(),
		DefaultTimeout: p.opts.OperationTimeout,
		CheckValue:     p.opts.checkValue,
		Jobs:           p.opts.jobDefaults(),
		IncidentRetry:  p.opts.IncidentRetry,
		Inline:         operations.Inline(ctx, p.opts.Operations, p.opts.Now, p.metrics.ops, p.log),
	}, nil
}

// logDiscarded logs the events g's step skipped: an operation's result for
// a task that moved on (a timeout, an interruption, a re-run after a
// takeover) at info, anything else at debug.
func (p *partition) logDiscarded(g *group) {
	for _, ev := range g.discarded {
		if ev.Kind == instance.OperationDone && ev.Result != nil {
			p.metrics.ops.Results.With("discarded").Inc()
			p.log.Info("operation result discarded", "instance", g.id, "wait", ev.Wait, "result", ev.Result.Kind, "reason", "its task moved on")
			continue
		}
		p.log.Debug("event discarded", "instance", g.id, "event", ev.ID, "kind", ev.Kind, "wait", ev.Wait)
	}
	g.discarded = nil
}

// create runs a start request to the instance's first wait state.
func (p *partition) create(ctx context.Context, id string, req *checkpoint.StartRequest) (*instance.State, error) {
	env, err := p.env(ctx, req.ProcessID, req.Version)
	if err != nil {
		return nil, err
	}
	return instance.StartFrom(id, env, req.Vars, instance.Begin{
		Node: req.Node, BusinessKey: req.BusinessKey, Parent: req.Parent, Message: req.Message,
	})
}

// apply runs g's events on s; the events it skips are kept in g.discarded.
func (p *partition) apply(ctx context.Context, g *group, s *instance.State) (int, error) {
	env, err := p.env(ctx, s.ProcessID, s.Version)
	if err != nil {
		return 0, err
	}
	g.discarded = nil
	env.Discarded = func(ev instance.Event) { g.discarded = append(g.discarded, ev) }
	return instance.Apply(s, env, g.events...)
}

// checkValue enforces the per-variable size limit (docs/engine.md §8).
func (o *Options) checkValue(name string, v any) error {
	data, err := streams.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) > o.MaxVariableBytes {
		return fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrTooLarge, len(data), o.MaxVariableBytes)
	}
	return nil
}

// oversized handles a step whose checkpoint (size bytes, over revision
// rev) would exceed the limit: the step is discarded and the instance, as
// it was before, fails with the reason, since the state it reached cannot
// be stored. It returns that failed state and the revision to write it over.
func (p *partition) oversized(ctx context.Context, s *instance.State, rev uint64, size int) (*instance.State, uint64, error) {
	reason := fmt.Sprintf("checkpoint would be %d bytes, over the %d-byte limit; reduce variable sizes", size, p.opts.MaxCheckpointBytes)
	if len(s.Journal) > 0 {
		// The completion journal's snapshots count against the limit too.
		j, _ := streams.Marshal(s.Journal)
		reason = fmt.Sprintf("checkpoint would be %d bytes, over the %d-byte limit; its compensation journal holds %d entries (%d bytes); reduce variable sizes or compensate sooner",
			size, p.opts.MaxCheckpointBytes, len(s.Journal), len(j))
	}
	prev, prevRev, err := p.store.Get(ctx, s.ID)
	switch {
	case err == nil:
		s, rev = prev, prevRev
	case rev == 0:
		s = &instance.State{ID: s.ID, ProcessID: s.ProcessID, Version: s.Version, Status: instance.Active,
			StartedAt: s.StartedAt, Scopes: []*instance.Scope{{ID: instance.RootScope}}}
	default:
		return nil, 0, err
	}
	s.Outbox = nil
	instance.Abort(s, p.opts.Now(), reason)
	s.OutboxBy = p.pub.Session()
	return s, rev, nil
}

// childStartFailed tells a call activity its child could not start (the
// called process is not deployed, say): to the caller it failed.
func (p *partition) childStartFailed(ctx context.Context, id string, req *checkpoint.StartRequest, cause error) error {
	res := &instance.ChildResult{Child: id, Status: instance.Failed, Failure: &instance.Failure{Message: "could not start: " + cause.Error()}}
	m, err := checkpoint.EventMsg(checkpoint.Envelope{Instance: req.Parent.Instance, Event: &instance.Event{
		ID: "child:" + id + ":done", Kind: instance.ChildDone, Wait: req.Parent.Wait, Child: res,
	}}, "child:"+id+":done", p.partitions)
	if err != nil {
		return err
	}
	_, err = p.js.PublishMsg(ctx, m)
	return err
}
