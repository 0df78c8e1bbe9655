package bpmnxml

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
	"github.com/jetbpm/jetbpm/script"
)

// nodeKinds are the BPMN elements jetbpm executes.
var nodeKinds = map[string]model.Kind{
	"startEvent":             model.StartEvent,
	"endEvent":               model.EndEvent,
	"intermediateCatchEvent": model.IntermediateCatchEvent,
	"boundaryEvent":          model.BoundaryEvent,
	"task":                   model.Task,
	"manualTask":             model.ManualTask,
	"scriptTask":             model.ScriptTask,
	"serviceTask":            model.ServiceTask,
	"exclusiveGateway":       model.ExclusiveGateway,
	"parallelGateway":        model.ParallelGateway,
	"inclusiveGateway":       model.InclusiveGateway,
	"subProcess":             model.SubProcess,
	"transaction":            model.SubProcess, // Node.Transaction
	"callActivity":           model.CallActivity,
	"receiveTask":            model.ReceiveTask,
	"sendTask":               model.SendTask,
	"intermediateThrowEvent": model.IntermediateThrowEvent,
	"eventBasedGateway":      model.EventBasedGateway,
	"userTask":               model.UserTask,
}

// refusedNodes are flow elements jetbpm does not execute, with the reason.
var refusedNodes = map[string]string{
	"businessRuleTask":   "business rule tasks are not supported",
	"complexGateway":     "complex gateways are not supported",
	"implicitThrowEvent": "implicit throw events are not supported",
	"adHocSubProcess":    "ad-hoc sub-processes are not supported",
	"choreographyTask":   "choreographies are not supported",
	"subChoreography":    "choreographies are not supported",
	"callChoreography":   "choreographies are not supported",
}

// artifacts are flow-level elements without execution semantics: lanes,
// annotations, and data declarations, which deploy with a warning (as in
// Camunda 7 and Zeebe, data moves through variables and mappings, not
// through data objects and associations).
var artifacts = set("laneSet", "textAnnotation", "association", "group",
	"dataObject", "dataObjectReference", "dataStoreReference")

// dataElements are the artifacts and node children that are BPMN's data
// flow, which jetbpm deploys as documentation.
var dataElements = set("dataObject", "dataObjectReference", "dataStoreReference",
	"dataInputAssociation", "dataOutputAssociation")

// warnData warns that data element c (of owner, when it is a node's
// child) is documentation here.
func (im *importer) warnData(owner, c *elem) {
	const msg = "deployed as documentation and ignored at run time: variables and input/output mappings carry a process's data"
	if owner == nil {
		im.warn(c, "%s %s", c.name.Local, msg)
		return
	}
	im.warnIn(owner, c, "%s", msg)
}

// ownIgnored are children of a process or flow node that carry no execution
// semantics for jetbpm.
var ownIgnored = set("documentation", "incoming", "outgoing", "ioSpecification",
	"property", "auditing", "monitoring", "performer", "humanPerformer",
	"potentialOwner", "resourceRole", "supports", "correlationSubscription",
	"dataInput", "dataOutput", "inputSet", "outputSet", "lane")

// eventDefinitions maps event definition elements to the event type, ""
// for those jetbpm refuses.
var eventDefinitions = map[string]model.EventType{
	"timerEventDefinition":       model.TimerEvent,
	"errorEventDefinition":       model.ErrorEvent,
	"terminateEventDefinition":   model.TerminateEvent,
	"messageEventDefinition":     model.MessageEvent,
	"signalEventDefinition":      model.SignalEvent,
	"escalationEventDefinition":  model.EscalationEvent,
	"conditionalEventDefinition": model.ConditionalEvent,
	"linkEventDefinition":        model.LinkEvent,
	"compensateEventDefinition":  model.CompensateEvent,
	"cancelEventDefinition":      model.CancelEvent,
}

func isFlowLevel(local string) bool {
	_, node := nodeKinds[local]
	_, refused := refusedNodes[local]
	return node || refused || local == "sequenceFlow" || artifacts[local]
}

// flowElements imports the contents of a process (owner nil) or of the
// sub-process owner.
func (im *importer) flowElements(p *model.Process, e *elem, owner *model.Node) {
	scope := ""
	if owner != nil {
		scope = owner.ID
	}
	for _, c := range e.children {
		if c.name.Space != NamespaceBPMN {
			continue
		}
		local := c.name.Local
		if _, ok := nodeKinds[local]; ok {
			im.node(p, c, scope)
			continue
		}
		if msg, ok := refusedNodes[local]; ok {
			im.probs.at(c, "%s", msg)
			continue
		}
		switch {
		case local == "sequenceFlow":
			im.flow(p, c)
		case local == "association":
			im.association(c)
		case dataElements[local]:
			im.warnData(nil, c)
		case artifacts[local]:
		case owner != nil:
			// the sub-process's own children: handled by node
		case local == "extensionElements":
			im.listeners = listenerDst{to: &p.Listeners}
			im.extensions(c, e, nil)
			im.listeners = listenerDst{}
		case ownIgnored[local]:
		default:
			im.probs.at(c, "%s elements are not supported", local)
		}
	}
}

// node imports one flow node.
func (im *importer) node(p *model.Process, e *elem, scope string) {
	kind := nodeKinds[e.name.Local]
	n := &model.Node{ID: e.attr("", "id"), Name: e.attr("", "name"), Kind: kind, Scope: scope, Line: e.line}
	if kind == model.SubProcess {
		if event, _ := boolAttr(e, "triggeredByEvent", false); event {
			im.eventSub(n)
		}
		n.Transaction = e.name.Local == "transaction"
	}
	if kind == model.StartEvent {
		im.eventSubStart(e, n)
	}
	n.Default = e.attr("", "default")
	if kind.IsActivity() {
		im.forCompensation(e, n)
	}
	if kind == model.BoundaryEvent {
		n.AttachedTo = e.attr("", "attachedToRef")
		cancel, ok := boolAttr(e, "cancelActivity", true)
		if !ok {
			im.probs.at(e, "cancelActivity=%q is not a boolean", e.attr("", "cancelActivity"))
		}
		n.Interrupting = cancel
	}
	x := &nodeExt{}
	var defs []*elem
	if isEvent(kind) {
		for _, c := range e.children {
			if _, ok := eventDefinitions[c.name.Local]; ok && c.name.Space == NamespaceBPMN {
				defs = append(defs, c)
			}
		}
		// First: whether an event throws a message decides what its
		// attributes and extension elements may say.
		im.eventDefinition(e, n, x, defs)
	}
	im.messageActivity(e, n)
	im.attributes(e, n, x)
	for _, c := range e.children {
		if c.name.Space != NamespaceBPMN || slices.Contains(defs, c) {
			continue
		}
		local := c.name.Local
		switch {
		case kind == model.SubProcess && isFlowLevel(local):
			// contents: imported below
		case local == "extensionElements":
			im.extensions(c, e, &extTarget{node: n, ext: x})
		case local == "script" && kind == model.ScriptTask:
			x.bpmnScript = c
		case (local == "humanPerformer" || local == "potentialOwner") && kind == model.UserTask:
			x.performers = append(x.performers, c)
		case local == "multiInstanceLoopCharacteristics" && kind.IsActivity():
			im.loop(e, c, n)
		case local == "standardLoopCharacteristics":
			im.probs.in(e, c, "standard loops are not supported yet")
		case dataElements[local]:
			im.warnData(e, c)
		case local == "eventDefinitionRef":
			im.probs.in(e, c, "references to shared event definitions are not supported")
		case ownIgnored[local]:
		default:
			im.probs.in(e, c, "not supported inside a %s", kind)
		}
	}
	im.finish(e, n, x)
	p.Nodes = append(p.Nodes, n)
	if kind == model.SubProcess {
		im.flowElements(p, e, n)
	}
}

func isEvent(k model.Kind) bool {
	switch k {
	case model.StartEvent, model.EndEvent, model.IntermediateCatchEvent, model.IntermediateThrowEvent, model.BoundaryEvent:
		return true
	}
	return false
}

// eventDefinition applies the event definitions defs of event e.
func (im *importer) eventDefinition(e *elem, n *model.Node, x *nodeExt, defs []*elem) {
	if len(defs) == 0 {
		return
	}
	if len(defs) > 1 {
		im.probs.in(e, defs[1], "events with several event definitions are not supported")
		return
	}
	d := defs[0]
	ev := eventDefinitions[d.name.Local]
	what := strings.TrimSuffix(d.name.Local, "EventDefinition")
	if ev == "" {
		im.probs.in(e, d, "%s events are not supported", what)
		return
	}
	allowed := map[model.Kind][]model.EventType{
		// A process-level conditional start is refused by the model's
		// validation, which says why.
		model.StartEvent:             {model.MessageEvent, model.SignalEvent, model.TimerEvent, model.ConditionalEvent},
		model.EndEvent:               {model.ErrorEvent, model.TerminateEvent, model.MessageEvent, model.EscalationEvent, model.SignalEvent, model.CompensateEvent, model.CancelEvent},
		model.IntermediateCatchEvent: {model.TimerEvent, model.MessageEvent, model.LinkEvent, model.SignalEvent, model.ConditionalEvent},
		model.IntermediateThrowEvent: {model.MessageEvent, model.LinkEvent, model.EscalationEvent, model.SignalEvent, model.CompensateEvent},
		model.BoundaryEvent:          {model.ErrorEvent, model.TimerEvent, model.MessageEvent, model.EscalationEvent, model.SignalEvent, model.ConditionalEvent, model.CompensateEvent, model.CancelEvent},
	}[n.Kind]
	if n.Kind == model.StartEvent && im.eventSubs[n.Scope] != nil {
		allowed = eventSubStarts
	}
	ok := false
	for _, a := range allowed {
		ok = ok || a == ev
	}
	if !ok {
		switch {
		case n.Kind == model.StartEvent && im.eventSubs[n.Scope] != nil:
			im.probs.in(e, d, "%s start events of event sub-processes are not supported; use a timer, message, signal, conditional, error or escalation start event", what)
		case n.Kind == model.StartEvent:
			im.probs.in(e, d, "%s start events are not supported; use a none, message, signal or timer start event", what)
		default:
			im.probs.in(e, d, "a %s cannot have a %s", n.Kind, d.name.Local)
		}
		return
	}
	n.Event = ev
	switch ev {
	case model.ErrorEvent:
		im.errorRef(e, d, n)
	case model.TimerEvent:
		im.timer(e, d, n)
	case model.MessageEvent:
		im.messageEvent(e, d, n, x)
	case model.LinkEvent:
		im.link(e, d, n)
	case model.EscalationEvent:
		im.escalationRef(e, d, n)
	case model.SignalEvent:
		im.signalEvent(e, d, n)
	case model.ConditionalEvent:
		im.conditionalEvent(e, d, n)
	case model.CompensateEvent:
		im.compensateDef(e, d, n)
	}
}

// errorRef resolves the error an error event throws or catches.
func (im *importer) errorRef(e, d *elem, n *model.Node) {
	for _, a := range []string{"errorCodeVariable", "errorMessageVariable"} {
		if v, ok := d.lookup(NamespaceCamunda, a); ok {
			setExt(n, "camunda:"+a, v)
		}
	}
	ref := d.attr("", "errorRef")
	if ref == "" {
		return // no code: catches every error, or throws code ""
	}
	decl, ok := im.errors[ref]
	if !ok {
		// Camunda 7 takes the reference itself as the code.
		n.ErrorCode = ref
		im.warnIn(e, d, "errorRef %q names no <bpmn:error> of this document; its text is the error code, as in Camunda 7", ref)
		return
	}
	code, ok := feelConst(decl.attr("", "errorCode"))
	if !ok {
		im.probs.in(e, decl, "error code %q is an expression; only constant codes are supported", decl.attr("", "errorCode"))
	}
	n.ErrorCode = code
	if n.Kind == model.EndEvent {
		n.ErrorMessage = decl.attr(NamespaceCamunda, "errorMessage")
	}
}

// timer reads a timerEventDefinition's single timeDuration, timeDate or
// timeCycle.
func (im *importer) timer(e, d *elem, n *model.Node) {
	n.Timer = im.timerOf(e, d) // nil: Validate reports the missing definition
}

// timerOf reads timerEventDefinition d of element e; nil when it has no
// timer or a problem was reported.
func (im *importer) timerOf(e, d *elem) *model.Timer {
	types := map[string]model.TimerType{"timeDuration": model.TimerDuration, "timeDate": model.TimerDate, "timeCycle": model.TimerCycle}
	var t *model.Timer
	for _, c := range d.children {
		tt, ok := types[c.name.Local]
		if c.name.Space != NamespaceBPMN || !ok {
			continue
		}
		if t != nil {
			im.probs.in(e, c, "a timer has one of timeDuration, timeDate and timeCycle, not several")
			return nil
		}
		v, expr, msg := timerValue(c.text)
		if msg != "" {
			im.probs.in(e, c, "%s", msg)
			return nil
		}
		if tt == model.TimerDuration && !im.zeebeModel {
			v = camundaDuration(v)
		}
		t = &model.Timer{Type: tt, Value: v, Expr: expr, Quartz: tt == model.TimerCycle && im.camunda7}
	}
	return t
}

// camundaDuration reads a Camunda 7 timeDuration written as a repeating
// interval without a start, "R[n]/duration", as Camunda 7 does: a
// duration timer fires once, after the duration, whatever the repetition
// says (its DurationHelper reads the repetition, and only a timeCycle
// repeats). Any other value is returned as written.
func camundaDuration(v string) string {
	rep, dur, ok := strings.Cut(v, "/")
	if !ok || !strings.HasPrefix(rep, "R") || !strings.HasPrefix(dur, "P") || strings.Contains(dur, "/") {
		return v
	}
	for _, c := range rep[1:] {
		if c < '0' || c > '9' {
			return v
		}
	}
	return dur
}

// flow imports a sequence flow.
func (im *importer) flow(p *model.Process, e *elem) {
	f := &model.Flow{ID: e.attr("", "id"), Name: e.attr("", "name"),
		Source: e.attr("", "sourceRef"), Target: e.attr("", "targetRef"), Line: e.line}
	im.noJetbpmAttrs(e)
	for _, c := range e.children {
		if c.name.Space != NamespaceBPMN {
			continue
		}
		switch c.name.Local {
		case "conditionExpression":
			if _, ok := c.lookup(NamespaceCamunda, "resource"); ok {
				im.probs.in(e, c, "conditions loaded from a resource (camunda:resource) are not supported")
				continue
			}
			if src, js := im.jsCondition(e, c); js {
				f.Condition, f.Language = src, script.Language
				continue
			}
			src, msg := scriptSource(c.attr("", "language"), c.text, false)
			if msg != "" {
				im.probs.in(e, c, "%s", msg)
				continue
			}
			if src == "" {
				im.probs.in(e, c, "the condition is empty")
				continue
			}
			if im.zeebeModel && expression.DialectOf(src) == expression.Expr {
				if _, err := expression.Compile(src); err != nil {
					im.probs.in(e, c, "%q: a Zeebe condition is a FEEL expression and starts with \"=\" (write \"=%s\"); without it the text is read as expr-lang: %v", src, src, err)
					continue
				}
			}
			f.Condition = src
		case "extensionElements":
			im.listeners = listenerDst{to: &f.Listeners, flow: true}
			im.extensions(c, e, nil)
			im.listeners = listenerDst{}
		case "documentation", "auditing", "monitoring":
		default:
			im.probs.in(e, c, "not supported inside a sequence flow")
		}
	}
	p.Flows = append(p.Flows, f)
}

// noJetbpmAttrs refuses jetbpm attributes on an element that has none.
func (im *importer) noJetbpmAttrs(e *elem) {
	for _, a := range e.attrs {
		if a.Name.Space == Namespace {
			im.probs.at(e, "unknown attribute jetbpm:%s", a.Name.Local)
		}
	}
}

// ignoreDefaultConditions drops the condition of an inclusive gateway's
// default flow, with a warning: BPMN says a default flow's condition is
// ignored, and Camunda 7 deploys such a gateway.
func ignoreDefaultConditions(p *model.Process) []model.Warning {
	var out []model.Warning
	for _, n := range p.Nodes {
		if n.Kind != model.InclusiveGateway || n.Default == "" {
			continue
		}
		for _, f := range p.Flows {
			if f.ID == n.Default && f.Source == n.ID && f.Condition != "" {
				out = append(out, model.Warning{Node: f.ID, Line: f.Line,
					Message: fmt.Sprintf("the condition of inclusive gateway %q's default flow is ignored, as BPMN says", n.ID)})
				f.Condition = ""
			}
		}
	}
	return out
}
