package bpmnxml

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
)

// withMessages puts definitions-level declarations msgs before the
// process of src (a document made by doc, proc or around).
func withMessages(msgs, src string) string {
	return strings.Replace(src, header, header+msgs+"\n", 1)
}

// marked marks src as drawn for platform (executionPlatform of the
// Camunda Modeler).
func marked(platform, src string) string {
	return strings.Replace(src, `id="defs">`,
		`xmlns:modeler="http://camunda.org/schema/modeler/1.0" modeler:executionPlatform="`+platform+`" id="defs">`, 1)
}

// zeebeMessage declares message id called name with correlation key key.
func zeebeMessage(id, name, key string) string {
	return `<bpmn:message id="` + id + `" name="` + name + `"><bpmn:extensionElements><zeebe:subscription correlationKey="` +
		key + `"/></bpmn:extensionElements></bpmn:message>`
}

// messageOf is n's message without its compiled expressions.
func messageOf(t *testing.T, n *model.Node) model.Message {
	t.Helper()
	if n.Message == nil {
		t.Fatalf("%s has no message", n.ID)
	}
	return model.Message{Name: n.Message.Name, NameExpr: n.Message.NameExpr, CorrelationKey: n.Message.CorrelationKey}
}

func wantNode(t *testing.T, n *model.Node, kind model.Kind, ev model.EventType, msg model.Message) {
	t.Helper()
	if n.Kind != kind || n.Event != ev {
		t.Errorf("%s: %s %q, want %s %q", n.ID, n.Kind, n.Event, kind, ev)
	}
	if got := messageOf(t, n); got != msg {
		t.Errorf("%s: message %+v, want %+v", n.ID, got, msg)
	}
}

// Zeebe: names may be FEEL, keys come from zeebe:subscription; a message
// start event takes no key.
func TestZeebeMessageCatches(t *testing.T) {
	p := mustParse(t, withMessages(
		zeebeMessage("paid", "order-paid", "=order.id")+
			zeebeMessage("dyn", `=&quot;paid-&quot; + region`, "o-17")+
			zeebeMessage("const", `= &quot;cancel&quot;`, "=id")+
			zeebeMessage("placed", "order-placed", "=ignored"),
		proc(`<bpmn:startEvent id="s"><bpmn:messageEventDefinition messageRef="placed"/></bpmn:startEvent>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait"/>
<bpmn:intermediateCatchEvent id="wait"><bpmn:extensionElements><zeebe:ioMapping><zeebe:output source="=amount" target="paid"/></zeebe:ioMapping></bpmn:extensionElements>
  <bpmn:messageEventDefinition id="def" messageRef="paid"/></bpmn:intermediateCatchEvent>
<bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="recv"/>
<bpmn:receiveTask id="recv" messageRef="dyn"/>
<bpmn:boundaryEvent id="cancel" attachedToRef="recv"><bpmn:messageEventDefinition messageRef="const"/></bpmn:boundaryEvent>
<bpmn:boundaryEvent id="remind" attachedToRef="recv" cancelActivity="false"><bpmn:messageEventDefinition messageRef="paid"/></bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f3" sourceRef="recv" targetRef="e"/>
<bpmn:sequenceFlow id="f4" sourceRef="cancel" targetRef="e"/>
<bpmn:sequenceFlow id="f5" sourceRef="remind" targetRef="e"/>
<bpmn:endEvent id="e"/>`)))
	wantNode(t, node(t, p, "s"), model.StartEvent, model.MessageEvent, model.Message{Name: "order-placed"})
	wait := node(t, p, "wait")
	wantNode(t, wait, model.IntermediateCatchEvent, model.MessageEvent, model.Message{Name: "order-paid", CorrelationKey: "=order.id"})
	if len(wait.Outputs) != 1 || wait.Outputs[0].Target != "paid" || wait.Outputs[0].Source != "=amount" {
		t.Errorf("catch outputs %+v", wait.Outputs)
	}
	wantNode(t, node(t, p, "recv"), model.ReceiveTask, model.NoneEvent,
		model.Message{NameExpr: `="paid-" + region`, CorrelationKey: expression.Literal("o-17")})
	cancel := node(t, p, "cancel")
	wantNode(t, cancel, model.BoundaryEvent, model.MessageEvent, model.Message{Name: "cancel", CorrelationKey: "=id"})
	if !cancel.Interrupting || cancel.AttachedTo != "recv" {
		t.Errorf("cancel: %+v", cancel)
	}
	remind := node(t, p, "remind")
	wantNode(t, remind, model.BoundaryEvent, model.MessageEvent, model.Message{Name: "order-paid", CorrelationKey: "=order.id"})
	if remind.Interrupting {
		t.Errorf("remind is interrupting")
	}
	if got := p.MessageStarts(); len(got) != 1 || got[0].ID != "s" {
		t.Errorf("message starts %v", got)
	}
}

// Camunda 7: messages have no key; names may be JUEL.
func TestCamunda7MessageCatches(t *testing.T) {
	p := mustParse(t, withMessages(`<bpmn:message id="approve" name="approve"/><bpmn:message id="dyn" name="${messageName}"/>`,
		proc(`<bpmn:startEvent id="s"/>
<bpmn:startEvent id="s2"><bpmn:messageEventDefinition messageRef="approve"/></bpmn:startEvent>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait"/>
<bpmn:sequenceFlow id="f0" sourceRef="s2" targetRef="wait"/>
<bpmn:intermediateCatchEvent id="wait" camunda:asyncAfter="true"><bpmn:messageEventDefinition messageRef="approve"/></bpmn:intermediateCatchEvent>
<bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="recv"/>
<bpmn:receiveTask id="recv" messageRef="dyn"><bpmn:extensionElements><camunda:inputOutput>
  <camunda:outputParameter name="decision">${answer}</camunda:outputParameter></camunda:inputOutput></bpmn:extensionElements></bpmn:receiveTask>
<bpmn:boundaryEvent id="b" attachedToRef="recv" cancelActivity="false"><bpmn:messageEventDefinition messageRef="approve"/></bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f3" sourceRef="recv" targetRef="e"/>
<bpmn:sequenceFlow id="f4" sourceRef="b" targetRef="e"/>
<bpmn:endEvent id="e"/>`)))
	wantNode(t, node(t, p, "s2"), model.StartEvent, model.MessageEvent, model.Message{Name: "approve"})
	wantNode(t, node(t, p, "wait"), model.IntermediateCatchEvent, model.MessageEvent, model.Message{Name: "approve"})
	recv := node(t, p, "recv")
	wantNode(t, recv, model.ReceiveTask, model.NoneEvent, model.Message{NameExpr: "${messageName}"})
	if len(recv.Outputs) != 1 || recv.Outputs[0].Target != "decision" || recv.Outputs[0].Source != "${answer}" {
		t.Errorf("receive task outputs %+v", recv.Outputs)
	}
	wantNode(t, node(t, p, "b"), model.BoundaryEvent, model.MessageEvent, model.Message{Name: "approve"})
	if p.StartOf("") == nil || p.StartOf("").ID != "s" {
		t.Errorf("none start %v", p.StartOf(""))
	}
}

// A catch needs a correlation key in a Zeebe model only. A Zeebe model is
// one marked for Camunda 8 by the modeler, or, unmarked, one that uses a
// Zeebe extension.
func TestMessageDialect(t *testing.T) {
	catch := around(`<bpmn:intermediateCatchEvent id="t">
  <bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateCatchEvent>`)
	keyless := withMessages(`<bpmn:message id="m" name="go"/>`, catch)
	zeebeTask := strings.Replace(keyless, `<bpmn:endEvent id="e"/>`,
		`<bpmn:endEvent id="e"><bpmn:extensionElements><zeebe:properties/></bpmn:extensionElements></bpmn:endEvent>`, 1)
	for _, c := range []struct {
		name  string
		src   string
		zeebe bool
	}{
		{"unmarked, no vendor extension", keyless, false},
		{"unmarked, a Zeebe extension", zeebeTask, true},
		{"marked Camunda Cloud", marked("Camunda Cloud", keyless), true},
		{"marked Camunda Platform, a Zeebe extension", marked("Camunda Platform", zeebeTask), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.zeebe {
				if m := messageOf(t, node(t, mustParse(t, c.src), "t")); m != (model.Message{Name: "go"}) {
					t.Errorf("message %+v", m)
				}
				return
			}
			e := importError(t, parseErr(t, c.src))
			if e.Element != "bpmn:intermediateCatchEvent" || e.ID != "t" || e.Line != lineOf(t, c.src, "<bpmn:messageEventDefinition") ||
				!strings.Contains(e.Msg, `message "m" has no correlation key; in a Zeebe model the message needs <zeebe:subscription correlationKey="=..."/>`) {
				t.Errorf("got %v", e)
			}
		})
	}
	// With a key, every dialect takes it.
	keyed := withMessages(zeebeMessage("m", "go", "=k"), catch)
	for _, src := range []string{keyed, marked("Camunda Platform", keyed)} {
		if m := messageOf(t, node(t, mustParse(t, src), "t")); m != (model.Message{Name: "go", CorrelationKey: "=k"}) {
			t.Errorf("message %+v", m)
		}
	}
}

// Zeebe throws are jobs: zeebe:taskDefinition with headers, retries and
// mappings, and jetbpm job options.
func TestZeebeMessageThrows(t *testing.T) {
	p := mustParse(t, withMessages(`<bpmn:message id="m" name="shipped"/>`, proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="send"/>
<bpmn:sendTask id="send" messageRef="m"><bpmn:extensionElements>
  <zeebe:taskDefinition type="mail" retries="5"/>
  <zeebe:taskHeaders><zeebe:header key="template" value="shipped"/></zeebe:taskHeaders>
  <zeebe:ioMapping><zeebe:input source="=order.email" target="to"/></zeebe:ioMapping>
  <jetbpm:worker lockDuration="PT2M"/>
</bpmn:extensionElements></bpmn:sendTask>
<bpmn:sequenceFlow id="f2" sourceRef="send" targetRef="notify"/>
<bpmn:intermediateThrowEvent id="notify"><bpmn:extensionElements><zeebe:taskDefinition type="notify"/></bpmn:extensionElements>
  <bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateThrowEvent>
<bpmn:sequenceFlow id="f3" sourceRef="notify" targetRef="pass"/>
<bpmn:intermediateThrowEvent id="pass"/>
<bpmn:sequenceFlow id="f4" sourceRef="pass" targetRef="e"/>
<bpmn:endEvent id="e"><bpmn:extensionElements><zeebe:taskDefinition type="done"/></bpmn:extensionElements><bpmn:messageEventDefinition/></bpmn:endEvent>`)))
	send := node(t, p, "send")
	wantNode(t, send, model.SendTask, model.NoneEvent, model.Message{Name: "shipped"})
	if w := send.Service.Worker; w == nil || w.Topic != "mail" || w.Retries != 5 || w.Headers["template"] != "shipped" ||
		w.Options.LockDuration != 2*time.Minute || send.Service.Operation != "" {
		t.Errorf("send task service %+v worker %+v", send.Service, w)
	}
	if len(send.Inputs) != 1 || send.Inputs[0].Target != "to" || send.Inputs[0].Source != "=order.email" {
		t.Errorf("send task inputs %+v", send.Inputs)
	}
	notify := node(t, p, "notify")
	wantNode(t, notify, model.IntermediateThrowEvent, model.MessageEvent, model.Message{Name: "shipped"})
	if !notify.IsExternal() || notify.Service.Worker.Topic != "notify" || notify.Publish != nil {
		t.Errorf("throw event %+v", notify)
	}
	if pass := node(t, p, "pass"); pass.Kind != model.IntermediateThrowEvent || pass.Event != model.NoneEvent ||
		pass.Message != nil || pass.Service != nil {
		t.Errorf("none throw event %+v", pass)
	}
	// A throw without messageRef: its job decides what it sends.
	if e := node(t, p, "e"); e.Event != model.MessageEvent || e.Message != nil || !e.IsExternal() || e.Service.Worker.Topic != "done" {
		t.Errorf("message end event %+v", e)
	}
}

// Camunda 7 throws: camunda:type="external" on a send task or on a throw
// event's messageEventDefinition; class, delegateExpression and expression
// name in-process operations as on service tasks.
func TestCamunda7MessageThrows(t *testing.T) {
	p := mustParse(t, withMessages(`<bpmn:message id="m" name="shipped"/>`, proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="send"/>
<bpmn:sendTask id="send" messageRef="m" camunda:type="external" camunda:topic="mail" camunda:taskPriority="5"><bpmn:extensionElements>
  <camunda:inputOutput><camunda:inputParameter name="to">${email}</camunda:inputParameter></camunda:inputOutput>
</bpmn:extensionElements></bpmn:sendTask>
<bpmn:sequenceFlow id="f2" sourceRef="send" targetRef="sendOp"/>
<bpmn:sendTask id="sendOp" camunda:delegateExpression="${mailer}"/>
<bpmn:sequenceFlow id="f3" sourceRef="sendOp" targetRef="notify"/>
<bpmn:intermediateThrowEvent id="notify"><bpmn:messageEventDefinition messageRef="m" camunda:type="external" camunda:topic="notify"/></bpmn:intermediateThrowEvent>
<bpmn:sequenceFlow id="f4" sourceRef="notify" targetRef="op"/>
<bpmn:intermediateThrowEvent id="op" jetbpm:operation="ship" jetbpm:timeout="PT5S"><bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateThrowEvent>
<bpmn:sequenceFlow id="f5" sourceRef="op" targetRef="e"/>
<bpmn:endEvent id="e"><bpmn:messageEventDefinition camunda:class="com.acme.Done"/></bpmn:endEvent>`)))
	send := node(t, p, "send")
	wantNode(t, send, model.SendTask, model.NoneEvent, model.Message{Name: "shipped"})
	if !send.IsExternal() || send.Service.Worker.Topic != "mail" || send.Extensions["camunda:taskPriority"] != "5" {
		t.Errorf("send task %+v", send)
	}
	if len(send.Inputs) != 1 || send.Inputs[0].Target != "to" || send.Inputs[0].Source != "${email}" {
		t.Errorf("send task inputs %+v", send.Inputs)
	}
	if s := node(t, p, "sendOp").Service; s == nil || s.Operation != "${mailer}" || s.Worker != nil {
		t.Errorf("send task operation %+v", s)
	}
	notify := node(t, p, "notify")
	wantNode(t, notify, model.IntermediateThrowEvent, model.MessageEvent, model.Message{Name: "shipped"})
	if !notify.IsExternal() || notify.Service.Worker.Topic != "notify" || notify.Extensions["camunda:topic"] != "notify" {
		t.Errorf("throw event %+v", notify)
	}
	if s := node(t, p, "op").Service; s == nil || s.Operation != "ship" || s.Timeout != 5*time.Second {
		t.Errorf("throw event operation %+v", s)
	}
	if e := node(t, p, "e"); e.Event != model.MessageEvent || e.Service == nil || e.Service.Operation != "com.acme.Done" {
		t.Errorf("end event %+v", e)
	}
}

func TestEventBasedGateway(t *testing.T) {
	for _, attrs := range []string{``, `eventGatewayType="Exclusive" instantiate="false" gatewayDirection="Diverging"`} {
		p := mustParse(t, withMessages(zeebeMessage("m", "answer", "=key")+zeebeMessage("r", "reply", "=key"), proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
<bpmn:eventBasedGateway id="g" `+attrs+`/>
<bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="msg"/>
<bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="timer"/>
<bpmn:sequenceFlow id="f4" sourceRef="g" targetRef="recv"/>
<bpmn:intermediateCatchEvent id="msg"><bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateCatchEvent>
<bpmn:intermediateCatchEvent id="timer"><bpmn:timerEventDefinition><bpmn:timeDuration>PT10S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
<bpmn:receiveTask id="recv" messageRef="r"/>
<bpmn:sequenceFlow id="f5" sourceRef="msg" targetRef="e"/>
<bpmn:sequenceFlow id="f6" sourceRef="timer" targetRef="e"/>
<bpmn:sequenceFlow id="f7" sourceRef="recv" targetRef="e"/>
<bpmn:endEvent id="e"/>`)))
		if g := node(t, p, "g"); g.Kind != model.EventBasedGateway || len(p.Outgoing("g")) != 3 {
			t.Errorf("%s: gateway %+v", attrs, g)
		}
		wantNode(t, node(t, p, "msg"), model.IntermediateCatchEvent, model.MessageEvent, model.Message{Name: "answer", CorrelationKey: "=key"})
		wantNode(t, node(t, p, "recv"), model.ReceiveTask, model.NoneEvent, model.Message{Name: "reply", CorrelationKey: "=key"})
	}
}

// Every unsupported message form is refused, naming the element, its id
// and the line.
func TestMessageRefusals(t *testing.T) {
	const msgs = `<bpmn:message id="m" name="go"/>`
	cases := []struct {
		name, src string
		element   string // tag in the error; the id is "t" unless elemID says
		elemID    string
		marker    string // the error's line is this text's line
		msg       string
	}{
		{"unknown messageRef", withMessages(msgs, around(`<bpmn:intermediateCatchEvent id="t">
  <bpmn:messageEventDefinition messageRef="nope"/></bpmn:intermediateCatchEvent>`)), "bpmn:intermediateCatchEvent", "",
			`messageRef="nope"`, `bpmn:messageEventDefinition: messageRef "nope" names no <bpmn:message> of this document`},
		{"catch without messageRef", around(`<bpmn:intermediateCatchEvent id="t">
  <bpmn:messageEventDefinition/></bpmn:intermediateCatchEvent>`), "bpmn:intermediateCatchEvent", "",
			"<bpmn:messageEventDefinition", "a message catch needs messageRef"},
		{"boundary without messageRef", proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="a"/><bpmn:task id="a"/>
<bpmn:sequenceFlow id="f2" sourceRef="a" targetRef="e"/><bpmn:endEvent id="e"/><bpmn:boundaryEvent id="t" attachedToRef="a">
  <bpmn:messageEventDefinition/></bpmn:boundaryEvent><bpmn:sequenceFlow id="f3" sourceRef="t" targetRef="e"/>`), "bpmn:boundaryEvent", "",
			"<bpmn:messageEventDefinition", "a message catch needs messageRef"},
		{"receive task unknown messageRef", around(`<bpmn:receiveTask id="t" messageRef="x"/>`), "bpmn:receiveTask", "",
			"<bpmn:receiveTask", `messageRef "x" names no <bpmn:message>`},
		{"start without messageRef", proc(`<bpmn:startEvent id="t">
  <bpmn:messageEventDefinition/></bpmn:startEvent><bpmn:sequenceFlow id="f" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/>`), "bpmn:startEvent", "",
			"<bpmn:messageEventDefinition", "a message start event needs messageRef"},
		{"start in a sub-process", withMessages(msgs, around(`<bpmn:subProcess id="t"><bpmn:startEvent id="inner">
  <bpmn:messageEventDefinition messageRef="m"/></bpmn:startEvent></bpmn:subProcess>`)), "bpmn:startEvent", "inner",
			"<bpmn:messageEventDefinition", "message start events are supported at process level only"},
		{"zeebe catch without key", withMessages(msgs, around(`<bpmn:receiveTask id="t" messageRef="m"><bpmn:extensionElements>
  <zeebe:ioMapping/></bpmn:extensionElements></bpmn:receiveTask>`)), "bpmn:receiveTask", "",
			"<bpmn:receiveTask", `message "m" has no correlation key`},
		{"zeebe boundary without key", marked("Camunda Cloud", withMessages(msgs, proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="a"/><bpmn:task id="a"/>
<bpmn:sequenceFlow id="f2" sourceRef="a" targetRef="e"/><bpmn:endEvent id="e"/><bpmn:boundaryEvent id="t" attachedToRef="a">
  <bpmn:messageEventDefinition messageRef="m"/></bpmn:boundaryEvent><bpmn:sequenceFlow id="f3" sourceRef="t" targetRef="e"/>`))), "bpmn:boundaryEvent", "",
			"<bpmn:messageEventDefinition", `message "m" has no correlation key`},
		{"message without name", withMessages(`<bpmn:message id="m"/>`, around(`<bpmn:receiveTask id="t" messageRef="m"/>`)), "bpmn:message", "m",
			`<bpmn:message id="m"`, "the message has no name"},
		{"unclosed composite name", withMessages(`<bpmn:message id="m" name="order-${id"/>`, around(`<bpmn:receiveTask id="t" messageRef="m"/>`)), "bpmn:message", "m",
			`<bpmn:message id="m"`, `name "order-${id": expression "order-${id": missing closing "}"`},
		{"bad name expression", withMessages(`<bpmn:message id="m" name="=a +"/>`, around(`<bpmn:receiveTask id="t" messageRef="m"/>`)), "bpmn:message", "m",
			`<bpmn:message id="m"`, `name "=a +": expression`},
		{"bad key", withMessages(zeebeMessage("m", "go", "=a +"), around(`<bpmn:receiveTask id="t" messageRef="m"/>`)), "bpmn:message", "m",
			`<bpmn:message id="m"`, `zeebe:subscription: correlationKey "=a +": expression`},
		{"subscription twice", withMessages(`<bpmn:message id="m" name="go"><bpmn:extensionElements><zeebe:subscription correlationKey="=a"/>
<zeebe:subscription correlationKey="=b"/></bpmn:extensionElements></bpmn:message>`, around(`<bpmn:receiveTask id="t" messageRef="m"/>`)), "bpmn:message", "m",
			`correlationKey="=b"`, "zeebe:subscription: appears twice in the message"},
		{"unknown extension on a message", withMessages(`<bpmn:message id="m" name="go"><bpmn:extensionElements>
<camunda:properties/></bpmn:extensionElements></bpmn:message>`, around(`<bpmn:receiveTask id="t" messageRef="m"/>`)), "bpmn:message", "m",
			`<camunda:properties`, "camunda:properties: not supported on a message"},
		{"subscription on a node", withMessages(zeebeMessage("m", "go", "=k"), around(`<bpmn:receiveTask id="t" messageRef="m"><bpmn:extensionElements>
  <zeebe:subscription correlationKey="=k"/></bpmn:extensionElements></bpmn:receiveTask>`)), "bpmn:receiveTask", "",
			`<zeebe:subscription correlationKey="=k"/></bpmn:extensionElements></bpmn:receiveTask>`, "zeebe:subscription: belongs in the extensionElements of the <bpmn:message>"},
		{"instantiating receive task", withMessages(msgs, around(`<bpmn:receiveTask id="t" messageRef="m" instantiate="true"/>`)), "bpmn:receiveTask", "",
			"<bpmn:receiveTask", `instantiate="true": receive tasks that start a process are not supported; use a message start event`},
		{"instantiating gateway", around(`<bpmn:eventBasedGateway id="t" instantiate="true"/>`), "bpmn:eventBasedGateway", "",
			"<bpmn:eventBasedGateway", `instantiate="true": event-based gateways that start a process are not supported`},
		{"instantiate not boolean", around(`<bpmn:eventBasedGateway id="t" instantiate="yes"/>`), "bpmn:eventBasedGateway", "",
			"<bpmn:eventBasedGateway", `instantiate="yes" is not a boolean`},
		{"parallel event gateway", around(`<bpmn:eventBasedGateway id="t" eventGatewayType="Parallel"/>`), "bpmn:eventBasedGateway", "",
			"<bpmn:eventBasedGateway", `eventGatewayType="Parallel" is not supported (only Exclusive`},
		{"signal throw without a signal", around(`<bpmn:intermediateThrowEvent id="t">
  <bpmn:signalEventDefinition/></bpmn:intermediateThrowEvent>`), "bpmn:intermediateThrowEvent", "",
			"<bpmn:signalEventDefinition", "a signal event needs signalRef"},
		{"timer throw", around(`<bpmn:intermediateThrowEvent id="t">
  <bpmn:timerEventDefinition/></bpmn:intermediateThrowEvent>`), "bpmn:intermediateThrowEvent", "",
			"<bpmn:timerEventDefinition", "a intermediateThrowEvent cannot have a timerEventDefinition"},
		{"child of a message definition", withMessages(msgs, around(`<bpmn:intermediateCatchEvent id="t"><bpmn:messageEventDefinition messageRef="m">
  <bpmn:fancy/></bpmn:messageEventDefinition></bpmn:intermediateCatchEvent>`)), "bpmn:intermediateCatchEvent", "",
			"<bpmn:fancy", "bpmn:fancy: not supported inside a messageEventDefinition"},

		{"jetbpm attribute on a message definition", withMessages(msgs, around(`<bpmn:intermediateThrowEvent id="t">
  <bpmn:messageEventDefinition messageRef="m" jetbpm:operation="x"/></bpmn:intermediateThrowEvent>`)), "bpmn:intermediateThrowEvent", "",
			"<bpmn:messageEventDefinition", "bpmn:messageEventDefinition: unknown attribute jetbpm:operation (jetbpm attributes go on the intermediateThrowEvent)"},

		// Throws.
		{"camunda:type on a throw event", withMessages(msgs, around(`<bpmn:intermediateThrowEvent id="t" camunda:type="external" camunda:topic="x">
  <bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateThrowEvent>`)), "bpmn:intermediateThrowEvent", "",
			"<bpmn:intermediateThrowEvent", "camunda:type belongs on the event's bpmn:messageEventDefinition"},
		{"camunda:type connector", withMessages(msgs, around(`<bpmn:intermediateThrowEvent id="t">
  <bpmn:messageEventDefinition messageRef="m" camunda:type="connector"/></bpmn:intermediateThrowEvent>`)), "bpmn:intermediateThrowEvent", "",
			"<bpmn:messageEventDefinition", `bpmn:messageEventDefinition: camunda:type="connector" is not supported (only "external")`},
		{"send task connector type", around(`<bpmn:sendTask id="t" camunda:type="connector"/>`), "bpmn:sendTask", "",
			"<bpmn:sendTask", `camunda:type="connector" is not supported`},
		{"several implementations", around(`<bpmn:sendTask id="t" camunda:class="a.B" camunda:expression="${x}"/>`), "bpmn:sendTask", "",
			"<bpmn:sendTask", "several in-process implementations (camunda:class, camunda:expression)"},
		{"zeebe and camunda job", around(`<bpmn:sendTask id="t" camunda:type="external" camunda:topic="a"><bpmn:extensionElements>
  <zeebe:taskDefinition type="b"/></bpmn:extensionElements></bpmn:sendTask>`), "bpmn:sendTask", "",
			"<zeebe:taskDefinition", `both camunda:type="external" and a zeebe:taskDefinition`},
		{"connector in a message definition", withMessages(msgs, around(`<bpmn:endEvent id="t"><bpmn:messageEventDefinition messageRef="m"><bpmn:extensionElements>
  <camunda:connector/></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:endEvent>`)), "bpmn:endEvent", "",
			"<camunda:connector", "camunda:connector: has no camunda:connectorId"},
		{"retry cycle on a send task", around(`<bpmn:sendTask id="t" camunda:type="external" camunda:topic="a"><bpmn:extensionElements>
  <camunda:failedJobRetryTimeCycle>R3/PT1M</camunda:failedJobRetryTimeCycle></bpmn:extensionElements></bpmn:sendTask>`), "bpmn:sendTask", "",
			"<camunda:failedJobRetryTimeCycle", "configure retries with <jetbpm:retryPolicy>"},
		{"job definition on a receive task", withMessages(zeebeMessage("m", "go", "=k"), around(`<bpmn:receiveTask id="t" messageRef="m"><bpmn:extensionElements>
  <zeebe:taskDefinition type="x"/></bpmn:extensionElements></bpmn:receiveTask>`)), "bpmn:receiveTask", "",
			"<zeebe:taskDefinition", "applies to service tasks, send tasks and message throw events only"},
		{"job definition on a none throw", around(`<bpmn:intermediateThrowEvent id="t"><bpmn:extensionElements>
  <zeebe:taskDefinition type="x"/></bpmn:extensionElements></bpmn:intermediateThrowEvent>`), "bpmn:intermediateThrowEvent", "",
			"<zeebe:taskDefinition", "applies to service tasks, send tasks and message throw events only"},
		{"job options on an operation throw", around(`<bpmn:sendTask id="t" camunda:class="a.B"><bpmn:extensionElements>
  <jetbpm:retryPolicy kind="none"/></bpmn:extensionElements></bpmn:sendTask>`), "bpmn:sendTask", "",
			"<jetbpm:retryPolicy", "job options apply to external jobs only; this sendTask runs in process"},
		{"job options on a catch", withMessages(msgs, around(`<bpmn:receiveTask id="t" messageRef="m"><bpmn:extensionElements>
  <jetbpm:worker topic="x"/></bpmn:extensionElements></bpmn:receiveTask>`)), "bpmn:receiveTask", "",
			"<jetbpm:worker", "applies to external service tasks, send tasks and message throw events only"},
		{"timeout without operation", withMessages(msgs, around(`<bpmn:sendTask id="t" messageRef="m" jetbpm:timeout="PT1S"><bpmn:extensionElements>
  <jetbpm:publish/></bpmn:extensionElements></bpmn:sendTask>`)), "bpmn:sendTask", "",
			"<bpmn:sendTask", "jetbpm:timeout bounds an in-process operation, and this sendTask runs none"},
		{"operation on a catch", withMessages(msgs, around(`<bpmn:receiveTask id="t" messageRef="m" jetbpm:operation="x"/>`)), "bpmn:receiveTask", "",
			"<bpmn:receiveTask", "jetbpm:operation applies to service tasks, send tasks and message throw events only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := importError(t, parseErr(t, c.src))
			id := c.elemID
			if id == "" {
				id = "t"
			}
			line := lineOf(t, c.src, c.marker)
			if e.Element != c.element || e.ID != id || e.Line != line || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got %v\nwant <%s id=%q> at line %d: ...%s", e, c.element, id, line, c.msg)
			}
		})
	}
}

// What validation refuses about imported messages carries the line too.
func TestMessageValidation(t *testing.T) {
	for _, c := range []struct {
		name, src, marker, msg string
	}{
		{"throw without job or publish", withMessages(`<bpmn:message id="m" name="go"/>`, around(`<bpmn:sendTask id="t" messageRef="m"/>`)),
			"<bpmn:sendTask", "throws a message but neither runs a job (a worker topic) nor publishes it (jetbpm:publish)"},
		{"message start name expression", withMessages(`<bpmn:message id="m" name="=kind"/>`, proc(`<bpmn:startEvent id="t">
  <bpmn:messageEventDefinition messageRef="m"/></bpmn:startEvent><bpmn:sequenceFlow id="f" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/>`)),
			`<bpmn:startEvent id="t"`, "a message start event's name must be a literal"},
		{"gateway to a task", around(`<bpmn:eventBasedGateway id="t"/>`),
			"<bpmn:eventBasedGateway", "needs at least two outgoing sequence flows"},
		{"gateway to a plain receive task", proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
<bpmn:eventBasedGateway id="t"/><bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="r"/><bpmn:sequenceFlow id="f3" sourceRef="t" targetRef="w"/>
<bpmn:receiveTask id="r"/><bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
<bpmn:sequenceFlow id="f4" sourceRef="r" targetRef="e"/><bpmn:sequenceFlow id="f5" sourceRef="w" targetRef="e"/><bpmn:endEvent id="e"/>`),
			"<bpmn:eventBasedGateway", `receive task "r" after the gateway has no message`},
		{"input mapping on a publishing throw event", withMessages(`<bpmn:message id="m" name="go"/>`, around(`<bpmn:intermediateThrowEvent id="t"><bpmn:extensionElements>
  <jetbpm:publish/><zeebe:ioMapping><zeebe:input source="=a" target="b"/></zeebe:ioMapping></bpmn:extensionElements>
  <bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateThrowEvent>`)),
			"<bpmn:intermediateThrowEvent", "only activities, none intermediate throw events, signal throws and message throws that run a job have input mappings"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := parseErr(t, c.src)
			var me *model.Error
			if !errors.As(err, &me) || me.Element != "t" || me.Line != lineOf(t, c.src, c.marker) || !strings.Contains(me.Msg, c.msg) {
				t.Errorf("got %v\nwant element t at line %d: ...%s", err, lineOf(t, c.src, c.marker), c.msg)
			}
		})
	}
}

// The import of each element is what the Go builder makes.
func TestMessageElementsMatchBuilder(t *testing.T) {
	p := mustParse(t, withMessages(zeebeMessage("m", "answer", "=key")+zeebeMessage("m2", "reply", "=key")+`<bpmn:message id="out" name="done"/>`, proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
<bpmn:eventBasedGateway id="g"/>
<bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="c"/>
<bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="r"/>
<bpmn:intermediateCatchEvent id="c"><bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateCatchEvent>
<bpmn:receiveTask id="r" messageRef="m2"/>
<bpmn:boundaryEvent id="b" attachedToRef="send" cancelActivity="false"><bpmn:messageEventDefinition messageRef="m"/></bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f4" sourceRef="c" targetRef="send"/>
<bpmn:sequenceFlow id="f5" sourceRef="r" targetRef="send"/>
<bpmn:sequenceFlow id="f6" sourceRef="b" targetRef="e"/>
<bpmn:sendTask id="send" messageRef="out"><bpmn:extensionElements><zeebe:taskDefinition type="mail"/></bpmn:extensionElements></bpmn:sendTask>
<bpmn:sequenceFlow id="f7" sourceRef="send" targetRef="e"/>
<bpmn:endEvent id="e"><bpmn:extensionElements><zeebe:taskDefinition type="done"/></bpmn:extensionElements><bpmn:messageEventDefinition messageRef="out"/></bpmn:endEvent>`)))
	b, err := model.NewBuilder("p").StartEvent("s").EventBasedGateway("g").
		MessageCatchEvent("c", "answer", "=key").ReceiveTask("r", "reply", "=key").
		MessageBoundary("b", "send", "answer", "=key", false).
		SendTask("send", "done", model.WithWorker("mail")).
		MessageEndEvent("e", "done", model.WithWorker("done")).
		Sequence("s", "g", "c", "send", "e").Flow("g", "r").Flow("r", "send").Flow("b", "e").Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"g", "c", "r", "b", "send", "e"} {
		got, want := node(t, p, id), b.Node(id)
		if got.Kind != want.Kind || got.Event != want.Event || got.Interrupting != want.Interrupting || got.AttachedTo != want.AttachedTo {
			t.Errorf("%s: imported %s %q, built %s %q", id, got.Kind, got.Event, want.Kind, want.Event)
		}
		if (got.Message == nil) != (want.Message == nil) || got.Message != nil && messageOf(t, got) != messageOf(t, want) {
			t.Errorf("%s: imported message %+v, built %+v", id, got.Message, want.Message)
		}
		if !reflect.DeepEqual(got.Service, want.Service) {
			t.Errorf("%s: imported service %+v, built %+v", id, got.Service, want.Service)
		}
	}
}

// A Zeebe message throw that runs a job takes the job's io mappings.
func TestJobThrowMappings(t *testing.T) {
	p := mustParse(t, withMessages(`<bpmn:message id="m" name="go"/>`, around(`<bpmn:intermediateThrowEvent id="t"><bpmn:extensionElements>
  <zeebe:taskDefinition type="x"/><zeebe:ioMapping><zeebe:input source="=a" target="b"/><zeebe:output source="=r" target="out"/></zeebe:ioMapping></bpmn:extensionElements>
  <bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateThrowEvent>`)))
	n := node(t, p, "t")
	if len(n.Inputs) != 1 || n.Inputs[0].Target != "b" || len(n.Outputs) != 1 || n.Outputs[0].Target != "out" {
		t.Fatalf("throw mappings: inputs %+v outputs %+v", n.Inputs, n.Outputs)
	}
}
