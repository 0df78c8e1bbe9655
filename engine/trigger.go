package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
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
