package bpmnxml

import (
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// espSignalDoc is a process with an interrupting signal event sub-process
// at process level and a non-interrupting one inside an embedded
// sub-process, in a dialect: stop is the name of signal "stop", task the
// attributes and contents of the service task.
func espSignalDoc(stop, task string) string {
	return doc(`<bpmn:signal id="stopSig" name="` + stop + `"/>
<bpmn:signal id="pingSig" name="ping"/>
<bpmn:process id="p" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="sub"/>
  <bpmn:subProcess id="sub">
    <bpmn:startEvent id="ss"/>
    <bpmn:sequenceFlow id="f2" sourceRef="ss" targetRef="work"/>
    <bpmn:serviceTask id="work" ` + task + `</bpmn:serviceTask>
    <bpmn:sequenceFlow id="f3" sourceRef="work" targetRef="se"/>
    <bpmn:endEvent id="se"/>
    <bpmn:subProcess id="pinged" triggeredByEvent="true">
      <bpmn:startEvent id="ping" isInterrupting="false"><bpmn:signalEventDefinition signalRef="pingSig"/></bpmn:startEvent>
      <bpmn:sequenceFlow id="f4" sourceRef="ping" targetRef="pe"/>
      <bpmn:endEvent id="pe"/>
    </bpmn:subProcess>
  </bpmn:subProcess>
  <bpmn:sequenceFlow id="f5" sourceRef="sub" targetRef="e"/>
  <bpmn:endEvent id="e"/>
  <bpmn:subProcess id="stopped" triggeredByEvent="true">
    <bpmn:startEvent id="stop"><bpmn:signalEventDefinition signalRef="stopSig"/></bpmn:startEvent>
    <bpmn:sequenceFlow id="f6" sourceRef="stop" targetRef="stopEnd"/>
    <bpmn:endEvent id="stopEnd"/>
  </bpmn:subProcess>
</bpmn:process>`)
}

func TestSignalEventSubProcessesBothDialects(t *testing.T) {
	for name, tc := range map[string]struct {
		xml  string
		stop model.Signal
	}{
		"zeebe": {espSignalDoc(`=&quot;stop-&quot; + orderId`, `><bpmn:extensionElements><zeebe:taskDefinition type="w"/></bpmn:extensionElements>`),
			model.Signal{NameExpr: `="stop-" + orderId`}},
		"camunda7": {espSignalDoc("stop", `camunda:type="external" camunda:topic="w">`), model.Signal{Name: "stop"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := mustParse(t, tc.xml)
			for id, want := range map[string]bool{"stopped": true, "pinged": false} {
				if n := p.Node(id); !n.TriggeredByEvent || n.Interrupting != want {
					t.Errorf("%s: triggered %v interrupting %v, want true %v", id, n.TriggeredByEvent, n.Interrupting, want)
				}
			}
			if n := p.Node("stop"); n.Event != model.SignalEvent || n.Signal == nil || n.Signal.Name != tc.stop.Name || n.Signal.NameExpr != tc.stop.NameExpr {
				t.Errorf("stop: event %q signal %+v, want %+v", n.Event, n.Signal, tc.stop)
			}
			if n := p.Node("ping"); n.Event != model.SignalEvent || n.Signal == nil || n.Signal.Name != "ping" {
				t.Errorf("ping: event %q signal %+v", n.Event, n.Signal)
			}
			if got := p.EventSubStarts(""); len(got) != 1 || got[0].ID != "stop" {
				t.Errorf("process-level event sub-process starts %v, want stop", got)
			}
			if got := p.EventSubStarts("sub"); len(got) != 1 || got[0].ID != "ping" {
				t.Errorf("sub's event sub-process starts %v, want ping", got)
			}
			if got := p.SignalStarts(); len(got) != 0 {
				t.Errorf("SignalStarts %v: an event sub-process's start is not a process start", got)
			}
		})
	}
}
