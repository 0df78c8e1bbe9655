package camunda7_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/camunda7"
	"github.com/jetbpm/jetbpm/engine/instance"
)

const c7Header = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="defs">
`

// paidXML waits for message "paid" (by business key), then for a user
// task of group accounting.
const paidXML = c7Header + `<bpmn:process id="paid" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait"/>
  <bpmn:receiveTask id="wait" messageRef="m"/>
  <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="review"/>
  <bpmn:userTask id="review" name="Review" camunda:candidateGroups="accounting"/>
  <bpmn:sequenceFlow id="f3" sourceRef="review" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
<bpmn:message id="m" name="paid"/>
</bpmn:definitions>
`

func TestDeploymentDefinitionsAndInstances(t *testing.T) {
	f := setup(t, camunda7.Options{})
	r := f.deploy(t, "order.bpmn", orderXML("PT30S"))
	if r.status != 200 || r.ctype != "application/json" {
		t.Fatalf("deploy: %d %q %s", r.status, r.ctype, r.body)
	}
	var dep struct {
		ID                         string
		DeploymentTime             string
		DeployedProcessDefinitions map[string]map[string]any
	}
	r.decode(t, &dep)
	if pd := dep.DeployedProcessDefinitions["order:1"]; dep.ID == "" || pd["key"] != "order" || pd["version"] != 1.0 || !camundaDate.MatchString(dep.DeploymentTime) {
		t.Fatalf("deployment %s", r.body)
	}
	f.deploy(t, "bad.bpmn", "<nope/>").restErr(t, 400)
	f.deploy(t, "form.form", "{}").restErr(t, 400)

	var defs []map[string]any
	f.call(t, "GET", "/process-definition?key=order", nil).decode(t, &defs)
	if len(defs) != 1 || defs[0]["id"] != "order:1" {
		t.Fatalf("definitions %v", defs)
	}
	f.call(t, "GET", "/process-definition?key=nope", nil).decode(t, &defs)
	if len(defs) != 0 {
		t.Fatalf("definitions of an unknown key %v", defs)
	}
	if r := f.deploy(t, "order.bpmn", strings.ReplaceAll(orderXML("PT30S"), `"done"`, `"done2"`)); r.status != 200 { // version 2
		t.Fatalf("deploy version 2: %d %s", r.status, r.body)
	}
	f.deploy(t, "paid.bpmn", paidXML)
	f.call(t, "GET", "/process-definition", nil).decode(t, &defs)
	if ids := jsonOf(defs); len(defs) != 3 || defs[0]["id"] != "order:1" || defs[1]["id"] != "order:2" || defs[2]["id"] != "paid:1" {
		t.Fatalf("all definitions: %s", ids)
	}
	f.call(t, "GET", "/process-definition?latestVersion=true&key=order", nil).decode(t, &defs)
	if len(defs) != 1 || defs[0]["version"] != 2.0 {
		t.Fatalf("latest order: %v", defs)
	}

	r = f.call(t, "POST", "/process-definition/order:1/start", map[string]any{"businessKey": "o-7", "withVariablesInReturn": true,
		"variables": map[string]any{"n": map[string]any{"value": 3, "type": "Integer"}}})
	if r.status != 200 {
		t.Fatalf("start by id: %d %s", r.status, r.body)
	}
	var pi map[string]any
	r.decode(t, &pi)
	id, _ := pi["id"].(string)
	if id == "" || pi["definitionId"] != "order:1" || pi["businessKey"] != "o-7" || pi["ended"] != false {
		t.Fatalf("started %s", r.body)
	}
	if v, _ := pi["variables"].(map[string]any)["n"].(map[string]any); v["type"] != "Integer" {
		t.Errorf("withVariablesInReturn: %v", pi["variables"])
	}
	f.call(t, "POST", "/process-definition/order:9/start", map[string]any{}).restErr(t, 404)
	f.call(t, "POST", "/process-definition/key/nope/start", map[string]any{}).restErr(t, 404)
	f.call(t, "POST", "/process-definition/key/order/start", map[string]any{"variables": map[string]any{"f": map[string]any{"type": "File", "value": ""}}}).restErr(t, 400)

	r = f.call(t, "GET", "/process-instance/"+id, nil)
	if r.status != 200 {
		t.Fatalf("get instance: %d %s", r.status, r.body)
	}
	mods := map[string]any{"modifications": map[string]any{
		"n": map[string]any{"value": 4, "type": "Integer"}, "note": map[string]any{"value": "rush", "type": "String"}}}
	if r := f.call(t, "POST", "/process-instance/"+id+"/variables", mods); r.status != 204 {
		t.Fatalf("modify variables: %d %s", r.status, r.body)
	}
	if v, err := f.eng.Instance(ctxT(t), id); err != nil || fmt.Sprint(v.Variables["n"]) != "4" || v.Variables["note"] != "rush" {
		t.Fatalf("after modify: %+v %v", v, err)
	}
	f.call(t, "POST", "/process-instance/"+id+"/variables", map[string]any{"deletions": []string{"n"}}).restErr(t, 400)
	f.call(t, "POST", "/process-instance/"+id+"/variables", map[string]any{"modifications": map[string]any{"f": map[string]any{"type": "File", "value": ""}}}).restErr(t, 400)
	f.call(t, "POST", "/process-instance/nope/variables", mods).restErr(t, 404)
	task := f.fetchOne(t, "w1")
	if task.BusinessKey == nil || *task.BusinessKey != "o-7" {
		t.Errorf("locked task's businessKey %v", task.BusinessKey)
	}
	if r := f.call(t, "DELETE", "/process-instance/"+id, nil); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if v := f.waitEnded(t, id); v.Status != instance.Terminated {
		t.Fatalf("deleted instance: %s", v.Status)
	}
	f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1"}).restErr(t, 404)
	f.call(t, "GET", "/process-instance/"+id, nil).restErr(t, 404)
	f.call(t, "DELETE", "/process-instance/"+id, nil).restErr(t, 404)
	f.call(t, "DELETE", "/process-instance/nope", nil).restErr(t, 404)
}

func TestMessageAndUserTasks(t *testing.T) {
	f := setup(t, camunda7.Options{})
	if r := f.deploy(t, "paid.bpmn", paidXML); r.status != 200 {
		t.Fatalf("deploy: %d %s", r.status, r.body)
	}
	r := f.call(t, "POST", "/process-definition/key/paid/start", map[string]any{"businessKey": "o-1"})
	var pi struct{ ID string }
	r.decode(t, &pi)

	f.call(t, "POST", "/message", map[string]any{}).restErr(t, 400)
	f.call(t, "POST", "/message", map[string]any{"messageName": "paid", "businessKey": "nobody"}).restErr(t, 400)
	f.call(t, "POST", "/message", map[string]any{"messageName": "paid", "correlationKeys": map[string]any{
		"a": map[string]any{"value": "1"}, "b": map[string]any{"value": "2"}}}).restErr(t, 400)
	// The receive task's subscription opens after the start is applied: a
	// message before it matches nothing (400, nothing changed) and is sent
	// again, as a Camunda client would.
	waitFor(t, "the message correlated to o-1's receive task", func() error {
		r = f.call(t, "POST", "/message", map[string]any{"messageName": "paid", "businessKey": "o-1", "resultEnabled": true,
			"processVariables": map[string]any{"amount": map[string]any{"value": 12, "type": "Long"}}})
		if r.status != 200 {
			return fmt.Errorf("message: %d %s", r.status, r.body)
		}
		return nil
	})
	var results []map[string]any
	r.decode(t, &results)
	if len(results) != 1 || results[0]["resultType"] != "Execution" || results[0]["processInstance"].(map[string]any)["id"] != pi.ID {
		t.Fatalf("correlation result %s", r.body)
	}

	tk := f.oneTask(t, "candidateGroup=accounting&processInstanceId="+pi.ID)
	var tasks []map[string]any
	if tk["taskDefinitionKey"] != "review" || tk["name"] != "Review" || tk["assignee"] != nil || !camundaDate.MatchString(tk["created"].(string)) {
		t.Fatalf("task %v", tk)
	}
	tid := tk["id"].(string)
	f.call(t, "POST", "/task/"+tid+"/claim", map[string]any{}).restErr(t, 400)
	if r := f.call(t, "POST", "/task/"+tid+"/claim", map[string]any{"userId": "ann"}); r.status != 204 {
		t.Fatalf("claim: %d %s", r.status, r.body)
	}
	f.call(t, "GET", "/task?assignee=ann", nil).decode(t, &tasks)
	if len(tasks) != 1 || tasks[0]["assignee"] != "ann" {
		t.Fatalf("ann's tasks %v", tasks)
	}
	if r := f.call(t, "POST", "/task/"+tid+"/unclaim", nil); r.status != 204 {
		t.Fatalf("unclaim: %d %s", r.status, r.body)
	}
	if r := f.call(t, "POST", "/task/"+tid+"/complete", map[string]any{"variables": map[string]any{"ok": map[string]any{"value": true, "type": "Boolean"}}}); r.status != 204 {
		t.Fatalf("complete: %d %s", r.status, r.body)
	}
	v := f.waitEnded(t, pi.ID)
	if v.Variables["ok"] != true || v.Variables["amount"] != int64(12) {
		t.Fatalf("variables %v", v.Variables)
	}
	f.call(t, "POST", "/task/nope/complete", map[string]any{}).restErr(t, 404)
}

func TestErrorsAndVersion(t *testing.T) {
	f := setup(t, camunda7.Options{})
	var v map[string]string
	r := f.call(t, "GET", "/version", nil)
	if r.ctype != "application/json" {
		t.Fatalf("version content type %q", r.ctype)
	}
	r.decode(t, &v)
	if v["version"] != camunda7.EngineVersion {
		t.Fatalf("version %v", v)
	}
	f.call(t, "GET", "/nothing/here", nil).restErr(t, 404)
	f.call(t, "POST", "/external-task/fetchAndLock", map[string]any{"maxTasks": 1}).restErr(t, 400)
	f.call(t, "POST", "/external-task/fetchAndLock", map[string]any{"workerId": "w", "maxTasks": 1, "asyncResponseTimeout": 1800001}).restErr(t, 400)
	f.call(t, "POST", "/external-task/fetchAndLock", map[string]any{"workerId": "w", "maxTasks": 1, "topics": []any{map[string]any{}}}).restErr(t, 400)
	// A topic nobody deployed has no jobs: an empty array, also after a
	// long poll.
	r = f.call(t, "POST", "/external-task/fetchAndLock", map[string]any{"workerId": "w", "maxTasks": 1, "asyncResponseTimeout": 100,
		"topics": []any{map[string]any{"topicName": "none", "lockDuration": 1000}}})
	if r.status != 200 || strings.TrimSpace(string(r.body)) != "[]" || r.ctype != "application/json" {
		t.Fatalf("fetch of an unknown topic: %d %q %s", r.status, r.ctype, r.body)
	}
	for _, id := range []string{"t3", "JETBPM_JOBS.topic-x.1.99.1.1.0", "JETBPM_JOBS.topic-x.1.99.1.1.0%2F"} {
		f.call(t, "POST", "/external-task/"+id+"/unlock", nil).restErr(t, 404)
		f.call(t, "GET", "/external-task/"+id, nil).restErr(t, 404)
	}
	f.call(t, "POST", "/external-task/x/complete", "not an object").restErr(t, 400)
	f.call(t, "POST", "/external-task/x/complete", map[string]any{}).restErr(t, 400) // no workerId
	var list []any
	f.call(t, "GET", "/external-task", nil).decode(t, &list)
	if len(list) != 0 {
		t.Fatalf("external tasks %v", list)
	}
	f.call(t, "GET", "/external-task?maxResults=-1", nil).restErr(t, 400)
	f.call(t, "GET", "/incident", nil).decode(t, &list)
	if len(list) != 0 {
		t.Fatalf("incidents %v", list)
	}
}

func TestAuthorizeHookSeesTopics(t *testing.T) {
	var seen []camunda7.Access
	f := setup(t, camunda7.Options{Authorize: func(r *http.Request, a camunda7.Access) error {
		seen = append(seen, a)
		if len(a.Topics) == 1 && a.Topics[0] == "secret" {
			return errors.New("worker may not fetch topic secret")
		}
		return nil
	}})
	e := f.call(t, "POST", "/external-task/fetchAndLock", map[string]any{"workerId": "w", "maxTasks": 1,
		"topics": []any{map[string]any{"topicName": "secret"}}}).restErr(t, 403)
	if !strings.Contains(e["message"].(string), "secret") {
		t.Errorf("403: %v", e)
	}
	if len(seen) != 1 || seen[0].Operation != "externalTask.fetch" {
		t.Errorf("access %v", seen)
	}
}
