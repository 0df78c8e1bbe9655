package model

import (
	"slices"
	"strings"

	"github.com/jetbpm/jetbpm/expression"
	"github.com/jetbpm/jetbpm/script"
)

// ConditionalEvent is the event definition of conditional events: an
// intermediate catch, a boundary or an event sub-process start that fires
// when its condition over the instance's variables holds, evaluated when
// it opens and on each variable write that can reach it
// (docs/conditional-events.md). Camunda 7 has them; Zeebe does not.
const ConditionalEvent EventType = "conditional"

// Variable event kinds a Condition may be restricted to
// (Condition.VariableEvents).
const (
	VariableCreate = "create"
	VariableUpdate = "update"
	VariableDelete = "delete"
)

// Condition is the condition of a conditional event. VariableName and
// VariableEvents (Camunda 7's camunda:variableName and
// camunda:variableEvents) restrict which variable writes re-evaluate it;
// empty means every one. Evaluation when the event opens ignores them.
type Condition struct {
	Expression     string   `msgpack:"expr"`
	VariableName   string   `msgpack:"variable,omitempty"`
	VariableEvents []string `msgpack:"events,omitempty"`
	// Language "javascript" (script.Language) makes Expression a
	// JavaScript condition.
	Language string `msgpack:"lang,omitempty"`

	compiled *expression.Expression
	program  *script.Program
}

// Compiled returns the compiled condition (nil for JavaScript).
func (c *Condition) Compiled() *expression.Expression { return c.compiled }

// Program returns the JavaScript condition, nil for an expression.
func (c *Condition) Program() *script.Program { return c.program }

// Accepts reports whether a write of kind event (VariableCreate, ...) to
// variable name re-evaluates c.
func (c *Condition) Accepts(name, event string) bool {
	if c.VariableName != "" && c.VariableName != name {
		return false
	}
	return len(c.VariableEvents) == 0 || slices.Contains(c.VariableEvents, event)
}

// conditional checks a conditional event: a compiling condition and known
// variable event kinds.
func (v *validator) conditional(n *Node) {
	c := n.Conditional
	if c == nil || strings.TrimSpace(c.Expression) == "" {
		v.nodef(n, "a conditional event needs a condition")
		return
	}
	switch c.Language {
	case "":
		c.compiled = v.compile(n, "condition", c.Expression)
	case script.Language:
		p, err := script.Compile(n.ID, c.Expression)
		if err != nil {
			v.nodef(n, "condition: %v", err)
			return
		}
		c.program = p
	default:
		v.nodef(n, "condition language %q is not supported (javascript, or an expression)", c.Language)
	}
	if c.VariableName != "" && !validVariable(c.VariableName) {
		v.nodef(n, "condition variable name %q is not a variable name", c.VariableName)
	}
	for _, e := range c.VariableEvents {
		if e != VariableCreate && e != VariableUpdate && e != VariableDelete {
			v.nodef(n, "condition variable event %q is not create, update or delete", e)
		}
	}
}

// ConditionJavaScript makes a conditional event's condition JavaScript.
func ConditionJavaScript() NodeOption {
	return func(n *Node) {
		if n.Conditional != nil {
			n.Conditional.Language = script.Language
		}
	}
}

// ConditionalCatchEvent adds an intermediate event that waits until
// condition holds: evaluated when the token arrives (it passes at once
// when the condition holds then), then on each variable write it sees.
func (b *Builder) ConditionalCatchEvent(id, condition string, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateCatchEvent, ConditionalEvent, append([]NodeOption{withCondition(condition)}, opts...))
}

// ConditionalBoundary attaches a conditional boundary event to activity,
// evaluated when the activity is entered and on each variable write it
// sees while the activity runs. An interrupting one cancels the activity
// when the condition holds; a non-interrupting one starts a token each
// time a write finds it true.
func (b *Builder) ConditionalBoundary(id, activity, condition string, interrupting bool, opts ...NodeOption) *Builder {
	return b.node(id, BoundaryEvent, ConditionalEvent, append([]NodeOption{withCondition(condition), func(n *Node) {
		n.AttachedTo, n.Interrupting = activity, interrupting
	}}, opts...))
}

// ConditionalStartEvent adds the start event of a conditional event
// sub-process: evaluated when its scope starts (before the scope's own
// start event runs) and on each variable write the scope sees.
// Process-level conditional start events are not supported.
func (b *Builder) ConditionalStartEvent(id, condition string, opts ...NodeOption) *Builder {
	return b.node(id, StartEvent, ConditionalEvent, append([]NodeOption{withCondition(condition)}, opts...))
}

// ConditionVariable restricts a conditional event's re-evaluation to
// writes of variable name (camunda:variableName).
func ConditionVariable(name string) NodeOption {
	return func(n *Node) {
		if n.Conditional != nil {
			n.Conditional.VariableName = name
		}
	}
}

// ConditionEvents restricts a conditional event's re-evaluation to writes
// of these kinds: VariableCreate, VariableUpdate, VariableDelete
// (camunda:variableEvents).
func ConditionEvents(kinds ...string) NodeOption {
	return func(n *Node) {
		if n.Conditional != nil {
			n.Conditional.VariableEvents = kinds
		}
	}
}

func withCondition(expr string) NodeOption {
	return func(n *Node) { n.Conditional = &Condition{Expression: expr} }
}
