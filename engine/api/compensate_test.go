package api_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// undoXML books (a task whose handler records the undo), then waits an hour.
const undoXML = header + `<bpmn:process id="undo" isExecutable="true">
  <bpmn:startEvent id="s"/>
  <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="book"/>
  <bpmn:task id="book"/>
  <bpmn:boundaryEvent id="bc" attachedToRef="book"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
  <bpmn:scriptTask id="unbook" isForCompensation="true" scriptFormat="feel" camunda:resultVariable="unbooked"><bpmn:script>true</bpmn:script></bpmn:scriptTask>
  <bpmn:association id="a" sourceRef="bc" targetRef="unbook"/>
  <bpmn:sequenceFlow id="f2" sourceRef="book" targetRef="w"/>
  <bpmn:intermediateCatchEvent id="w"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
  <bpmn:sequenceFlow id="f3" sourceRef="w" targetRef="e"/>
  <bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>
`

// instance.compensate runs the journal's handlers, then the instance is
// terminated; requests that cannot apply are refused with their sentinel.
func TestInstanceCompensate(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := ctxT(t)
	f.deploy(t, api.File{Name: "undo.bpmn", XML: undoXML}, api.File{Name: "wait.bpmn", XML: waitXML})
	plain := f.start(t, api.StartRequest{ProcessID: "wait"})
	f.waitParked(t, plain)
	if _, err := f.client.Compensate(ctx, plain, ""); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("compensate with an empty journal: %v, want ErrInvalid", err)
	}
	id := f.start(t, api.StartRequest{ProcessID: "undo", Vars: json.RawMessage(`{}`)})
	f.waitParked(t, id)
	if _, err := f.client.Compensate(ctx, id, "w"); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("compensate a node without completions: %v, want ErrInvalid", err)
	}
	if _, err := f.client.Compensate(ctx, "nope", ""); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("compensate an unknown instance: %v, want ErrNotFound", err)
	}
	v, err := f.client.Compensate(ctx, id, "book")
	if err != nil || v.ID != id {
		t.Fatalf("compensate: %+v, %v", v, err)
	}
	v = f.waitDone(t, id)
	if v.Status != instance.Terminated || v.Variables["unbooked"] != true {
		t.Fatalf("%+v: want terminated after unbook ran", v)
	}
	if _, err := f.client.Compensate(ctx, id, ""); !errors.Is(err, engine.ErrFinished) {
		t.Fatalf("compensate a terminated instance: %v, want ErrFinished", err)
	}
}
