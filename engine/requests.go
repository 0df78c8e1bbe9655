package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
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
	if err := e.send(ctx, checkpoint.Envelope{Instance: id, Event: ev}, cmd); err != nil {
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
	if err == nil {
		// The checkpoint that applied it is durable before the answer.
		err = e.durable.Sync(ctx)
	}
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

// Trigger moves on a token of instance id that waits at a plain receive
// task — a receive task without a message, Camunda 7's wait state
// (runtimeService.signal, POST /engine-rest/execution/{id}/signal) — and
// waits until the instance has applied it. The task completes with vars
// as its results: its output mappings see them, and without mappings they
// are written to its scope. It returns the instance's view as of that
// step.
//
// node names the receive task; with node "" the instance must wait at
// exactly one plain receive task. Several tokens waiting at node (a
// multi-instance task, a loop of parallel branches) are triggered one per
// call, the one that has waited longest first. Name the request with
// RequestID so that a retry applies once.
//
// It is refused, changing nothing, with ErrNotFound for an unknown
// instance, ErrFinished for a finished one, ErrInvalid for bad variables
// or a node "" that is ambiguous, and ErrConflict when the instance does
// not wait at such a task (or stops waiting before the trigger reaches
// it: a boundary event fired first).
func (e *Engine) Trigger(ctx context.Context, id, node string, vars map[string]any, opts ...RequestOption) (*InstanceView, error) {
	requestID, err := requestIDOf(opts)
	if err != nil {
		return nil, err
	}
	if !checkpoint.ValidID(id) {
		return nil, fmt.Errorf("instance %q: %w", id, ErrNotFound)
	}
	clean, err := e.checkVars(vars)
	if err != nil {
		return nil, err
	}
	cmd := "trigger:" + requestID
	var wait *instance.Wait
	return e.applyRequest(ctx, id, cmd, func(s *instance.State) (*instance.Event, error) {
		if s == nil {
			return nil, fmt.Errorf("instance %s has not started running yet: %w", id, ErrConflict)
		}
		var err error
		if wait, err = plainWait(s, node); err != nil {
			return nil, err
		}
		return &instance.Event{ID: cmd, Kind: instance.Trigger, Wait: wait.ID, Vars: clean}, nil
	}, func(s *instance.State) error {
		if !slices.ContainsFunc(s.Waits, func(x *instance.Wait) bool { return x.ID == wait.ID }) {
			return fmt.Errorf("instance %s: receive task %q stopped waiting before the trigger reached it: %w", id, wait.Node, ErrConflict)
		}
		return nil
	})
}

// plainWait returns the trigger wait of s that Trigger(node) moves on.
func plainWait(s *instance.State, node string) (*instance.Wait, error) {
	var at []string
	var found *instance.Wait
	for _, w := range s.Waits {
		if w.Kind != instance.TriggerWait {
			continue
		}
		if !slices.Contains(at, w.Node) {
			at = append(at, w.Node)
		}
		if found == nil && (node == "" || w.Node == node) {
			found = w
		}
	}
	switch {
	case len(at) == 0:
		return nil, fmt.Errorf("instance %s waits at no %s without a message (active: %s): %w",
			s.ID, model.ReceiveTask, strings.Join(s.ActiveNodes(), ", "), ErrConflict)
	case node == "" && len(at) > 1:
		return nil, fmt.Errorf("%w: instance %s waits at several receive tasks (%s): name one", ErrInvalid, s.ID, strings.Join(at, ", "))
	case found == nil:
		return nil, fmt.Errorf("instance %s does not wait at receive task %q (it waits at %s): %w", s.ID, node, strings.Join(at, ", "), ErrConflict)
	}
	return found, nil
}

// Compensate is the operator's "abandon, then compensate"
// (docs/compensation.md §4): it cancels every token of an active instance
// (its open incidents are overtaken), runs the compensation handlers of
// its completion journal — every completion, or node's only — newest
// first, one at a time, and then ends the instance terminated. It returns
// once the request is stored; the handlers run like any activity (a
// failing one raises an incident on the handler), and Wait reports the
// end. It is refused, changing nothing, for a finished instance, one
// already compensating, a node without a compensation handler, or when
// nothing is left to compensate.
func (e *Engine) Compensate(ctx context.Context, id, node string) error {
	s, _, err := e.store.Get(ctx, id)
	if err != nil {
		return err
	}
	if s.Status.Finished() {
		return fmt.Errorf("instance %s is %s: %w", id, s.Status, ErrFinished)
	}
	if len(s.Compensations) > 0 {
		return fmt.Errorf("%w: instance %s is compensating already", ErrInvalid, id)
	}
	if node != "" {
		p, err := e.defs.Get(ctx, s.ProcessID, s.Version)
		if err != nil {
			return err
		}
		n := p.Node(node)
		switch {
		case n == nil:
			return fmt.Errorf("%w: process %s v%d has no node %q", ErrInvalid, s.ProcessID, s.Version, node)
		case p.CompensationHandler(node) == nil && !n.Kind.IsActivity():
			return fmt.Errorf("%w: node %q of process %s is not an activity", ErrInvalid, node, s.ProcessID)
		}
	}
	if len(s.Compensable(node)) == 0 {
		if node != "" {
			return fmt.Errorf("%w: instance %s has no completion of %q to compensate (only completed activities with a compensation handler are)", ErrInvalid, id, node)
		}
		return fmt.Errorf("%w: instance %s has nothing to compensate (its completion journal is empty); cancel it instead", ErrInvalid, id)
	}
	ev := &instance.Event{ID: "compensate:" + id, Kind: instance.Compensate, Node: node}
	return e.send(ctx, checkpoint.Envelope{Instance: id, Event: ev}, ev.ID)
}
