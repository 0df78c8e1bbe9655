package bpmnxml

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// formOf parses a one-task process and returns its task's form schema,
// decoded.
func formOf(t *testing.T, xml string) map[string]any {
	t.Helper()
	n := node(t, mustParse(t, xml), "t")
	if n.Human == nil || n.Human.Form == "" {
		t.Fatalf("task has no form: %+v", n.Human)
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(n.Human.Form), &schema); err != nil {
		t.Fatalf("form %q: %v", n.Human.Form, err)
	}
	return schema
}

func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// A Camunda 7 generated form becomes a form-js schema: one component a
// field, typed, with its default and constraints.
func TestCamunda7FormData(t *testing.T) {
	got := formOf(t, around(`<bpmn:userTask id="t" camunda:assignee="demo"><bpmn:extensionElements>
  <camunda:formData>
    <camunda:formField id="amount" label="Amount" type="long" defaultValue="10">
      <camunda:validation><camunda:constraint name="required"/><camunda:constraint name="min" config="1"/><camunda:constraint name="max" config="1000"/></camunda:validation>
    </camunda:formField>
    <camunda:formField id="reason" label="Reason" type="string">
      <camunda:properties><camunda:property id="p" value="v"/></camunda:properties>
      <camunda:validation><camunda:constraint name="minlength" config="3"/><camunda:constraint name="maxlength" config="40"/></camunda:validation>
    </camunda:formField>
    <camunda:formField id="approved" label="Approved?" type="boolean" defaultValue="false"/>
    <camunda:formField id="due" label="Pay by" type="date"/>
    <camunda:formField id="currency" type="enum" defaultValue="EUR">
      <camunda:value id="EUR" name="Euro"/><camunda:value id="USD"/>
    </camunda:formField>
    <camunda:formField id="ref" type="string" defaultValue="${order.ref}"><camunda:validation><camunda:constraint name="readonly"/></camunda:validation></camunda:formField>
  </camunda:formData>
</bpmn:extensionElements></bpmn:userTask>`))
	want := decodeJSON(t, `{"type":"default","schemaVersion":19,"components":[
 {"type":"number","id":"Field_amount","key":"amount","label":"Amount","decimalDigits":0,"defaultValue":10,"validate":{"required":true,"min":1,"max":1000}},
 {"type":"textfield","id":"Field_reason","key":"reason","label":"Reason","validate":{"minLength":3,"maxLength":40}},
 {"type":"checkbox","id":"Field_approved","key":"approved","label":"Approved?","defaultValue":false},
 {"type":"datetime","id":"Field_due","key":"due","subtype":"date","dateLabel":"Pay by"},
 {"type":"select","id":"Field_currency","key":"currency","label":"currency","defaultValue":"EUR","values":[{"label":"Euro","value":"EUR"},{"label":"USD","value":"USD"}]},
 {"type":"textfield","id":"Field_ref","key":"ref","label":"ref","readonly":true}]}`)
	if !reflect.DeepEqual(any(got), want) {
		b, _ := json.Marshal(got)
		t.Errorf("schema\n%s\nwant\n%v", b, want)
	}
}

// The zeebe:userTaskForm a formKey names is the task's form, compacted;
// another process's task may name the same form.
func TestZeebeEmbeddedForm(t *testing.T) {
	got := formOf(t, doc(`<bpmn:process id="p" isExecutable="true">
<bpmn:extensionElements><zeebe:userTaskForm id="review">{
  "components": [ {"type": "textfield", "key": "note", "label": "Note", "validate": {"required": true}} ],
  "type": "default"
}</zeebe:userTaskForm></bpmn:extensionElements>
<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
<bpmn:userTask id="t"><bpmn:extensionElements><zeebe:formDefinition formKey="camunda-forms:bpmn:review"/></bpmn:extensionElements></bpmn:userTask>
<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/>
</bpmn:process>`))
	want := decodeJSON(t, `{"components":[{"type":"textfield","key":"note","label":"Note","validate":{"required":true}}],"type":"default"}`)
	if !reflect.DeepEqual(any(got), want) {
		t.Errorf("schema %v, want %v", got, want)
	}
}

// A form that cannot be rendered is a deploy error naming the element and
// what is wrong.
func TestFormRefusals(t *testing.T) {
	zeebe := func(form, key string) string {
		return doc(`<bpmn:process id="p" isExecutable="true">
<bpmn:extensionElements><zeebe:userTaskForm id="f">` + form + `</zeebe:userTaskForm></bpmn:extensionElements>
<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
<bpmn:userTask id="t"><bpmn:extensionElements><zeebe:formDefinition formKey="` + key + `"/></bpmn:extensionElements></bpmn:userTask>
<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/>
</bpmn:process>`)
	}
	c7 := func(fields string) string {
		return around(`<bpmn:userTask id="t"><bpmn:extensionElements><camunda:formData>` + fields + `</camunda:formData></bpmn:extensionElements></bpmn:userTask>`)
	}
	for _, c := range []struct{ xml, want string }{
		{zeebe(`{"components": []}`, "camunda-forms:bpmn:other"), `names zeebe:userTaskForm "other", which this file does not have`},
		{zeebe(`{"components": [}`, "camunda-forms:bpmn:f"), `zeebe:userTaskForm "f" (line 4): not a form's JSON: invalid character`},
		{zeebe(`{"fields": []}`, "camunda-forms:bpmn:f"), `it has no "components" array`},
		{zeebe(`[1]`, "camunda-forms:bpmn:f"), `not a form's JSON`},
		{c7(`<camunda:formField type="string"/>`), `has no id`},
		{c7(`<camunda:formField id="a" type="long" defaultValue="ten"/>`), `field "a": defaultValue "ten": not an integer`},
		{c7(`<camunda:formField id="a" type="boolean" defaultValue="yes"/>`), `want true or false`},
		{c7(`<camunda:formField id="a" type="enum"/>`), `needs camunda:value elements`},
		{c7(`<camunda:formField id="a"/><camunda:formField id="a"/>`), `field "a" appears twice`},
		{c7(`<camunda:formField id="a"><camunda:validation><camunda:constraint name="min" config="x"/></camunda:validation></camunda:formField>`), `constraint min config "x": want a number`},
		{c7(`<camunda:formField id="a"><camunda:validation><camunda:constraint name="maxlength" config="-1"/></camunda:validation></camunda:formField>`), `want a length`},
		{c7(`<camunda:formField id="a"><camunda:validation><camunda:constraint name="validator" config="org.Acme"/></camunda:validation></camunda:formField>`), `runs Java code`},
		{c7(`<camunda:formField id="a"><camunda:validation><camunda:constraint name="email"/></camunda:validation></camunda:formField>`), `constraint "email" is not one of`},
	} {
		err := parseErr(t, c.xml)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %q, want it to contain %q", err, c.want)
		}
	}
}

// A start event's form and a form no task names are not read.
func TestFormsOutsideUserTasks(t *testing.T) {
	p := mustParse(t, doc(`<bpmn:process id="p" isExecutable="true">
<bpmn:extensionElements><zeebe:userTaskForm id="unused">not JSON</zeebe:userTaskForm></bpmn:extensionElements>
<bpmn:startEvent id="s"><bpmn:extensionElements><camunda:formData><camunda:formField id="a" type="long" defaultValue="x"/></camunda:formData></bpmn:extensionElements></bpmn:startEvent>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
<bpmn:userTask id="t"/>
<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/>
</bpmn:process>`))
	if h := node(t, p, "t").Human; h != nil {
		t.Errorf("task human %+v, want none", h)
	}
}
