package model

import (
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/expression"
)

// Message names the message a node catches or throws.
//
// Name is the message name as written; NameExpr, when set, is an
// expression evaluated when the node is entered that gives the name
// instead (Zeebe allows a FEEL name). CorrelationKey is an expression
// evaluated when a catch opens its subscription; its value must be a
// string or a number. An empty CorrelationKey (Camunda 7 models carry no
// key) makes the catch reachable by the instance's business key, if it
// has one, and always by instance id. A message start event has no key.
type Message struct {
	Name           string `msgpack:"name,omitempty"`
	NameExpr       string `msgpack:"nameExpr,omitempty"`
	CorrelationKey string `msgpack:"key,omitempty"`

	name, key *expression.Expression
}

// NameCompiled returns the compiled name expression, nil for a literal name.
func (m *Message) NameCompiled() *expression.Expression { return m.name }

// KeyCompiled returns the compiled correlation key expression, nil when
// the message has no key.
func (m *Message) KeyCompiled() *expression.Expression { return m.key }

// Publish is a declarative message throw (the jetbpm:publish extension):
// the engine publishes the node's message itself, with the correlation
// key CorrelationKey evaluates to and the variables Variables map, and
// the node completes at once. TTL buffers the message for a subscription
// that opens later (0: not buffered); MessageID, an expression, refuses a
// second publish of the same id while the first is buffered.
type Publish struct {
	CorrelationKey string        `msgpack:"key,omitempty"`
	Variables      []Mapping     `msgpack:"vars,omitempty"`
	TTL            time.Duration `msgpack:"ttl,omitempty"`
	MessageID      string        `msgpack:"id,omitempty"`

	key, id *expression.Expression
}

// KeyCompiled returns the compiled correlation key expression, nil when none.
func (p *Publish) KeyCompiled() *expression.Expression { return p.key }

// IDCompiled returns the compiled message id expression, nil when none.
func (p *Publish) IDCompiled() *expression.Expression { return p.id }

// throwsMessage reports whether n is a message throw: a send task, or an
// intermediate throw or end event with a message definition.
func (n *Node) throwsMessage() bool {
	return n.Kind == SendTask || n.Event == MessageEvent && (n.Kind == IntermediateThrowEvent || n.Kind == EndEvent)
}

// message checks a message catch: a name (or name expression) and, when
// keyed, a correlation key expression; both are compiled.
func (v *validator) message(n *Node, keyed bool) {
	m := n.Message
	if m == nil {
		v.nodef(n, "has no message")
		return
	}
	switch {
	case m.NameExpr != "":
		m.name = v.compile(n, "message name", m.NameExpr)
	case strings.TrimSpace(m.Name) == "":
		v.nodef(n, "message has no name")
	}
	if m.CorrelationKey == "" {
		m.key = nil
		return
	}
	if !keyed {
		if n.Kind == StartEvent {
			v.nodef(n, "a message start event has no correlation key")
		} else {
			v.nodef(n, "a message throw's correlation key is its publish's (jetbpm:publish correlationKey), not its message's")
		}
		return
	}
	m.key = v.compile(n, "correlation key", m.CorrelationKey)
}

// messageStart checks a message start event: at process level, a literal
// name no other message start of the process uses.
func (v *validator) messageStart(n *Node) {
	v.message(n, false)
	switch {
	case n.Scope != "":
		v.nodef(n, "message start events are supported at process level only")
	case n.Message != nil && n.Message.NameExpr != "":
		v.nodef(n, "a message start event's name must be a literal, not an expression")
	}
	for _, o := range v.p.MessageStarts() {
		if o == n {
			break
		}
		if n.Message != nil && o.Message != nil && o.Message.Name == n.Message.Name {
			v.nodef(n, "message start %q is already the start event for message %q", o.ID, o.Message.Name)
		}
	}
}

// throw checks a message throw: a job (worker or operation, checked as a
// service task's), a declarative publish, or, for a send task or throw
// event with neither, an error naming both ways.
func (v *validator) throw(n *Node) {
	switch {
	case n.Service != nil && n.Publish != nil:
		v.nodef(n, "both runs a job and publishes its message (jetbpm:publish); choose one")
	case n.Service != nil:
		v.service(n)
	case n.Publish != nil:
		v.message(n, false)
		pub := n.Publish
		if pub.CorrelationKey != "" {
			pub.key = v.compile(n, "publish correlation key", pub.CorrelationKey)
		}
		if pub.MessageID != "" {
			pub.id = v.compile(n, "publish message id", pub.MessageID)
		}
		if pub.TTL < 0 {
			v.nodef(n, "publish time to live %v is negative", pub.TTL)
		}
		for i := range pub.Variables {
			v.mapping(n, "publish variable", &pub.Variables[i])
		}
	default:
		v.nodef(n, "throws a message but neither runs a job (a worker topic) nor publishes it (jetbpm:publish)")
	}
}

// eventGateway checks an event-based gateway: two or more unconditional
// flows, each to a message, signal or timer catch event or a receive task
// with a message that
// only this gateway reaches.
func (v *validator) eventGateway(n *Node) {
	out := v.p.Outgoing(n.ID)
	if len(out) < 2 {
		v.nodef(n, "needs at least two outgoing sequence flows")
	}
	for _, f := range out {
		t := v.p.Node(f.Target)
		if t == nil {
			continue // the flow's own check reports it
		}
		if f.Condition != "" {
			v.nodef(n, "outgoing sequence flow %q has a condition; an event-based gateway's flows have none", f.ID)
		}
		catch := t.Kind == IntermediateCatchEvent && (t.Event == MessageEvent || t.Event == TimerEvent || t.Event == SignalEvent) || t.Kind == ReceiveTask
		switch {
		case !catch:
			v.nodef(n, "sequence flow %q leads to %s %q; an event-based gateway leads to message, signal or timer catch events or receive tasks", f.ID, t.Kind, t.ID)
		case t.Kind == ReceiveTask && t.Message == nil:
			v.nodef(n, "receive task %q after the gateway has no message; a branch waits for an event (a plain receive task waits for Engine.Trigger)", t.ID)
		case len(v.p.Incoming(t.ID)) != 1:
			v.nodef(n, "%q after the gateway must have no other incoming sequence flow", t.ID)
		case t.Kind == ReceiveTask && len(v.p.Boundaries(t.ID)) > 0:
			v.nodef(n, "receive task %q after the gateway cannot have boundary events", t.ID)
		case t.Kind == ReceiveTask && len(t.Inputs) > 0:
			// Its subscription opens when the gateway is entered, before
			// the task is: there are no inputs to evaluate it over yet.
			v.nodef(n, "receive task %q after the gateway cannot have input mappings", t.ID)
		case t.Loop != nil:
			v.nodef(n, "%q after the gateway cannot be multi-instance", t.ID)
		}
	}
	if n.Default != "" {
		v.nodef(n, "an event-based gateway has no default flow")
	}
	var catches []*Node
	for _, f := range out {
		if t := v.p.Node(f.Target); t != nil && t.Message != nil {
			catches = append(catches, t)
		}
	}
	v.distinctMessages(n, catches, "branches")
	seen := map[string]string{}
	for _, f := range out {
		t := v.p.Node(f.Target)
		if t == nil || t.Signal == nil || t.Signal.NameExpr != "" || t.Signal.Name == "" {
			continue
		}
		if first, dup := seen[t.Signal.Name]; dup {
			v.nodef(n, "branches %q and %q both catch signal %q", first, t.ID, t.Signal.Name)
			continue
		}
		seen[t.Signal.Name] = t.ID
	}
}

// distinctMessages refuses two catches of one event scope (the branches
// of an event-based gateway, the boundaries of an activity) that wait for
// the same literal message name: which of them a message reaches would
// be arbitrary.
func (v *validator) distinctMessages(n *Node, catches []*Node, what string) {
	seen := map[string]string{}
	for _, c := range catches {
		m := c.Message
		if m == nil || m.NameExpr != "" || m.Name == "" {
			continue
		}
		if first, dup := seen[m.Name]; dup {
			v.nodef(n, "%s %q and %q both catch message %q", what, first, c.ID, m.Name)
			continue
		}
		seen[m.Name] = c.ID
	}
}
