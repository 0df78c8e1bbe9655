package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// killUndoBPMN books and reserves (script tasks) in a transaction,
// pauses, then undoes both: through a compensation end event (the
// transaction then completes, to "done"), or when cancel is true through a
// cancel end event (the transaction then leaves by its cancel boundary,
// to "cancelled"). Either way the handlers are external jobs, run newest
// first (release, then unbook).
const killUndoBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:jetbpm="https://jetbpm.dev/schema/bpmn/1.0" id="d">
  <bpmn:process id="undome" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:transaction id="tx">
      <bpmn:startEvent id="ts"/>
      <bpmn:scriptTask id="book" scriptFormat="feel" camunda:resultVariable="booking"><bpmn:script>"b-" + n</bpmn:script></bpmn:scriptTask>
      <bpmn:scriptTask id="reserve" scriptFormat="feel" camunda:resultVariable="reservation"><bpmn:script>"r-" + n</bpmn:script></bpmn:scriptTask>
      <bpmn:intermediateCatchEvent id="pause"><bpmn:timerEventDefinition><bpmn:timeDuration>PT0.2S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
      <bpmn:exclusiveGateway id="how" default="viaThrow"/>
      <bpmn:endEvent id="undo"><bpmn:compensateEventDefinition/></bpmn:endEvent>
      <bpmn:endEvent id="abort"><bpmn:cancelEventDefinition/></bpmn:endEvent>
      <bpmn:boundaryEvent id="bookComp" attachedToRef="book"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
      <bpmn:boundaryEvent id="reserveComp" attachedToRef="reserve"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
      <bpmn:serviceTask id="unbook" isForCompensation="true" camunda:type="external" camunda:topic="killundo">
        <bpmn:extensionElements><jetbpm:worker lockDuration="PT2S"/></bpmn:extensionElements>
      </bpmn:serviceTask>
      <bpmn:serviceTask id="release" isForCompensation="true" camunda:type="external" camunda:topic="killundo">
        <bpmn:extensionElements><jetbpm:worker lockDuration="PT2S"/></bpmn:extensionElements>
      </bpmn:serviceTask>
      <bpmn:association id="a1" sourceRef="bookComp" targetRef="unbook"/>
      <bpmn:association id="a2" sourceRef="reserveComp" targetRef="release"/>
      <bpmn:sequenceFlow id="t1" sourceRef="ts" targetRef="book"/>
      <bpmn:sequenceFlow id="t2" sourceRef="book" targetRef="reserve"/>
      <bpmn:sequenceFlow id="t3" sourceRef="reserve" targetRef="pause"/>
      <bpmn:sequenceFlow id="t4" sourceRef="pause" targetRef="how"/>
      <bpmn:sequenceFlow id="viaThrow" sourceRef="how" targetRef="undo"/>
      <bpmn:sequenceFlow id="viaCancel" sourceRef="how" targetRef="abort"><bpmn:conditionExpression>${cancel}</bpmn:conditionExpression></bpmn:sequenceFlow>
    </bpmn:transaction>
    <bpmn:boundaryEvent id="onCancel" attachedToRef="tx"><bpmn:cancelEventDefinition/></bpmn:boundaryEvent>
    <bpmn:endEvent id="done"/>
    <bpmn:endEvent id="cancelled"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="tx"/>
    <bpmn:sequenceFlow id="f2" sourceRef="tx" targetRef="done"/>
    <bpmn:sequenceFlow id="f3" sourceRef="onCancel" targetRef="cancelled"/>
  </bpmn:process>
</bpmn:definitions>`

// undoLock is the lock of the handlers' jobs (lockDuration in killUndoBPMN).
const undoLock = 2 * time.Second

// TestKillNineCompensation runs jetbpm serve and jetbpm work as processes
// and SIGKILLs the engine again and again while instances run their
// compensation handlers (external jobs), half of them for a transaction's
// cancel. Afterwards every instance completed, by the way its variables
// chose, with exactly one completed fact; each handler's job ran, on
// the variables its activity completed with, after the one compensated
// later in the order (release before unbook); and a job ran again only on
// a new delivery or after a kill.
func TestKillNineCompensation(t *testing.T) {
	n, kills := 60, 3
	if os.Getenv("JETBPM_SOAK") != "" {
		n, kills = 600, 8
	}
	killNineCompensation(t, newKillRig(t), n, kills)
}

// killNineCompensation runs TestKillNineCompensation's workload on rig
// with n instances and kills kills.
func killNineCompensation(t *testing.T, rig *killRig, n, kills int) {
	dir, env, ctx, nc, apiClient := rig.dir, rig.env, rig.ctx, rig.nc, rig.api
	execLog := filepath.Join(dir, "executions.log")
	script := writeScript(t, dir, "undo.sh", fmt.Sprintf(`echo "$JETBPM_JOB_ID $JETBPM_NODE_ID $JETBPM_JOB_ATTEMPT $JETBPM_JOB_DELIVERED_AT $(date +%%s%%N) $JETBPM_VAR_booking $JETBPM_VAR_reservation" >> %q
echo "{\"${JETBPM_NODE_ID}Done\": true}"
`, execLog))
	c := client{t: t, env: env}
	c.ok("deploy", writeFile(t, dir, "undo.bpmn", killUndoBPMN))
	startWork(t, env, "--topic", "killundo", "--concurrency", "8", "--", script)
	id := func(i int) string { return fmt.Sprintf("u-%04d", i) }
	start := func(i int) {
		rig.start(api.StartRequest{ProcessID: "undome", ID: id(i), Vars: json.RawMessage(fmt.Sprintf(`{"n": "%d", "cancel": %t}`, i, i%2 == 1))})
	}
	// killWhenHandlersRun waits (bounded) until some handler job of this
	// round has run, so the kill lands while compensations are under way.
	ran := func() int {
		data, _ := os.ReadFile(execLog)
		return strings.Count(string(data), "\n")
	}
	per := n / (kills + 1)
	var killedAt []int64
	for k := 0; k <= kills; k++ {
		before := ran()
		for i := k * per; i < (k+1)*per || k == kills && i < n; i++ {
			start(i)
		}
		if k == kills {
			break
		}
		testwait.Until(t, 30*time.Second, "a handler of this round to run", func() error {
			if ran() == before {
				return errors.New("none yet")
			}
			return nil
		})
		rig.kill()
		killedAt = append(killedAt, time.Now().UnixNano())
		rig.restart()
	}

	for i := range n {
		var v *engine.InstanceView
		var err error
		testwait.Until(t, 2*time.Minute, "instance "+id(i)+" to finish", func() error {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			defer rcancel()
			v, err = apiClient.Instance(rctx, id(i))
			if err == nil && !v.Status.Finished() {
				return fmt.Errorf("status %s at %q", v.Status, v.ActiveNodes)
			}
			return err
		})
		end := "done"
		if i%2 == 1 {
			end = "cancelled"
		}
		if v.Status != "completed" || v.Variables["unbookDone"] != true || v.Variables["releaseDone"] != true || len(v.Compensable) != 0 || !slices.Contains(v.Passed, end) {
			t.Fatalf("instance %s: %+v; want completed at %s with both handlers done and nothing left to compensate", id(i), v, end)
		}
	}
	counts := completedFactsOfEach(t, ctx, nc, "undome", n)
	for i := range n {
		if counts[id(i)] != 1 {
			t.Errorf("instance %s: %d completed facts stored, want 1", id(i), counts[id(i)])
		}
	}

	data, err := os.ReadFile(execLog)
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		node                 string
		attempt              int
		delivered, at        int64
		booking, reservation string
	}
	runs := map[string][]run{} // job id → its executions
	for line := range strings.Lines(string(data)) {
		var job, delivered string
		var r run
		if _, err := fmt.Sscan(line, &job, &r.node, &r.attempt, &delivered, &r.at, &r.booking, &r.reservation); err != nil {
			t.Fatalf("execution log line %q: %v", line, err)
		}
		d, err := time.Parse(time.RFC3339Nano, delivered)
		if err != nil {
			t.Fatalf("execution log line %q: %v", line, err)
		}
		r.delivered = d.UnixNano()
		runs[job] = append(runs[job], r)
	}
	first := map[string]int64{} // instance/node → its handler's first run
	most, repeats := 0, 0
	for job, rs := range runs {
		slices.SortFunc(rs, func(a, b run) int { return cmp.Compare(a.at, b.at) })
		inst, _, _ := strings.Cut(job, "/")
		var i int
		if _, err := fmt.Sscanf(inst, "u-%d", &i); err != nil {
			t.Fatalf("job %s: %v", job, err)
		}
		if rs[0].booking != fmt.Sprintf("b-%d", i) || rs[0].reservation != fmt.Sprintf("r-%d", i) {
			t.Errorf("job %s ran on %+v, want its instance's booking and reservation", job, rs[0])
		}
		first[inst+"/"+rs[0].node] = rs[0].at
		most = max(most, len(rs))
		for k := 1; k < len(rs); k++ {
			repeats++
			if rs[k].attempt > rs[k-1].attempt {
				continue
			}
			// The same attempt on a delivery a whole lock after the last:
			// the lock expired before an engine took the worker's report
			// (one killed just before the run reported, or slow on a
			// loaded machine), so the server handed the job out again, as
			// it must.
			if rs[k].delivered-rs[k-1].delivered >= undoLock.Nanoseconds() {
				continue
			}
			if !slices.ContainsFunc(killedAt, func(kt int64) bool { return kt > rs[k-1].delivered && kt <= rs[k].at }) {
				t.Errorf("job %s ran again on delivery attempt %d with no kill since its last run: %+v; kills %v", job, rs[k].attempt, rs, killedAt)
			}
		}
	}
	if len(runs) != 2*n {
		t.Fatalf("%d handler jobs ran, want %d (two per instance)", len(runs), 2*n)
	}
	for i := range n {
		if r, u := first[id(i)+"/release"], first[id(i)+"/unbook"]; r == 0 || u == 0 || r > u {
			t.Errorf("instance %s: release first ran at %d, unbook at %d; want release first", id(i), r, u)
		}
	}
	t.Logf("%d instances, %d engine kills: each completed once; %d handler jobs, at most %d runs each, %d repeated runs",
		n, kills, len(runs), most, repeats)
}
