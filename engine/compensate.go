package engine

import (
	"context"
	"fmt"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
)

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
	return e.send(ctx, id, checkpoint.Envelope{Instance: id, Event: ev}, ev.ID)
}
