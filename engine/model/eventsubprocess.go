package model

import "fmt"

// An event sub-process (a SubProcess with TriggeredByEvent) belongs to the
// scope it is declared in: the process ("") or an embedded sub-process.
// It has no sequence flows in or out; its one start event — timer,
// message, signal, error or escalation — is its trigger, armed for as long as an
// activation of its scope runs (docs/eventsubprocesses.md). Interrupting
// is set on the event sub-process node itself.

// eventSubs indexes the event sub-processes of a process.
type eventSubs struct {
	byScope map[string][]*Node // scope -> start events of its event sub-processes
	start   map[string]*Node   // event sub-process -> its first start event
}

func newEventSubs(p *Process) eventSubs {
	subs := eventSubs{byScope: map[string][]*Node{}, start: map[string]*Node{}}
	esp := map[string]*Node{}
	for _, n := range p.Nodes {
		if n.Kind == SubProcess && n.TriggeredByEvent {
			esp[n.ID] = n
		}
	}
	for _, n := range p.Nodes {
		sp := esp[n.Scope]
		if n.Kind != StartEvent || sp == nil || subs.start[sp.ID] != nil {
			continue
		}
		subs.start[sp.ID] = n
		subs.byScope[sp.Scope] = append(subs.byScope[sp.Scope], n)
	}
	return subs
}

// EventSubStarts returns the start events of the event sub-processes of a
// scope ("" for the process, or an embedded sub-process's id), in
// declaration order.
func (p *Process) EventSubStarts(scope string) []*Node { return p.index.eventSubs.byScope[scope] }

// EventSubStart returns the start event of event sub-process id, nil if
// id is not one.
func (p *Process) EventSubStart(id string) *Node { return p.index.eventSubs.start[id] }

// EventSubProcess adds an event sub-process to the builder's scope and
// returns a builder for its contents: one start event (TimerStartEvent,
// MessageStartEvent with a CorrelationKey, SignalStartEvent,
// ErrorStartEvent or EscalationStartEvent) and what follows it. An interrupting one ends
// every other token of its scope when it is triggered; a non-interrupting
// one runs beside them, as often as it is triggered.
func (b *Builder) EventSubProcess(id string, interrupting bool, opts ...NodeOption) *Builder {
	b.node(id, SubProcess, NoneEvent, append([]NodeOption{func(n *Node) {
		n.TriggeredByEvent, n.Interrupting = true, interrupting
	}}, opts...))
	return &Builder{p: b.p, scope: id, flows: b.flows}
}

// TimerStartEvent adds a start event that fires on a timer.
func (b *Builder) TimerStartEvent(id string, t Timer, opts ...NodeOption) *Builder {
	return b.node(id, StartEvent, TimerEvent, append([]NodeOption{func(n *Node) { n.Timer = &t }}, opts...))
}

// ErrorStartEvent adds the start event of an error event sub-process: it
// catches BPMN errors with code thrown in its scope, or every error when
// code is "".
func (b *Builder) ErrorStartEvent(id, code string, opts ...NodeOption) *Builder {
	return b.node(id, StartEvent, ErrorEvent, append([]NodeOption{func(n *Node) { n.ErrorCode = code }}, opts...))
}

// CorrelationKey sets the correlation key expression of a message start
// event of an event sub-process, evaluated when its scope starts.
func CorrelationKey(expr string) NodeOption {
	return func(n *Node) {
		if n.Message == nil {
			n.Message = &Message{}
		}
		n.Message.CorrelationKey = expr
	}
}

// isEventSub reports whether node id is an event sub-process.
func (p *Process) isEventSub(id string) bool {
	n := p.Node(id)
	return n != nil && n.Kind == SubProcess && n.TriggeredByEvent
}

// eventSub checks an event sub-process node.
func (v *validator) eventSub(n *Node) {
	p := v.p
	switch {
	case len(p.Incoming(n.ID)) > 0 || len(p.Outgoing(n.ID)) > 0:
		v.nodef(n, "an event sub-process has no incoming or outgoing sequence flows")
	case len(p.Boundaries(n.ID)) > 0:
		v.nodef(n, "an event sub-process has no boundary events")
	case n.Loop != nil:
		v.nodef(n, "an event sub-process cannot be multi-instance")
	case len(n.Inputs) > 0:
		v.nodef(n, "an event sub-process has no input mappings")
	case p.isEventSub(n.Scope):
		v.nodef(n, "event sub-processes inside an event sub-process are not supported")
	case p.EventSubStart(n.ID) == nil:
		v.nodef(n, "has no start event inside it")
	}
}

// eventSubStart checks the start event of an event sub-process.
func (v *validator) eventSubStart(n *Node) {
	sp := v.p.Node(n.Scope)
	if first := v.p.EventSubStart(sp.ID); first != n {
		v.nodef(n, "an event sub-process has one start event; %q is already its start", first.ID)
		return
	}
	switch n.Event {
	case TimerEvent:
		v.timer(n)
	case MessageEvent:
		v.message(n, true)
	case ErrorEvent:
		if !sp.Interrupting {
			v.nodef(n, "an error event sub-process is always interrupting")
		}
	case EscalationEvent:
	case SignalEvent:
		v.signal(n)
	case ConditionalEvent:
		v.conditional(n)
	case CompensateEvent:
		v.compensationEventSub(sp)
	case NoneEvent:
		v.nodef(n, "an event sub-process starts on a timer, message, signal, conditional, error or escalation start event, not a none start event")
	default:
		v.nodef(n, "%s start events of event sub-processes are not supported", n.Event)
	}
}

// eventSubScopes refuses, per scope, two event sub-processes that wait
// for the same message or signal (a literal name) or catch the same error
// or escalation code ("" being every code): which of them a trigger reaches would be arbitrary.
func (v *validator) eventSubScopes() {
	for _, scope := range v.p.Nodes {
		if scope.Kind != SubProcess || scope.TriggeredByEvent {
			continue
		}
		v.eventSubScope(scope.ID)
	}
	v.eventSubScope("")
}

func (v *validator) eventSubScope(scope string) {
	starts := v.p.EventSubStarts(scope)
	if len(starts) == 0 {
		return
	}
	var msgs []*Node
	seen := map[string]*Node{}
	for _, s := range starts {
		var key string
		switch s.Event {
		case MessageEvent:
			msgs = append(msgs, s)
			continue
		case ErrorEvent:
			key = "error " + fmt.Sprintf("%q", s.ErrorCode)
		case EscalationEvent:
			key = "escalation " + fmt.Sprintf("%q", s.Escalation)
		case SignalEvent:
			if s.Signal == nil || s.Signal.NameExpr != "" {
				continue // a name expression is known when the scope starts
			}
			key = "signal " + fmt.Sprintf("%q", s.Signal.Name)
		default:
			continue
		}
		if first := seen[key]; first != nil {
			v.nodef(s, "event sub-processes %q and %q of one scope both catch %s", first.Scope, s.Scope, codeText(key))
			continue
		}
		seen[key] = s
	}
	if len(msgs) > 1 {
		v.distinctMessages(msgs[len(msgs)-1], msgs, "message event sub-process starts")
	}
}

// codeText words a catch key of eventSubScope: `error "E1"`, or every
// error for the empty code.
func codeText(key string) string {
	switch key {
	case `error ""`:
		return "every error"
	case `escalation ""`:
		return "every escalation"
	}
	return key
}
