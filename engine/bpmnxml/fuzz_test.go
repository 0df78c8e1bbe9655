package bpmnxml

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics and that its two outcomes are
// exclusive: validated processes, or an error.
func FuzzParse(f *testing.F) {
	f.Add([]byte(around(`<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="x"/>`)))
	f.Add([]byte(around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="x" retries="=3"/><zeebe:ioMapping><zeebe:input source="= a" target="b"/></zeebe:ioMapping></bpmn:extensionElements></bpmn:serviceTask>`)))
	f.Add([]byte(around(`<bpmn:intermediateCatchEvent id="t"><bpmn:timerEventDefinition><bpmn:timeDuration>=duration("PT5S")</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>`)))
	f.Add([]byte(extTask(``, `<jetbpm:worker topic="p" trust="engineAuthoritative" lockDuration="PT2M"/><jetbpm:retryPolicy kind="fixed" delay="PT1S"/><jetbpm:status variable="s"/><jetbpm:errorMapper><jetbpm:rule code="404" when="body.t == 'x'" status="NF"/></jetbpm:errorMapper><jetbpm:outputMapping><jetbpm:output path="body.id" variable="id" required="true"/></jetbpm:outputMapping>`)))
	f.Add([]byte(around(`<bpmn:subProcess id="t"><bpmn:startEvent id="s1"/></bpmn:subProcess>`)))
	f.Add([]byte(around(`<bpmn:subProcess id="t"><bpmn:extensionElements><jetbpm:incidentRetry kind="exponential" maxAttempts="4" base="PT1S" cap="PT1M"/></bpmn:extensionElements><bpmn:startEvent id="s1"/></bpmn:subProcess>`)))
	f.Add([]byte(extTask(`jetbpm:operation="charge"`, `<jetbpm:incidentRetry kind="fixed" maxAttempts="2" delay="PT0.1S"/>`)))
	f.Add([]byte(zeebeTask(`<jetbpm:retryPolicy kind="none"/><jetbpm:incidentRetry kind="none"/>`)))
	f.Add([]byte(withMessages(zeebeMessage("m", `=&quot;paid-&quot; + region`, "=orderId"), around(`<bpmn:receiveTask id="t" messageRef="m"/><bpmn:boundaryEvent id="b" attachedToRef="t" cancelActivity="false"><bpmn:messageEventDefinition messageRef="m"/></bpmn:boundaryEvent><bpmn:sequenceFlow id="fb" sourceRef="b" targetRef="e"/>`))))
	f.Add([]byte(withMessages(zeebeMessage("m", "answer", "=key"), proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/><bpmn:eventBasedGateway id="g" eventGatewayType="Exclusive"/><bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="c"/><bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="w"/><bpmn:intermediateCatchEvent id="c"><bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateCatchEvent><bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent><bpmn:sequenceFlow id="f4" sourceRef="c" targetRef="e"/><bpmn:sequenceFlow id="f5" sourceRef="w" targetRef="e"/><bpmn:endEvent id="e"/>`))))
	f.Add([]byte(publishing(`<bpmn:sendTask id="t" messageRef="m"><bpmn:extensionElements><jetbpm:publish correlationKey="=orderId" timeToLive="PT1H" messageId="${id}"><jetbpm:variable name="amount" source="=total"/><jetbpm:variable name="currency"/></jetbpm:publish></bpmn:extensionElements></bpmn:sendTask>`)))
	f.Add([]byte(publishing(`<bpmn:intermediateThrowEvent id="t"><bpmn:messageEventDefinition messageRef="m" camunda:type="external" camunda:topic="notify"/></bpmn:intermediateThrowEvent>`)))
	f.Add([]byte(withMessages(`<bpmn:message id="m" name="go"/>`, proc(`<bpmn:startEvent id="s"><bpmn:messageEventDefinition messageRef="m"/></bpmn:startEvent><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"/><bpmn:intermediateThrowEvent id="t"/><bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"><bpmn:extensionElements><zeebe:taskDefinition type="done"/></bpmn:extensionElements><bpmn:messageEventDefinition messageRef="m"/></bpmn:endEvent>`))))
	f.Add([]byte(proc(`<bpmn:userTask id="u"/>`)))
	f.Add([]byte(doc(`<bpmn:process id="p" isExecutable="true"><bpmn:extensionElements><zeebe:userTaskForm id="f">{"components":[{"type":"textfield","key":"a"}]}</zeebe:userTaskForm></bpmn:extensionElements><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/><bpmn:userTask id="t"><bpmn:extensionElements><zeebe:formDefinition formKey="camunda-forms:bpmn:f"/></bpmn:extensionElements></bpmn:userTask></bpmn:process>`)))
	f.Add([]byte(around(`<bpmn:userTask id="t"><bpmn:extensionElements><camunda:formData><camunda:formField id="c" type="enum" defaultValue="x"><camunda:value id="x" name="X"/><camunda:validation><camunda:constraint name="required"/><camunda:constraint name="maxlength" config="4"/></camunda:validation></camunda:formField><camunda:formField id="d" type="date"/></camunda:formData></bpmn:extensionElements></bpmn:userTask>`)))
	f.Add([]byte(around(`<bpmn:userTask id="t" camunda:assignee="${owner}" camunda:candidateUsers="bob, carol" camunda:candidateGroups="sales" camunda:dueDate="2025-06-30T17:00:00Z" camunda:followUpDate="${f}" camunda:priority="70" camunda:formKey="embedded:app:r.html"><bpmn:extensionElements><camunda:formData><camunda:formField id="a" type="long"/></camunda:formData><camunda:inputOutput><camunda:inputParameter name="x">${y}</camunda:inputParameter></camunda:inputOutput></bpmn:extensionElements><bpmn:potentialOwner><bpmn:resourceAssignmentExpression><bpmn:formalExpression>user(kermit), group(management), sales</bpmn:formalExpression></bpmn:resourceAssignmentExpression></bpmn:potentialOwner><bpmn:multiInstanceLoopCharacteristics camunda:collection="owners" camunda:elementVariable="owner"/></bpmn:userTask>`)))
	f.Add([]byte(around(`<bpmn:userTask id="t"><bpmn:extensionElements><zeebe:userTask/><zeebe:assignmentDefinition assignee="=owner" candidateUsers="=[&quot;a&quot;, b]" candidateGroups="sales, ops"/><zeebe:taskSchedule dueDate="=due" followUpDate="2025-06-29T09:00:00+02:00"/><zeebe:priorityDefinition priority="=p"/><zeebe:formDefinition formId="f" bindingType="latest"/><zeebe:ioMapping><zeebe:input source="=a" target="b"/></zeebe:ioMapping></bpmn:extensionElements></bpmn:userTask><bpmn:boundaryEvent id="b" attachedToRef="t" cancelActivity="false"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:boundaryEvent><bpmn:sequenceFlow id="fb" sourceRef="b" targetRef="e"/>`)))
	f.Add([]byte(around(`<bpmn:userTask id="t" camunda:priority="101" camunda:dueDate="P2D"><bpmn:extensionElements><zeebe:formDefinition formKey="camunda-forms:bpmn:form_1" externalReference="x"/><zeebe:taskHeaders/><camunda:taskListener event="create"/></bpmn:extensionElements><bpmn:humanPerformer><bpmn:resourceAssignmentExpression><bpmn:formalExpression>a-${b}</bpmn:formalExpression></bpmn:resourceAssignmentExpression></bpmn:humanPerformer></bpmn:userTask>`)))
	f.Add([]byte(sagaXML(func(topic string) (string, string) {
		return `camunda:type="external" camunda:topic="` + topic + `"`, ""
	})))
	f.Add([]byte(around(`<bpmn:subProcess id="t"><bpmn:startEvent id="ss"/><bpmn:task id="k"/><bpmn:sequenceFlow id="g" sourceRef="ss" targetRef="k"/><bpmn:subProcess id="u" triggeredByEvent="true"><bpmn:startEvent id="cs"><bpmn:compensateEventDefinition/></bpmn:startEvent><bpmn:endEvent id="ce"><bpmn:compensateEventDefinition activityRef="k" waitForCompletion="true"/></bpmn:endEvent><bpmn:sequenceFlow id="g2" sourceRef="cs" targetRef="ce"/></bpmn:subProcess></bpmn:subProcess>`)))
	f.Add([]byte(`<?xml version="1.0"?><definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="p"><startEvent id="s"/>`))
	for _, rel := range []string{"zeebe-node/Client-ThrowError.bpmn", "camunda7-engine-externaltask/ExternalTaskServiceTest.testFetchVariables.bpmn20.xml",
		"lib-bpmn-engine/message-intermediate-timer-event.bpmn", "camunda7-engine-externaltask/ExternalTaskServiceTest.testCancelExternalTaskWithBoundaryEvent.bpmn20.xml",
		"zeebe-process-test/pr-created.bpmn", "miwg/C.9.2.bpmn", "miwg/C.3.0.bpmn"} {
		if data, err := os.ReadFile(filepath.Join(corpus, rel)); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := Parse(bytes.NewReader(data))
		if err != nil {
			if ps != nil {
				t.Fatalf("processes and error: %v", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(ps) == 0 {
			t.Fatal("no processes and no error")
		}
		for _, p := range ps {
			if !p.Validated() {
				t.Fatalf("process %s not validated", p.ID)
			}
		}
	})
}
