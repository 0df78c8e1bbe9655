package model

import "strings"

// EscalationEvent is the event definition of escalation events: an
// intermediate throw or end event throws a code, a boundary event on a
// sub-process or call activity or an event sub-process's start event
// catches it (docs/eventsubprocesses.md §4). A user may raise one from a
// user task, whose escalation boundary catches it.
const EscalationEvent EventType = "escalation"

// EscalationThrowEvent adds an intermediate event that throws the
// escalation code and passes its token on.
func (b *Builder) EscalationThrowEvent(id, code string, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateThrowEvent, EscalationEvent, append([]NodeOption{withEscalation(code)}, opts...))
}

// EscalationEndEvent adds an end event that throws the escalation code
// and ends its token.
func (b *Builder) EscalationEndEvent(id, code string, opts ...NodeOption) *Builder {
	return b.node(id, EndEvent, EscalationEvent, append([]NodeOption{withEscalation(code)}, opts...))
}

// EscalationBoundary attaches an escalation boundary event to a
// sub-process or call activity, where it catches escalations with code
// thrown inside it (every escalation when code is ""), or to a user task,
// where it catches the escalations a user raises from the task. An interrupting one
// cancels the activity; a non-interrupting one starts a parallel token.
func (b *Builder) EscalationBoundary(id, activity, code string, interrupting bool, opts ...NodeOption) *Builder {
	return b.node(id, BoundaryEvent, EscalationEvent, append([]NodeOption{withEscalation(code), func(n *Node) {
		n.AttachedTo, n.Interrupting = activity, interrupting
	}}, opts...))
}

// EscalationStartEvent adds the start event of an escalation event
// sub-process: it catches escalations with code thrown in its scope, or
// every escalation when code is "".
func (b *Builder) EscalationStartEvent(id, code string, opts ...NodeOption) *Builder {
	return b.node(id, StartEvent, EscalationEvent, append([]NodeOption{withEscalation(code)}, opts...))
}

func withEscalation(code string) NodeOption { return func(n *Node) { n.Escalation = code } }

// escalationThrow checks an escalation throw or end event: it names a code.
func (v *validator) escalationThrow(n *Node) {
	if strings.TrimSpace(n.Escalation) == "" {
		v.nodef(n, "throws no escalation code")
	}
}

// escalationBoundary checks an escalation boundary event: on a sub-process
// or call activity, where an escalation can be thrown inside, or on a user
// task, which a user escalates (the task command escalate, Camunda 7's
// TaskService.handleEscalation).
func (v *validator) escalationBoundary(n *Node) {
	if host := v.p.Node(n.AttachedTo); host != nil && host.Kind != SubProcess && host.Kind != CallActivity && host.Kind != UserTask {
		v.nodef(n, "escalation boundary events attach to sub-processes, call activities and user tasks, not to %s %q", host.Kind, host.ID)
	}
}

// distinctEscalations refuses two escalation boundaries of activity n
// that catch the same code (or both every code).
func (v *validator) distinctEscalations(n *Node) {
	seen := map[string]string{}
	for _, b := range v.p.Boundaries(n.ID) {
		if b.Event != EscalationEvent {
			continue
		}
		if first, dup := seen[b.Escalation]; dup {
			what := "escalation " + `"` + b.Escalation + `"`
			if b.Escalation == "" {
				what = "every escalation"
			}
			v.nodef(n, "escalation boundary events %q and %q both catch %s", first, b.ID, what)
			continue
		}
		seen[b.Escalation] = b.ID
	}
}
