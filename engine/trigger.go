package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
)

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
	if !validInstanceID(id) {
		return nil, fmt.Errorf("instance %q: %w", id, ErrNotFound)
	}
	clean, err := e.checkVars(vars)
	if err != nil {
		return nil, err
	}
	w, err := e.store.kv.Watch(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("instance %s: watch: %w", id, err)
	}
	defer w.Stop()
	cmd := "trigger:" + requestID
	s, _, err := e.current(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case s == nil:
		return nil, fmt.Errorf("instance %s has not started running yet: %w", id, ErrConflict)
	case slices.Contains(s.Correlations, cmd):
		return viewOf(s), nil // a retry of a request applied before
	case s.Status.Finished():
		return nil, fmt.Errorf("instance %s is %s: %w", id, s.Status, ErrFinished)
	}
	wait, err := plainWait(s, node)
	if err != nil {
		return nil, err
	}
	ev := &instance.Event{ID: cmd, Kind: instance.Trigger, Wait: wait.ID, Vars: clean}
	if err := e.send(ctx, id, envelope{Instance: id, Event: ev}, cmd); err != nil {
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
		case !slices.ContainsFunc(s.Waits, func(x *instance.Wait) bool { return x.ID == wait.ID }):
			return true, fmt.Errorf("instance %s: receive task %q stopped waiting before the trigger reached it: %w", id, wait.Node, ErrConflict)
		}
		return false, nil
	})
	return view, err
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
