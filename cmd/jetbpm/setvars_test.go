package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"
)

// gateBPMN waits at a conditional catch until go is true, then at a timer.
const gateBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">
  <bpmn:process id="gate" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="gate"/>
    <bpmn:intermediateCatchEvent id="gate"><bpmn:conditionalEventDefinition><bpmn:condition>${go == true}</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="gate" targetRef="w"/>
    <bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="w" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>`

// instance set-vars writes to a parked instance, which moves on in the
// same step; the same --request-id again writes nothing.
func TestInstanceSetVars(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	rec := p.waitReady()
	url, _ := rec["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, t.TempDir(), "gate.bpmn", gateBPMN))
	c.ok("start", "gate", "--id", "g-1", "--vars", `{"go": false}`)
	c.waitInstance("g-1", func(v view) bool { return slices.Equal(v.ActiveNodes, []string{"gate"}) })

	var v view
	if err := json.Unmarshal([]byte(c.ok("instance", "set-vars", "g-1", "--vars", `{"go": true, "n": 2}`, "--request-id", "r-1", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Variables["go"] != true || v.Variables["n"] != float64(2) || !slices.Equal(v.ActiveNodes, []string{"w"}) {
		t.Fatalf("after set-vars: %+v, want go and n set and the instance at w", v)
	}
	if out := c.ok("instance", "set-vars", "g-1", "--vars", `{"n": 3}`, "--request-id", "r-1"); !regexp.MustCompile(`(?m)^variables:`).MatchString(out) {
		t.Errorf("set-vars printed %q, want the instance", out)
	}
	if v := c.waitInstance("g-1", func(view) bool { return true }); v.Variables["n"] != float64(2) {
		t.Fatalf("the retry of r-1 wrote again: %+v", v)
	}
	c.fails(1, `^jetbpm: instance "nope": not found$`, "instance", "set-vars", "nope", "--vars", `{"n": 1}`)
	c.fails(1, `no variables to set`, "instance", "set-vars", "g-1", "--vars", `{}`)
	c.ok("instance", "cancel", "g-1")
	c.fails(1, `^jetbpm: instance g-1 is terminated`, "instance", "set-vars", "g-1", "--vars", `{"n": 1}`)
}
