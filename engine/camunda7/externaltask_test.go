package camunda7_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/camunda7"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

var camundaDate = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4}$`)

func TestFetchAndLockAndCompleteWithTypedVariables(t *testing.T) {
	f := setup(t, camunda7.Options{})
	if r := f.deploy(t, "order.bpmn", orderXML("PT30S")); r.status != 200 || r.ctype != "application/json" {
		t.Fatalf("deploy: %d %q %s", r.status, r.ctype, r.body)
	}
	id := f.start(t, map[string]any{
		"amount": map[string]any{"value": 42, "type": "Integer"},
		"big":    map[string]any{"value": 1099511627776, "type": "long"},
		"card":   map[string]any{"value": "visa", "type": "String"},
		"order":  map[string]any{"value": `{"lines":[1,2]}`, "type": "Json"},
		"when":   map[string]any{"value": "2015-10-06T16:34:42.000+0200", "type": "Date"},
		"none":   map[string]any{"value": nil, "type": "Null"},
	})
	task := f.fetchOne(t, "w1")
	if task.TopicName != "charge" || task.WorkerID != "w1" || task.ProcessInstanceID != id || task.ActivityID != "charge" {
		t.Errorf("locked task %+v", task)
	}
	if !camundaDate.MatchString(task.LockExpirationTime) {
		t.Errorf("lockExpirationTime %q is not in Camunda's date format", task.LockExpirationTime)
	}
	if task.Retries != nil {
		t.Errorf("retries %d before any failure, want null", *task.Retries)
	}
	want := map[string]string{"amount": "Integer", "big": "Long", "card": "String", "order": "Json", "when": "String", "none": "Null"}
	for name, typ := range want {
		if got := task.Variables[name]["type"]; got != typ {
			t.Errorf("variable %s: type %v, want %s (all: %s)", name, got, typ, jsonOf(task.Variables))
		}
	}
	if v := task.Variables["order"]["value"]; v != `{"lines":[1,2]}` {
		t.Errorf("a Json value is a JSON string: %v", v)
	}

	r := f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1",
		"variables": map[string]any{
			"receipt": map[string]any{"value": "r-1", "type": "string", "valueInfo": map[string]any{}},
			"paid":    map[string]any{"value": true, "type": "boolean"},
			"fee":     map[string]any{"value": 1.5, "type": "double"},
			"meta":    map[string]any{"value": `{"k":"v"}`, "type": "object", "valueInfo": map[string]any{"serializationDataFormat": "application/json", "objectTypeName": "java.util.HashMap"}},
			"tr":      map[string]any{"value": "x", "type": "string", "valueInfo": map[string]any{"transient": true}},
		},
		"localVariables": map[string]any{"loc": map[string]any{"value": 7, "type": "short"}},
	})
	if r.status != 204 {
		t.Fatalf("complete: %d %s", r.status, r.body)
	}
	v := f.waitEnded(t, id)
	if v.Status != instance.Completed {
		t.Fatalf("instance %s", v.Status)
	}
	for name, want := range map[string]any{"receipt": "r-1", "paid": true, "fee": 1.5, "loc": int64(7), "amount": int64(42)} {
		if v.Variables[name] != want {
			t.Errorf("variable %s = %#v, want %#v", name, v.Variables[name], want)
		}
	}
	if m, _ := v.Variables["meta"].(map[string]any); m["k"] != "v" {
		t.Errorf("Object application/json value: %#v", v.Variables["meta"])
	}
	if _, ok := v.Variables["tr"]; ok {
		t.Error("a transient variable was stored")
	}
	// The job is done: the task is gone.
	f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1"}).restErr(t, 404)
	f.call(t, "GET", "/external-task/"+task.ID, nil).restErr(t, 404)
}

func TestUnsupportedVariableTypesAreRefused(t *testing.T) {
	f := setup(t, camunda7.Options{})
	f.deploy(t, "order.bpmn", orderXML("PT30S"))
	id := f.start(t, nil)
	task := f.fetchOne(t, "w1")
	for typ, v := range map[string]map[string]any{
		"File":   {"value": "aGVsbG8=", "type": "File", "valueInfo": map[string]any{"filename": "a.txt"}},
		"Object": {"value": "AAA", "type": "Object", "valueInfo": map[string]any{"serializationDataFormat": "application/x-java-serialized-object"}},
		"Bytes":  {"value": "AAA", "type": "Bytes"},
	} {
		e := f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1", "variables": map[string]any{"x": v}}).restErr(t, 400)
		if msg := e["message"].(string); !strings.Contains(msg, typ) {
			t.Errorf("refusal of %s does not name the type: %s", typ, msg)
		}
	}
	e := f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1",
		"variables": map[string]any{"n": map[string]any{"value": 1 << 40, "type": "Integer"}}}).restErr(t, 400)
	if !strings.Contains(e["message"].(string), "out of range") {
		t.Errorf("an Integer above 2^31: %v", e)
	}
	// Nothing changed: the task is still there and completes.
	if r := f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1"}); r.status != 204 {
		t.Fatalf("complete after refusals: %d %s", r.status, r.body)
	}
	f.waitEnded(t, id)
}

func TestFailureRetriesThenIncident(t *testing.T) {
	f := setup(t, camunda7.Options{})
	f.deploy(t, "order.bpmn", orderXML("PT30S"))
	id := f.start(t, nil)
	task := f.fetchOne(t, "w1")
	r := f.call(t, "POST", "/external-task/"+task.ID+"/failure", map[string]any{"workerId": "w1", "errorMessage": "bank down", "errorDetails": "stack", "retries": 1, "retryTimeout": 0})
	if r.status != 204 {
		t.Fatalf("failure with retries 1: %d %s", r.status, r.body)
	}
	again := f.fetchOne(t, "w2")
	if again.ID == task.ID || again.ProcessInstanceID != id {
		t.Fatalf("the retry is a new delivery of the same job: %+v after %+v", again, task)
	}
	if again.Retries == nil || *again.Retries != 1 || again.ErrorMessage == nil || !strings.Contains(*again.ErrorMessage, "bank down") {
		t.Errorf("retried task: retries %v, errorMessage %v; want 1 and the failure's message", again.Retries, again.ErrorMessage)
	}
	// The old delivery is stale now.
	f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1"}).restErr(t, 400)
	r = f.call(t, "POST", "/external-task/"+again.ID+"/failure", map[string]any{"workerId": "w2", "errorMessage": "still down", "retries": 0})
	if r.status != 204 {
		t.Fatalf("failure with retries 0: %d %s", r.status, r.body)
	}
	var incidents []map[string]any
	testwait.Until(t, 15*time.Second, "the incident to be listed", func() error {
		f.call(t, "GET", "/incident?processInstanceId="+id, nil).decode(t, &incidents)
		if len(incidents) != 1 {
			return fmt.Errorf("incidents of %s: %v", id, incidents)
		}
		return nil
	})
	inc := incidents[0]
	if inc["incidentType"] != "failedExternalTask" || inc["activityId"] != "charge" || !strings.Contains(inc["incidentMessage"].(string), "still down") {
		t.Errorf("incident %v", inc)
	}
	if !camundaDate.MatchString(inc["incidentTimestamp"].(string)) {
		t.Errorf("incidentTimestamp %v", inc["incidentTimestamp"])
	}
}

func TestBpmnErrorReachesTheBoundary(t *testing.T) {
	f := setup(t, camunda7.Options{})
	f.deploy(t, "order.bpmn", orderXML("PT30S"))
	id := f.start(t, nil)
	task := f.fetchOne(t, "w1")
	f.call(t, "POST", "/external-task/"+task.ID+"/bpmnError", map[string]any{"workerId": "w1"}).restErr(t, 400) // no errorCode
	r := f.call(t, "POST", "/external-task/"+task.ID+"/bpmnError", map[string]any{"workerId": "w1", "errorCode": "DECLINED", "errorMessage": "card declined",
		"variables": map[string]any{"reason": map[string]any{"value": "limit", "type": "String"}}})
	if r.status != 204 {
		t.Fatalf("bpmnError: %d %s", r.status, r.body)
	}
	v := f.waitEnded(t, id)
	if v.Status != instance.Completed || v.Variables["reason"] != "limit" {
		t.Fatalf("after the error: %s %v", v.Status, v.Variables)
	}
}

func TestLockHolderExtendLockAndUnlock(t *testing.T) {
	f := setup(t, camunda7.Options{})
	f.deploy(t, "order.bpmn", orderXML("PT30S"))
	id := f.start(t, nil)
	task := f.fetchOne(t, "w1")

	e := f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w2"}).restErr(t, 400)
	if !strings.Contains(e["message"].(string), "locked by worker 'w1'") {
		t.Errorf("complete by another worker: %v", e)
	}
	f.call(t, "POST", "/external-task/"+task.ID+"/extendLock", map[string]any{"workerId": "w1", "newDuration": 0}).restErr(t, 400)
	if r := f.call(t, "POST", "/external-task/"+task.ID+"/extendLock", map[string]any{"workerId": "w1", "newDuration": 5000}); r.status != 204 {
		t.Fatalf("extendLock: %d %s", r.status, r.body)
	}
	var got map[string]any
	r := f.call(t, "GET", "/external-task/"+task.ID, nil)
	if r.status != 200 {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	r.decode(t, &got)
	if got["workerId"] != "w1" || got["topicName"] != "charge" || !camundaDate.MatchString(got["lockExpirationTime"].(string)) {
		t.Errorf("GET of a locked task: %v", got)
	}
	var list []map[string]any
	f.call(t, "GET", "/external-task?topicName=charge&locked=true", nil).decode(t, &list)
	if len(list) != 1 || list[0]["id"] != task.ID {
		t.Errorf("locked tasks listed: %v", list)
	}

	// Unlock (no body, as the JS client sends it): another worker gets it
	// at once, and it did not count as a failed attempt.
	req := f.call(t, "POST", "/external-task/"+task.ID+"/unlock", nil)
	if req.status != 204 {
		t.Fatalf("unlock: %d %s", req.status, req.body)
	}
	other := f.fetchOne(t, "w2")
	if other.ProcessInstanceID != id || other.ID == task.ID || other.Retries != nil {
		t.Fatalf("after unlock: %+v", other)
	}
	f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1"}).restErr(t, 400)
	if r := f.call(t, "POST", "/external-task/"+other.ID+"/complete", map[string]any{"workerId": "w2"}); r.status != 204 {
		t.Fatalf("complete by the new holder: %d %s", r.status, r.body)
	}
	f.waitEnded(t, id)
}

// A task with a worker output mapping (jetbpm:outputMapping) ships its
// policy to workers; a REST worker runs no policy, so the engine applies
// the mapping to what it reports: only what is mapped reaches the process.
func TestCompleteAppliesTheWorkerOutputMapping(t *testing.T) {
	f := setup(t, camunda7.Options{})
	xml := strings.Replace(orderXML("PT30S"), `<jetbpm:worker lockDuration="PT30S" maxLockDuration="PT1M"/>`,
		`<jetbpm:worker lockDuration="PT30S" maxLockDuration="PT1M"/><jetbpm:outputMapping><jetbpm:output path="body.result" variable="receipt" required="true"/></jetbpm:outputMapping>`, 1)
	if r := f.deploy(t, "order.bpmn", xml); r.status != 200 {
		t.Fatalf("deploy: %d %s", r.status, r.body)
	}
	id := f.start(t, map[string]any{"amount": map[string]any{"value": 5, "type": "Integer"}})
	task := f.fetchOne(t, "w1")
	r := f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1",
		"variables": map[string]any{"result": map[string]any{"value": "r-9", "type": "String"}}})
	if r.status != 204 {
		t.Fatalf("complete: %d %s", r.status, r.body)
	}
	v := f.waitEnded(t, id)
	if v.Status != instance.Completed || v.Variables["receipt"] != "r-9" || v.Variables["result"] != nil {
		t.Fatalf("after the completion: %s %v, want receipt r-9 and no result", v.Status, v.Variables)
	}
}

// A completion too large to reach the engine is refused at once, and the
// task can still be completed.
func TestOversizedCompleteIsRefused(t *testing.T) {
	f := setup(t, camunda7.Options{})
	if r := f.deploy(t, "order.bpmn", orderXML("PT30S")); r.status != 200 {
		t.Fatalf("deploy: %d %s", r.status, r.body)
	}
	id := f.start(t, nil)
	task := f.fetchOne(t, "w1")
	huge := map[string]any{"blob": map[string]any{"value": strings.Repeat("x", 1536<<10), "type": "String"}}
	r := f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1", "variables": huge})
	if r.status != 400 || !strings.Contains(string(r.body), "maximum payload") {
		t.Fatalf("oversized complete: %d %s, want 400 naming the maximum payload", r.status, r.body)
	}
	r = f.call(t, "POST", "/external-task/"+task.ID+"/complete", map[string]any{"workerId": "w1"})
	if r.status != 204 {
		t.Fatalf("complete after the refusal: %d %s", r.status, r.body)
	}
	if v := f.waitEnded(t, id); v.Status != instance.Completed {
		t.Fatalf("instance %s", v.Status)
	}
}
