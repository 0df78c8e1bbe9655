package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// userTaskCutBPMN waits at a user task, whose Camunda 7 timeout listener
// counts three nags while it is open.
const userTaskCutBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="approve" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="ok"/>
    <bpmn:userTask id="ok">
      <bpmn:extensionElements>
        <camunda:taskListener event="timeout" id="nag">
          <camunda:script scriptFormat="javascript">execution.setVariable("nags", (execution.getVariable("nags") || 0) + 1)</camunda:script>
          <bpmn:timerEventDefinition><bpmn:timeCycle>R3/PT0.05S</bpmn:timeCycle></bpmn:timerEventDefinition>
        </camunda:taskListener>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:sequenceFlow id="f2" sourceRef="ok" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>`

// TestPowerCutDoors cuts the power between rounds of work acknowledged
// through the HTTP doors: starts through /v1 and Camunda 7 REST, user-task
// completions and incident resolutions through /v1. Each round also
// completes the tasks and resolves the incidents of the round before, and
// the cut lands at a seeded random point after the round's answers.
// Afterwards every acknowledged start exists, every acknowledged
// completion and resolution holds (its instance completed, its incident
// resolved), and everything else is still waiting where it was; the
// user task's timeout listener ran at most three times on a completed
// task and exactly three on one still open (each round starts one that
// stays open through the cuts that follow) — none lost, none run twice.
// JETBPM_SOAK=1 cuts 50 times.
func TestPowerCutDoors(t *testing.T) {
	rounds := 10
	if os.Getenv("JETBPM_SOAK") != "" {
		rounds = 50
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	rig := newCutRig(t)
	c := client{t: t, env: rig.env}
	c.ok("deploy", writeFile(t, rig.dir, "approve.bpmn", userTaskCutBPMN))
	c.ok("deploy", writeFile(t, rig.dir, "calc.bpmn", calcBPMN))

	var (
		waiting, completed []string // approve instances
		kept               []string // approve instances never completed
		failing, resolved  []string // calc instances
	)
	var base string
	for r := 0; r <= rounds; r++ {
		base = "http://" + rig.serve.httpAddr // a restarted serve has another
		var started, incident []string
		for i := range 3 {
			id := fmt.Sprintf("v1-%d-%d", r, i)
			postOK(t, base+"/v1/processes/approve/instances", map[string]any{"id": id})
			started = append(started, id)
		}
		kept = append(kept, fmt.Sprintf("keep-%d", r))
		postOK(t, base+"/v1/processes/approve/instances", map[string]any{"id": kept[len(kept)-1]})
		for range 2 {
			var out struct {
				ID string `json:"id"`
			}
			postOK(t, base+"/engine-rest/process-definition/key/approve/start", map[string]any{}, &out)
			if out.ID == "" {
				t.Fatal("Camunda 7 start answered no instance id")
			}
			started = append(started, out.ID)
		}
		for i := range 2 {
			id := fmt.Sprintf("calc-%d-%d", r, i)
			postOK(t, base+"/v1/processes/calc/instances", map[string]any{"id": id})
			incident = append(incident, id)
		}
		for _, id := range waiting {
			task := openTask(t, rig, base, id)
			postOK(t, base+"/v1/tasks/"+url.PathEscape(task)+"/complete", map[string]any{"vars": map[string]any{"ok": true}})
			completed = append(completed, id)
		}
		for _, id := range failing {
			inc := openIncident(t, rig, id)
			postOK(t, base+"/v1/incidents/"+url.PathEscape(inc)+"/resolve", map[string]any{"vars": map[string]any{"a": 1}})
			resolved = append(resolved, id)
		}
		waiting, failing = started, incident
		if r == rounds {
			break
		}
		time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond) // where the cut lands, not a wait for anything
		rig.kill()
		rig.restart()
	}

	for _, id := range completed {
		awaitStatus(t, rig, id, instance.Completed)
		if n := nags(t, rig, id); n > 3 {
			t.Errorf("instance %s: the timeout listener ran %d times, want at most 3", id, n)
		}
	}
	for _, id := range resolved {
		awaitStatus(t, rig, id, instance.Completed)
		recs, err := rig.api.Incidents(rig.ctx, api.IncidentListRequest{Instance: id, State: "all"})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].State != "resolved" {
			t.Fatalf("instance %s: incidents %+v, want one, resolved", id, recs)
		}
	}
	for _, id := range append(waiting, kept...) {
		openTask(t, rig, base, id)
		testwait.Until(t, 30*time.Second, "instance "+id+"'s three nags", func() error {
			if n := nags(t, rig, id); n != 3 {
				return fmt.Errorf("nags = %d", n)
			}
			return nil
		})
	}
	for _, id := range failing {
		openIncident(t, rig, id)
	}
	t.Logf("%d cuts: %d tasks completed, %d incidents resolved, %d tasks and %d incidents left open, all as acknowledged",
		rounds, len(completed), len(resolved), len(waiting)+len(kept), len(failing))
}

// nags is how often instance id's timeout listener ran.
func nags(t *testing.T, rig *killRig, id string) int {
	t.Helper()
	v, err := rig.api.Instance(rig.ctx, id)
	if err != nil {
		t.Fatalf("instance %s: %v", id, err)
	}
	switch n := v.Variables["nags"].(type) {
	case nil:
		return 0
	case int64:
		return int(n)
	case float64:
		return int(n)
	default:
		t.Fatalf("instance %s: nags = %v (%T)", id, n, n)
		return 0
	}
}

// postOK posts body as JSON to u and fails the test unless it is answered
// 2xx; the answer is decoded into out, if given.
func postOK(t *testing.T, u string, body any, out ...any) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(u, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s %s: %s %s", u, data, resp.Status, got)
	}
	for _, o := range out {
		if err := json.Unmarshal(got, o); err != nil {
			t.Fatalf("POST %s: answer %s: %v", u, got, err)
		}
	}
}

// openTask waits until instance id waits at its user task and returns the
// task's id.
func openTask(t *testing.T, rig *killRig, base, id string) string {
	t.Helper()
	var task string
	testwait.Until(t, 30*time.Second, "instance "+id+"'s open user task", func() error {
		resp, err := http.Get(base + "/v1/tasks?instanceId=" + url.QueryEscape(id))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var list api.TaskListResponse
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			return err
		}
		for _, tk := range list.Tasks {
			if !tk.State.Finished() {
				task = tk.ID
				return nil
			}
		}
		v, err := rig.api.Instance(rig.ctx, id)
		if err != nil {
			return fmt.Errorf("instance %s: %w", id, err)
		}
		return fmt.Errorf("instance %s is %s with no open task (tasks %d)", id, v.Status, len(list.Tasks))
	})
	return task
}

// openIncident waits until instance id holds an open incident and returns
// its id.
func openIncident(t *testing.T, rig *killRig, id string) string {
	t.Helper()
	var inc string
	testwait.Until(t, 30*time.Second, "instance "+id+"'s open incident", func() error {
		recs, err := rig.api.Incidents(rig.ctx, api.IncidentListRequest{Instance: id})
		if err != nil {
			return err
		}
		for _, r := range recs {
			if !r.State.Closed() {
				inc = r.ID
				return nil
			}
		}
		return fmt.Errorf("no open incident among %d", len(recs))
	})
	return inc
}

// awaitStatus waits until instance id has status want.
func awaitStatus(t *testing.T, rig *killRig, id string, want instance.Status) {
	t.Helper()
	testwait.Until(t, 30*time.Second, "instance "+id+" to be "+string(want), func() error {
		v, err := rig.api.Instance(rig.ctx, id)
		if err != nil {
			return err
		}
		if v.Status != want {
			return fmt.Errorf("status %s", v.Status)
		}
		return nil
	})
}
