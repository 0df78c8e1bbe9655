package bpmnxml

import (
	"strings"
	"testing"
)

func TestLoopImport(t *testing.T) {
	n := mustParse(t, around(`<bpmn:task id="t"><bpmn:multiInstanceLoopCharacteristics isSequential="true">
  <bpmn:loopCardinality>${count}</bpmn:loopCardinality>
  <bpmn:completionCondition>${nrOfCompletedInstances >= 2}</bpmn:completionCondition>
</bpmn:multiInstanceLoopCharacteristics></bpmn:task>`)).Node("t")
	if l := n.Loop; l == nil || !l.Sequential || l.Cardinality != "${count}" || l.CompletionCondition != "${nrOfCompletedInstances >= 2}" {
		t.Fatalf("%+v", n.Loop)
	}
	n = mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="w"/></bpmn:extensionElements>
<bpmn:multiInstanceLoopCharacteristics><bpmn:extensionElements>
  <zeebe:loopCharacteristics inputCollection="= items" inputElement="item" outputCollection="results" outputElement="= result"/>
</bpmn:extensionElements></bpmn:multiInstanceLoopCharacteristics></bpmn:serviceTask>`)).Node("t")
	if l := n.Loop; l == nil || l.Sequential || l.Collection != "= items" || l.OutputCollection != "results" || l.OutputElement != "= result" {
		t.Fatalf("%+v", n.Loop)
	}
	for _, tc := range []struct{ xml, want string }{
		{`<bpmn:task id="t"><bpmn:multiInstanceLoopCharacteristics/></bpmn:task>`, "needs either a collection or a cardinality"},
		{`<bpmn:task id="t"><bpmn:multiInstanceLoopCharacteristics><bpmn:loopDataInputRef>x</bpmn:loopDataInputRef></bpmn:multiInstanceLoopCharacteristics></bpmn:task>`, "data-item multi-instance is not supported"},
		{`<bpmn:task id="t"><bpmn:multiInstanceLoopCharacteristics isSequential="maybe" camunda:collection="xs"/></bpmn:task>`, "isSequential"},
	} {
		if err := parseErr(t, around(tc.xml)); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.xml, err)
		}
	}
}
