package bpmnxml

import (
	"strings"
	"testing"
)

// These tests cover Camunda models jetbpm once imported wrongly or refused
// although Camunda 7 or Zeebe runs them (docs/deviations.md).

// A topic with an expression in it is kept as an expression, evaluated per
// job; a literal or FEEL-constant topic stays a topic.
func TestTopicExpressions(t *testing.T) {
	for _, tc := range []struct {
		name, task  string
		topic, expr string
	}{
		{"camunda7 expression", `<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="${topicName}"/>`, "", "${topicName}"},
		{"camunda7 literal", `<bpmn:serviceTask id="t" camunda:type="external" camunda:topic=" billing "/>`, "billing", ""},
		{"zeebe expression", `<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="=region + &quot;-x&quot;"/></bpmn:extensionElements></bpmn:serviceTask>`, "", `=region + "-x"`},
		{"zeebe constant", `<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="=&quot;billing&quot;"/></bpmn:extensionElements></bpmn:serviceTask>`, "billing", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := node(t, mustParse(t, around(tc.task)), "t").Service.Worker
			if w.Topic != tc.topic || w.TopicExpr != tc.expr {
				t.Fatalf("topic %q expr %q, want %q %q", w.Topic, w.TopicExpr, tc.topic, tc.expr)
			}
			if (w.TopicCompiled() != nil) != (tc.expr != "") {
				t.Fatalf("compiled %v, want an expression only for %q", w.TopicCompiled(), tc.expr)
			}
		})
	}
	// A topic expression that does not compile is a deploy error.
	err := parseErr(t, around(`<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="${a +}"/>`))
	if !strings.Contains(err.Error(), `element "t" (line 6): serviceTask: topic: expression "${a +}"`) {
		t.Errorf("error %v", err)
	}
}
