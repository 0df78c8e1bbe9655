package bpmnxml

import (
	"github.com/jetbpm/jetbpm/engine/model"
)

// Event sub-processes and escalations (docs/eventsubprocesses.md), the
// same in both dialects: <subProcess triggeredByEvent="true"> holds one
// start event whose isInterrupting (default true) says whether the event
// sub-process interrupts its scope; <escalation escalationCode> is
// referred to by escalationEventDefinition escalationRef on throw, end,
// boundary and start events (no escalationRef on a catch: every code).

// eventSubStarts are the event definitions an event sub-process's start
// event may have here; the model refuses the others by name.
var eventSubStarts = []model.EventType{model.TimerEvent, model.MessageEvent, model.SignalEvent, model.ConditionalEvent, model.ErrorEvent, model.EscalationEvent, model.CompensateEvent}

// eventSub marks sub-process n as an event sub-process.
func (im *importer) eventSub(n *model.Node) {
	n.TriggeredByEvent = true
	im.eventSubs[n.ID] = n
}

// eventSubStart reads isInterrupting on start event e: on the start event
// of an event sub-process it says whether the event sub-process
// interrupts; elsewhere it is refused when false (only an event
// sub-process's start can be non-interrupting).
func (im *importer) eventSubStart(e *elem, n *model.Node) {
	interrupting, ok := boolAttr(e, "isInterrupting", true)
	if !ok {
		im.probs.at(e, "isInterrupting=%q is not a boolean", e.attr("", "isInterrupting"))
		return
	}
	if sp := im.eventSubs[n.Scope]; sp != nil {
		sp.Interrupting = interrupting
		return
	}
	if !interrupting {
		im.probs.at(e, "isInterrupting=\"false\" applies to the start event of an event sub-process only")
	}
}

// escalationRef resolves the escalation an escalation event throws or
// catches: its escalationCode, a constant.
func (im *importer) escalationRef(e, d *elem, n *model.Node) {
	ref := d.attr("", "escalationRef")
	if ref == "" {
		return // a catch of every code; a throw without one is refused by the model
	}
	decl, ok := im.escalations[ref]
	if !ok {
		im.probs.in(e, d, "escalationRef %q names no <escalation> of this document", ref)
		return
	}
	code, ok := feelConst(decl.attr("", "escalationCode"))
	if !ok {
		im.probs.in(e, decl, "escalation code %q is an expression; only constant codes are supported", decl.attr("", "escalationCode"))
		return
	}
	n.Escalation = code
}
