package model

import "slices"

// CompensateEvent is the event definition of compensation events: a
// boundary event that associates an activity with its compensation
// handler, and the intermediate throw and end events that run the
// handlers of completed activities (docs/compensation.md).
const CompensateEvent EventType = "compensate"

// ForCompensation marks an activity as a compensation handler
// (isForCompensation="true"): it runs only when a compensation throw
// reaches the completed activity whose compensation boundary event names it.
func ForCompensation() NodeOption { return func(n *Node) { n.ForCompensation = true } }

// CompensationBoundary attaches a compensation boundary event to activity
// and associates it with handler, an activity built with ForCompensation
// in the same scope.
func (b *Builder) CompensationBoundary(id, activity, handler string, opts ...NodeOption) *Builder {
	return b.node(id, BoundaryEvent, CompensateEvent, append([]NodeOption{func(n *Node) {
		n.AttachedTo, n.Handler, n.Interrupting = activity, handler, true
	}}, opts...))
}

// CompensationThrowEvent adds an intermediate event that compensates the
// completed activities of its scope, newest first (activityRef "" for all
// of them, else only that activity's completions), waits for their
// handlers and passes its token on.
func (b *Builder) CompensationThrowEvent(id, activityRef string, opts ...NodeOption) *Builder {
	return b.node(id, IntermediateThrowEvent, CompensateEvent, append([]NodeOption{withActivityRef(activityRef)}, opts...))
}

// CompensationEndEvent adds an end event that compensates like
// CompensationThrowEvent, then ends its token.
func (b *Builder) CompensationEndEvent(id, activityRef string, opts ...NodeOption) *Builder {
	return b.node(id, EndEvent, CompensateEvent, append([]NodeOption{withActivityRef(activityRef)}, opts...))
}

func withActivityRef(ref string) NodeOption { return func(n *Node) { n.ActivityRef = ref } }

// CompensationHandler returns the compensation handler of activity id, nil
// when it has none: the activity its compensation boundary event is
// associated with, or for a sub-process its compensation event
// sub-process.
func (p *Process) CompensationHandler(id string) *Node { return p.index.compensation[id] }

// CompensationStartEvent adds the start event of a compensation event
// sub-process: the compensation handler of the sub-process it is in, run
// when that completed sub-process is compensated; a compensation throw
// inside it compensates the sub-process's completed children.
func (b *Builder) CompensationStartEvent(id string, opts ...NodeOption) *Builder {
	return b.node(id, StartEvent, CompensateEvent, opts)
}

func compensationHandlers(p *Process, ix *index) map[string]*Node {
	out := map[string]*Node{}
	for _, n := range p.Nodes {
		switch {
		case n.Kind == BoundaryEvent && n.Event == CompensateEvent && ix.nodes[n.Handler] != nil:
			out[n.AttachedTo] = ix.nodes[n.Handler]
		case n.Kind == SubProcess && n.TriggeredByEvent && n.Scope != "":
			if s := ix.eventSubs.start[n.ID]; s != nil && s.Event == CompensateEvent && out[n.Scope] == nil {
				out[n.Scope] = n
			}
		}
	}
	return out
}

// compensationEventSub checks a compensation event sub-process sp: inside
// a sub-process that has no compensation boundary event, the only one there.
func (v *validator) compensationEventSub(sp *Node) {
	host := v.p.Node(sp.Scope)
	if host == nil {
		v.nodef(sp, "a compensation event sub-process compensates the sub-process it is in; at process level use compensation boundary events")
		return
	}
	for _, b := range v.p.Boundaries(host.ID) {
		if b.Event == CompensateEvent {
			v.nodef(sp, "sub-process %q has both compensation boundary event %q and this compensation event sub-process; keep one", host.ID, b.ID)
			return
		}
	}
	if h := v.p.CompensationHandler(host.ID); h != nil && h != sp {
		v.nodef(sp, "sub-process %q already has compensation event sub-process %q", host.ID, h.ID)
	}
}

// handlerKinds are the activities that can be compensation handlers.
var handlerKinds = []Kind{Task, ManualTask, ScriptTask, ServiceTask, UserTask, SubProcess, CallActivity}

// compensationBoundary checks a compensation boundary event: one per
// activity, no outgoing flows, associated with a handler in its scope.
func (v *validator) compensationBoundary(n *Node) {
	if len(v.p.Outgoing(n.ID)) > 0 {
		v.nodef(n, "a compensation boundary event has no outgoing sequence flows; associate it with its handler")
	}
	for _, b := range v.p.Boundaries(n.AttachedTo) {
		if b.Event == CompensateEvent && b != n {
			v.nodef(n, "activity %q already has compensation boundary event %q", n.AttachedTo, b.ID)
			return
		}
	}
	h := v.p.Node(n.Handler)
	switch {
	case n.Handler == "":
		v.nodef(n, "is associated with no compensation handler (an association to an activity with isForCompensation=\"true\")")
	case h == nil:
		v.nodef(n, "compensation handler %q does not exist", n.Handler)
	case !h.ForCompensation:
		v.nodef(n, "compensation handler %q is not marked isForCompensation=\"true\"", h.ID)
	case h.Scope != n.Scope:
		v.nodef(n, "compensation handler %q is in another scope", h.ID)
	}
}

// compensationHandler checks an activity marked for compensation.
func (v *validator) compensationHandler(n *Node) {
	switch {
	case !slices.Contains(handlerKinds, n.Kind) || n.TriggeredByEvent:
		v.nodef(n, "only tasks, script, service and user tasks, embedded sub-processes and call activities can be compensation handlers")
	case len(v.p.Incoming(n.ID)) > 0 || len(v.p.Outgoing(n.ID)) > 0:
		v.nodef(n, "a compensation handler has no incoming or outgoing sequence flows")
	case len(v.p.Boundaries(n.ID)) > 0:
		v.nodef(n, "a compensation handler has no boundary events")
	case n.Loop != nil:
		v.nodef(n, "a compensation handler is not multi-instance")
	}
	for _, b := range v.p.Nodes {
		if b.Event == CompensateEvent && b.Kind == BoundaryEvent && b.Handler == n.ID {
			return
		}
	}
	v.nodef(n, "is a compensation handler that no compensation boundary event is associated with")
}

// compensationThrow checks a compensation throw or end event: an
// activityRef names an activity with a compensation handler in the
// throw's scope (or, from an event sub-process, the scope around it).
func (v *validator) compensationThrow(n *Node) {
	if n.ActivityRef == "" {
		return
	}
	a := v.p.Node(n.ActivityRef)
	scope := n.Scope
	if sp := v.p.Node(scope); sp != nil && sp.TriggeredByEvent {
		scope = sp.Scope
	}
	switch {
	case a == nil || !a.Kind.IsActivity():
		v.nodef(n, "activityRef %q is not an activity of this process", n.ActivityRef)
	case a.Scope != scope:
		v.nodef(n, "activityRef %q is not in the scope the event compensates", n.ActivityRef)
	case v.p.CompensationHandler(a.ID) == nil && a.Kind != SubProcess:
		v.nodef(n, "activityRef %q has no compensation boundary event", n.ActivityRef)
	}
}
