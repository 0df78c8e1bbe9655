package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// nodesBPMN crosses a timer between two script tasks, so an instance's
// steps straddle whatever happens to the node holding its partition.
const nodesBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="nodes" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:scriptTask id="one" scriptFormat="javascript"><bpmn:script>execution.setVariable("one", n + 1)</bpmn:script></bpmn:scriptTask>
    <bpmn:intermediateCatchEvent id="pause"><bpmn:timerEventDefinition><bpmn:timeDuration>PT0.3S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:scriptTask id="two" scriptFormat="javascript"><bpmn:script>execution.setVariable("two", one * 2)</bpmn:script></bpmn:scriptTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="one"/>
    <bpmn:sequenceFlow id="f2" sourceRef="one" targetRef="pause"/>
    <bpmn:sequenceFlow id="f3" sourceRef="pause" targetRef="two"/>
    <bpmn:sequenceFlow id="f4" sourceRef="two" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// TestKillNineSecondEngine runs two serve processes on one NATS server
// (the first's embedded one), sharing its 8 partitions, and SIGKILLs the
// second while instances run: the first takes the dead node's
// partitions once their leases expire (--failover 1s) and every instance
// completes, exactly once. The time from the kill to the first holding
// all eight is logged (docs/reliability.md, "Engine node failover").
func TestKillNineSecondEngine(t *testing.T) {
	rig := newKillRig(t)
	url := strings.TrimPrefix(rig.env[0], "JETBPM_NATS_URL=")
	second := startServe(t, nil, "--nats-url", url, "--failover", "1s")
	second.waitReady()
	c := client{t: t, env: rig.env}
	c.ok("deploy", writeFile(t, rig.dir, "nodes.bpmn", nodesBPMN))

	holders := func() map[string]int {
		v, err := rig.api.ClusterStatus(rig.ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, p := range v.Partition {
			out[p.Node]++
		}
		return out
	}
	testwait.Until(t, 30*time.Second, "two nodes holding 4 partitions each", func() error {
		if h := holders(); len(h) != 2 || h[""] != 0 {
			return fmt.Errorf("holders %v", h)
		}
		return nil
	})

	const n = 200
	var killed time.Time
	var took time.Duration
	for i := range n {
		if i == n/2 {
			_ = second.cmd.Process.Kill()
			<-second.exited
			killed = time.Now()
		}
		rig.start(api.StartRequest{ProcessID: "nodes", ID: fmt.Sprintf("nd-%03d", i), Vars: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i))})
	}
	testwait.Until(t, 30*time.Second, "the first node holding all 8 partitions", func() error {
		if h := holders(); len(h) != 1 || h[""] != 0 {
			return fmt.Errorf("holders %v", h)
		}
		if took == 0 {
			took = time.Since(killed)
		}
		return nil
	})
	for i := range n {
		awaitStatus(t, rig, fmt.Sprintf("nd-%03d", i), instance.Completed)
		v, err := rig.api.Instance(rig.ctx, fmt.Sprintf("nd-%03d", i))
		if err != nil || v.Variables["two"] != float64(2*(i+1)) && v.Variables["two"] != int64(2*(i+1)) {
			t.Fatalf("nd-%03d: %+v %v", i, v, err)
		}
	}
	for id, k := range completedFactsOfEach(t, rig.ctx, rig.nc, "nodes", n) {
		if k != 1 {
			t.Errorf("%s completed %d times", id, k)
		}
	}
	t.Logf("the surviving node held all 8 partitions %s after the kill (failover 1s); %d instances completed once each", took.Round(time.Millisecond), n)
}
