package instance

import (
	"context"
	"fmt"
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/script"
)

// Conditional events (docs/conditional-events.md). An intermediate
// conditional catch, a conditional boundary or the conditional start of
// an event sub-process parks on a conditional wait, owned by its track
// (a catch, a boundary) or by its scope activation (an event sub-process
// start). Nothing outside the instance knows it: no effect is published.
//
// The step evaluates conditions in its run loop, before it picks the next
// ready token: each conditional wait opened since the last evaluation
// once (filters ignored), then each open wait that a variable write
// recorded since (varEvent) can reach — its scope is the written scope or
// inside it, and its filters accept the write. Waits are visited
// outermost scope first, so an interrupting event cancels the waits
// inside it before they are looked at.

// ConditionalWait is an open conditional event: an intermediate catch,
// a boundary or an event sub-process start waiting for its condition.
const ConditionalWait WaitKind = "conditional"

// varEvent is a variable write of the step: the scope written, the name,
// and model.VariableCreate or model.VariableUpdate.
type varEvent struct {
	scope, name, kind string
}

// wrote records a write of variable name to scope sc (existed: the
// variable was in sc before), for the conditions to re-evaluate.
func (r *runner) wrote(sc *Scope, name string, existed bool) {
	kind := model.VariableCreate
	if existed {
		kind = model.VariableUpdate
	}
	r.varEvents = append(r.varEvents, varEvent{scope: sc.ID, name: name, kind: kind})
}

// openConditional opens conditional wait w; it is evaluated before the
// step runs its next node.
func (r *runner) openConditional(w *Wait) {
	w.Kind, w.Armed = ConditionalWait, r.env.Now
	r.s.Waits = append(r.s.Waits, w)
	r.fresh = append(r.fresh, w.ID)
}

// catchConditional parks t on an intermediate conditional catch event.
func (r *runner) catchConditional(t *Track, n *model.Node) {
	t.State = Waiting
	r.openConditional(&Wait{ID: r.waitID(n.ID, t.Activation), Track: t.ID, Node: n.ID})
}

// armConditionalBoundaries opens the conditional boundaries of activity n
// that t does not wait on yet.
func (r *runner) armConditionalBoundaries(t *Track, n *model.Node) {
	for _, b := range r.p.Boundaries(n.ID) {
		if b.Event == model.ConditionalEvent && !r.waitsAt(t, b.ID) {
			r.openConditional(&Wait{ID: r.waitID(b.ID, t.Activation), Track: t.ID, Node: b.ID})
		}
	}
}

// conditions evaluates the conditional waits opened and the variable
// writes recorded since the last evaluation, firing those whose condition
// holds, until what they fired writes nothing more and opens nothing.
func (r *runner) conditions() {
	for !r.s.Status.Finished() && (len(r.fresh) > 0 || len(r.varEvents) > 0) {
		fresh, events := r.fresh, r.varEvents
		r.fresh, r.varEvents = nil, nil
		type candidate struct {
			w     *Wait
			scope string
			depth int
		}
		var cands []candidate
		for _, w := range r.s.Waits {
			if w.Kind == ConditionalWait {
				sc := r.conditionScope(w)
				cands = append(cands, candidate{w, sc, len(r.scopeChain(sc))})
			}
		}
		slices.SortStableFunc(cands, func(a, b candidate) int { return a.depth - b.depth })
		for _, c := range cands {
			w := c.w
			if r.s.wait(w.ID) != w {
				continue // an earlier firing closed it
			}
			n := r.p.Node(w.Node)
			if n == nil || n.Conditional == nil {
				r.bug("conditional wait %q at %q has no condition", w.ID, w.Node)
			}
			if !slices.Contains(fresh, w.ID) && !r.reaches(events, c.scope, n.Conditional) {
				continue
			}
			if !r.conditionHolds(w, c.scope, n) {
				continue
			}
			r.nodes++
			if r.nodes > r.env.MaxNodes {
				r.fail(n.ID, "", fmt.Sprintf("more than %d nodes executed without reaching a wait state (a conditional event that keeps firing itself?)", r.env.MaxNodes))
				return
			}
			r.fireConditional(w, n)
			if r.s.Status.Finished() {
				return
			}
		}
	}
}

// conditionScope returns the scope whose variables wait w sees: an event
// sub-process start's scope activation, a sub-process boundary's
// sub-process scope, else its track's scope.
func (r *runner) conditionScope(w *Wait) string {
	if w.Track == "" {
		return w.Scope
	}
	t := r.s.track(w.Track)
	if t == nil {
		r.bug("conditional wait %q belongs to missing track %q", w.ID, w.Track)
	}
	if n := r.p.Node(t.Node); n != nil && n.Kind == model.SubProcess && t.Loop == nil && w.Node != t.Node {
		for _, sc := range r.s.Scopes {
			if sc.Owner == t.ID && sc.Iteration == 0 {
				return sc.ID
			}
		}
	}
	return t.Scope
}

// reaches reports whether one of events can re-evaluate a condition c
// that sees the variables of scope: it wrote scope or one of its
// ancestors, and c's filters accept it.
func (r *runner) reaches(events []varEvent, scope string, c *model.Condition) bool {
	var chain []*Scope
	for _, ev := range events {
		if !c.Accepts(ev.name, ev.kind) {
			continue
		}
		if chain == nil {
			chain = r.scopeChain(scope)
		}
		if slices.ContainsFunc(chain, func(sc *Scope) bool { return sc.ID == ev.scope }) {
			return true
		}
	}
	return false
}

// conditionHolds evaluates the condition of wait w at node n over the
// variables it sees. A condition that cannot be evaluated (a variable not
// set yet, in an ordering comparison) does not hold, as in Camunda 7.
func (r *runner) conditionHolds(w *Wait, scope string, n *model.Node) bool {
	var vars map[string]any
	if t := r.s.track(w.Track); t != nil && t.Scope == scope {
		vars = r.visible(t) // with the activity's input locals
	} else {
		vars = map[string]any{}
		for _, sc := range r.scopeChain(scope) {
			for k, v := range sc.Vars {
				vars[k] = v
			}
		}
	}
	if p := n.Conditional.Program(); p != nil {
		res, err := p.Run(context.Background(), script.Env{Vars: vars, Execution: r.execution(n.ID, w.Track)}, r.env.Scripts)
		ok, isBool := res.Value.(bool)
		return err == nil && len(res.Sets) == 0 && isBool && ok
	}
	ok, err := n.Conditional.Compiled().EvalBool(vars)
	return err == nil && ok
}

// fireConditional fires conditional wait w at node n: an interrupting
// one is consumed, a non-interrupting one stays open.
func (r *runner) fireConditional(w *Wait, n *model.Node) {
	repeat := n.Kind == model.BoundaryEvent && !n.Interrupting ||
		n.Kind == model.StartEvent && !r.p.Node(n.Scope).Interrupting
	if !repeat {
		r.s.Waits = slices.DeleteFunc(r.s.Waits, func(x *Wait) bool { return x == w })
	}
	r.deliver(w, nil)
}
