package httpapi_test

import "testing"

// gateXML waits at a conditional catch until go is true, then at a timer.
const gateXML = header + `<bpmn:process id="gate" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="gate"/>
  <bpmn:intermediateCatchEvent id="gate"><bpmn:conditionalEventDefinition><bpmn:condition>${go == true}</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:intermediateCatchEvent>
  <bpmn:sequenceFlow id="f2" sourceRef="gate" targetRef="w"/>
  <bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
  <bpmn:sequenceFlow id="f3" sourceRef="w" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// POST /v1/instances/{id}/variables writes to a parked instance, which
// continues with them in the same step; a retried request id writes
// nothing; bad requests are refused by class and change nothing.
func TestSetVariablesRoute(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.deploy("gate.bpmn", gateXML)
	f.ok(f.post("/v1/processes/gate/instances", `{"id": "g-1", "vars": {"go": false}}`), 201)
	f.waitFor("/v1/instances/g-1", "g-1 to wait at gate", func(v map[string]any) bool {
		nodes := asList(v["activeNodes"])
		return len(nodes) == 1 && nodes[0] == "gate"
	})

	f.problem(f.post("/v1/instances/g-1/variables", `{"vars": {"go": true}`), 400, "bad-request", "")
	f.problem(f.post("/v1/instances/g-1/variables", `{"var": {"go": true}}`), 400, "bad-request", `unknown field "var"`)
	f.problem(f.post("/v1/instances/g-1/variables", `{"vars": [true]}`), 422, "unprocessable", "JSON object")
	f.problem(f.post("/v1/instances/g-1/variables", `{"vars": {}}`), 422, "unprocessable", "no variables")
	f.problem(f.post("/v1/instances/nosuch/variables", `{"vars": {"go": true}}`), 404, "not-found", "")
	if v := f.ok(f.get("/v1/instances/g-1"), 200); v["variables"].(map[string]any)["go"] != false {
		t.Fatalf("a refused request changed the instance: %v", v)
	}

	v := f.ok(f.post("/v1/instances/g-1/variables", `{"vars": {"go": true, "limit": 500}, "requestId": "ops-1"}`), 200)
	vars, _ := v["variables"].(map[string]any)
	if nodes := asList(v["activeNodes"]); vars["go"] != true || vars["limit"] != float64(500) || len(nodes) != 1 || nodes[0] != "w" {
		t.Fatalf("after the write: %v, want go and limit set and the instance at w", v)
	}
	v = f.ok(f.post("/v1/instances/g-1/variables", `{"vars": {"limit": 1}, "requestId": "ops-1"}`), 200)
	if vars, _ := v["variables"].(map[string]any); vars["limit"] != float64(500) {
		t.Fatalf("the retry of ops-1 wrote again: %v", v)
	}

	f.ok(f.post("/v1/instances/g-1/cancel", `{}`), 200)
	f.problem(f.post("/v1/instances/g-1/variables", `{"vars": {"go": true}}`), 409, "finished", "")
}

// plainWaitXML waits at a receive task without a message.
const plainWaitXML = header + `<bpmn:process id="plain" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="w"/>
  <bpmn:receiveTask id="w"/>
  <bpmn:sequenceFlow id="f2" sourceRef="w" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// POST /v1/instances/{id}/trigger moves on a plain receive task, its vars
// the task's results; a node it does not wait at is a conflict.
func TestTriggerRoute(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.deploy("plain.bpmn", plainWaitXML)
	f.ok(f.post("/v1/processes/plain/instances", `{"id": "w-1"}`), 201)
	f.waitFor("/v1/instances/w-1", "w-1 to wait at w", func(v map[string]any) bool {
		nodes := asList(v["activeNodes"])
		return len(nodes) == 1 && nodes[0] == "w"
	})
	f.problem(f.post("/v1/instances/w-1/trigger", `{"node": "x"}`), 409, "conflict", `does not wait at receive task "x"`)
	f.problem(f.post("/v1/instances/w-1/trigger", `{"vars": [1]}`), 422, "unprocessable", "JSON object")
	f.problem(f.post("/v1/instances/nosuch/trigger", `{}`), 404, "not-found", "")
	v := f.ok(f.post("/v1/instances/w-1/trigger", `{"node": "w", "vars": {"answer": "yes"}}`), 200)
	if vars, _ := v["variables"].(map[string]any); v["status"] != "completed" || vars["answer"] != "yes" {
		t.Fatalf("after the trigger: %v", v)
	}
}
