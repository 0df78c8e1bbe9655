package engine

import (
	"context"
	"fmt"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

func (e *Engine) env(ctx context.Context, processID string, version int) (instance.Env, error) {
	def, err := e.defs.get(ctx, processID, version)
	if err != nil {
		return instance.Env{}, err
	}
	return instance.Env{
		Process:        def,
		Now:            e.opts.Now(),
		Exec:           e.opts.Operations,
		Context:        ctx,
		DefaultTimeout: e.opts.OperationTimeout,
		CheckValue:     e.checkValue,
		Jobs:           e.opts.jobDefaults(),
		IncidentRetry:  e.opts.IncidentRetry,
	}, nil
}

// create runs a start request to the instance's first wait state.
func (e *Engine) create(ctx context.Context, id string, req *startRequest) (*instance.State, error) {
	env, err := e.env(ctx, req.ProcessID, req.Version)
	if err != nil {
		return nil, err
	}
	if req.Parent != nil {
		return instance.StartChild(id, env, req.Vars, *req.Parent)
	}
	return instance.Start(id, env, req.Vars)
}

func (e *Engine) apply(ctx context.Context, s *instance.State, events []instance.Event) (int, error) {
	env, err := e.env(ctx, s.ProcessID, s.Version)
	if err != nil {
		return 0, err
	}
	return instance.Apply(s, env, events...)
}

// checkValue enforces the per-variable size limit (docs/engine.md §8).
func (e *Engine) checkValue(name string, v any) error {
	data, err := streams.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) > e.opts.MaxVariableBytes {
		return fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrTooLarge, len(data), e.opts.MaxVariableBytes)
	}
	return nil
}

// oversized handles a step whose checkpoint would exceed the limit: the
// step is discarded and the instance, as it was before, fails with the
// reason, since the state it reached cannot be stored.
func (e *Engine) oversized(ctx context.Context, id string, size int, s **instance.State, rev *uint64) error {
	prev, prevRev, err := e.store.get(ctx, id)
	switch {
	case err == nil:
		*s, *rev = prev, prevRev
	case *rev == 0:
		failed := *s
		*s = &instance.State{ID: id, ProcessID: failed.ProcessID, Version: failed.Version, Status: instance.Active,
			StartedAt: failed.StartedAt, Scopes: []*instance.Scope{{ID: instance.RootScope}}}
	default:
		return err
	}
	(*s).Outbox = nil
	instance.Abort(*s, e.opts.Now(), fmt.Sprintf("checkpoint would be %d bytes, over the %d-byte limit; reduce variable sizes", size, e.opts.MaxCheckpointBytes))
	(*s).OutboxBy = e.currentSession()
	return nil
}

// childStartFailed tells a call activity its child could not start (the
// called process is not deployed, say): to the caller it failed.
func (e *Engine) childStartFailed(ctx context.Context, id string, req *startRequest, cause error) error {
	res := &instance.ChildResult{Child: id, Status: instance.Failed, Failure: &instance.Failure{Message: "could not start: " + cause.Error()}}
	m, err := e.envelopeMsg(req.Parent.Instance, envelope{Instance: req.Parent.Instance, Event: &instance.Event{
		ID: "child:" + id + ":done", Kind: instance.ChildDone, Wait: req.Parent.Wait, Child: res,
	}}, "child:"+id+":done")
	if err != nil {
		return err
	}
	_, err = e.js.PublishMsg(ctx, m)
	return err
}
