package partition

import (
	"context"
	"fmt"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/operations"
	"github.com/jetbpm/jetbpm/streams"
)

func (p *Partition) env(ctx context.Context, processID string, version int) (instance.Env, error) {
	def, err := p.cfg.Defs.Get(ctx, processID, version)
	if err != nil {
		return instance.Env{}, err
	}
	return instance.Env{
		Process:        def,
		Now:            p.cfg.Now(),
		DefaultTimeout: p.cfg.OperationTimeout,
		CheckValue:     p.cfg.CheckValue,
		Jobs:           p.cfg.Jobs,
		IncidentRetry:  p.cfg.IncidentRetry,
		Inline:         operations.Inline(ctx, p.cfg.Operations, p.cfg.Now, p.cfg.OperationMetrics, p.log),
		Scripts:        p.cfg.Scripts,
	}, nil
}

// logDiscarded logs the events g's step skipped: an operation's result for
// a task that moved on (a timeout, an interruption, a re-run after a
// takeover) at info, anything else at debug.
func (p *Partition) logDiscarded(g *group) {
	for _, ev := range g.discarded {
		if ev.Kind == instance.OperationDone && ev.Result != nil {
			p.cfg.OperationMetrics.Results.With("discarded").Inc()
			p.log.Info("operation result discarded", "instance", g.id, "wait", ev.Wait, "result", ev.Result.Kind, "reason", "its task moved on")
			continue
		}
		p.log.Debug("event discarded", "instance", g.id, "event", ev.ID, "kind", ev.Kind, "wait", ev.Wait)
	}
	g.discarded = nil
}

// create runs a start request to the instance's first wait state.
func (p *Partition) create(ctx context.Context, id string, req *checkpoint.StartRequest) (*instance.State, error) {
	env, err := p.env(ctx, req.ProcessID, req.Version)
	if err != nil {
		return nil, err
	}
	return instance.StartFrom(id, env, req.Vars, instance.Begin{
		Node: req.Node, BusinessKey: req.BusinessKey, Parent: req.Parent, Message: req.Message,
	})
}

// apply runs g's events on s; the events it skips are kept in g.discarded.
func (p *Partition) apply(ctx context.Context, g *group, s *instance.State) (int, error) {
	env, err := p.env(ctx, s.ProcessID, s.Version)
	if err != nil {
		return 0, &definitionError{err}
	}
	g.discarded = nil
	env.Discarded = func(ev instance.Event) { g.discarded = append(g.discarded, ev) }
	return instance.Apply(s, env, g.events...)
}

// oversized handles a step whose checkpoint (size bytes, over revision
// rev) would exceed the limit: the step is discarded and the instance, as
// it was before, fails with the reason, since the state it reached cannot
// be stored. It returns that failed state and the revision to write it over.
func (p *Partition) oversized(ctx context.Context, s *instance.State, rev uint64, size int) (*instance.State, uint64, error) {
	reason := fmt.Sprintf("checkpoint would be %d bytes, over the %d-byte limit; reduce variable sizes", size, p.cfg.MaxCheckpointBytes)
	if len(s.Journal) > 0 {
		// The completion journal's snapshots count against the limit too.
		j, _ := streams.Marshal(s.Journal)
		reason = fmt.Sprintf("checkpoint would be %d bytes, over the %d-byte limit; its compensation journal holds %d entries (%d bytes); reduce variable sizes or compensate sooner",
			size, p.cfg.MaxCheckpointBytes, len(s.Journal), len(j))
	}
	prev, prevRev, err := p.cfg.Store.Get(ctx, s.ID)
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
	instance.Abort(s, p.cfg.Now(), reason)
	s.OutboxBy = p.cfg.Pub.Session()
	return s, rev, nil
}
