package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/api"
)

// formXML is a Camunda 7 user task with a generated form of one field.
func formXML(field string) string {
	return header + `<bpmn:process id="form" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="fill"/>
  <bpmn:userTask id="fill"><bpmn:extensionElements><camunda:formData>
    <camunda:formField id="` + field + `" type="long"><camunda:validation><camunda:constraint name="required"/></camunda:validation></camunda:formField>
  </camunda:formData></bpmn:extensionElements></bpmn:userTask>
  <bpmn:sequenceFlow id="f2" sourceRef="fill" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`
}

// formKeys returns the keys of a schema's components.
func formKeys(t *testing.T, schema json.RawMessage) string {
	t.Helper()
	var s struct {
		Components []struct {
			Key  string `json:"key"`
			Type string `json:"type"`
		} `json:"components"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatalf("schema %s: %v", schema, err)
	}
	var keys []string
	for _, c := range s.Components {
		keys = append(keys, c.Type+":"+c.Key)
	}
	return strings.Join(keys, ",")
}

// TestTaskForm: a task's form is its own version's, even after a
// redeploy; a task whose form is not in the file, and an unknown task,
// are not_found saying why.
func TestTaskForm(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	f.deploy(t, api.File{Name: "form.bpmn", XML: formXML("amount")}, api.File{Name: "review.bpmn", XML: reviewXML})
	taskOf := func(process, id string) string {
		f.start(t, api.StartRequest{ProcessID: process, ID: id, Vars: json.RawMessage(`{"amount": 1, "prio": 50}`)})
		return f.onlyTask(t, id)
	}
	old := taskOf("form", "f-1")
	f.deploy(t, api.File{Name: "form.bpmn", XML: formXML("note")})
	newer := taskOf("form", "f-2")
	for task, want := range map[string]string{old: "number:amount", newer: "number:note"} {
		got, err := f.client.TaskForm(ctx, task)
		if err != nil {
			t.Fatalf("form of %s: %v", task, err)
		}
		if got.TaskID != task || formKeys(t, got.Schema) != want {
			t.Errorf("form of %s: %s %s, want %s", task, got.TaskID, got.Schema, want)
		}
	}

	review := taskOf("review", "r-1")
	for task, want := range map[string]bool{old: true, review: false} {
		if rec, err := f.client.Task(ctx, task); err != nil || rec.FormEmbedded != want {
			t.Errorf("task %s: formEmbedded %v (%v), want %v", task, rec != nil && rec.FormEmbedded, err, want)
		}
	}
	for _, c := range []struct{ task, code, msg string }{
		{review, "not_found", `its formKey "approve-form" names a form outside the BPMN file`},
		{"r-9.approve.1", "not_found", "not found"},
		{"nonsense", "not_found", "not found"},
	} {
		_, err := f.client.TaskForm(ctx, c.task)
		if code(err) != c.code || !strings.Contains(fmt.Sprint(err), c.msg) {
			t.Errorf("form of %s: %v, want %s with %q", c.task, err, c.code, c.msg)
		}
	}
	if _, e := rawReply(t, f.nc, api.OpTaskForm, fmt.Appendf(nil, `{"id": %q, "user": "alice"}`, old)); e == nil || e.Code != "invalid" {
		t.Errorf("form with a user: %v, want invalid", e)
	}
}
