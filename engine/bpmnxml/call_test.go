package bpmnxml

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

func TestCallActivityImport(t *testing.T) {
	for _, tc := range []struct {
		name, xml string
		want      model.Call
		inputs    int
		outputs   int
	}{
		{"plain BPMN: everything crosses", `<bpmn:callActivity id="t" calledElement="child"/>`,
			model.Call{ProcessID: "child"}, 0, 0},
		{"Zeebe without child variables", `<bpmn:callActivity id="t"><bpmn:extensionElements>
			<zeebe:calledElement processId="child" propagateAllChildVariables="false"/></bpmn:extensionElements></bpmn:callActivity>`,
			model.Call{ProcessID: "child", NoOutputPropagation: true}, 0, 0},
		{"Camunda in/out", `<bpmn:callActivity id="t" calledElement="child"><bpmn:extensionElements>
			<camunda:in source="a" target="b"/><camunda:in sourceExpression="${a + 1}" target="c"/>
			<camunda:out source="r" target="result"/></bpmn:extensionElements></bpmn:callActivity>`,
			model.Call{ProcessID: "child", NoInputPropagation: true, NoOutputPropagation: true}, 2, 1},
		{"Camunda all variables, pinned version", `<bpmn:callActivity id="t" calledElement="child" camunda:calledElementBinding="version" camunda:calledElementVersion="3"><bpmn:extensionElements>
			<camunda:in variables="all"/><camunda:out variables="all"/></bpmn:extensionElements></bpmn:callActivity>`,
			model.Call{ProcessID: "child", Version: 3}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := mustParse(t, around(tc.xml)).Node("t")
			if n.Kind != model.CallActivity || n.Call == nil || *n.Call != tc.want || len(n.Inputs) != tc.inputs || len(n.Outputs) != tc.outputs {
				t.Fatalf("%+v call %+v inputs %v outputs %v", n, n.Call, n.Inputs, n.Outputs)
			}
		})
	}
}

func TestCallActivityRefusals(t *testing.T) {
	for _, tc := range []struct{ xml, want string }{
		{`<bpmn:callActivity id="t"/>`, "names no called process"},
		{`<bpmn:callActivity id="t"><bpmn:extensionElements><zeebe:calledElement processId="= name"/></bpmn:extensionElements></bpmn:callActivity>`, "chosen by an expression"},
		{`<bpmn:callActivity id="t" calledElement="c" camunda:calledElementBinding="deployment"/>`, `calledElementBinding="deployment"`},
		{`<bpmn:callActivity id="t" calledElement="c" camunda:calledElementBinding="version"/>`, "calledElementVersion"},
		{`<bpmn:callActivity id="t" calledElement="c"><bpmn:extensionElements><camunda:in target="x"/></bpmn:extensionElements></bpmn:callActivity>`, "needs source"},
		{`<bpmn:serviceTask id="t" jetbpm:operation="op"><bpmn:extensionElements><camunda:in source="a" target="b"/></bpmn:extensionElements></bpmn:serviceTask>`, "call activities only"},
	} {
		if err := parseErr(t, around(tc.xml)); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.xml, err, tc.want)
		}
	}
}
