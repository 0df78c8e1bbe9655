package instance

import (
	"fmt"
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// LoopState is a multi-instance body's bookkeeping, on its track.
type LoopState struct {
	N         int   `msgpack:"n"`
	Items     []any `msgpack:"items,omitempty"`
	Next      int   `msgpack:"next"` // index of the next iteration to start
	Completed int   `msgpack:"completed"`
	Outputs   []any `msgpack:"outputs,omitempty"`
}

// enterLoop turns t into the body of a multi-instance activity: it waits
// at the node, owns one scope per iteration, and arms the node's
// boundaries once for all of them (docs/callactivity-multiinstance.md §2).
func (r *runner) enterLoop(t *Track, n *model.Node) {
	l := n.Loop
	env := r.visible(t)
	st := &LoopState{}
	if e := l.CollectionExpr(); e != nil {
		v, err := e.Eval(env)
		items, ok := v.([]any)
		if err != nil || !ok && v != nil {
			r.fault(t, n, incidents.CauseExpression, fmt.Sprintf("multi-instance collection %q is not a list (%T %v)", l.Collection, v, err))
			return
		}
		st.Items, st.N = items, len(items)
	} else {
		v, err := l.CardinalityExpr().Eval(env)
		if err == nil {
			v, err = Normalize(v) // a literal is a Go int
		}
		count, ok := v.(int64)
		if f, isFloat := v.(float64); isFloat && f == float64(int64(f)) {
			count, ok = int64(f), true
		}
		if err != nil || !ok || count < 0 {
			r.fault(t, n, incidents.CauseExpression, fmt.Sprintf("multi-instance cardinality %q is not a count (%v %v)", l.Cardinality, v, err))
			return
		}
		st.N = int(count)
	}
	if l.OutputCollection != "" {
		st.Outputs = make([]any, st.N)
	}
	t.State, t.Loop = Waiting, st
	if !r.armBoundaries(t, n) {
		return
	}
	if st.N == 0 {
		r.finishLoop(t, n)
		return
	}
	for st.Next < st.N && (!l.Sequential || st.Next == 0) {
		r.startIteration(t, n)
	}
}

// startIteration opens the next iteration's scope and its inner track.
func (r *runner) startIteration(body *Track, n *model.Node) {
	st := body.Loop
	i := st.Next
	st.Next++
	vars := map[string]any{"loopCounter": int64(i + 1)}
	if n.Loop.ElementVariable != "" && st.Items != nil {
		vars[n.Loop.ElementVariable] = deepCopy(st.Items[i])
	}
	sc := &Scope{ID: fmt.Sprintf("s%d", r.next()), Parent: body.Scope, Owner: body.ID, Vars: vars, Iteration: i + 1}
	r.s.Scopes = append(r.s.Scopes, sc)
	inner := r.spawn(n.ID, sc.ID, body.ID, "")
	inner.Inner = true
}

// completeIteration ends an inner track's activity: its results stay in
// its iteration's scope (siblings must not overwrite each other), then the
// iteration is accounted.
func (r *runner) completeIteration(t *Track, names []string, values map[string]any) {
	sc := r.s.scope(t.Scope)
	if sc.Vars == nil {
		sc.Vars = map[string]any{}
	}
	for _, k := range names {
		_, existed := sc.Vars[k]
		sc.Vars[k] = values[k]
		r.wrote(sc, k, existed)
	}
	r.disarm(t)
	r.journalScopeDone(sc, r.p.Node(t.Node))
	r.iterationDone(sc, t)
}

// iterationDone accounts one finished iteration (inner is nil when its
// incident was abandoned): its output element, the completion condition,
// the next sequential iteration, and the body's completion. When the
// output element or the completion condition fails over a finished
// iteration's variables, the incident is that iteration's and nothing is
// accounted: a retry runs it again, a resolve finishes it again.
func (r *runner) iterationDone(sc *Scope, inner *Track) {
	body := r.s.track(sc.Owner)
	if body == nil || body.Loop == nil {
		r.bug("iteration scope %q has no loop body", sc.ID)
	}
	n := r.p.Node(body.Node)
	st := body.Loop
	var env map[string]any
	var out any
	if inner != nil {
		env = r.visible(inner)
		if e := n.Loop.OutputElementExpr(); e != nil {
			v, err := e.Eval(env)
			if err == nil {
				v, err = Normalize(v)
			}
			if err != nil {
				r.fault(inner, n, incidents.CauseExpression, fmt.Sprintf("multi-instance output element %q: %v", n.Loop.OutputElement, err))
				return
			}
			out = v
		}
	} else {
		env = r.visible(body)
	}
	active := r.activeIterations(body) - 1
	done, condErr := r.loopDone(body, n, env, st.Completed+1, active)
	if condErr != nil && inner != nil {
		r.fault(inner, n, incidents.CauseExpression, condErr.Error())
		return
	}
	if inner != nil {
		if st.Outputs != nil {
			st.Outputs[sc.Iteration-1] = out
		}
		r.retrySucceeded(inner)
		r.s.removeTrack(inner.ID)
	}
	r.s.removeScope(sc.ID)
	st.Completed++
	if condErr != nil {
		// An abandoned iteration has no variables of its own: the
		// condition failed over the body's, and the incident is the body's.
		r.fault(body, n, incidents.CauseExpression, condErr.Error())
		return
	}
	r.continueLoop(body, n, done, active)
}

// activeIterations counts the body's open iterations.
func (r *runner) activeIterations(body *Track) int {
	active := 0
	for _, s := range r.s.Scopes {
		if s.Owner == body.ID && s.Iteration > 0 {
			active++
		}
	}
	return active
}

// loopDone evaluates the completion condition over env and the counters;
// false without one.
func (r *runner) loopDone(body *Track, n *model.Node, env map[string]any, completed, active int) (bool, error) {
	e := n.Loop.CompletionExpr()
	if e == nil {
		return false, nil
	}
	env["nrOfInstances"], env["nrOfCompletedInstances"], env["nrOfActiveInstances"] = int64(body.Loop.N), int64(completed), int64(active)
	done, err := e.EvalBool(env)
	if err != nil {
		return false, fmt.Errorf("completion condition: %w", err)
	}
	return done, nil
}

// continueLoop moves the loop on after an iteration: it ends early when
// the completion condition holds, starts the next sequential iteration,
// or completes when none is left. A body holding an incident (its
// completion condition failed) waits for the operator.
func (r *runner) continueLoop(body *Track, n *model.Node, done bool, active int) {
	st := body.Loop
	switch {
	case body.State == TrackIncident:
	case done:
		r.cancelIterations(body)
		r.finishLoop(body, n)
	case n.Loop.Sequential && st.Next < st.N:
		r.startIteration(body, n)
	case active == 0 && st.Next >= st.N:
		r.finishLoop(body, n)
	}
}

// retryLoop retries a body's incident: its completion condition is
// evaluated again, over the body's variables and the counters; the loop
// then goes on, or the incident is raised again.
func (r *runner) retryLoop(body *Track) {
	n := r.p.Node(body.Node)
	body.State = Waiting
	active := r.activeIterations(body)
	done, err := r.loopDone(body, n, r.visible(body), body.Loop.Completed, active)
	if err != nil {
		r.fault(body, n, incidents.CauseExpression, err.Error())
		return
	}
	r.retrySucceeded(body)
	r.continueLoop(body, n, done, active)
}

func (r *runner) cancelIterations(body *Track) {
	for _, sc := range slices.Clone(r.s.Scopes) {
		if sc.Owner == body.ID && sc.Iteration > 0 {
			for _, t := range r.tracksIn(sc.ID) {
				r.cancelTrack(t)
			}
			r.s.removeScope(sc.ID)
		}
	}
}

// finishLoop completes the body: the output collection is written and the
// body leaves the node.
func (r *runner) finishLoop(body *Track, n *model.Node) {
	if n.Loop.OutputCollection != "" {
		r.storeVar(body.Scope, n.Loop.OutputCollection, body.Loop.Outputs)
	}
	body.Loop, body.State = nil, Ready
	r.disarm(body)
	r.leave(body, n)
}
