package camunda7_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda7"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// callXML waits at a receive task without a message, Camunda 7's plain
// wait state; its output mapping keeps the signal's variable.
const callXML = c7Header + `<bpmn:process id="call" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="waitForCall"/>
  <bpmn:receiveTask id="waitForCall">
    <bpmn:extensionElements><camunda:inputOutput><camunda:outputParameter name="reply">${answer}</camunda:outputParameter></camunda:inputOutput></bpmn:extensionElements>
  </bpmn:receiveTask>
  <bpmn:sequenceFlow id="f2" sourceRef="waitForCall" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// A client finds the waiting execution with GET /execution and signals
// it, as with Camunda 7's runtimeService.signal; the process instance id
// itself is signalled as well.
func TestSignalExecution(t *testing.T) {
	f := setup(t, camunda7.Options{})
	if r := f.deploy(t, "call.bpmn", callXML); r.status != 200 {
		t.Fatalf("deploy: %d %s", r.status, r.body)
	}
	start := func() string {
		t.Helper()
		var pi map[string]any
		f.call(t, "POST", "/process-definition/key/call/start", map[string]any{}).decode(t, &pi)
		id, _ := pi["id"].(string)
		if _, err := f.eng.WaitUntil(ctxT(t), id, func(v *engine.InstanceView) bool {
			return slices.Equal(v.ActiveNodes, []string{"waitForCall"})
		}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	id := start()
	var execs []map[string]any
	f.call(t, "GET", "/execution?processInstanceId="+id+"&activityId=waitForCall", nil).decode(t, &execs)
	if len(execs) != 1 || execs[0]["id"] != id+":waitForCall" || execs[0]["processInstanceId"] != id || execs[0]["ended"] != false {
		t.Fatalf("executions %v", execs)
	}
	f.call(t, "GET", "/execution?processInstanceId="+id+"&activityId=other", nil).decode(t, &execs)
	if len(execs) != 0 {
		t.Fatalf("executions at another activity %v", execs)
	}
	f.call(t, "GET", "/execution", nil).restErr(t, 400)

	f.call(t, "POST", "/execution/"+id+":elsewhere/signal", map[string]any{}).restErr(t, 400)
	f.call(t, "POST", "/execution/nope:waitForCall/signal", map[string]any{}).restErr(t, 404)
	f.call(t, "POST", "/execution/"+id+":waitForCall/signal", map[string]any{"variables": map[string]any{"answer": map[string]any{"value": 1, "type": "Bogus"}}}).restErr(t, 400)
	r := f.call(t, "POST", "/execution/"+id+":waitForCall/signal", map[string]any{
		"variables": map[string]any{"answer": map[string]any{"value": "yes", "type": "String"}}})
	if r.status != 204 {
		t.Fatalf("signal: %d %s", r.status, r.body)
	}
	if v := f.waitEnded(t, id); v.Status != instance.Completed || v.Variables["reply"] != "yes" {
		t.Fatalf("after the signal: %+v", v)
	}
	f.call(t, "POST", "/execution/"+id+":waitForCall/signal", nil).restErr(t, 400)

	// The process instance's own id names its one waiting execution.
	id = start()
	if r := f.call(t, "POST", "/execution/"+id+"/signal", map[string]any{"variables": map[string]any{"answer": map[string]any{"value": "no"}}}); r.status != 204 {
		t.Fatalf("signal by instance id: %d %s", r.status, r.body)
	}
	if v := f.waitEnded(t, id); v.Variables["reply"] != "no" || !strings.Contains(strings.Join(v.Passed, ","), "e") {
		t.Fatalf("after the signal: %+v", v)
	}
}

// The deploy answer and GET /process-definition show a definition's name,
// resource, deployment and history time to live, as Camunda does; a
// deploy with duplicate filtering that changes nothing deploys no
// definition.
func TestDeploymentFidelity(t *testing.T) {
	f := setup(t, camunda7.Options{})
	xml := strings.Replace(callXML, `<bpmn:process id="call" isExecutable="true">`,
		`<bpmn:process id="call" name="Wait for a call" isExecutable="true" camunda:historyTimeToLive="P30D">`, 1)
	var dep struct {
		ID                         string
		DeployedProcessDefinitions map[string]map[string]any
	}
	f.deploy(t, "call.bpmn", xml).decode(t, &dep)
	pd := dep.DeployedProcessDefinitions["call:1"]
	if pd == nil || pd["name"] != "Wait for a call" || pd["resource"] != "call.bpmn" || pd["deploymentId"] != dep.ID || pd["historyTimeToLive"] != 30.0 {
		t.Fatalf("deployment %s: %v", dep.ID, dep.DeployedProcessDefinitions)
	}

	r := f.deploy(t, "call.bpmn", xml)
	var again map[string]any
	r.decode(t, &again)
	if v, ok := again["deployedProcessDefinitions"]; !ok || v != nil || again["id"] == dep.ID {
		t.Fatalf("unchanged redeploy answered %s, want deployedProcessDefinitions null under a deployment of its own", r.body)
	}

	var defs []map[string]any
	f.call(t, "GET", "/process-definition?key=call", nil).decode(t, &defs)
	if len(defs) != 1 || defs[0]["deploymentId"] != dep.ID || defs[0]["resource"] != "call.bpmn" || defs[0]["name"] != "Wait for a call" || defs[0]["historyTimeToLive"] != 30.0 {
		t.Fatalf("definitions %v, want deployment %s", defs, dep.ID)
	}
}

func TestHistoryDays(t *testing.T) {
	for in, want := range map[string]int{"30": 30, "P30D": 30, "0": 0} {
		if got := camunda7.HistoryDays(in); got == nil || *got != want {
			t.Errorf("historyDays(%q) = %v, want %d", in, got, want)
		}
	}
	for _, in := range []string{"", "P", "PD", "P30", "30D", "-1", "P1M", "${ttl}"} {
		if got := camunda7.HistoryDays(in); got != nil {
			t.Errorf("historyDays(%q) = %d, want null", in, *got)
		}
	}
}
