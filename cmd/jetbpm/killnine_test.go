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

const killBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:jetbpm="https://jetbpm.dev/schema/bpmn/1.0" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  <bpmn:message id="paidMsg" name="paid">
    <bpmn:extensionElements><zeebe:subscription correlationKey="=payKey"/></bpmn:extensionElements>
  </bpmn:message>
  <bpmn:process id="killme" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:parallelGateway id="fork"/>
    <bpmn:serviceTask id="charge" camunda:type="external" camunda:topic="kill">
      <bpmn:extensionElements><jetbpm:worker lockDuration="PT5S"/><jetbpm:retryPolicy kind="fixed" maxAttempts="3" delay="PT0.05S"/>
        <camunda:executionListener event="start"><camunda:script scriptFormat="javascript">execution.setVariable("listened", (execution.getVariable("listened") || 0) + 1)</camunda:script></camunda:executionListener>
        <camunda:executionListener event="end" expression="${execution.setVariable('chargeEnded', true)}"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:intermediateCatchEvent id="pause"><bpmn:timerEventDefinition><bpmn:timeDuration>PT0.2S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:scriptTask id="double" scriptFormat="feel" camunda:resultVariable="doubled"><bpmn:script>amount * 2</bpmn:script></bpmn:scriptTask>
    <bpmn:scriptTask id="tag" scriptFormat="javascript">
      <bpmn:extensionElements><zeebe:executionListeners><zeebe:executionListener eventType="end" type="kill-heard"/></zeebe:executionListeners></bpmn:extensionElements>
      <bpmn:script>execution.setVariable("tagged", "t-" + amount);
execution.setVariable("tags", (execution.getVariable("tags") || 0) + 1);</bpmn:script></bpmn:scriptTask>
    <bpmn:serviceTask id="triple">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="io.camunda:http-json:1" retries="3"/>
        <zeebe:ioMapping>
          <zeebe:input source="noAuth" target="authentication.type"/>
          <zeebe:input source="GET" target="method"/>
          <zeebe:input source="=api + &#34;/triple/&#34; + string(amount)" target="url"/>
        </zeebe:ioMapping>
        <zeebe:taskHeaders><zeebe:header key="resultExpression" value="={tripled: response.body.n}"/></zeebe:taskHeaders>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:intermediateCatchEvent id="await"><bpmn:messageEventDefinition messageRef="paidMsg"/></bpmn:intermediateCatchEvent>
    <bpmn:parallelGateway id="join"/>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="fork"/>
    <bpmn:sequenceFlow id="f2" sourceRef="fork" targetRef="charge"/>
    <bpmn:sequenceFlow id="f3" sourceRef="fork" targetRef="pause"/>
    <bpmn:sequenceFlow id="f4" sourceRef="pause" targetRef="double"/>
    <bpmn:sequenceFlow id="f5" sourceRef="charge" targetRef="join"/>
    <bpmn:sequenceFlow id="f6" sourceRef="double" targetRef="tag"/>
    <bpmn:sequenceFlow id="f10" sourceRef="tag" targetRef="triple"/>
    <bpmn:sequenceFlow id="f11" sourceRef="triple" targetRef="join"/>
    <bpmn:sequenceFlow id="f7" sourceRef="join" targetRef="e">
      <bpmn:extensionElements><camunda:executionListener><camunda:script scriptFormat="javascript">execution.setVariable("listened", listened + 1)</camunda:script></camunda:executionListener></bpmn:extensionElements>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="f8" sourceRef="fork" targetRef="await"/>
    <bpmn:sequenceFlow id="f9" sourceRef="await" targetRef="join"/>
  </bpmn:process>
</bpmn:definitions>`

// TestKillNine runs jetbpm serve and jetbpm work as processes and SIGKILLs
// both again and again while instances run (parallel branches: a timer
// then a FEEL and a JavaScript script task with a Zeebe end listener (a
// job) and Camunda 8's REST connector (run inside serve), an external job with Camunda
// 7 start and end execution listeners, a take listener, a message
// catch keyed by the instance; amounts divisible by
// 3 fail once and are retried, amounts divisible by 7 always fail and end
// in an incident). Each instance's message is published before it starts,
// right after, or after the next kill (killmessages_test.go). Afterwards
// every instance has the end state its input implies and holds its own
// message, every completed one exactly one completed fact, every failing
// one exactly one incident, every message exactly one correlation, and a
// job runs again only on a new delivery (its lock expired) or after a kill.
// JETBPM_SOAK=1 runs the long version (2,000 instances, 10 engine kills).
func TestKillNine(t *testing.T) {
	n, kills := 150, 3
	if os.Getenv("JETBPM_SOAK") != "" {
		n, kills = 2000, 10
	}
	killNine(t, newKillRig(t), n, kills, nil)
}

// killNine runs TestKillNine's workload on rig with n instances and kills
// kills. pause, when set, is waited before each kill, so kills land at
// different points of the work in flight.
func killNine(t *testing.T, rig *killRig, n, kills int, pause func() time.Duration) {
	dir, env, ctx, nc, apiClient := rig.dir, rig.env, rig.ctx, rig.nc, rig.api
	bpmn := writeFile(t, dir, "kill.bpmn", killBPMN)
	execLog := filepath.Join(dir, "executions.log")
	// Every execution is logged as it starts: the job, its delivery
	// attempt, when the worker received it, now, and the worker's pid.
	script := writeScript(t, dir, "charge.sh", fmt.Sprintf(`echo "$JETBPM_JOB_ID $JETBPM_JOB_ATTEMPT $JETBPM_JOB_DELIVERED_AT $(date +%%s%%N) $PPID" >> %q
a=$JETBPM_VAR_amount
if [ $((a %% 7)) -eq 0 ] && [ "$a" -gt 0 ]; then echo "declined" >&2; exit 1; fi
marker=%q/once-$(echo "$JETBPM_JOB_ID" | tr / _)
if [ $((a %% 3)) -eq 0 ] && [ ! -e "$marker" ]; then touch "$marker"; echo "flaky" >&2; exit 1; fi
echo "{\"receipt\": \"r-$a\"}"
`, execLog, dir))
	// The tag task's Zeebe end listener is a job too, logged alike.
	heardScript := writeScript(t, dir, "heard.sh", fmt.Sprintf(`echo "$JETBPM_JOB_ID $JETBPM_JOB_ATTEMPT $JETBPM_JOB_DELIVERED_AT $(date +%%s%%N) $PPID" >> %q
echo '{"heard": 1}'
`, execLog))
	c := client{t: t, env: env}
	c.ok("deploy", bpmn)
	work := startWork(t, env, "--topic", "kill", "--concurrency", "16", "--", script)
	heard := startWork(t, env, "--topic", "kill-heard", "--concurrency", "16", "--", heardScript)
	start := func(i int) {
		rig.start(api.StartRequest{ProcessID: "killme", ID: fmt.Sprintf("k-%04d", i), Vars: json.RawMessage(fmt.Sprintf(`{"amount": %d, "payKey": %q, "api": %q}`, i, payKey(i), rig.httpAPI.URL))})
	}
	msgs := &killMessages{t: t, ctx: ctx, api: apiClient, env: env}
	per := n / (kills + 1)
	var killedAt []int64 // when each kill (engine or worker) had taken effect
	workerKilled := map[int]int64{}
	for k := 0; k <= kills; k++ {
		for i := k * per; i < (k+1)*per || k == kills && i < n; i++ {
			msgs.beforeStart(i)
			start(i)
			msgs.afterStart(i)
		}
		msgs.waitDeferred() // the previous round's
		if k == kills {
			msgs.publishDeferred()
			msgs.waitDeferred()
			break
		}
		// SIGKILL the engine (with its embedded NATS server) while this
		// round's last messages are being published and, every other round,
		// the worker; start them again on the same data.
		msgs.publishDeferred()
		if pause != nil {
			time.Sleep(pause()) // where the kill lands, not a wait for anything
		}
		rig.kill()
		killWorker := k%2 == 0
		if killWorker {
			for _, w := range []*workProc{work, heard} {
				_ = w.cmd.Process.Kill()
				<-w.exited
				workerKilled[w.cmd.Process.Pid] = time.Now().UnixNano()
			}
		}
		killedAt = append(killedAt, time.Now().UnixNano())
		rig.restart()
		if killWorker { // after the server is back: a worker needs one to connect to
			work = startWork(t, env, "--topic", "kill", "--concurrency", "16", "--", script)
			heard = startWork(t, env, "--topic", "kill-heard", "--concurrency", "16", "--", heardScript)
		}
	}

	for i := range n {
		id := fmt.Sprintf("k-%04d", i)
		var v *engine.InstanceView
		var err error
		testwait.Until(t, 2*time.Minute, "instance "+id+" to finish or hold an incident", func() error {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			defer rcancel()
			v, err = apiClient.Instance(rctx, id)
			if err != nil && !errors.Is(err, engine.ErrNotFound) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, api.ErrNoEngine) {
				t.Logf("instance %s: %v (retrying)", id, err)
			}
			if err == nil && !v.Status.Finished() && v.Status != engine.StatusIncident {
				return fmt.Errorf("status %s", v.Status)
			}
			return err
		})
		if failing(i) {
			if v == nil || v.Status != engine.StatusIncident || len(v.Incidents) != 1 || v.Incidents[0].CauseClass != "retriesExhausted" {
				t.Fatalf("instance %s should hold one retries-exhausted incident: %+v (%v)", id, v, err)
			}
			continue
		}
		// The JavaScript task counts its runs in a variable, the charge's
		// start listener and the join's take listener theirs: a step that
		// ran again after a kill ran from the checkpoint before it, so once.
		if v == nil || v.Status != "completed" || v.Variables["doubled"] != float64(2*i) || v.Variables["receipt"] != fmt.Sprintf("r-%d", i) ||
			v.Variables["paid"] != payment(i) || v.Variables["tagged"] != fmt.Sprintf("t-%d", i) || v.Variables["tags"] != float64(1) ||
			v.Variables["listened"] != float64(2) || v.Variables["chargeEnded"] != true || v.Variables["heard"] != float64(1) ||
			v.Variables["tripled"] != float64(3*i) {
			t.Fatalf("instance %s: %+v (%v)", id, v, err)
		}
	}
	recs, err := apiClient.Incidents(ctx, api.IncidentListRequest{Process: "killme", State: "all"})
	if err != nil {
		t.Fatal(err)
	}
	failures := 0
	for i := range n {
		if failing(i) {
			failures++
		}
	}
	if len(recs) != failures {
		t.Fatalf("%d incidents recorded, want one for each of the %d always-failing instances", len(recs), failures)
	}
	counts := completedFactsOfEach(t, ctx, nc, "killme", n-failures)
	for i := range n {
		if id := fmt.Sprintf("k-%04d", i); !failing(i) && counts[id] != 1 {
			t.Errorf("instance %s: %d completed facts stored, want 1", id, counts[id])
		}
	}
	msgs.check(nc, n)
	data, err := os.ReadFile(execLog)
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		attempt   int
		delivered int64 // when the worker received the job
		at        int64 // when the run started
		ppid      int   // the worker's pid
	}
	runs := map[string][]run{} // job id → its executions
	for line := range strings.Lines(string(data)) {
		var job, delivered string
		var r run
		if _, err := fmt.Sscan(line, &job, &r.attempt, &delivered, &r.at, &r.ppid); err != nil {
			t.Fatalf("execution log line %q: %v", line, err)
		}
		d, err := time.Parse(time.RFC3339Nano, delivered)
		if err != nil {
			t.Fatalf("execution log line %q: %v", line, err)
		}
		r.delivered = d.UnixNano()
		if r.attempt > killMaxAttempts {
			t.Errorf("job %s ran as attempt %d; its retry policy allows %d", job, r.attempt, killMaxAttempts)
		}
		runs[job] = append(runs[job], r)
	}
	if len(runs) != 2*n {
		t.Fatalf("%d jobs ran, want %d: a charge and a tag end listener per instance", len(runs), 2*n)
	}
	most, redeliveries := 0, 0
	for job, rs := range runs {
		most = max(most, len(rs))
		slices.SortFunc(rs, func(a, b run) int { return cmp.Compare(a.at, b.at) })
		// A job runs again only on a new delivery (a retry its policy
		// scheduled, or its lock expired with the worker or while the engine
		// was slow) or after a kill that
		// touched it: one while a worker held it (its report died with the
		// worker or was sent to a dead engine; a SIGKILLed server may also
		// forget the delivery, so the next one counts 1 again).
		for i := 1; i < len(rs); i++ {
			if rs[i].attempt > rs[i-1].attempt {
				redeliveries++
				continue
			}
			// The same attempt again on a delivery that came a whole lock
			// after the last one: the lock expired while the worker ran or
			// the engine was slow to decide (a loaded machine), so the
			// server handed the job out again, as it must.
			if rs[i].delivered-rs[i-1].delivered >= killLock.Nanoseconds() {
				redeliveries++
				continue
			}
			if !slices.ContainsFunc(killedAt, func(k int64) bool { return k > rs[i-1].delivered && k <= rs[i].at }) {
				t.Errorf("job %s ran again on delivery attempt %d with no kill since its last run: runs %+v; killed workers (pid → time) %v; kills %v",
					job, rs[i].attempt, rs, workerKilled, killedAt)
			}
		}
	}
	// The REST connector runs inside serve: a kill can cut a call short,
	// and the job runs again (at least once), but never fewer than once.
	if calls := rig.calls.Load(); calls < int64(n) {
		t.Errorf("the REST connector made %d calls for %d instances", calls, n)
	}
	t.Logf("%d instances, %d engine kills: %d completed once each, %d held one incident each; %d jobs ran, at most %d times each, %d runs on a new delivery (retries, lock expiries); %d REST connector calls; %s",
		n, kills, n-failures, failures, len(runs), most, redeliveries, rig.calls.Load(), msgs)
}

// killMaxAttempts is the charge task's retry budget (its retryPolicy),
// killLock its lock (lockDuration).
const (
	killMaxAttempts = 3
	killLock        = 5 * time.Second
)

// failing reports whether the workload's worker always declines amount i.
func failing(i int) bool { return i > 0 && i%7 == 0 }
