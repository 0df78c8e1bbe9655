package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// RequestOption configures SetVariables and Trigger.
type RequestOption func(*requestOptions)

type requestOptions struct{ requestID string }

// RequestID names a SetVariables or Trigger request (letters, digits, '-' and '_',
// up to 128), so a retried request applies once: the instance remembers
// the ids of the last requests it applied, and sending the same id again
// returns the instance's view without writing anything. Without it every
// call is a new request.
func RequestID(id string) RequestOption { return func(o *requestOptions) { o.requestID = id } }

// SetVariables writes vars to the process-level (root) scope of an active
// instance, the operator's variable modification (Camunda 7's
// process-instance variables, Zeebe's SetVariables), and waits until the
// instance has applied them. It returns the instance's view as of that
// step: the write happens in a step like any other event, so conditional
// events see each variable as created or updated and may fire in the same
// step. A variable already defined in an inner scope is still written at
// the root; a token there keeps seeing its inner value.
//
// It is refused, changing nothing, with ErrInvalid for an empty map, an
// empty name or a value that cannot be stored, ErrTooLarge for a value
// over the variable limit, ErrNotFound for an unknown instance and
// ErrFinished for a finished one (also when the instance ends before the
// request reaches it).
func (e *Engine) SetVariables(ctx context.Context, id string, vars map[string]any, opts ...RequestOption) (*InstanceView, error) {
	requestID, err := requestIDOf(opts)
	if err != nil {
		return nil, err
	}
	if !checkpoint.ValidID(id) {
		return nil, fmt.Errorf("instance %q: %w", id, ErrNotFound)
	}
	if len(vars) == 0 {
		return nil, fmt.Errorf("%w: no variables to set", ErrInvalid)
	}
	clean, err := e.checkVars(vars)
	if err != nil {
		return nil, err
	}
	cmd := "vars:" + requestID
	return e.applyRequest(ctx, id, cmd, func(*instance.State) (*instance.Event, error) {
		// A start still queued (no state yet): the write queues behind it.
		return &instance.Event{ID: cmd, Kind: instance.SetVars, Vars: clean}, nil
	}, nil)
}

// applyRequest sends the event prepare makes, named cmd, to instance id
// and waits until the instance lists cmd among what it applied; it
// returns the instance's view as of that step. prepare sees the instance
// as it stands (nil while its start is still queued) and may refuse;
// gone, if set, ends the wait with its error once a step shows the
// request can no longer apply. A request applied before (a retry of the
// same cmd) returns the current view without sending anything.
func (e *Engine) applyRequest(ctx context.Context, id, cmd string, prepare func(*instance.State) (*instance.Event, error), gone func(*instance.State) error) (*InstanceView, error) {
	// Watch before reading: a step that lands between the read and the
	// watch would otherwise go unseen.
	w, err := e.store.KV().Watch(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("instance %s: watch: %w", id, err)
	}
	defer w.Stop()
	s, _, err := e.current(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case s == nil:
	case slices.Contains(s.Correlations, cmd):
		return viewOf(s), nil // a retry of a request applied before
	case s.Status.Finished():
		return nil, fmt.Errorf("instance %s is %s: %w", id, s.Status, ErrFinished)
	}
	ev, err := prepare(s)
	if err != nil {
		return nil, err
	}
	if err := e.send(ctx, id, checkpoint.Envelope{Instance: id, Event: ev}, cmd); err != nil {
		return nil, err
	}
	var view *InstanceView
	err = awaitPut(ctx, w, "instance "+id, func(s *instance.State) (bool, error) {
		switch {
		case slices.Contains(s.Correlations, cmd):
			view = viewOf(s)
			return true, nil
		case s.Status.Finished():
			return true, fmt.Errorf("instance %s is %s: %w", id, s.Status, ErrFinished)
		case gone != nil:
			if err := gone(s); err != nil {
				return true, err
			}
		}
		return false, nil
	})
	return view, err
}

// requestIDOf returns the request id opts name, or a new one.
func requestIDOf(opts []RequestOption) (string, error) {
	var o requestOptions
	for _, fn := range opts {
		fn(&o)
	}
	switch {
	case o.requestID == "":
		return nuid.Next(), nil
	case !checkpoint.ValidID(o.requestID):
		return "", fmt.Errorf("%w: request id %q: use 1-128 letters, digits, '-' or '_'", ErrInvalid, o.requestID)
	}
	return o.requestID, nil
}

// checkVars returns vars made JSON-like, refusing an empty name
// (ErrInvalid), a value that cannot be stored (ErrInvalid) or one over the
// variable limit (ErrTooLarge).
func (e *Engine) checkVars(vars map[string]any) (map[string]any, error) {
	if _, ok := vars[""]; ok {
		return nil, fmt.Errorf("%w: a variable name is empty", ErrInvalid)
	}
	clean, err := instance.NormalizeVars(vars)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for name, v := range clean {
		if err := e.opts.checkValue(name, v); err != nil {
			return nil, fmt.Errorf("variable %q: %w", name, err)
		}
	}
	return clean, nil
}
