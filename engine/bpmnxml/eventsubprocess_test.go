package bpmnxml

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

// espDoc is a process with every kind of event sub-process start and the
// escalation events, in a dialect: message is the <message> declaration,
// task the attributes and contents of the service task.
func espDoc(message, task string) string {
	return doc(message + `
<bpmn:error id="err" errorCode="E1"/>
<bpmn:escalation id="esc" escalationCode="LATE"/>
<bpmn:process id="p" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="sub"/>
  <bpmn:subProcess id="sub">
    <bpmn:startEvent id="ss"/>
    <bpmn:sequenceFlow id="f2" sourceRef="ss" targetRef="up"/>
    <bpmn:intermediateThrowEvent id="up"><bpmn:escalationEventDefinition escalationRef="esc"/></bpmn:intermediateThrowEvent>
    <bpmn:sequenceFlow id="f3" sourceRef="up" targetRef="work"/>
    <bpmn:serviceTask id="work" ` + task + `</bpmn:serviceTask>
    <bpmn:sequenceFlow id="f4" sourceRef="work" targetRef="se"/>
    <bpmn:endEvent id="se"/>
    <bpmn:subProcess id="tick" triggeredByEvent="true">
      <bpmn:startEvent id="every" isInterrupting="false"><bpmn:timerEventDefinition><bpmn:timeCycle>R2/PT1M</bpmn:timeCycle></bpmn:timerEventDefinition></bpmn:startEvent>
      <bpmn:sequenceFlow id="f5" sourceRef="every" targetRef="te"/>
      <bpmn:endEvent id="te"/>
    </bpmn:subProcess>
  </bpmn:subProcess>
  <bpmn:boundaryEvent id="late" attachedToRef="sub" cancelActivity="false"><bpmn:escalationEventDefinition escalationRef="esc"/></bpmn:boundaryEvent>
  <bpmn:sequenceFlow id="f6" sourceRef="late" targetRef="le"/>
  <bpmn:endEvent id="le"/>
  <bpmn:sequenceFlow id="f7" sourceRef="sub" targetRef="e"/>
  <bpmn:endEvent id="e"/>
  <bpmn:subProcess id="stop" triggeredByEvent="true">
    <bpmn:startEvent id="cancel"><bpmn:messageEventDefinition messageRef="m"/></bpmn:startEvent>
    <bpmn:sequenceFlow id="f8" sourceRef="cancel" targetRef="stopped"/>
    <bpmn:endEvent id="stopped"/>
  </bpmn:subProcess>
  <bpmn:subProcess id="onError" triggeredByEvent="true">
    <bpmn:startEvent id="caught"><bpmn:errorEventDefinition errorRef="err"/></bpmn:startEvent>
    <bpmn:sequenceFlow id="f9" sourceRef="caught" targetRef="handled"/>
    <bpmn:endEvent id="handled"/>
  </bpmn:subProcess>
  <bpmn:subProcess id="onEscalation" triggeredByEvent="true">
    <bpmn:startEvent id="anyEsc" isInterrupting="false"><bpmn:escalationEventDefinition/></bpmn:startEvent>
    <bpmn:sequenceFlow id="f10" sourceRef="anyEsc" targetRef="escEnd"/>
    <bpmn:endEvent id="escEnd"/>
  </bpmn:subProcess>
</bpmn:process>`)
}

func TestEventSubProcessesBothDialects(t *testing.T) {
	for name, xml := range map[string]string{
		"zeebe": espDoc(`<bpmn:message id="m" name="cancel"><bpmn:extensionElements><zeebe:subscription correlationKey="=orderId"/></bpmn:extensionElements></bpmn:message>`,
			`><bpmn:extensionElements><zeebe:taskDefinition type="w"/></bpmn:extensionElements>`),
		"camunda7": espDoc(`<bpmn:message id="m" name="cancel"/>`, `camunda:type="external" camunda:topic="w">`),
	} {
		t.Run(name, func(t *testing.T) {
			p := mustParse(t, xml)
			for id, want := range map[string]bool{"tick": false, "stop": true, "onError": true, "onEscalation": false} {
				if n := p.Node(id); !n.TriggeredByEvent || n.Interrupting != want {
					t.Errorf("%s: triggered %v interrupting %v, want true %v", id, n.TriggeredByEvent, n.Interrupting, want)
				}
			}
			if n := p.Node("up"); n.Event != model.EscalationEvent || n.Escalation != "LATE" {
				t.Errorf("throw %+v", n)
			}
			if n := p.Node("late"); n.Event != model.EscalationEvent || n.Escalation != "LATE" || n.Interrupting {
				t.Errorf("boundary %+v", n)
			}
			if n := p.Node("anyEsc"); n.Escalation != "" || p.Node("caught").ErrorCode != "E1" {
				t.Errorf("anyEsc %+v, caught %+v", n, p.Node("caught"))
			}
			// A message start of an event sub-process subscribes as a
			// catch does: under the message's key in a Zeebe model.
			wantKey := map[string]string{"zeebe": "=orderId", "camunda7": ""}[name]
			if m := p.Node("cancel").Message; m == nil || m.Name != "cancel" || m.CorrelationKey != wantKey {
				t.Errorf("cancel's message %+v, want key %q", m, wantKey)
			}
			if !slices.Equal(starts(p.EventSubStarts("")), []string{"cancel", "caught", "anyEsc"}) || !slices.Equal(starts(p.EventSubStarts("sub")), []string{"every"}) {
				t.Errorf("starts: process %v, sub %v", starts(p.EventSubStarts("")), starts(p.EventSubStarts("sub")))
			}

			// Run it: the escalation is caught by the boundary on the
			// sub-process (nearer than the process's event sub-process);
			// the job's BPMN error by the error event sub-process.
			p.Version = 1
			env := instance.Env{Process: p, Now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
			s, err := instance.Start("i1", env, map[string]any{"orderId": "o-1"})
			if err != nil {
				t.Fatal(err)
			}
			var waits []string
			for _, w := range s.Waits {
				waits = append(waits, w.Node)
			}
			slices.Sort(waits)
			if !slices.Equal(waits, []string{"cancel", "every", "work"}) {
				t.Fatalf("waits at %v", waits)
			}
			var work *instance.Wait
			for _, w := range s.Waits {
				if w.Node == "work" {
					work = w
				}
			}
			if _, err := instance.Apply(s, env, instance.Event{ID: "x", Kind: instance.JobOutcome, Wait: work.ID,
				Outcome: &jobs.Terminal{Kind: jobs.Errored, ErrorCode: "E1"}}); err != nil {
				t.Fatal(err)
			}
			if s.Status != instance.Completed || len(s.Incidents) != 0 {
				t.Fatalf("status %s, incidents %v", s.Status, s.Incidents)
			}
		})
	}
}

func starts(ns []*model.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

func TestEventSubProcessRefusals(t *testing.T) {
	// An escalation boundary on a task: the model names the rule.
	err := parseErr(t, doc(`<bpmn:escalation id="esc" escalationCode="X"/>`+"\n"+`<bpmn:process id="p" isExecutable="true">
<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/><bpmn:task id="t"/>
<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/><bpmn:endEvent id="e"/>
<bpmn:boundaryEvent id="b" attachedToRef="t"><bpmn:escalationEventDefinition escalationRef="esc"/></bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="e"/></bpmn:process>`))
	if !strings.Contains(err.Error(), `escalation boundary events attach to sub-processes, call activities and user tasks, not to task "t"`) {
		t.Errorf("error %v", err)
	}
}
