package main

import (
	"encoding/json"
	"slices"
	"testing"
)

// callBPMN waits at a receive task without a message (Camunda 7's plain
// wait state), whose output mapping keeps the trigger's answer.
const callBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="call" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="waitForCall"/>
    <bpmn:receiveTask id="waitForCall">
      <bpmn:extensionElements><camunda:inputOutput><camunda:outputParameter name="reply">${answer}</camunda:outputParameter></camunda:inputOutput></bpmn:extensionElements>
    </bpmn:receiveTask>
    <bpmn:sequenceFlow id="f2" sourceRef="waitForCall" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>`

// instance trigger moves a plain receive task on, its --vars the task's
// results; refusals name what is wrong.
func TestInstanceTrigger(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	rec := p.waitReady()
	url, _ := rec["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, t.TempDir(), "call.bpmn", callBPMN))
	c.ok("start", "call", "--id", "c-1")
	c.waitInstance("c-1", func(v view) bool { return slices.Equal(v.ActiveNodes, []string{"waitForCall"}) })

	c.fails(1, `does not wait at receive task "other" \(it waits at waitForCall\)`, "instance", "trigger", "c-1", "--node", "other")
	c.fails(2, `--vars: `, "instance", "trigger", "c-1", "--vars", `[1]`)
	var v view
	if err := json.Unmarshal([]byte(c.ok("instance", "trigger", "c-1", "--node", "waitForCall", "--vars", `{"answer": "yes"}`, "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Status != "completed" || v.Variables["reply"] != "yes" {
		t.Fatalf("after trigger: %+v, want completed with reply yes", v)
	}
	c.fails(1, `^jetbpm: instance c-1 is completed`, "instance", "trigger", "c-1")
}
