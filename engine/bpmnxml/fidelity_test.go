package bpmnxml

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
)

// These tests cover Camunda models jetbpm once imported wrongly or refused
// although Camunda 7 or Zeebe runs them (docs/deviations.md).

// A topic with an expression in it is kept as an expression, evaluated per
// job; a literal or FEEL-constant topic stays a topic.
func TestTopicExpressions(t *testing.T) {
	for _, tc := range []struct {
		name, task  string
		topic, expr string
	}{
		{"camunda7 expression", `<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="${topicName}"/>`, "", "${topicName}"},
		{"camunda7 literal", `<bpmn:serviceTask id="t" camunda:type="external" camunda:topic=" billing "/>`, "billing", ""},
		{"zeebe expression", `<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="=region + &quot;-x&quot;"/></bpmn:extensionElements></bpmn:serviceTask>`, "", `=region + "-x"`},
		{"zeebe constant", `<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="=&quot;billing&quot;"/></bpmn:extensionElements></bpmn:serviceTask>`, "billing", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := node(t, mustParse(t, around(tc.task)), "t").Service.Worker
			if w.Topic != tc.topic || w.TopicExpr != tc.expr {
				t.Fatalf("topic %q expr %q, want %q %q", w.Topic, w.TopicExpr, tc.topic, tc.expr)
			}
			if (w.TopicCompiled() != nil) != (tc.expr != "") {
				t.Fatalf("compiled %v, want an expression only for %q", w.TopicCompiled(), tc.expr)
			}
		})
	}
	// A topic expression that does not compile is a deploy error.
	err := parseErr(t, around(`<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="${a +}"/>`))
	if !strings.Contains(err.Error(), `element "t" (line 6): serviceTask: topic: expression "${a +}"`) {
		t.Errorf("error %v", err)
	}
}

// Elements without an id get stable ones; a clash with a written id adds
// a suffix.
func TestMissingIDs(t *testing.T) {
	xml := proc(`<bpmn:startEvent/>
<bpmn:task id="t"/>
<bpmn:task/>
<bpmn:endEvent id="Flow_t_endEvent_1"/>
<bpmn:endEvent/>
<bpmn:sequenceFlow sourceRef="startEvent_1" targetRef="t"/>
<bpmn:sequenceFlow sourceRef="t" targetRef="task_1"/>
<bpmn:sequenceFlow sourceRef="task_1" targetRef="Flow_t_endEvent_1"/>
<bpmn:sequenceFlow id="" sourceRef="t" targetRef="endEvent_1"/>`)
	for range 2 { // the same document, the same ids
		p := mustParse(t, xml)
		var ids []string
		for _, n := range p.Nodes {
			ids = append(ids, n.ID)
		}
		for _, f := range p.Flows {
			ids = append(ids, f.ID)
		}
		want := "startEvent_1 t task_1 Flow_t_endEvent_1 endEvent_1 Flow_startEvent_1_t Flow_t_task_1 Flow_task_1_Flow_t_endEvent_1 Flow_t_endEvent_1_2"
		if got := strings.Join(ids, " "); got != want {
			t.Fatalf("ids %s\nwant %s", got, want)
		}
	}
}

// Zeebe's retries="" is the default; a zeebe:script still needs its
// result variable (Zeebe refuses one without), a Camunda 7 script not.
func TestZeebeRetriesAndScripts(t *testing.T) {
	w := node(t, mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="x" retries=""/></bpmn:extensionElements></bpmn:serviceTask>`)), "t").Service.Worker
	if w.Topic != "x" || w.Retries != 0 {
		t.Errorf("worker %+v, want the default retries", w)
	}
	err := parseErr(t, around(`<bpmn:scriptTask id="t"><bpmn:extensionElements><zeebe:script expression="=1"/></bpmn:extensionElements></bpmn:scriptTask>`))
	if !strings.Contains(err.Error(), "a zeebe:script needs a resultVariable") {
		t.Errorf("error %v", err)
	}
	if s := node(t, mustParse(t, around(`<bpmn:scriptTask id="t" scriptFormat="juel"><bpmn:script>${1}</bpmn:script></bpmn:scriptTask>`)), "t").Script; s.ResultVariable != "" || s.Compiled() == nil {
		t.Errorf("script %+v", s)
	}
}

// Camunda 7 text with ${...} in it (a composite) is an expression that
// concatenates, wherever Camunda 7 evaluates one: assignees and candidate
// lists, message and signal names, parameters, topics.
func TestCamunda7CompositeText(t *testing.T) {
	body := `<bpmn:message id="m" name="order-${id}"/>
<bpmn:signal id="sg" name="alarm-${zone}"/>
<bpmn:process id="p" isExecutable="true">
<bpmn:startEvent id="s"/>
<bpmn:userTask id="u" camunda:assignee="user-${id}" camunda:candidateGroups="sales, ${dept}"/>
<bpmn:serviceTask id="w" camunda:type="external" camunda:topic="orders-${zone}"><bpmn:extensionElements><camunda:inputOutput>
  <camunda:inputParameter name="greeting">Hello ${name}!</camunda:inputParameter></camunda:inputOutput></bpmn:extensionElements></bpmn:serviceTask>
<bpmn:receiveTask id="r" messageRef="m"/>
<bpmn:intermediateThrowEvent id="a"><bpmn:signalEventDefinition signalRef="sg"/></bpmn:intermediateThrowEvent>
<bpmn:endEvent id="e"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="u"/><bpmn:sequenceFlow id="f2" sourceRef="u" targetRef="w"/>
<bpmn:sequenceFlow id="f3" sourceRef="w" targetRef="r"/><bpmn:sequenceFlow id="f4" sourceRef="r" targetRef="a"/>
<bpmn:sequenceFlow id="f5" sourceRef="a" targetRef="e"/>
</bpmn:process>`
	p := mustParse(t, doc(body))
	vars := map[string]any{"id": int64(42), "dept": "ops", "zone": "eu", "name": nil}
	eval := func(what string, e *expression.Expression, want any) {
		t.Helper()
		if e == nil {
			t.Fatalf("%s: no expression", what)
		}
		if v, err := e.Eval(vars); err != nil || v != want {
			t.Errorf("%s = %#v, %v; want %#v", what, v, err, want)
		}
	}
	h := node(t, p, "u").Human
	eval("assignee", h.Compiled(model.AssigneeField), "user-42")
	eval("candidate groups", h.Compiled(model.CandidateGroupsField), "sales, ops")
	eval("topic", node(t, p, "w").Service.Worker.TopicCompiled(), "orders-eu")
	eval("parameter", node(t, p, "w").Inputs[0].Compiled(), "Hello !")
	eval("message name", node(t, p, "r").Message.NameCompiled(), "order-42")
	eval("signal name", node(t, p, "a").Signal.NameCompiled(), "alarm-eu")
}

// A Zeebe condition without its leading "=" is refused with a message that
// says what a Zeebe condition is.
func TestZeebeConditionWithoutEquals(t *testing.T) {
	src := doc(`<bpmn:process id="p" isExecutable="true">
<bpmn:startEvent id="s"/>
<bpmn:exclusiveGateway id="g" default="f3"/>
<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="x"/></bpmn:extensionElements></bpmn:serviceTask>
<bpmn:endEvent id="e"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
<bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="e"><bpmn:conditionExpression>hasReachedMaxAttempts=true</bpmn:conditionExpression></bpmn:sequenceFlow>
<bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="t"/>
<bpmn:sequenceFlow id="f4" sourceRef="t" targetRef="e"/>
</bpmn:process>`)
	e := importError(t, parseErr(t, src))
	if e.ID != "f2" || !strings.Contains(e.Msg, `a Zeebe condition is a FEEL expression and starts with "=" (write "=hasReachedMaxAttempts=true")`) {
		t.Errorf("error %v", e)
	}
	// With the "=", it imports.
	mustParse(t, strings.Replace(src, ">hasReached", ">=hasReached", 1))
}

// A receive task without messageRef is Camunda 7's plain wait state: it
// imports without a message (and keeps its boundary events).
func TestPlainReceiveTask(t *testing.T) {
	p := mustParse(t, around(`<bpmn:receiveTask id="t" name="Wait for the call"/>`))
	if n := node(t, p, "t"); n.Kind != model.ReceiveTask || n.Message != nil {
		t.Fatalf("receive task %+v, want a receive task without a message", n)
	}
}

// A signal catch event may follow an event-based gateway, as in Camunda 7
// and Zeebe.
func TestSignalAfterEventGateway(t *testing.T) {
	p := mustParse(t, signalDoc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
<bpmn:eventBasedGateway id="g"/>
<bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="sig"/>
<bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="timer"/>
<bpmn:intermediateCatchEvent id="sig"><bpmn:signalEventDefinition signalRef="go"/></bpmn:intermediateCatchEvent>
<bpmn:intermediateCatchEvent id="timer"><bpmn:timerEventDefinition><bpmn:timeDuration>PT10S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
<bpmn:sequenceFlow id="f4" sourceRef="sig" targetRef="e"/>
<bpmn:sequenceFlow id="f5" sourceRef="timer" targetRef="e"/>
<bpmn:endEvent id="e"/>`))
	if n := node(t, p, "sig"); n.Signal == nil || n.Signal.Name != "order-go" {
		t.Fatalf("signal branch %+v", n)
	}
	err := parseErr(t, signalDoc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
<bpmn:eventBasedGateway id="g"/>
<bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="a"/>
<bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="b"/>
<bpmn:intermediateCatchEvent id="a"><bpmn:signalEventDefinition signalRef="go"/></bpmn:intermediateCatchEvent>
<bpmn:intermediateCatchEvent id="b"><bpmn:signalEventDefinition signalRef="go"/></bpmn:intermediateCatchEvent>
<bpmn:sequenceFlow id="f4" sourceRef="a" targetRef="e"/>
<bpmn:sequenceFlow id="f5" sourceRef="b" targetRef="e"/>
<bpmn:endEvent id="e"/>`))
	if !strings.Contains(err.Error(), `branches "a" and "b" both catch signal "order-go"`) {
		t.Fatalf("two branches on one signal: %v", err)
	}
}

// A transaction imports as a sub-process marked Transaction, with its
// cancel end event and cancel boundary; a cancel end event outside a
// transaction is refused by validation, naming why.
func TestTransactionImport(t *testing.T) {
	p := mustParse(t, proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="tx"/>
<bpmn:transaction id="tx">
  <bpmn:startEvent id="ts"/><bpmn:sequenceFlow id="t1" sourceRef="ts" targetRef="abort"/>
  <bpmn:endEvent id="abort"><bpmn:cancelEventDefinition/></bpmn:endEvent>
</bpmn:transaction>
<bpmn:boundaryEvent id="onCancel" attachedToRef="tx"><bpmn:cancelEventDefinition/></bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f2" sourceRef="tx" targetRef="e"/>
<bpmn:sequenceFlow id="f3" sourceRef="onCancel" targetRef="e"/>
<bpmn:endEvent id="e"/>`))
	if tx := node(t, p, "tx"); tx.Kind != model.SubProcess || !tx.Transaction {
		t.Errorf("transaction %+v", tx)
	}
	if a := node(t, p, "abort"); a.Event != model.CancelEvent || a.Scope != "tx" {
		t.Errorf("cancel end %+v", a)
	}
	if b := node(t, p, "onCancel"); b.Event != model.CancelEvent || !b.Interrupting || p.CancelBoundaryOf("tx") != b {
		t.Errorf("cancel boundary %+v", b)
	}
	err := parseErr(t, around(`<bpmn:subProcess id="t"><bpmn:startEvent id="ss"/><bpmn:sequenceFlow id="s1" sourceRef="ss" targetRef="x"/>
<bpmn:endEvent id="x"><bpmn:cancelEventDefinition/></bpmn:endEvent></bpmn:subProcess>`))
	if !strings.Contains(err.Error(), `element "x"`) || !strings.Contains(err.Error(), "a cancel end event belongs directly in a transaction") {
		t.Errorf("cancel end in a plain sub-process: %v", err)
	}
}
