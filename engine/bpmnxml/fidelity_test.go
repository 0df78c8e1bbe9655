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

// Elements without an id get stable ones; a clash with a written id adds
// a suffix.
func TestMissingIDs(t *testing.T) {
	xml := proc(`<bpmn:startEvent/>
<bpmn:task id="t"/>
<bpmn:task/>
<bpmn:endEvent id="Flow_t_endEvent_1"/>
<bpmn:endEvent/>
<bpmn:sequenceFlow sourceRef="startEvent_1" targetRef="t"/>
<bpmn:sequenceFlow sourceRef="t" targetRef="task_1"/>
<bpmn:sequenceFlow sourceRef="task_1" targetRef="Flow_t_endEvent_1"/>
<bpmn:sequenceFlow id="" sourceRef="t" targetRef="endEvent_1"/>`)
	for range 2 { // the same document, the same ids
		p := mustParse(t, xml)
		var ids []string
		for _, n := range p.Nodes {
			ids = append(ids, n.ID)
		}
		for _, f := range p.Flows {
			ids = append(ids, f.ID)
		}
		want := "startEvent_1 t task_1 Flow_t_endEvent_1 endEvent_1 Flow_startEvent_1_t Flow_t_task_1 Flow_task_1_Flow_t_endEvent_1 Flow_t_endEvent_1_2"
		if got := strings.Join(ids, " "); got != want {
			t.Fatalf("ids %s\nwant %s", got, want)
		}
	}
}

// Zeebe's retries="" is the default; a zeebe:script still needs its
// result variable (Zeebe refuses one without), a Camunda 7 script not.
func TestZeebeRetriesAndScripts(t *testing.T) {
	w := node(t, mustParse(t, around(`<bpmn:serviceTask id="t"><bpmn:extensionElements><zeebe:taskDefinition type="x" retries=""/></bpmn:extensionElements></bpmn:serviceTask>`)), "t").Service.Worker
	if w.Topic != "x" || w.Retries != 0 {
		t.Errorf("worker %+v, want the default retries", w)
	}
	err := parseErr(t, around(`<bpmn:scriptTask id="t"><bpmn:extensionElements><zeebe:script expression="=1"/></bpmn:extensionElements></bpmn:scriptTask>`))
	if !strings.Contains(err.Error(), "a zeebe:script needs a resultVariable") {
		t.Errorf("error %v", err)
	}
	if s := node(t, mustParse(t, around(`<bpmn:scriptTask id="t" scriptFormat="juel"><bpmn:script>${1}</bpmn:script></bpmn:scriptTask>`)), "t").Script; s.ResultVariable != "" || s.Compiled() == nil {
		t.Errorf("script %+v", s)
	}
}
