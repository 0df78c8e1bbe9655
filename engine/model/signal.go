package model

import (
	"strings"

	"github.com/jetbpm/jetbpm/expression"
)

// SignalEvent is the event definition of signal events: a broadcast to
// every open catch of the signal's name (docs/signals.md).
const SignalEvent EventType = "signal"

// Signal names the signal a node catches or throws. Name is the name as
// written; NameExpr, when set, is an expression evaluated when the node is
// entered that gives the name instead (Zeebe allows a FEEL name). A signal
// start event's name is always a literal.
type Signal struct {
	Name     string `msgpack:"name,omitempty"`
	NameExpr string `msgpack:"nameExpr,omitempty"`

	name *expression.Expression
}

// NameCompiled returns the compiled name expression, nil for a literal name.
func (s *Signal) NameCompiled() *expression.Expression { return s.name }

// SignalStarts returns the process-level signal start events, in
// declaration order.
func (p *Process) SignalStarts() []*Node {
	var out []*Node
	for _, n := range p.Nodes {
		if n.Kind == StartEvent && n.Event == SignalEvent && n.Scope == "" {
			out = append(out, n)
		}
	}
	return out
}

// signal checks a signal event: a name (or name expression), compiled.
func (v *validator) signal(n *Node) {
	s := n.Signal
	if s == nil {
		v.nodef(n, "has no signal")
		return
	}
	switch {
	case s.NameExpr != "":
		s.name = v.compile(n, "signal name", s.NameExpr)
	case strings.TrimSpace(s.Name) == "":
		v.nodef(n, "signal has no name")
	}
}

// signalStart checks a signal start event: at process level, a literal
// name no other signal start of the process uses.
func (v *validator) signalStart(n *Node) {
	v.signal(n)
	switch {
	case n.Scope != "":
		v.nodef(n, "signal start events are supported at process level only")
	case n.Signal != nil && n.Signal.NameExpr != "":
		v.nodef(n, "a signal start event's name must be a literal, not an expression")
	}
	for _, o := range v.p.SignalStarts() {
		if o == n {
			break
		}
		if n.Signal != nil && o.Signal != nil && o.Signal.Name == n.Signal.Name {
			v.nodef(n, "signal start %q is already the start event for signal %q", o.ID, o.Signal.Name)
		}
	}
}

// SignalStartEvent adds a start event for signal name: at process level
// it starts a new instance on each broadcast; as the start event of an
// event sub-process it triggers the event sub-process (its name may then
// be a SignalNameExpr, evaluated when the scope starts).
func (b *Builder) SignalStartEvent(id, name string, opts ...NodeOption) *Builder {
	return b.node(id, StartEvent, SignalEvent, append([]NodeOption{withSignal(name)}, opts...))
}

// SignalCatchEvent adds an intermediate event that waits for a broadcast
// of signal name.
func (b *Builder) SignalCatchEvent(id, name string, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateCatchEvent, SignalEvent, append([]NodeOption{withSignal(name)}, opts...))
}

// SignalBoundary attaches a signal boundary event to activity. An
// interrupting one cancels the activity when the signal is broadcast; a
// non-interrupting one starts a parallel token on each broadcast.
func (b *Builder) SignalBoundary(id, activity, name string, interrupting bool, opts ...NodeOption) *Builder {
	return b.node(id, BoundaryEvent, SignalEvent, append([]NodeOption{withSignal(name), func(n *Node) {
		n.AttachedTo, n.Interrupting = activity, interrupting
	}}, opts...))
}

// SignalThrowEvent adds an intermediate event that broadcasts signal name
// with the variables its input mappings give (none without them), and
// passes the token on.
func (b *Builder) SignalThrowEvent(id, name string, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateThrowEvent, SignalEvent, append([]NodeOption{withSignal(name)}, opts...))
}

// SignalEndEvent adds an end event that broadcasts signal name, as
// SignalThrowEvent does, and ends the token.
func (b *Builder) SignalEndEvent(id, name string, opts ...NodeOption) *Builder {
	return b.node(id, EndEvent, SignalEvent, append([]NodeOption{withSignal(name)}, opts...))
}

// SignalNameExpr makes the signal's name the value of expr, evaluated
// when the node is entered.
func SignalNameExpr(expr string) NodeOption {
	return func(n *Node) {
		if n.Signal == nil {
			n.Signal = &Signal{}
		}
		n.Signal.Name, n.Signal.NameExpr = "", expr
	}
}

func withSignal(name string) NodeOption {
	return func(n *Node) { n.Signal = &Signal{Name: name} }
}
