package rest_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// items returns a search answer's items.
func items(t *testing.T, out map[string]any) []map[string]any {
	t.Helper()
	var got []map[string]any
	for _, it := range out["items"].([]any) {
		got = append(got, it.(map[string]any))
	}
	return got
}

// The read routes — definitions, instances, variables — and user tasks,
// as Operate and Tasklist clients use them.
func TestRESTSearchesAndUserTasks(t *testing.T) {
	f := setup(t)
	f.deployModels(t)
	code, out := f.deploy(t, map[string][]byte{"review.bpmn": testdata(t, "review.bpmn")}, nil)
	want(t, "deploy review", code, out, http.StatusOK, "")

	// Definitions: the latest of each process, its XML as deployed.
	code, out = f.call(t, "POST", "/process-definitions/search", map[string]any{"filter": map[string]any{"processDefinitionId": "review"}})
	want(t, "search definitions", code, out, http.StatusOK, "")
	defs := items(t, out)
	if len(defs) != 1 || defs[0]["name"] != "Review an order" || defs[0]["resourceName"] != "review.bpmn" || defs[0]["version"] != 1.0 {
		t.Fatalf("definitions %v", out)
	}
	dk := defs[0]["processDefinitionKey"].(string)
	code, out = f.call(t, "GET", "/process-definitions/"+dk, nil)
	if code != http.StatusOK || out["processDefinitionId"] != "review" {
		t.Errorf("get definition %d %v", code, out)
	}
	res, err := http.Get(f.url + "/process-definitions/" + dk + "/xml")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(doc) != string(testdata(t, "review.bpmn")) {
		t.Errorf("definition XML %d %q", res.StatusCode, doc)
	}
	code, out = f.call(t, "POST", "/process-definitions/search", nil)
	if want(t, "all definitions", code, out, http.StatusOK, ""); out["page"].(map[string]any)["totalItems"] != 5.0 {
		t.Errorf("all definitions %v, want 5", out["page"])
	}

	// Three reviews; a search by definition and state pages newest first.
	var keys []string
	for i := range 3 {
		code, inst := f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "review", "variables": map[string]any{"n": i, "b": "x"}})
		want(t, "create review", code, inst, http.StatusOK, "")
		keys = append(keys, inst["processInstanceKey"].(string))
	}
	// A create answers once the start is stored; the instance is listed
	// once its first checkpoint is, a moment later (as Camunda 8's
	// searches, eventually).
	testwait.True(t, 10*time.Second, "the three reviews listed", func() bool {
		code, out = f.call(t, "POST", "/process-instances/search", map[string]any{"filter": map[string]any{"processDefinitionKey": dk, "state": "ACTIVE"},
			"page": map[string]any{"from": 1, "limit": 1}})
		want(t, "search instances", code, out, http.StatusOK, "")
		return out["page"].(map[string]any)["totalItems"] == 3.0
	})
	if got := items(t, out); len(got) != 1 || got[0]["state"] != "ACTIVE" {
		t.Errorf("instances %v", out)
	}
	code, out = f.call(t, "POST", "/process-instances/search", map[string]any{"filter": map[string]any{"processInstanceKey": keys[0]}})
	if got := items(t, out); code != http.StatusOK || len(got) != 1 || got[0]["processInstanceKey"] != keys[0] {
		t.Errorf("instance by key %d %v", code, out)
	}
	code, out = f.call(t, "POST", "/process-instances/search", map[string]any{"filter": map[string]any{"state": "COMPLETED"}})
	if code != http.StatusOK || len(items(t, out)) != 0 {
		t.Errorf("completed instances %d %v, want none", code, out)
	}

	// Variables: by instance, by name within it; one by its key; set.
	code, out = f.call(t, "POST", "/variables/search", map[string]any{"filter": map[string]any{"processInstanceKey": keys[2]}})
	want(t, "search variables", code, out, http.StatusOK, "")
	vars := items(t, out)
	if len(vars) != 2 || vars[0]["name"] != "b" || vars[0]["value"] != `"x"` || vars[1]["name"] != "n" || vars[1]["value"] != "2" || vars[1]["scopeKey"] != keys[2] {
		t.Fatalf("variables %v", out)
	}
	code, out = f.call(t, "PUT", "/element-instances/"+keys[2]+"/variables", map[string]any{"variables": map[string]any{"n": 20}})
	want(t, "set variables", code, out, http.StatusNoContent, "")
	code, out = f.call(t, "GET", "/variables/"+vars[1]["variableKey"].(string), nil)
	if code != http.StatusOK || out["value"] != "20" || out["name"] != "n" {
		t.Errorf("variable n after the change: %d %v", code, out)
	}

	// User tasks: found by instance, assigned, updated, unassigned, completed.
	var tasks []map[string]any
	testwait.True(t, 10*time.Second, "the review's user task listed", func() bool {
		code, out = f.call(t, "POST", "/user-tasks/search", map[string]any{"filter": map[string]any{"processInstanceKey": keys[0]}})
		want(t, "search tasks", code, out, http.StatusOK, "")
		tasks = items(t, out)
		return len(tasks) == 1
	})
	task := tasks[0]
	if task["state"] != "CREATED" || task["elementId"] != "approve" || task["name"] != "Approve the order" || task["assignee"] != nil ||
		fmt.Sprint(task["candidateGroups"]) != "[sales ops]" || task["processInstanceKey"] != keys[0] {
		t.Fatalf("task %v", task)
	}
	tk := task["userTaskKey"].(string)
	code, out = f.call(t, "POST", "/user-tasks/"+tk+"/assignment", map[string]any{"assignee": "alice"})
	want(t, "assign", code, out, http.StatusNoContent, "")
	code, out = f.call(t, "POST", "/user-tasks/"+tk+"/assignment", map[string]any{"assignee": "bob", "allowOverride": false})
	want(t, "assign held task without override", code, out, http.StatusConflict, "alice")
	code, out = f.call(t, "PATCH", "/user-tasks/"+tk, map[string]any{"changeset": map[string]any{"priority": 80, "dueDate": "2027-01-02T03:04:05Z"}})
	want(t, "update", code, out, http.StatusNoContent, "")
	code, out = f.call(t, "GET", "/user-tasks/"+tk, nil)
	if code != http.StatusOK || out["assignee"] != "alice" || out["priority"] != 80.0 || out["dueDate"] != "2027-01-02T03:04:05.000Z" {
		t.Errorf("task after assignment and update: %d %v", code, out)
	}
	code, out = f.call(t, "DELETE", "/user-tasks/"+tk+"/assignee", nil)
	want(t, "unassign", code, out, http.StatusNoContent, "")
	code, out = f.call(t, "POST", "/user-tasks/"+tk+"/completion", map[string]any{"variables": map[string]any{"approved": true}})
	want(t, "complete", code, out, http.StatusNoContent, "")
	if v, err := f.eng.Wait(ctxT(t), keys[0]); err != nil || v.Status != instance.Completed || v.Variables["approved"] != true {
		t.Fatalf("review 0: %+v %v", v, err)
	}
	code, out = f.call(t, "POST", "/user-tasks/"+tk+"/completion", nil)
	want(t, "complete again", code, out, http.StatusConflict, "")
	testwait.True(t, 10*time.Second, "the completed task listed", func() bool {
		code, out = f.call(t, "POST", "/user-tasks/search", map[string]any{"filter": map[string]any{"state": "COMPLETED"}})
		return code == http.StatusOK && len(items(t, out)) == 1
	})
	code, out = f.call(t, "GET", "/user-tasks/2251799813685999", nil)
	want(t, "unknown task", code, out, http.StatusNotFound, "user task")

	// An instance's incidents resolved at once.
	code, inst := f.call(t, "POST", "/process-instances", map[string]any{"processDefinitionId": "quick"}) // no amount: an expression incident
	want(t, "create quick", code, inst, http.StatusOK, "")
	qk := inst["processInstanceKey"].(string)
	if _, err := f.eng.WaitUntil(ctxT(t), qk, func(v *engine.InstanceView) bool { return len(v.Incidents) > 0 }); err != nil {
		t.Fatal(err)
	}
	code, out = f.call(t, "POST", "/process-instances/search", map[string]any{"filter": map[string]any{"processInstanceKey": qk, "hasIncident": true}})
	if code != http.StatusOK || len(items(t, out)) != 1 {
		t.Errorf("instance with incident %d %v", code, out)
	}
	code, out = f.call(t, "PUT", "/element-instances/"+qk+"/variables", map[string]any{"variables": map[string]any{"amount": 5}})
	want(t, "set amount", code, out, http.StatusNoContent, "")
	testwait.True(t, 10*time.Second, "the incident resolved through its instance", func() bool {
		code, out = f.call(t, "POST", "/process-instances/"+qk+"/incident-resolution", nil)
		want(t, "resolve the instance's incidents", code, out, http.StatusOK, "")
		if out["batchOperationType"] != "RESOLVE_INCIDENT" {
			t.Fatalf("batch %v", out)
		}
		v, err := f.eng.Instance(ctxT(t), qk)
		return err == nil && v.Status == instance.Completed
	})
	if v, _ := f.eng.Instance(ctxT(t), qk); v.Variables["doubled"] != int64(10) && fmt.Sprint(v.Variables["doubled"]) != "10" {
		t.Errorf("quick after the resolution: %+v", v)
	}
}
