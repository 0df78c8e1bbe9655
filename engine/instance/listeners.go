package instance

import (
	"context"
	"fmt"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/script"
)

// Camunda 7's execution listeners run inline, in the step, where Camunda 7
// runs them (docs/scripts-listeners-connectors.md §2.2): a node's start
// listeners after its input mappings, before its work; its end listeners
// after its output mappings, before it is left; a flow's take listeners
// as a token takes it. What they set is part of the step, so they are as
// exactly-once as the step: a crash before the checkpoint is written runs
// them again on the same state, after it never. One that fails faults the
// element it listens to (a take listener: the flow's source), as Camunda
// 7 rolls the transaction back and reports the exception; a retry runs the
// element again.

// enter evaluates n's input mappings into t's locals, then runs n's start
// listeners; false when one failed (n has faulted) or t waits for a Zeebe
// start listener's job (joblisteners.go).
func (r *runner) enter(t *Track, n *model.Node) bool {
	if t.Scope == RootScope && n.Kind == model.StartEvent && len(r.p.Listeners) > 0 &&
		!r.listen(t, n, r.p.Listeners, model.ListenStart, " of the process") {
		return false // the instance starts here: the process's listeners run first
	}
	if t.Scope == RootScope && n.Kind == model.StartEvent && r.listenAt(t, n, ListenerAt{Event: model.ListenStart, Process: true}) {
		return false // the process's Zeebe start listeners' jobs first
	}
	if len(n.Inputs) == 0 && len(n.Listeners) == 0 && len(n.JobListeners) == 0 {
		return true
	}
	locals, ok := r.inputs(t, n)
	if !ok {
		return false
	}
	t.Locals = locals
	if !r.listen(t, n, n.Listeners, model.ListenStart, "") {
		return false
	}
	if n.Kind == model.ParallelGateway && len(r.p.Incoming(n.ID)) > 1 || n.Kind == model.InclusiveGateway && r.p.IsInclusiveJoin(n.ID) {
		return true // a join runs its Zeebe start listeners once, when it joins (parallel, inclusive)
	}
	return !r.listenFrom(t, n, model.ListenStart, 0) // parked on a listener's job, else on with the work
}

// fire runs event n for t as it happens, completing it with vars (a
// message's): its start listeners, then its completion.
func (r *runner) fire(t *Track, n *model.Node, vars map[string]any) {
	if r.enter(t, n) {
		r.complete(t, n, t.Locals, vars)
		return
	}
	if t.State == Waiting {
		// Its Zeebe start listeners run first: it completes with vars
		// after them (joblisteners.go).
		t.Firing, t.Fired = true, vars
	}
}

// ended runs n's end listeners over what t sees (its locals included);
// false when one failed (n has faulted).
func (r *runner) ended(t *Track, n *model.Node) bool {
	return r.listen(t, n, n.Listeners, model.ListenEnd, "")
}

// completing runs the process's end listeners when t, at node n, is the
// instance's last track and ends: the instance completes with it. False
// when one failed (n has faulted).
func (r *runner) completing(t *Track, n *model.Node) bool {
	if len(r.p.Listeners) == 0 || t.Scope != RootScope || len(r.s.Tracks) != 1 {
		return true
	}
	return r.listen(t, n, r.p.Listeners, model.ListenEnd, " of the process")
}

// taking runs the take listeners of flows, in order, for t leaving their
// source, its node; false when one failed (the source has faulted).
func (r *runner) taking(t *Track, flows ...*model.Flow) bool {
	for _, f := range flows {
		if len(f.Listeners) > 0 && !r.listen(t, r.p.Node(t.Node), f.Listeners, model.ListenTake, fmt.Sprintf(" of sequence flow %q", f.ID)) {
			return false
		}
	}
	return true
}

// listen runs those of ls that listen to event, in order, for track t at
// node n; of says whose they are in a failure's message ("" for n's). What
// a listener sets is checked, then written (writeSets).
func (r *runner) listen(t *Track, n *model.Node, ls []model.Listener, event, of string) bool {
	for i := range ls {
		l := &ls[i]
		if l.Event != event {
			continue
		}
		sets, err := r.runListener(t, n, l)
		if err != nil {
			r.fault(t, n, incidents.CauseExpression, fmt.Sprintf("%s execution listener %d%s: %v", event, i+1, of, err))
			return false
		}
		for j := range sets {
			v, ok := r.checkVar(t, n, sets[j].Name, sets[j].Value)
			if !ok {
				return false
			}
			sets[j].Value = v
		}
		r.writeSets(t, sets)
	}
	return true
}

// writeSets writes what a listener set, checked, where Camunda 7's
// execution.setVariable writes it: t's locals when it is one of them
// (setVariableLocal: always), else the innermost scope that has it, else
// the process's.
func (r *runner) writeSets(t *Track, sets []script.Set) {
	for _, set := range sets {
		if _, local := t.Locals[set.Name]; local || set.Local {
			if t.Locals == nil {
				t.Locals = map[string]any{}
			}
			t.Locals[set.Name] = set.Value
			continue
		}
		r.storeVar(t.Scope, set.Name, set.Value)
	}
}

// runListener evaluates l over what t sees and returns what it sets.
func (r *runner) runListener(t *Track, n *model.Node, l *model.Listener) ([]script.Set, error) {
	if p := l.Program(); p != nil {
		res, err := p.Run(context.Background(), script.Env{Vars: r.visible(t), Execution: r.execution(n.ID, t.ID)}, r.env.Scripts)
		if err != nil {
			return nil, err
		}
		return res.Sets, nil
	}
	v, err := l.Compiled().Eval(r.visible(t))
	if err != nil {
		return nil, err
	}
	if l.Set == "" {
		return nil, nil // evaluated for its errors only: its value is dropped
	}
	return []script.Set{{Name: l.Set, Value: v, Local: l.Local}}, nil
}
