package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// signalBPMN: "waiter" waits for signal order-cancelled; "launched"
// starts on it.
const signalBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
  <bpmn:signal id="sig" name="order-cancelled"/>
  <bpmn:process id="waiter" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:intermediateCatchEvent id="wait"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait"/>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="e"/>
  </bpmn:process>
  <bpmn:process id="launched" isExecutable="true">
    <bpmn:startEvent id="s"><bpmn:signalEventDefinition signalRef="sig"/></bpmn:startEvent>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

func TestSignalCommands(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	url, _ := p.waitReady()["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, t.TempDir(), "signal.bpmn", signalBPMN))

	id := strings.TrimSpace(c.ok("start", "waiter"))
	c.waitInstance(id, func(v view) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "wait" })
	// The subscription reaches the index just after the instance parks:
	// broadcast (with a new id each time) until the instance took one.
	var res struct {
		ID        string   `json:"id"`
		Instances []string `json:"instances"`
		Started   []string `json:"started"`
	}
	for range 50 {
		out := c.ok("signal", "broadcast", "order-cancelled", "--json", "--vars", `{"reason": "fraud"}`)
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Started) != 1 {
			t.Fatalf("broadcast started %v; want one instance of launched", res.Started)
		}
		if len(res.Instances) == 1 {
			break
		}
	}
	if len(res.Instances) != 1 || res.Instances[0] != id {
		t.Fatalf("broadcast reached %v, want %s", res.Instances, id)
	}
	v := c.waitInstance(id, func(v view) bool { return v.Status != "active" })
	if v.Status != "completed" || v.Variables["reason"] != "fraud" {
		t.Fatalf("instance %s = %+v", id, v)
	}
	out := c.ok("signal", "broadcast", "order-cancelled", "--id", "b-1")
	if !strings.HasPrefix(out, "b-1\nreached 0 instance(s)\nstarted s") {
		t.Fatalf("signal broadcast printed %q", out)
	}
	c.fails(2, `--vars: want a JSON object`, "signal", "broadcast", "x", "--vars", "[1]")
	c.fails(1, `signal needs a name`, "signal", "broadcast", " ")
}
