package model

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jetbpm/jetbpm/expression"
	"github.com/jetbpm/jetbpm/script"
)

// maxProblems bounds the errors one Validate call reports.
const maxProblems = 20

// Validate checks p and compiles its expressions. It returns every problem
// found (up to 20) joined, each an *Error naming the element; p is usable
// only after Validate returned nil. Validate is idempotent.
func (p *Process) Validate() error {
	v := &validator{p: p}
	v.run()
	if len(v.problems) > 0 {
		p.index = nil
		return errors.Join(v.problems...)
	}
	return nil
}

type validator struct {
	p        *Process
	problems []error
}

func (v *validator) addf(element string, line int, format string, args ...any) {
	if len(v.problems) == maxProblems {
		return
	}
	v.problems = append(v.problems, &Error{Process: v.p.ID, Element: element, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) nodef(n *Node, format string, args ...any) {
	v.addf(n.ID, n.Line, "%s: "+format, append([]any{n.Kind}, args...)...)
}

func (v *validator) run() {
	p := v.p
	if strings.TrimSpace(p.ID) == "" || strings.ContainsAny(p.ID, " \t\r\n") {
		v.addf("", 0, "process id %q must be non-empty and contain no whitespace", p.ID)
	}
	seen := map[string]bool{}
	for _, n := range p.Nodes {
		switch {
		case n.ID == "":
			v.nodef(n, "has no id")
		case seen[n.ID]:
			v.nodef(n, "id %q is used twice", n.ID)
		}
		seen[n.ID] = true
	}
	for _, f := range p.Flows {
		switch {
		case f.ID == "":
			v.addf(f.ID, f.Line, "sequence flow has no id")
		case seen[f.ID]:
			v.addf(f.ID, f.Line, "sequence flow id %q is used twice", f.ID)
		}
		seen[f.ID] = true
	}
	if len(v.problems) > 0 {
		return
	}
	p.index = newIndex(p)
	scopes := map[string]bool{"": true}
	for _, n := range p.Nodes {
		if n.Kind == SubProcess {
			scopes[n.ID] = true
		}
	}
	for _, n := range p.Nodes {
		if !scopes[n.Scope] {
			v.nodef(n, "is inside %q, which is not a sub-process of this process", n.Scope)
		}
		v.node(n)
	}
	if p.StartOf("") == nil && len(p.MessageStarts()) == 0 && len(p.SignalStarts()) == 0 && len(p.TimerStarts()) == 0 {
		v.addf("", 0, "has no none start event and no message, signal or timer start event")
	}
	for _, n := range p.Nodes {
		if n.Kind == SubProcess && !n.TriggeredByEvent && p.StartOf(n.ID) == nil {
			v.nodef(n, "has no none start event inside it")
		}
	}
	v.eventSubScopes()
	for _, f := range p.Flows {
		v.flow(f)
		for i := range f.Listeners {
			if err := f.Listeners[i].compile(f.ID, i, ListenTake); err != nil {
				v.addf(f.ID, f.Line, "%v", err)
			}
		}
	}
	for i := range p.Listeners {
		if err := p.Listeners[i].compile(p.ID, i, ListenStart, ListenEnd); err != nil {
			v.addf("", 0, "%v", err)
		}
	}
	v.processJobListeners(p)
}

func (v *validator) node(n *Node) {
	p := v.p
	out, in := p.Outgoing(n.ID), p.Incoming(n.ID)
	switch n.Kind {
	case StartEvent:
		switch {
		case p.isEventSub(n.Scope):
			v.eventSubStart(n)
		case n.Event == MessageEvent:
			v.messageStart(n)
		case n.Event == SignalEvent:
			v.signalStart(n)
		case n.Event == TimerEvent:
			v.timerStart(n)
		case n.Event == ConditionalEvent:
			v.nodef(n, "process-level conditional start events are not supported (Camunda 7 starts them through an API call); use a message start event, or a conditional start event of an event sub-process")
		case n.Event != NoneEvent:
			v.nodef(n, "%s start events are not supported; use a none, message, signal or timer start event", n.Event)
		default:
			if first := p.StartOf(n.Scope); first != n {
				v.nodef(n, "a scope has one none start event; %q is already one", first.ID)
			}
		}
		if len(in) > 0 {
			v.nodef(n, "has incoming sequence flows")
		}
	case EndEvent:
		switch n.Event {
		case NoneEvent, ErrorEvent, TerminateEvent:
		case MessageEvent:
			v.throw(n)
		case EscalationEvent:
			v.escalationThrow(n)
		case SignalEvent:
			v.signal(n)
		case CompensateEvent:
			v.compensationThrow(n)
		case CancelEvent:
			v.cancelEnd(n)
		default:
			v.nodef(n, "%s end events are not supported", n.Event)
		}
		if len(out) > 0 {
			v.nodef(n, "has outgoing sequence flows")
		}
	case IntermediateCatchEvent:
		switch n.Event {
		case TimerEvent:
			v.timer(n)
		case MessageEvent:
			v.message(n, true)
		case LinkEvent:
			v.link(n)
		case SignalEvent:
			v.signal(n)
		case ConditionalEvent:
			v.conditional(n)
		default:
			v.nodef(n, "only timer, message, signal, conditional and link intermediate catch events are supported")
		}
	case IntermediateThrowEvent:
		switch n.Event {
		case NoneEvent:
		case MessageEvent:
			v.throw(n)
		case LinkEvent:
			v.link(n)
		case EscalationEvent:
			v.escalationThrow(n)
		case SignalEvent:
			v.signal(n)
		case CompensateEvent:
			v.compensationThrow(n)
		default:
			v.nodef(n, "%s intermediate throw events are not supported", n.Event)
		}
	case ReceiveTask:
		if n.Message != nil {
			v.message(n, true) // without: a plain wait state
		}
	case SendTask:
		v.throw(n)
	case EventBasedGateway:
		v.eventGateway(n)
	case BoundaryEvent:
		v.boundary(n)
	case ExclusiveGateway, ParallelGateway, InclusiveGateway:
		if len(out) == 0 {
			v.nodef(n, "has no outgoing sequence flow")
		}
	case ScriptTask:
		if n.Script == nil || strings.TrimSpace(n.Script.Expression) == "" {
			v.nodef(n, "has no script expression")
			break
		}
		switch n.Script.Language {
		case "":
			n.Script.compiled = v.compile(n, "script", n.Script.Expression)
		case script.Language:
			p, err := script.Compile(n.ID, n.Script.Expression)
			if err != nil {
				v.nodef(n, "%v", err)
				break
			}
			n.Script.program = p
		default:
			v.nodef(n, "script language %q is not supported (javascript, or an expression)", n.Script.Language)
		}
	case ServiceTask:
		v.service(n)
	case CallActivity:
		switch {
		case n.Call == nil || strings.TrimSpace(n.Call.ProcessID) == "":
			v.nodef(n, "names no called process")
		case n.Call.Version < 0:
			v.nodef(n, "called version %d is negative", n.Call.Version)
		}
	case UserTask:
		v.human(n)
	case SubProcess:
		if n.TriggeredByEvent {
			v.eventSub(n)
		}
		if n.Transaction && n.TriggeredByEvent {
			v.nodef(n, "an event sub-process cannot be a transaction")
		}
	case Task, ManualTask:
	default:
		v.nodef(n, "unknown node kind")
	}
	if n.Transaction && n.Kind != SubProcess {
		v.nodef(n, "only a sub-process can be a transaction")
	}
	if n.Loop != nil {
		v.loop(n)
	}
	if n.ForCompensation {
		v.compensationHandler(n)
	}
	if n.Handler != "" && (n.Kind != BoundaryEvent || n.Event != CompensateEvent) {
		v.nodef(n, "only compensation boundary events have a compensation handler")
	}
	if n.ActivityRef != "" && n.Event != CompensateEvent {
		v.nodef(n, "only compensation throw and end events have an activityRef")
	}
	if n.Call != nil && n.Kind != CallActivity {
		v.nodef(n, "only call activities call a process")
	}
	if n.Service != nil && n.Kind != ServiceTask && !n.throwsMessage() {
		v.nodef(n, "only service tasks and message throws have an operation, a worker or a timeout")
	}
	if n.Message != nil && n.Event != MessageEvent && n.Kind != ReceiveTask && n.Kind != SendTask {
		v.nodef(n, "has a message but is not a message event, receive task or send task")
	}
	if n.Signal != nil && n.Event != SignalEvent {
		v.nodef(n, "has a signal but is not a signal event")
	}
	if n.Conditional != nil && n.Event != ConditionalEvent {
		v.nodef(n, "has a condition but is not a conditional event")
	}
	if n.Human != nil && n.Kind != UserTask {
		v.nodef(n, "only user tasks have an assignment, a schedule or a form")
	}
	if n.Publish != nil && !n.throwsMessage() {
		v.nodef(n, "only message throw events and send tasks publish a message")
	}
	if n.Kind != BoundaryEvent && n.Timer != nil && n.Kind != IntermediateCatchEvent && n.Kind != StartEvent {
		v.nodef(n, "only catch and boundary events can have a timer")
	}
	if n.IncidentRetry != nil {
		if !n.Kind.IsActivity() {
			v.nodef(n, "only activities have an incident retry policy")
		} else if err := n.IncidentRetry.Validate(); err != nil {
			v.nodef(n, "incident retry policy: %v", err)
		}
	}
	if n.Kind.IsActivity() {
		var caught []*Node
		for _, b := range p.Boundaries(n.ID) {
			if b.Event == MessageEvent {
				caught = append(caught, b)
			}
		}
		v.distinctMessages(n, caught, "message boundary events")
		v.distinctEscalations(n)
	}
	if n.Escalation != "" && n.Event != EscalationEvent {
		v.nodef(n, "only escalation events have an escalation code")
	}
	if n.Link != "" && n.Event != LinkEvent {
		v.nodef(n, "only link events have a link name")
	}
	// A message throw that runs a job has a job's mappings (Zeebe allows
	// them on job-worker throw and end events); a none throw event
	// (a milestone) has them to record that it was reached.
	jobThrow := n.throwsMessage() && n.Service != nil
	// A link throw maps before it jumps, as in Camunda 7.
	milestone := n.Kind == IntermediateThrowEvent && (n.Event == NoneEvent || n.Event == LinkEvent)
	// A signal throw's input mappings are the signal's variables.
	signalThrow := n.Event == SignalEvent && (n.Kind == IntermediateThrowEvent || n.Kind == EndEvent)
	if len(n.Inputs) > 0 && !n.Kind.IsActivity() && !jobThrow && !milestone && !signalThrow {
		v.nodef(n, "only activities, none intermediate throw events, signal throws and message throws that run a job have input mappings")
	}
	if len(n.Outputs) > 0 && !n.Kind.HasOutputs() && !jobThrow && !milestone {
		v.nodef(n, "only activities, catching events, none intermediate throw events and message throws that run a job have output mappings")
	}
	for i := range n.Inputs {
		v.mapping(n, "input", &n.Inputs[i])
	}
	for i := range n.Outputs {
		v.mapping(n, "output", &n.Outputs[i])
	}
	for i := range n.Listeners {
		if err := n.Listeners[i].compile(n.ID, i, ListenStart, ListenEnd); err != nil {
			v.nodef(n, "%v", err)
		}
	}
	v.checkJobListeners(n, p)
	v.checkTaskJobListeners(n)
	if len(n.TaskListeners) > 0 && n.Kind != UserTask {
		v.nodef(n, "only user tasks have task listeners")
	}
	for i := range n.TaskListeners {
		if err := n.TaskListeners[i].compile(n.ID+"/task", i, ListenCreate, ListenAssignment, ListenUpdate, ListenComplete, ListenDelete, ListenTimeout); err != nil {
			v.nodef(n, "%v", err)
		}
	}
	if n.Default != "" {
		f := p.Flow(n.Default)
		if f == nil || f.Source != n.ID {
			v.nodef(n, "default flow %q is not one of its outgoing flows", n.Default)
		} else if f.Condition != "" {
			v.nodef(n, "default flow %q must not have a condition", n.Default)
		}
	}
}

func (v *validator) service(n *Node) {
	s := n.Service
	switch {
	case s == nil || s.Operation == "" && s.Worker == nil:
		v.nodef(n, "has neither an in-process operation nor an external worker topic")
	case s.Operation != "" && s.Worker != nil:
		v.nodef(n, "has both an in-process operation %q and an external worker topic %q; choose one", s.Operation, s.Worker.Topic+s.Worker.TopicExpr)
	case s.Worker != nil && s.Worker.TopicExpr != "" && s.Worker.Topic != "":
		v.nodef(n, "external worker has both a topic %q and a topic expression %q; choose one", s.Worker.Topic, s.Worker.TopicExpr)
	case s.Worker != nil && s.Worker.TopicExpr == "" && strings.TrimSpace(s.Worker.Topic) == "":
		v.nodef(n, "external worker has an empty topic")
	case s.Timeout < 0:
		v.nodef(n, "timeout %v is negative", s.Timeout)
	case s.Worker != nil && s.Timeout > 0:
		v.nodef(n, "a timeout (model.Timeout) applies to in-process operations only; external jobs use lock durations")
	case s.Worker != nil && s.Worker.Retries < 0:
		v.nodef(n, "retries %d is negative", s.Worker.Retries)
	case s.Worker != nil:
		if err := s.Worker.Overrides().Validate(); err != nil {
			v.nodef(n, "worker options: %v", err)
		}
		if s.Worker.TopicExpr != "" {
			s.Worker.topic = v.compile(n, "topic", s.Worker.TopicExpr)
		}
	}
}

func (v *validator) boundary(n *Node) {
	host := v.p.Node(n.AttachedTo)
	switch {
	case host == nil:
		v.nodef(n, "is attached to %q, which does not exist", n.AttachedTo)
	case !host.Kind.IsActivity():
		v.nodef(n, "is attached to %s %q; boundary events attach to activities", host.Kind, host.ID)
	case host.Scope != n.Scope:
		v.nodef(n, "is attached to %q in another scope", host.ID)
	}
	switch n.Event {
	case ErrorEvent:
		if !n.Interrupting {
			v.nodef(n, "error boundary events are always interrupting")
		}
	case TimerEvent:
		v.timer(n)
	case MessageEvent:
		v.message(n, true)
	case EscalationEvent:
		v.escalationBoundary(n)
	case SignalEvent:
		v.signal(n)
	case ConditionalEvent:
		v.conditional(n)
	case CompensateEvent:
		v.compensationBoundary(n)
	case CancelEvent:
		v.cancelBoundary(n)
	default:
		v.nodef(n, "only error, timer, message, escalation, signal, conditional, compensation and cancel boundary events are supported")
	}
	if len(v.p.Incoming(n.ID)) > 0 {
		v.nodef(n, "boundary events cannot have incoming sequence flows")
	}
	if len(v.p.Outgoing(n.ID)) == 0 && n.Event != CompensateEvent {
		v.nodef(n, "has no outgoing sequence flow")
	}
}

// timerStart checks a process-level timer start event: one per process,
// since the engine keeps one schedule per process (docs/timerstart.md).
func (v *validator) timerStart(n *Node) {
	v.timer(n)
	if n.Timer != nil && n.Timer.Expr != "" {
		v.nodef(n, "a timer start event's value must be a literal, not an expression: there are no variables before the instance starts")
	}
	if first := v.p.TimerStarts()[0]; first != n {
		v.nodef(n, "a process has at most one timer start event; %q is already one", first.ID)
	}
}

func (v *validator) timer(n *Node) {
	if n.Timer == nil {
		v.nodef(n, "has no timer definition")
		return
	}
	if err := n.Timer.compile(); err != nil {
		v.nodef(n, "%v", err)
	}
}

func (v *validator) mapping(n *Node, what string, m *Mapping) {
	nested := what == "input" || what == "output"
	if !validVariable(m.Target) && !(nested && validPath(m.Target)) {
		v.nodef(n, "%s mapping target %q is not a variable name", what, m.Target)
		return
	}
	switch m.Language {
	case "":
		m.compiled = v.compile(n, what+" mapping "+m.Target, m.Source)
	case script.Language:
		p, err := script.Compile(n.ID+"/"+m.Target, m.Source)
		if err != nil {
			v.nodef(n, "%s mapping %q: %v", what, m.Target, err)
			return
		}
		m.program = p
	default:
		v.nodef(n, "%s mapping %q: language %q is not supported (javascript, or an expression)", what, m.Target, m.Language)
	}
}

func (v *validator) flow(f *Flow) {
	p := v.p
	src, dst := p.Node(f.Source), p.Node(f.Target)
	if src == nil || dst == nil {
		v.addf(f.ID, f.Line, "sequence flow connects %q to %q; both must be nodes of this process", f.Source, f.Target)
		return
	}
	if src.Scope != dst.Scope {
		v.addf(f.ID, f.Line, "sequence flow crosses a sub-process boundary (%q to %q)", f.Source, f.Target)
	}
	if f.Condition == "" {
		f.cond, f.program = nil, nil
		return
	}
	if src.Kind == ParallelGateway {
		v.addf(f.ID, f.Line, "sequence flow out of parallel gateway %q cannot have a condition", src.ID)
		return
	}
	switch f.Language {
	case "":
	case script.Language:
		p, err := script.Compile(f.ID, f.Condition)
		if err != nil {
			v.addf(f.ID, f.Line, "condition: %v", err)
			return
		}
		f.program = p
		return
	default:
		v.addf(f.ID, f.Line, "condition language %q is not supported (javascript, or an expression)", f.Language)
		return
	}
	e, err := expression.Compile(f.Condition)
	if err != nil {
		v.addf(f.ID, f.Line, "condition: %v", err)
		return
	}
	f.cond = e
}

func (v *validator) compile(n *Node, what, src string) *expression.Expression {
	e, err := expression.Compile(src)
	if err != nil {
		v.nodef(n, "%s: %v", what, err)
		return nil
	}
	return e
}

// validVariable reports whether s can name a variable: an identifier that
// expressions can refer to.
// validPath reports whether s is a nested target: variable names joined
// by dots ("authentication.type").
func validPath(s string) bool {
	for part := range strings.SplitSeq(s, ".") {
		if !validVariable(part) {
			return false
		}
	}
	return true
}

func validVariable(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
