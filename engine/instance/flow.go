package instance

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/script"
)

func (r *runner) execute(t *Track) {
	n := r.p.Node(t.Node)
	if n == nil {
		r.bug("track %s at unknown node %q", t.ID, t.Node)
	}
	if n.Loop != nil && !t.Inner {
		r.enterLoop(t, n)
		return
	}
	if t.State == Ready && t.Listener != nil {
		r.resumeListener(t, n) // an incident's retry: its listener runs again
		return
	}
	if t.State == Ready && !r.enter(t, n) {
		return
	}
	switch n.Kind {
	case model.StartEvent, model.BoundaryEvent:
		r.complete(t, n, nil, nil)
	case model.Task, model.ManualTask:
		r.complete(t, n, t.Locals, nil)
	case model.EndEvent:
		r.end(t, n)
	case model.IntermediateCatchEvent:
		switch n.Event {
		case model.MessageEvent:
			r.catchMessage(t, n)
		case model.LinkEvent:
			r.complete(t, n, nil, nil) // its throw brought the token here
		case model.SignalEvent:
			r.catchSignal(t, n)
		case model.ConditionalEvent:
			r.catchConditional(t, n)
		default:
			r.catchTimer(t, n)
		}
	case model.ReceiveTask:
		if n.Message == nil {
			r.waitTrigger(t, n)
		} else {
			r.receive(t, n)
		}
	case model.SendTask:
		r.throwMessage(t, n)
	case model.IntermediateThrowEvent:
		switch n.Event {
		case model.MessageEvent:
			r.throwMessage(t, n)
		case model.LinkEvent:
			r.throwLink(t, n)
		case model.EscalationEvent:
			r.throwEscalation(t, n)
		case model.SignalEvent:
			r.throwSignal(t, n)
		case model.CompensateEvent:
			r.throwCompensation(t, n)
		default:
			// A none throw event passes the token on, through its
			// mappings (a milestone).
			r.complete(t, n, t.Locals, nil)
		}
	case model.EventBasedGateway:
		r.eventGateway(t, n)
	case model.ScriptTask:
		r.script(t, n)
	case model.ServiceTask:
		r.service(t, n)
	case model.ExclusiveGateway:
		r.exclusive(t, n)
	case model.ParallelGateway:
		r.parallel(t, n)
	case model.InclusiveGateway:
		r.inclusive(t, n)
	case model.SubProcess:
		r.enterSubProcess(t, n)
	case model.CallActivity:
		r.call(t, n)
	case model.UserTask:
		r.userTask(t, n)
	default:
		r.bug("node %q has unknown kind %q", n.ID, n.Kind)
	}
}

// move sends t along flow to the flow's target, as a new activation,
// once the flow's take listeners ran.
func (r *runner) move(t *Track, f *model.Flow) {
	if len(f.Listeners) > 0 && !r.taking(t, f) {
		return
	}
	r.moveTo(t, f.Target, f.ID)
}

// moveTo sends t to node, arriving by flow ("" for none: a link), as a
// new activation.
func (r *runner) moveTo(t *Track, node, flow string) {
	r.s.pass(t.Node, flow)
	r.retrySucceeded(t)
	t.Node, t.Flow, t.State, t.Locals, t.BoundariesArmed, t.Listener = node, flow, Ready, nil, false, nil
	t.Firing, t.Fired = false, nil
	t.Activation = r.next()
	t.EnteredAt = r.env.Now
}

// take moves t along the first flow and spawns a track for each other one.
func (r *runner) take(t *Track, flows []*model.Flow) {
	if !r.taking(t, flows...) {
		return
	}
	for i, f := range flows {
		if i == 0 {
			continue
		}
		r.s.pass(f.ID)
		r.spawn(f.Target, t.Scope, t.ID, f.ID)
	}
	r.moveTo(t, flows[0].Target, flows[0].ID)
}

// leave takes n's outgoing flows: every flow without a condition and every
// flow whose condition holds; the default flow only when none does. A node
// without outgoing flows ends the track.
func (r *runner) leave(t *Track, n *model.Node) {
	if len(r.p.Outgoing(n.ID)) == 0 {
		r.endTrack(t)
		return
	}
	if taken := r.holding(t, n, "no outgoing sequence flow can be taken: no condition holds and there is no default flow"); taken != nil {
		r.take(t, taken)
	}
}

// holding returns n's outgoing flows whose condition holds (a flow
// without one always does), else its default flow. When there are none,
// or a condition cannot be evaluated, n faults (cause expression, with
// none as the message for the first case) and holding returns nil.
func (r *runner) holding(t *Track, n *model.Node, none string) []*model.Flow {
	var taken []*model.Flow
	for _, f := range r.p.Outgoing(n.ID) {
		if f.ID == n.Default {
			continue
		}
		ok, err := r.holds(t, f)
		if err != nil {
			r.fault(t, n, incidents.CauseExpression, err.Error())
			return nil
		}
		if ok {
			taken = append(taken, f)
		}
	}
	if len(taken) == 0 && n.Default != "" {
		taken = append(taken, r.p.Flow(n.Default))
	}
	if len(taken) == 0 {
		r.fault(t, n, incidents.CauseExpression, none)
		return nil
	}
	return taken
}

func (r *runner) holds(t *Track, f *model.Flow) (bool, error) {
	if p := f.Program(); p != nil {
		ok, err := r.jsCondition(t, p)
		if err != nil {
			return false, fmt.Errorf("condition of sequence flow %q: %w", f.ID, err)
		}
		return ok, nil
	}
	c := f.Compiled()
	if c == nil {
		return true, nil
	}
	ok, err := c.EvalBool(r.visible(t))
	if err != nil {
		return false, fmt.Errorf("condition of sequence flow %q: %w", f.ID, err)
	}
	return ok, nil
}

// exclusive takes the first flow, in declaration order, whose condition
// holds (a flow without one always does), else the default flow.
func (r *runner) exclusive(t *Track, n *model.Node) {
	for _, f := range r.p.Outgoing(n.ID) {
		if f.ID == n.Default {
			continue
		}
		ok, err := r.holds(t, f)
		if err != nil {
			r.fault(t, n, incidents.CauseExpression, err.Error())
			return
		}
		if ok {
			if r.ended(t, n) {
				r.move(t, f)
			}
			return
		}
	}
	if n.Default != "" {
		if r.ended(t, n) {
			r.move(t, r.p.Flow(n.Default))
		}
		return
	}
	r.fault(t, n, incidents.CauseExpression, fmt.Sprintf("exclusive gateway %q: no condition holds and there is no default flow", n.ID))
}

// parallel joins one track from every incoming flow of the same scope, then
// forks to every outgoing flow.
func (r *runner) parallel(t *Track, n *model.Node) {
	in := r.p.Incoming(n.ID)
	if len(in) > 1 && t.State != Entered { // Entered: joined, its start listeners done
		t.State = Joining
		arrived := make(map[string]*Track, len(in))
		for _, o := range r.s.Tracks {
			if o.Node == n.ID && o.Scope == t.Scope && o.State == Joining && arrived[o.Flow] == nil {
				arrived[o.Flow] = o
			}
		}
		for _, f := range in {
			if arrived[f.ID] == nil {
				return // keep waiting
			}
		}
		for _, f := range in {
			if o := arrived[f.ID]; o != t {
				r.s.removeTrack(o.ID)
			}
		}
		if r.listenFrom(t, n, model.ListenStart, 0) {
			return // joined: its Zeebe start listeners run once, now
		}
	}
	if r.ended(t, n) {
		r.take(t, r.p.Outgoing(n.ID))
	}
}

func (r *runner) script(t *Track, n *model.Node) {
	locals := t.Locals // its inputs, evaluated as it was entered
	if p := n.Script.Program(); p != nil {
		r.javaScript(t, n, p, locals)
		return
	}
	v, err := n.Script.Compiled().Eval(r.visibleWith(t, locals))
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, fmt.Sprintf("script: %v", err))
		return
	}
	if n.Script.ResultVariable == "" {
		r.complete(t, n, locals, nil) // evaluated for nothing but its errors, as Camunda 7 does
		return
	}
	r.complete(t, n, locals, map[string]any{n.Script.ResultVariable: v})
}

// javaScript runs script task n's JavaScript program p with Camunda 7's
// facade: the variables it sets are written as execution.setVariable
// writes them (the innermost scope that holds the name, else the
// process's; setVariableLocal: the task's locals), then the task
// completes with the value of its last statement as its result. A script
// that throws or runs over its limits is an incident at the task, and
// writes nothing.
func (r *runner) javaScript(t *Track, n *model.Node, p *script.Program, locals map[string]any) {
	res, err := p.Run(context.Background(), script.Env{
		Vars:      r.visibleWith(t, locals),
		Execution: r.execution(n.ID, t.ID),
	}, r.env.Scripts)
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	values := make([]any, len(res.Sets))
	for i, set := range res.Sets {
		v, ok := r.checkVar(t, n, set.Name, set.Value)
		if !ok {
			return
		}
		values[i] = v
	}
	for i, set := range res.Sets {
		if set.Local {
			if locals == nil {
				locals = map[string]any{}
			}
			locals[set.Name] = values[i]
			continue
		}
		r.storeVar(t.Scope, set.Name, values[i])
	}
	var results map[string]any
	if n.Script.ResultVariable != "" {
		results = map[string]any{n.Script.ResultVariable: res.Value}
	}
	r.complete(t, n, locals, results)
}

// jsCondition runs JavaScript condition p over what track t sees: its
// value must be a boolean, as Camunda 7 requires; a condition that sets
// variables is refused (a condition only reads).
func (r *runner) jsCondition(t *Track, p *script.Program) (bool, error) {
	res, err := p.Run(context.Background(), script.Env{Vars: r.visible(t), Execution: r.execution(t.Node, t.ID)}, r.env.Scripts)
	if err != nil {
		return false, err
	}
	if len(res.Sets) > 0 {
		return false, fmt.Errorf("the script sets variable %q: a condition only reads", res.Sets[0].Name)
	}
	ok, isBool := res.Value.(bool)
	if !isBool {
		return false, fmt.Errorf("the script gives %s, want a boolean", describe(res.Value))
	}
	return ok, nil
}

// execution names instance, element and token (track id, "" for none)
// for a script's facade.
func (r *runner) execution(element, token string) script.Execution {
	return script.Execution{
		ProcessInstanceID: r.s.ID, BusinessKey: r.s.BusinessKey, ActivityID: element,
		ProcessDefinitionID: fmt.Sprintf("%s:%d", r.s.ProcessID, r.s.Version), ID: token,
	}
}

// taskInput returns a service task's locals (its inputs, evaluated as it
// was entered) and what the work receives: the mapped inputs when there
// are any, else every variable the task can see.
func (r *runner) taskInput(t *Track, n *model.Node) (locals, input map[string]any) {
	if len(n.Inputs) > 0 {
		return t.Locals, t.Locals
	}
	return t.Locals, r.visible(t)
}

// complete writes an activity's results through its output mappings (or
// all results when it has none), disarms its boundaries and leaves it.
func (r *runner) complete(t *Track, n *model.Node, locals, results map[string]any) {
	names, values, ok := r.outputs(t, n, locals, results)
	if !ok {
		return
	}
	if t.Inner {
		if len(n.Listeners) > 0 || len(n.JobListeners) > 0 {
			if t.Locals = locals; !r.ended(t, n) {
				return
			}
			if r.listenFrom(t, n, model.ListenEnd, 0) {
				t.Results, t.ResultNames = values, names // the iteration completes after them (leaveEnded)
				return
			}
		}
		r.journal(t, n, locals, values)
		r.completeIteration(t, names, values)
		return
	}
	for _, k := range names {
		r.storeVar(t.Scope, k, values[k])
	}
	if len(n.Listeners) > 0 || len(n.JobListeners) > 0 {
		if t.Locals = locals; !r.ended(t, n) || r.listenFrom(t, n, model.ListenEnd, 0) {
			return // failed, or parked on an end listener's job
		}
	}
	r.journal(t, n, locals, nil)
	r.disarm(t)
	r.leave(t, n)
}

// outputs evaluates what a completing activity writes: its output mappings
// over its variables, locals and results, or every result when it has
// none (none when its worker keeps its results local). All values are checked before any is written, so a failure writes
// nothing; ok is false then (the node has faulted).
func (r *runner) outputs(t *Track, n *model.Node, locals, results map[string]any) (names []string, values map[string]any, ok bool) {
	values = map[string]any{}
	if len(n.Outputs) > 0 {
		env := r.visibleWith(t, locals)
		maps.Copy(env, results)
		for i := range n.Outputs {
			m := &n.Outputs[i]
			v, sets, err := r.evalMapping(t, n, m, env)
			if err != nil {
				r.fault(t, n, incidents.CauseExpression, fmt.Sprintf("output mapping %q: %v", m.Target, err))
				return nil, nil, false
			}
			// What an output script sets is written with the outputs; a
			// local set dies with the activity, as in Camunda 7.
			for _, set := range sets {
				if !set.Local {
					names, values[set.Name] = append(names, set.Name), set.Value
					env[set.Name] = set.Value
				}
			}
			name := assign(values, m, v, env)
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	} else if n.Service == nil || n.Service.Worker == nil || !n.Service.Worker.ResultsLocal {
		names = sortedKeys(results)
		maps.Copy(values, results)
	}
	for _, k := range names {
		v, ok := r.checkVar(t, n, k, values[k])
		if !ok {
			return nil, nil, false
		}
		values[k] = v
	}
	return names, values, true
}

func (r *runner) enterSubProcess(t *Track, n *model.Node) {
	locals := t.Locals // its inputs, evaluated as it was entered
	sc := &Scope{ID: fmt.Sprintf("s%d", r.next()), Parent: t.Scope, Owner: t.ID, Vars: locals}
	r.s.Scopes = append(r.s.Scopes, sc)
	t.State = Waiting
	if !r.armBoundaries(t, n) {
		return
	}
	if err := r.openEventSubs(sc, r.visibleWith(t, locals)); err != nil {
		r.unpark(t, n)
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	r.spawn(r.p.StartOf(n.ID).ID, sc.ID, t.ID, "")
}

func (r *runner) catchTimer(t *Track, n *model.Node) {
	tm, value, err := resolveTimer(n, r.visible(t))
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	due, ok := tm.Due(r.env.Now, 0)
	if !ok || !due.After(r.env.Now) {
		r.complete(t, n, nil, nil)
		return
	}
	t.State = Waiting
	r.arm(&Wait{ID: r.waitID(n.ID, t.Activation), Kind: TimerWait, Track: t.ID, Node: n.ID, Due: due, Armed: r.env.Now, Timer: value})
}
