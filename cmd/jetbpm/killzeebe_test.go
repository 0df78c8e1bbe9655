package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/camunda/zeebe/clients/go/v8/pkg/entities"
	"github.com/camunda/zeebe/clients/go/v8/pkg/worker"
	"github.com/camunda/zeebe/clients/go/v8/pkg/zbc"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// killZeebeBPMN: a Zeebe job with a short lock (so a job held across a
// kill comes back soon), then a script.
const killZeebeBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" xmlns:jetbpm="https://jetbpm.dev/schema/bpmn/1.0" id="d">
  <bpmn:process id="zkill" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="charge">
      <bpmn:extensionElements><zeebe:taskDefinition type="zkill" retries="3"/><jetbpm:worker lockDuration="PT3S"/></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:scriptTask id="double"><bpmn:extensionElements><zeebe:script expression="=amount * 2" resultVariable="doubled"/></bpmn:extensionElements></bpmn:scriptTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="charge"/>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="double"/>
    <bpmn:sequenceFlow id="f3" sourceRef="double" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// TestKillNineZeebeWorker runs a Zeebe Go client job worker (in the test
// process) against jetbpm serve's gateway and SIGKILLs serve again and
// again while instances run. Afterwards every instance completed once
// with its worker's output, and no job's completion was accepted twice:
// a completion after a kill either lands for the activation it names or
// is refused, and a job whose lock expired comes back with a new key.
func TestKillNineZeebeWorker(t *testing.T) {
	n, kills := 60, 3
	if os.Getenv("JETBPM_SOAK") != "" {
		n, kills = 600, 8
	}
	killNineZeebe(t, newKillRig, n, kills)
}

// killNineZeebe runs TestKillNineZeebeWorker's workload on a rig from
// newRig with n instances and kills kills.
func killNineZeebe(t *testing.T, newRig func(*testing.T, ...string) *killRig, n, kills int) {
	grpcAddr := freeAddr(t)
	rig := newRig(t, "--grpc", grpcAddr)
	c := client{t: t, env: rig.env}
	c.ok("deploy", writeFile(t, rig.dir, "zkill.bpmn", killZeebeBPMN))

	zc, err := zbc.NewClient(&zbc.ClientConfig{GatewayAddress: grpcAddr, UsePlaintextConnection: true})
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	var mu sync.Mutex
	runs := map[int]int{}     // amount → executions
	accepted := map[int]int{} // amount → completions the gateway accepted
	w := zc.NewJobWorker().JobType("zkill").Handler(func(jc worker.JobClient, job entities.Job) {
		var vars struct{ Amount int }
		if err := json.Unmarshal([]byte(job.Variables), &vars); err != nil {
			t.Errorf("job %d variables %s: %v", job.Key, job.Variables, err)
			return
		}
		mu.Lock()
		runs[vars.Amount]++
		mu.Unlock()
		time.Sleep(time.Duration(vars.Amount%5) * 50 * time.Millisecond) // the work: some jobs are in flight at each kill
		cmd, err := jc.NewCompleteJobCommand().JobKey(job.Key).VariablesFromMap(map[string]any{"receipt": fmt.Sprintf("z-%d", vars.Amount)})
		if err != nil {
			t.Error(err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := cmd.Send(ctx); err == nil {
			mu.Lock()
			accepted[vars.Amount]++
			mu.Unlock()
		}
	}).Name("zkill-worker").Timeout(3 * time.Second).RequestTimeout(2 * time.Second).Concurrency(8).MaxJobsActive(16).Open()
	defer w.Close()

	per := n / (kills + 1)
	for k := 0; k <= kills; k++ {
		for i := k * per; i < (k+1)*per || k == kills && i < n; i++ {
			rig.start(api.StartRequest{ProcessID: "zkill", ID: fmt.Sprintf("z-%04d", i), Vars: json.RawMessage(fmt.Sprintf(`{"amount": %d}`, i))})
		}
		if k < kills {
			rig.kill()
			rig.restart()
		}
	}

	for i := range n {
		id := fmt.Sprintf("z-%04d", i)
		var v *engine.InstanceView
		testwait.Until(t, 2*time.Minute, "instance "+id+" to complete", func() error {
			rctx, rcancel := context.WithTimeout(rig.ctx, 2*time.Second)
			defer rcancel()
			var err error
			v, err = rig.api.Instance(rctx, id)
			if err == nil && !v.Status.Finished() {
				return fmt.Errorf("status %s", v.Status)
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, api.ErrNoEngine) {
				return err
			}
			return err
		})
		if v.Status != "completed" || v.Variables["receipt"] != fmt.Sprintf("z-%d", i) || v.Variables["doubled"] != float64(2*i) {
			t.Fatalf("instance %s: %+v", id, v)
		}
	}
	counts := completedFactsOfEach(t, rig.ctx, rig.nc, "zkill", n)
	mu.Lock()
	defer mu.Unlock()
	ranAgain, extra := 0, 0
	for i := range n {
		if id := fmt.Sprintf("z-%04d", i); counts[id] != 1 {
			t.Errorf("instance %s: %d completed facts stored, want 1", id, counts[id])
		}
		if accepted[i] > 1 {
			t.Errorf("amount %d: %d completions accepted, want at most 1", i, accepted[i])
		}
		if runs[i] < 1 {
			t.Errorf("amount %d: its job never ran", i)
		}
		if runs[i] > 1 {
			ranAgain, extra = ranAgain+1, extra+runs[i]-1
		}
	}
	t.Logf("%d instances, %d engine kills: %d jobs ran more than once (%d extra runs)", n, kills, ranAgain, extra)
}
