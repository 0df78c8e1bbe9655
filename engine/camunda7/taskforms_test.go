package camunda7_test

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/camunda7"
)

// formTaskXML is a user task with a Camunda 7 generated form.
const formTaskXML = c7Header + `<bpmn:process id="approval" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
  <bpmn:userTask id="approve" camunda:formKey="embedded:app:forms/approve.html">
    <bpmn:extensionElements><camunda:formData>
      <camunda:formField id="amount" label="Amount" type="long">
        <camunda:validation><camunda:constraint name="required"/><camunda:constraint name="max" config="1000"/></camunda:validation>
      </camunda:formField>
      <camunda:formField id="approved" type="boolean" defaultValue="false"/>
      <camunda:formField id="comment" type="string" defaultValue="none"/>
    </camunda:formData></bpmn:extensionElements>
  </bpmn:userTask>
  <bpmn:sequenceFlow id="f2" sourceRef="approve" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// TestTaskFormEndpoints: form gives the key; form-variables the fields,
// valued from the instance or their defaults; submit-form refuses values
// the form's constraints refuse (the task stays open) and completes with
// the others.
func TestTaskFormEndpoints(t *testing.T) {
	f := setup(t, camunda7.Options{})
	if r := f.deploy(t, "approval.bpmn", formTaskXML); r.status != 200 {
		t.Fatalf("deploy: %d %s", r.status, r.body)
	}
	var pi struct{ ID string }
	f.call(t, "POST", "/process-definition/key/approval/start", map[string]any{
		"variables": map[string]any{"amount": map[string]any{"value": 1200, "type": "Long"}}}).decode(t, &pi)
	tid := f.oneTask(t, "processInstanceId="+pi.ID)["id"].(string)

	if r := f.call(t, "GET", "/task/"+tid+"/form", nil); r.status != 200 || jsonOf(decodeMap(t, r)) != `{"contextPath":null,"key":"embedded:app:forms/approve.html"}` {
		t.Errorf("form: %d %s", r.status, r.body)
	}
	r := f.call(t, "GET", "/task/"+tid+"/form-variables", nil)
	want := `{"amount":{"type":"Long","value":1200,"valueInfo":{}},"approved":{"type":"Boolean","value":false,"valueInfo":{}},"comment":{"type":"String","value":"none","valueInfo":{}}}`
	if r.status != 200 || jsonOf(decodeMap(t, r)) != want {
		t.Errorf("form-variables: %d %s\nwant %s", r.status, r.body, want)
	}
	if r := f.call(t, "GET", "/task/"+tid+"/form-variables?variableNames=comment", nil); jsonOf(decodeMap(t, r)) != `{"comment":{"type":"String","value":"none","valueInfo":{}}}` {
		t.Errorf("form-variables of comment: %s", r.body)
	}

	e := f.call(t, "POST", "/task/"+tid+"/submit-form", map[string]any{"variables": map[string]any{
		"amount": map[string]any{"value": 1200, "type": "Long"}, "approved": map[string]any{"value": "yes", "type": "String"}}}).restErr(t, 400)
	for _, w := range []string{`field "amount" (Amount): 1200 is over the maximum 1000`, `field "approved": yes is not true or false`} {
		if !strings.Contains(e["message"].(string), w) {
			t.Errorf("submit-form refusal %q, want it to say %q", e["message"], w)
		}
	}
	f.call(t, "POST", "/task/"+tid+"/submit-form", map[string]any{"variables": map[string]any{}}).restErr(t, 400) // amount is required
	if tk := f.oneTask(t, "processInstanceId="+pi.ID); tk["id"] != tid {
		t.Fatalf("the task after refused submits: %v", tk)
	}
	if r := f.call(t, "POST", "/task/"+tid+"/submit-form", map[string]any{"variables": map[string]any{
		"amount": map[string]any{"value": 900, "type": "Long"}, "approved": map[string]any{"value": true, "type": "Boolean"}}}); r.status != 204 {
		t.Fatalf("submit-form: %d %s", r.status, r.body)
	}
	v := f.waitEnded(t, pi.ID)
	if v.Variables["amount"] != int64(900) || v.Variables["approved"] != true {
		t.Fatalf("variables %v", v.Variables)
	}
	for _, path := range []string{"/task/nope/form", "/task/nope/form-variables"} {
		f.call(t, "GET", path, nil).restErr(t, 404)
	}
	f.call(t, "POST", "/task/nope/submit-form", map[string]any{}).restErr(t, 404)
}

func decodeMap(t *testing.T, r response) map[string]any {
	t.Helper()
	var m map[string]any
	r.decode(t, &m)
	return m
}
