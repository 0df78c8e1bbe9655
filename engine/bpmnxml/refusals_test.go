package bpmnxml

import (
	"strings"
	"testing"
)

// Every refusal names the element, its id and its line.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name, task string
		element    string // tag in the error
		marker     string // the error's line is this text's line
		msg        string
	}{
		{"businessRuleTask", `<bpmn:businessRuleTask id="t"/>`, "bpmn:businessRuleTask", "<bpmn:businessRuleTask", "business rule tasks are not supported"},
		{"complexGateway", `<bpmn:complexGateway id="t"/>`, "bpmn:complexGateway", "<bpmn:complexGateway", "complex gateways are not supported"},
		{"adHocSubProcess", `<bpmn:adHocSubProcess id="t"/>`, "bpmn:adHocSubProcess", "<bpmn:adHocSubProcess", "ad-hoc sub-processes are not supported"},
		{"signal start of an event sub-process without a signal", `<bpmn:task id="t"/><bpmn:subProcess id="evt" triggeredByEvent="true"><bpmn:startEvent id="x">
  <bpmn:signalEventDefinition/></bpmn:startEvent></bpmn:subProcess>`, "bpmn:startEvent", "<bpmn:signalEventDefinition", "a signal event needs signalRef"},
		{"non-interrupting start outside an event sub-process", `<bpmn:subProcess id="t"><bpmn:startEvent id="x" isInterrupting="false"/></bpmn:subProcess>`, "bpmn:startEvent", "<bpmn:startEvent id=\"x\"", "applies to the start event of an event sub-process only"},
		{"unknown BPMN element", `<bpmn:task id="t"/><bpmn:fancyThing id="x"/>`, "bpmn:fancyThing", "<bpmn:fancyThing", "fancyThing elements are not supported"},
		{"standardLoop", `<bpmn:task id="t">
  <bpmn:standardLoopCharacteristics/></bpmn:task>`, "bpmn:task", "<bpmn:standardLoop", "standard loops are not supported yet"},
		{"signal boundary without a signal", `<bpmn:task id="t"/><bpmn:boundaryEvent id="b" attachedToRef="t">
  <bpmn:signalEventDefinition/></bpmn:boundaryEvent>`, "bpmn:boundaryEvent", "<bpmn:signalEventDefinition", "a signal event needs signalRef"},
		{"escalation without its declaration", `<bpmn:task id="t"/><bpmn:endEvent id="x">
  <bpmn:escalationEventDefinition escalationRef="nope"/></bpmn:endEvent>`, "bpmn:endEvent", "<bpmn:escalationEventDefinition", `escalationRef "nope" names no <escalation>`},
		{"conditional", `<bpmn:task id="t"/><bpmn:boundaryEvent id="b" attachedToRef="t">
  <bpmn:conditionalEventDefinition/></bpmn:boundaryEvent>`, "bpmn:boundaryEvent", "<bpmn:conditionalEventDefinition", "a conditional event needs a <condition>"},
		{"link end", `<bpmn:task id="t"/><bpmn:endEvent id="x">
  <bpmn:linkEventDefinition name="l"/></bpmn:endEvent>`, "bpmn:endEvent", "<bpmn:linkEventDefinition", "a endEvent cannot have a linkEventDefinition"},
		{"conditional catch", `<bpmn:task id="t"/><bpmn:intermediateCatchEvent id="x">
  <bpmn:conditionalEventDefinition camunda:variableEvents="create, change"><bpmn:condition>${a}</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>`, "bpmn:intermediateCatchEvent", "<bpmn:conditionalEventDefinition", `"change" is not create, update or delete`},
		{"compensation without waiting", `<bpmn:task id="t"/><bpmn:intermediateThrowEvent id="x">
  <bpmn:compensateEventDefinition waitForCompletion="false"/></bpmn:intermediateThrowEvent>`, "bpmn:intermediateThrowEvent", "<bpmn:compensateEventDefinition", `waitForCompletion="false" is not supported`},
		{"isForCompensation not a boolean", `<bpmn:task id="t" isForCompensation="yes"/>`, "bpmn:task", "<bpmn:task", `isForCompensation="yes" is not a boolean`},
		{"cancel throw", `<bpmn:task id="t"/><bpmn:intermediateThrowEvent id="x">
  <bpmn:cancelEventDefinition/></bpmn:intermediateThrowEvent>`, "bpmn:intermediateThrowEvent", "<bpmn:cancelEventDefinition", "a intermediateThrowEvent cannot have a cancelEventDefinition"},
		{"execution listener", `<bpmn:task id="t"><bpmn:extensionElements>
  <camunda:executionListener class="a.B" event="start"/></bpmn:extensionElements></bpmn:task>`, "bpmn:task", "<camunda:executionListener", "camunda:executionListener: an execution listener with camunda:class runs Java code, which jetbpm cannot run"},
		{"delegate expression listener", `<bpmn:task id="t"><bpmn:extensionElements>
  <camunda:executionListener delegateExpression="${bean}" event="end"/></bpmn:extensionElements></bpmn:task>`, "bpmn:task", "<camunda:executionListener", "with camunda:delegateExpression runs Java code"},
		{"groovy listener", `<bpmn:task id="t"><bpmn:extensionElements>
  <camunda:executionListener event="start"><camunda:script scriptFormat="groovy">println 'x'</camunda:script></camunda:executionListener></bpmn:extensionElements></bpmn:task>`, "bpmn:task", "<camunda:script", `script format "groovy" needs a JVM script engine`},
		{"listener without event", `<bpmn:task id="t"><bpmn:extensionElements>
  <camunda:executionListener expression="${x}"/></bpmn:extensionElements></bpmn:task>`, "bpmn:task", "<camunda:executionListener", "an execution listener needs an event (start or end)"},
		{"take on a task", `<bpmn:task id="t"><bpmn:extensionElements>
  <camunda:executionListener event="take" expression="${x}"/></bpmn:extensionElements></bpmn:task>`, "bpmn:task", "<camunda:executionListener", `event "take": want start or end`},
		{"listener without work", `<bpmn:task id="t"><bpmn:extensionElements>
  <camunda:executionListener event="end"/></bpmn:extensionElements></bpmn:task>`, "bpmn:task", "<camunda:executionListener", "needs an expression or a camunda:script"},
		{"task listener", `<bpmn:task id="t"><bpmn:extensionElements>
  <camunda:taskListener event="create"/></bpmn:extensionElements></bpmn:task>`, "bpmn:task", "<camunda:taskListener", "camunda:taskListener: applies to user tasks only"},
		{"connector", `<bpmn:serviceTask id="t"><bpmn:extensionElements>
  <camunda:connector><camunda:connectorId>soap-http-connector</camunda:connectorId></camunda:connector></bpmn:extensionElements></bpmn:serviceTask>`, "bpmn:serviceTask", "<camunda:connector>", `connectorId "soap-http-connector" is not supported (only http-connector`},
		{"retry cycle", `<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="x"><bpmn:extensionElements>
  <camunda:failedJobRetryTimeCycle>R5/PT5M</camunda:failedJobRetryTimeCycle></bpmn:extensionElements></bpmn:serviceTask>`, "bpmn:serviceTask", "<camunda:failedJobRetryTimeCycle", "configure retries with <jetbpm:retryPolicy>"},
		{"listener on flow", `<bpmn:task id="t"/><bpmn:sequenceFlow id="ff" sourceRef="t" targetRef="e">
  <bpmn:extensionElements><camunda:executionListener class="x"/></bpmn:extensionElements></bpmn:sequenceFlow>`, "bpmn:sequenceFlow", "<camunda:executionListener", "with camunda:class runs Java code"},
		{"start on a flow", `<bpmn:task id="t"/><bpmn:sequenceFlow id="ff" sourceRef="t" targetRef="e">
  <bpmn:extensionElements><camunda:executionListener event="start" expression="${x}"/></bpmn:extensionElements></bpmn:sequenceFlow>`, "bpmn:sequenceFlow", "<camunda:executionListener", `listens to take, not "start"`},
		{"groovy condition", `<bpmn:task id="t"/><bpmn:sequenceFlow id="ff" sourceRef="t" targetRef="e">
  <bpmn:conditionExpression language="groovy">a == 1</bpmn:conditionExpression></bpmn:sequenceFlow>`, "bpmn:sequenceFlow", "<bpmn:conditionExpression", `script format "groovy" needs a JVM script engine: not supported`},
		{"job worker script task", `<bpmn:scriptTask id="t"><bpmn:extensionElements>
  <zeebe:taskDefinition type="script"/></bpmn:extensionElements></bpmn:scriptTask>`, "bpmn:scriptTask", "<zeebe:taskDefinition", "script tasks run by job workers are not supported"},
		{"unknown zeebe extension", `<bpmn:task id="t"><bpmn:extensionElements>
  <zeebe:somethingNew/></bpmn:extensionElements></bpmn:task>`, "bpmn:task", "<zeebe:somethingNew", "zeebe:somethingNew: not supported"},
		{"unknown jetbpm extension", `<bpmn:task id="t"><bpmn:extensionElements>
  <jetbpm:policy/></bpmn:extensionElements></bpmn:task>`, "bpmn:task", "<jetbpm:policy", "unknown jetbpm extension element"},
		{"headers without worker", `<bpmn:serviceTask id="t" jetbpm:operation="op"><bpmn:extensionElements>
  <zeebe:taskHeaders><zeebe:header key="a" value="b"/></zeebe:taskHeaders></bpmn:extensionElements></bpmn:serviceTask>`, "bpmn:serviceTask", "<bpmn:serviceTask", "zeebe:taskHeaders need an external worker"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := around(c.task)
			e := importError(t, parseErr(t, src))
			if e.Element != c.element || !strings.Contains(e.Msg, c.msg) || e.Line != lineOf(t, src, c.marker) {
				t.Errorf("got %v\nwant <%s> at line %d: ...%s", e, c.element, lineOf(t, src, c.marker), c.msg)
			}
			if id := attrID(c.task, c.element); e.ID != id {
				t.Errorf("id = %q, want %q (%v)", e.ID, id, e)
			}
		})
	}
}

// attrID returns the id attribute of the first element with tag in s.
func attrID(s, tag string) string {
	i := strings.Index(s, "<"+tag)
	if i < 0 {
		return ""
	}
	rest := s[i:]
	rest = rest[:strings.Index(rest, ">")]
	j := strings.Index(rest, `id="`)
	if j < 0 {
		return ""
	}
	rest = rest[j+4:]
	return rest[:strings.Index(rest, `"`)]
}

// Message flows are diagram only, as in Zeebe and Camunda 7: messages
// reach catches by name and correlation key.
func TestMessageFlowsIgnored(t *testing.T) {
	p := mustParse(t, doc(`<bpmn:collaboration id="c">
  <bpmn:participant id="pa" processRef="p"/>
  <bpmn:participant id="pb" name="Customer"/>
  <bpmn:messageFlow id="mf" sourceRef="pb" targetRef="t"/>
</bpmn:collaboration>
<bpmn:process id="p"><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"/><bpmn:task id="t"/></bpmn:process>`))
	if len(p.Nodes) != 2 || len(p.Flows) != 1 {
		t.Errorf("nodes %d flows %d", len(p.Nodes), len(p.Flows))
	}
}

func TestProblemsAreCapped(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		b.WriteString(`<bpmn:businessRuleTask id="u` + string(rune('a'+i)) + `"/>` + "\n")
	}
	err := parseErr(t, proc(b.String()))
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxProblems+1 || !strings.Contains(lines[maxProblems], "too many problems") {
		t.Errorf("got %d lines:\n%v", len(lines), err)
	}
}
