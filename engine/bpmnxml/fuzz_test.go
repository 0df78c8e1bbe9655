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
	f.Add([]byte(proc(`<bpmn:userTask id="u"/>`)))
	f.Add([]byte(`<?xml version="1.0"?><definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="p"><startEvent id="s"/>`))
	for _, rel := range []string{"zeebe-node/Client-ThrowError.bpmn", "camunda7-engine-externaltask/ExternalTaskServiceTest.testFetchVariables.bpmn20.xml"} {
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
