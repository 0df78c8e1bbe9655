package httpapi_test

import (
	"net/url"
	"testing"
)

// undoXML books (a task whose compensation handler records the undo), then
// waits an hour.
const undoXML = header + `<bpmn:process id="undo" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="book"/>
  <bpmn:task id="book"/>
  <bpmn:boundaryEvent id="bc" attachedToRef="book"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
  <bpmn:scriptTask id="unbook" isForCompensation="true" scriptFormat="feel" camunda:resultVariable="unbooked"><bpmn:script>true</bpmn:script></bpmn:scriptTask>
  <bpmn:association id="a" sourceRef="bc" targetRef="unbook"/>
  <bpmn:sequenceFlow id="f2" sourceRef="book" targetRef="w"/>
  <bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
  <bpmn:sequenceFlow id="f3" sourceRef="w" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// lateXML is a user task whose escalation "late" leaves by its boundary.
const lateXML = header + `<bpmn:escalation id="esc" escalationCode="late"/>
<bpmn:process id="late" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
  <bpmn:userTask id="approve" camunda:candidateGroups="accounting"/>
  <bpmn:boundaryEvent id="b" attachedToRef="approve"><bpmn:escalationEventDefinition escalationRef="esc"/></bpmn:boundaryEvent>
  <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="e"/>
  <bpmn:endEvent id="e"/>
  <bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="escalated"/>
  <bpmn:endEvent id="escalated"/>
</bpmn:process>
</bpmn:definitions>
`

// POST /v1/instances/{id}/compensate runs the journal's handlers and ends
// the instance terminated; a node with no completion is refused.
func TestCompensateRoute(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.deploy("undo.bpmn", undoXML)
	f.ok(f.post("/v1/processes/undo/instances", `{"id": "u-1"}`), 201)
	f.waitFor("/v1/instances/u-1", "u-1 to wait", func(v map[string]any) bool { return v["status"] == "active" && len(asList(v["activeNodes"])) == 1 })
	f.problem(f.post("/v1/instances/u-1/compensate", `{"node": "w"}`), 422, "unprocessable", "")
	f.problem(f.post("/v1/instances/u-1/compensate", `{"nod": "book"}`), 400, "bad-request", `unknown field "nod"`)
	f.problem(f.post("/v1/instances/nosuch/compensate", `{}`), 404, "not-found", "")
	if got := f.ok(f.post("/v1/instances/u-1/compensate", `{"node": "book"}`), 202); got["id"] != "u-1" {
		t.Fatalf("compensate answered %v", got)
	}
	v := f.waitFor("/v1/instances/u-1", "u-1 to end", func(v map[string]any) bool { return v["status"] != "active" })
	if vars, _ := v["variables"].(map[string]any); v["status"] != "terminated" || vars["unbooked"] != true {
		t.Errorf("after compensate: %v, want terminated with unbooked", v)
	}
	f.problem(f.post("/v1/instances/u-1/compensate", `{}`), 409, "finished", "")
}

// POST /v1/tasks/{id}/escalate: an escalation nothing catches is refused
// and changes nothing; the boundary's code ends the task by its path.
func TestEscalateRoute(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.deploy("late.bpmn", lateXML)
	f.ok(f.post("/v1/processes/late/instances", `{"id": "l-1"}`), 201)
	var task string
	f.waitFor("/v1/tasks?candidateGroup=accounting", "the task of l-1", func(m map[string]any) bool {
		if list := asList(m["tasks"]); len(list) == 1 {
			t0, _ := list[0].(map[string]any)
			task, _ = t0["id"].(string)
		}
		return task != ""
	})
	path := "/v1/tasks/" + url.PathEscape(task)
	f.problem(f.post(path+"/escalate", `{"code": "early"}`), 422, "unprocessable", "early")
	if got := f.ok(f.get(path), 200); got["state"] == "canceled" || got["state"] == "completed" {
		t.Fatalf("a refused escalation changed the task: %v", got)
	}
	f.ok(f.post(path+"/escalate", `{"code": "late", "vars": {"why": "slow"}}`), 200)
	v := f.waitFor("/v1/instances/l-1", "l-1 to complete", func(v map[string]any) bool { return v["status"] == "completed" })
	if vars, _ := v["variables"].(map[string]any); vars["why"] != "slow" {
		t.Errorf("escalated instance %v, want the escalation's vars", v)
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }
