package bpmnxml

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

// conditionalDoc has the three conditional events of Camunda 7: a catch,
// a non-interrupting boundary with both filters and an interrupting event
// sub-process start. platform is the modeler's executionPlatform.
func conditionalDoc(platform string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" xmlns:modeler="http://camunda.org/schema/modeler/1.0" modeler:executionPlatform="` + platform + `" id="defs">
<bpmn:process id="p" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="ready"/>
  <bpmn:intermediateCatchEvent id="ready">
    <bpmn:conditionalEventDefinition>
      <bpmn:condition xsi:type="bpmn:tFormalExpression" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">${processorAvailable == true}</bpmn:condition>
    </bpmn:conditionalEventDefinition>
  </bpmn:intermediateCatchEvent>
  <bpmn:sequenceFlow id="f2" sourceRef="ready" targetRef="t"/>
  <bpmn:userTask id="t"/>
  <bpmn:sequenceFlow id="f3" sourceRef="t" targetRef="e"/>
  <bpmn:endEvent id="e"/>
  <bpmn:boundaryEvent id="changed" attachedToRef="t" cancelActivity="false">
    <bpmn:conditionalEventDefinition camunda:variableName="isChanged" camunda:variableEvents="create, update">
      <bpmn:condition>${isChanged}</bpmn:condition>
    </bpmn:conditionalEventDefinition>
  </bpmn:boundaryEvent>
  <bpmn:sequenceFlow id="f4" sourceRef="changed" targetRef="ce"/>
  <bpmn:endEvent id="ce"/>
  <bpmn:subProcess id="cancelled" triggeredByEvent="true">
    <bpmn:startEvent id="cancel">
      <bpmn:conditionalEventDefinition><bpmn:condition>${cancel == true}</bpmn:condition></bpmn:conditionalEventDefinition>
    </bpmn:startEvent>
    <bpmn:sequenceFlow id="f5" sourceRef="cancel" targetRef="cancelEnd"/>
    <bpmn:endEvent id="cancelEnd"/>
  </bpmn:subProcess>
</bpmn:process>
</bpmn:definitions>`
}

func TestConditionalEventsImport(t *testing.T) {
	p := mustParse(t, conditionalDoc("Camunda Platform"))
	ready := p.Node("ready")
	if ready.Event != model.ConditionalEvent || ready.Conditional.Expression != "${processorAvailable == true}" {
		t.Errorf("catch %+v %+v", ready, ready.Conditional)
	}
	c := p.Node("changed").Conditional
	if p.Node("changed").Interrupting || c.VariableName != "isChanged" || !slices.Equal(c.VariableEvents, []string{"create", "update"}) {
		t.Errorf("boundary %+v", c)
	}
	if p.Node("cancel").Event != model.ConditionalEvent || !p.Node("cancelled").Interrupting {
		t.Errorf("event sub-process start %+v", p.Node("cancel"))
	}

	// The imported process runs: the event sub-process cancels the
	// instance while the catch waits.
	p.Version = 1
	env := instance.Env{Process: p, Now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	s, err := instance.Start("i1", env, map[string]any{"processorAvailable": false})
	if err != nil {
		t.Fatal(err)
	}
	if nodes, _ := waitsOf(s, instance.ConditionalWait); !slices.Equal(nodes, []string{"cancel", "ready"}) && !slices.Equal(nodes, []string{"ready", "cancel"}) {
		t.Fatalf("conditional waits at %v", nodes)
	}
}

// A conditional event's condition in JavaScript keeps its filters.
func TestJavaScriptConditionalEventImport(t *testing.T) {
	doc := strings.Replace(conditionalDoc("Camunda Platform"), `<bpmn:condition>${isChanged}</bpmn:condition>`,
		`<bpmn:condition language="javascript">isChanged === true</bpmn:condition>`, 1)
	c := mustParse(t, doc).Node("changed").Conditional
	if c.Language != "javascript" || c.Expression != "isChanged === true" || c.Program() == nil || c.VariableName != "isChanged" {
		t.Errorf("condition %+v", c)
	}
}

// The Zeebe dialect has no conditional events, and a process-level
// conditional start event is refused in Camunda 7's.
func TestCamundaDuration(t *testing.T) {
	for in, want := range map[string]string{
		"R10/PT5S": "PT5S", "R/PT1M": "PT1M", "PT5S": "PT5S",
		"R3/2026-01-01T00:00:00Z/PT1H": "R3/2026-01-01T00:00:00Z/PT1H", "Rx/PT5S": "Rx/PT5S", "R2/5S": "R2/5S",
	} {
		if got := camundaDuration(in); got != want {
			t.Errorf("camundaDuration(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConditionalEventRefusals(t *testing.T) {
	err := parseErr(t, conditionalDoc("Camunda Cloud"))
	if want := `line 7: <bpmn:intermediateCatchEvent id="ready">: bpmn:conditionalEventDefinition: conditional events are not supported in the Zeebe dialect`; !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant %s", err, want)
	}
	err = parseErr(t, proc(`<bpmn:startEvent id="s"><bpmn:conditionalEventDefinition><bpmn:condition>${go}</bpmn:condition></bpmn:conditionalEventDefinition></bpmn:startEvent>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="e"/>
<bpmn:endEvent id="e"/>`))
	if !strings.Contains(err.Error(), "process-level conditional start events are not supported (Camunda 7 starts them through an API call)") {
		t.Errorf("got %v", err)
	}
}

// order.bpmn (Camunda 7 external task client): the worker's date makes
// the conditional boundary of the sub-process hold as the invoice job
// completes, so the instance leaves by the boundary to "Store invoice".
// (The test makes "Store invoice", a plain task, a user task, so that the
// instance stops there and shows the path it took.)
func TestCorpusConditionalBoundaryRuns(t *testing.T) {
	ps, err := ParseFile(filepath.Join(corpus, "camunda7-external-task-client-js/order.bpmn"))
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	p.Node("Task_1yjkccw").Kind = model.UserTask
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	p.Version = 1
	env := instance.Env{Process: p, Now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	s, err := instance.StartFrom("i1", env, nil, instance.Begin{Node: "StartEvent_1"})
	if err != nil {
		t.Fatal(err)
	}
	_, waits := waitsOf(s, instance.JobWait)
	if len(waits) != 1 || waits[0].Node != "Task_06z99p1" {
		t.Fatalf("jobs %v", waits)
	}
	step(t, s, env, instance.Event{ID: "done", Kind: instance.JobOutcome, Wait: waits[0].ID,
		Outcome: &jobs.Terminal{Kind: jobs.Done, Output: map[string]any{"date": "2026-03-01"}}})
	nodes, tasks := waitsOf(s, instance.UserTaskWait)
	if !slices.Equal(nodes, []string{"Task_1yjkccw"}) || !slices.Equal(s.ActiveNodes(), []string{"Task_1yjkccw"}) {
		t.Fatalf("waits at %v, active %v: want Store invoice only", nodes, s.ActiveNodes())
	}
	step(t, s, env, instance.Event{ID: "c1", Kind: instance.UserTaskCommand,
		Task: &instance.TaskCommand{Task: tasks[0].Task.ID, Op: instance.TaskComplete}})
	if s.Status != instance.Completed {
		t.Fatalf("status %s, active %v", s.Status, s.ActiveNodes())
	}
}
