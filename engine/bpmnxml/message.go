package bpmnxml

import (
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
)

// Messages. A <bpmn:message> at definitions level declares a message: its
// name and, in the Zeebe dialect, its correlation key:
//
//	<bpmn:message id="paid" name="order-paid">
//	  <bpmn:extensionElements>
//	    <zeebe:subscription correlationKey="=orderId"/>
//	  </bpmn:extensionElements>
//	</bpmn:message>
//
// Catching elements (message start, intermediate catch and boundary
// events, receive tasks) and throwing ones (message intermediate throw and
// end events, send tasks) name it with messageRef. Only declarations that
// an element refers to are read; each is read once.

// nsModeler is the Camunda Modeler's namespace; its executionPlatform
// attribute on <definitions> says which engine a file was drawn for.
const nsModeler = "http://camunda.org/schema/modeler/1.0"

// zeebeDialect reports whether the document is written for Zeebe
// (Camunda 8): the modeler marked it so (executionPlatform="Camunda
// Cloud"), or, unmarked, it uses a Zeebe extension anywhere. A Zeebe
// message catch needs a correlation key; a Camunda 7 one has none.
func zeebeDialect(root *elem) bool {
	switch root.attr(nsModeler, "executionPlatform") {
	case "Camunda Cloud":
		return true
	case "Camunda Platform":
		return false
	}
	return uses(root, NamespaceZeebe)
}

// camunda7Dialect reports whether the document is written for Camunda 7:
// the modeler marked it so (executionPlatform="Camunda Platform"), or,
// unmarked, it uses a Camunda 7 extension and no Zeebe one. Its cron
// timer cycles are Quartz expressions; a document of neither dialect
// reads them as Zeebe does.
func camunda7Dialect(root *elem) bool {
	switch root.attr(nsModeler, "executionPlatform") {
	case "Camunda Cloud":
		return false
	case "Camunda Platform":
		return true
	}
	return !uses(root, NamespaceZeebe) && uses(root, NamespaceCamunda)
}

// uses reports whether e or an element in it has a name or attribute in
// namespace ns.
func uses(e *elem, ns string) bool {
	if e.name.Space == ns {
		return true
	}
	for _, a := range e.attrs {
		if a.Name.Space == ns {
			return true
		}
	}
	for _, c := range e.children {
		if uses(c, ns) {
			return true
		}
	}
	return false
}

// messageDecl is what a <bpmn:message> declares; ok is false when the
// declaration has a problem (reported once, at its own line).
type messageDecl struct {
	name, nameExpr, key string
	ok                  bool
}

// declaredMessage reads the <bpmn:message> with id ref, once.
func (im *importer) declaredMessage(ref string) (*messageDecl, bool) {
	if d, ok := im.messageDecls[ref]; ok {
		return d, true
	}
	m, ok := im.messages[ref]
	if !ok {
		return nil, false
	}
	d := &messageDecl{ok: true}
	im.messageDecls[ref] = d
	bad := func(format string, args ...any) {
		im.probs.at(m, format, args...)
		d.ok = false
	}
	name := strings.TrimSpace(m.attr("", "name"))
	switch {
	case name == "":
		bad("the message has no name")
	case strings.HasPrefix(name, "="):
		if v, ok := feelConst(name); ok {
			d.name = v
		} else {
			d.nameExpr = name
		}
	case strings.Contains(name, "${") || strings.Contains(name, "#{"):
		src, _, err := juelText(name)
		if err != nil {
			bad("name %q: %v", name, err)
		}
		d.nameExpr = src
	default:
		d.name = name
	}
	if d.nameExpr != "" {
		if _, err := expression.Compile(d.nameExpr); err != nil {
			bad("name %q: %v", d.nameExpr, err)
		}
	}
	var sub *elem
	for _, c := range m.children {
		if !c.is(NamespaceBPMN, "extensionElements") {
			continue
		}
		for _, x := range c.children {
			switch {
			case x.is(NamespaceZeebe, "subscription"):
				if sub != nil {
					im.probs.in(m, x, "appears twice in the message; keep one")
					d.ok = false
				}
				sub = x
			case x.name.Space == NamespaceZeebe || x.name.Space == NamespaceCamunda || x.name.Space == Namespace:
				im.probs.in(m, x, "not supported on a message")
				d.ok = false
			}
		}
	}
	if sub != nil {
		if key := strings.TrimSpace(sub.attr("", "correlationKey")); key != "" {
			d.key = zeebeSource(key)
			if _, err := expression.Compile(d.key); err != nil {
				im.probs.in(m, sub, "correlationKey %q: %v", key, err)
				d.ok = false
			}
		}
	}
	return d, true
}

// messageUse is how an element uses the message it refers to.
type messageUse int

const (
	catchMessage messageUse = iota // waits for it under a correlation key
	startMessage                   // starts an instance: no key
	throwMessage                   // sends it: the key, if any, is the publish's
)

// messageRef resolves the messageRef ref of element e (found on def, the
// element that carries the attribute: e itself or its
// messageEventDefinition) into n.Message. A catch needs one; a throw may
// go without (its job decides what it sends).
func (im *importer) messageRef(e, def *elem, n *model.Node, use messageUse) {
	report := func(format string, args ...any) {
		if def == e {
			im.probs.at(e, format, args...)
		} else {
			im.probs.in(e, def, format, args...)
		}
	}
	ref := strings.TrimSpace(def.attr("", "messageRef"))
	if ref == "" {
		switch use {
		case catchMessage:
			report("a message catch needs messageRef naming a <bpmn:message> of this document")
		case startMessage:
			report("a message start event needs messageRef naming a <bpmn:message> of this document")
		}
		return
	}
	d, ok := im.declaredMessage(ref)
	if !ok {
		report("messageRef %q names no <bpmn:message> of this document", ref)
		return
	}
	if !d.ok {
		return // reported at the message
	}
	m := &model.Message{Name: d.name, NameExpr: d.nameExpr}
	if use == catchMessage {
		m.CorrelationKey = d.key
		if m.CorrelationKey == "" && im.zeebeModel {
			report("message %q has no correlation key; in a Zeebe model the message needs <zeebe:subscription correlationKey=\"=...\"/> in its extensionElements", ref)
			return
		}
	}
	n.Message = m
}

// messageEvent reads the messageEventDefinition d of event e.
func (im *importer) messageEvent(e, d *elem, n *model.Node, x *nodeExt) {
	switch {
	case n.Kind == model.StartEvent:
		if n.Scope == "" {
			im.messageRef(e, d, n, startMessage)
			return
		}
		if im.eventSubs[n.Scope] == nil {
			im.probs.in(e, d, "message start events are supported at process level only, not inside a sub-process")
			return
		}
		// An event sub-process's message start waits inside a running
		// instance: it subscribes under its correlation key like a catch.
		im.messageRef(e, d, n, catchMessage)
	case throws(n):
		x.definition = d
		im.messageRef(e, d, n, throwMessage)
	default:
		im.messageRef(e, d, n, catchMessage)
	}
	for _, a := range d.attrs {
		switch a.Name.Space {
		case NamespaceCamunda:
			setExt(n, qualify(a.Name), a.Value)
		case Namespace:
			im.probs.in(e, d, "unknown attribute jetbpm:%s (jetbpm attributes go on the %s)", a.Name.Local, n.Kind)
		}
	}
	for _, c := range d.children {
		switch {
		case c.is(NamespaceBPMN, "extensionElements"):
			im.extensions(c, e, &extTarget{node: n, ext: x})
		case c.name.Space != NamespaceBPMN:
		case c.name.Local == "documentation" || c.name.Local == "operationRef":
			// operationRef names a WSDL-style operation: descriptive only
		default:
			im.probs.in(e, c, "not supported inside a messageEventDefinition")
		}
	}
}

// throws reports whether n throws a message: a send task, or an
// intermediate throw or end event with a message definition. A throw runs a
// job like a service task's, or publishes its message (jetbpm:publish).
func throws(n *model.Node) bool {
	return n.Kind == model.SendTask ||
		n.Event == model.MessageEvent && (n.Kind == model.IntermediateThrowEvent || n.Kind == model.EndEvent)
}

// messageActivity reads what receive and send tasks and event-based
// gateways carry as attributes.
func (im *importer) messageActivity(e *elem, n *model.Node) {
	switch n.Kind {
	case model.ReceiveTask:
		im.noInstantiate(e, "receive tasks that start a process")
		if strings.TrimSpace(e.attr("", "messageRef")) != "" {
			im.messageRef(e, e, n, catchMessage)
		} // without: a plain wait state (Engine.Trigger)
	case model.SendTask:
		im.messageRef(e, e, n, throwMessage)
	case model.EventBasedGateway:
		im.noInstantiate(e, "event-based gateways that start a process")
		switch t := e.attr("", "eventGatewayType"); t {
		case "", "Exclusive":
		default:
			im.probs.at(e, "eventGatewayType=%q is not supported (only Exclusive: the first event wins)", t)
		}
	}
}

// noInstantiate refuses instantiate="true" on e.
func (im *importer) noInstantiate(e *elem, what string) {
	v, ok := boolAttr(e, "instantiate", false)
	switch {
	case !ok:
		im.probs.at(e, "instantiate=%q is not a boolean", e.attr("", "instantiate"))
	case v:
		im.probs.at(e, "instantiate=\"true\": %s are not supported; use a message start event", what)
	}
}
