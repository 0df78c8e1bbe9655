package bpmnxml

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// sagaXML is a saga written as Camunda 7 (camunda:) or Zeebe (zeebe:)
// models it: book and charge, each with a compensation boundary event
// associated with its handler, an error boundary on ship, and a
// compensation end event after it. impl is the service task attributes
// and extension elements of a dialect, %s the task's topic.
func sagaXML(impl func(topic string) (attrs, ext string)) string {
	task := func(id, topic, extra string) string {
		a, x := impl(topic)
		return `<bpmn:serviceTask id="` + id + `" ` + a + extra + `>` + x + `</bpmn:serviceTask>`
	}
	return proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="book"/>
` + task("book", "book", "") + `
<bpmn:sequenceFlow id="f2" sourceRef="book" targetRef="charge"/>
` + task("charge", "charge", "") + `
<bpmn:sequenceFlow id="f3" sourceRef="charge" targetRef="ship"/>
` + task("ship", "ship", "") + `
<bpmn:sequenceFlow id="f4" sourceRef="ship" targetRef="e"/>
<bpmn:endEvent id="e"/>
<bpmn:boundaryEvent id="bookUndo" attachedToRef="book"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
<bpmn:boundaryEvent id="chargeUndo" attachedToRef="charge"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
` + task("unbook", "unbook", ` isForCompensation="true"`) + `
<bpmn:scriptTask id="refund" isForCompensation="true" scriptFormat="feel" camunda:resultVariable="refunded"><bpmn:script>= true</bpmn:script></bpmn:scriptTask>
<bpmn:association id="a1" associationDirection="One" sourceRef="bookUndo" targetRef="unbook"/>
<bpmn:association id="a2" associationDirection="One" sourceRef="chargeUndo" targetRef="refund"/>
<bpmn:boundaryEvent id="shipFailed" attachedToRef="ship"><bpmn:errorEventDefinition/></bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f5" sourceRef="shipFailed" targetRef="undoCharge"/>
<bpmn:intermediateThrowEvent id="undoCharge"><bpmn:compensateEventDefinition activityRef="charge" waitForCompletion="true"/></bpmn:intermediateThrowEvent>
<bpmn:sequenceFlow id="f6" sourceRef="undoCharge" targetRef="undoAll"/>
<bpmn:endEvent id="undoAll"><bpmn:compensateEventDefinition/></bpmn:endEvent>`)
}

func TestCompensationImportsInBothDialects(t *testing.T) {
	dialects := map[string]func(topic string) (string, string){
		"camunda7": func(topic string) (string, string) {
			return `camunda:type="external" camunda:topic="` + topic + `"`, ""
		},
		"zeebe": func(topic string) (string, string) {
			return "", `<bpmn:extensionElements><zeebe:taskDefinition type="` + topic + `"/></bpmn:extensionElements>`
		},
	}
	for name, impl := range dialects {
		t.Run(name, func(t *testing.T) {
			p := mustParse(t, sagaXML(impl))
			for activity, handler := range map[string]string{"book": "unbook", "charge": "refund", "ship": ""} {
				h := p.CompensationHandler(activity)
				if handler == "" && h != nil || handler != "" && (h == nil || h.ID != handler || !h.ForCompensation) {
					t.Errorf("handler of %s = %+v, want %q", activity, h, handler)
				}
			}
			if n := node(t, p, "unbook"); !n.IsExternal() || n.Service.Worker.Topic != "unbook" {
				t.Errorf("unbook = %+v, want an external task on topic unbook", n.Service)
			}
			if n := node(t, p, "undoCharge"); n.Kind != model.IntermediateThrowEvent || n.Event != model.CompensateEvent || n.ActivityRef != "charge" {
				t.Errorf("undoCharge = %+v", n)
			}
			if n := node(t, p, "undoAll"); n.Kind != model.EndEvent || n.Event != model.CompensateEvent || n.ActivityRef != "" {
				t.Errorf("undoAll = %+v", n)
			}
		})
	}
}

// Compensation problems are refused by name and line.
func TestCompensationRefusals(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"boundary without a handler", `<bpmn:boundaryEvent id="u" attachedToRef="t"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>`,
			`is associated with no compensation handler`},
		{"handler with flows", `<bpmn:boundaryEvent id="u" attachedToRef="t"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
<bpmn:task id="h" isForCompensation="true"/><bpmn:association id="a" sourceRef="u" targetRef="h"/>
<bpmn:sequenceFlow id="fx" sourceRef="h" targetRef="e"/>`, "a compensation handler has no incoming or outgoing sequence flows"},
		{"handler nobody uses", `<bpmn:task id="h" isForCompensation="true"/>`, "no compensation boundary event is associated with"},
		{"boundary with a flow", `<bpmn:boundaryEvent id="u" attachedToRef="t"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
<bpmn:task id="h" isForCompensation="true"/><bpmn:association id="a" sourceRef="u" targetRef="h"/>
<bpmn:sequenceFlow id="fx" sourceRef="u" targetRef="e"/>`, "a compensation boundary event has no outgoing sequence flows"},
		{"compensation event sub-process at process level", `<bpmn:subProcess id="evt" triggeredByEvent="true"><bpmn:startEvent id="x"><bpmn:compensateEventDefinition/></bpmn:startEvent>
<bpmn:endEvent id="y"/><bpmn:sequenceFlow id="fy" sourceRef="x" targetRef="y"/></bpmn:subProcess>`, "at process level use compensation boundary events"},
		{"activityRef without a handler", `<bpmn:endEvent id="x"><bpmn:compensateEventDefinition activityRef="t"/></bpmn:endEvent>`,
			`activityRef "t" has no compensation boundary event`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := parseErr(t, around(`<bpmn:task id="t"/>`+"\n"+c.body))
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

// A compensation event sub-process inside a sub-process is its handler.
func TestCompensationEventSubProcessImports(t *testing.T) {
	p := mustParse(t, around(`<bpmn:subProcess id="t">
  <bpmn:startEvent id="ss"/><bpmn:task id="book"/><bpmn:endEvent id="se"/>
  <bpmn:sequenceFlow id="g1" sourceRef="ss" targetRef="book"/><bpmn:sequenceFlow id="g2" sourceRef="book" targetRef="se"/>
  <bpmn:subProcess id="undo" triggeredByEvent="true">
    <bpmn:startEvent id="cs"><bpmn:compensateEventDefinition/></bpmn:startEvent>
    <bpmn:endEvent id="ce"><bpmn:compensateEventDefinition/></bpmn:endEvent>
    <bpmn:sequenceFlow id="g3" sourceRef="cs" targetRef="ce"/>
  </bpmn:subProcess>
</bpmn:subProcess>`))
	if h := p.CompensationHandler("t"); h == nil || h.ID != "undo" {
		t.Fatalf("handler of t = %+v, want the compensation event sub-process", h)
	}
}
