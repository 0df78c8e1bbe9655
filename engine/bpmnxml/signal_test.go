package bpmnxml

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// signalDoc declares signals "go" (a literal), "fe" (a Zeebe FEEL name)
// and "lit" (a FEEL string literal) around process body.
func signalDoc(body string) string {
	return doc(`<bpmn:signal id="go" name="order-go"/>
<bpmn:signal id="fe" name="=&quot;sig-&quot; + kind"/>
<bpmn:signal id="lit" name="=&quot;plain&quot;"/>
<bpmn:process id="p" isExecutable="true">` + "\n" + body + "\n</bpmn:process>")
}

func TestSignalImport(t *testing.T) {
	p := mustParse(t, signalDoc(`<bpmn:startEvent id="s"><bpmn:signalEventDefinition signalRef="go"/></bpmn:startEvent>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="c"/>
<bpmn:intermediateCatchEvent id="c"><bpmn:signalEventDefinition signalRef="fe"/></bpmn:intermediateCatchEvent>
<bpmn:sequenceFlow id="f2" sourceRef="c" targetRef="w"/>
<bpmn:userTask id="w"/>
<bpmn:boundaryEvent id="b" attachedToRef="w" cancelActivity="false"><bpmn:signalEventDefinition signalRef="lit"/></bpmn:boundaryEvent>
<bpmn:sequenceFlow id="f3" sourceRef="b" targetRef="be"/>
<bpmn:endEvent id="be"/>
<bpmn:sequenceFlow id="f4" sourceRef="w" targetRef="t"/>
<bpmn:intermediateThrowEvent id="t"><bpmn:signalEventDefinition signalRef="go"/></bpmn:intermediateThrowEvent>
<bpmn:sequenceFlow id="f5" sourceRef="t" targetRef="e"/>
<bpmn:endEvent id="e"><bpmn:signalEventDefinition signalRef="lit"/></bpmn:endEvent>`))
	for id, want := range map[string]model.Signal{
		"s": {Name: "order-go"}, "c": {NameExpr: `="sig-" + kind`}, "b": {Name: "plain"}, "t": {Name: "order-go"}, "e": {Name: "plain"},
	} {
		n := p.Node(id)
		if n.Event != model.SignalEvent || n.Signal == nil || n.Signal.Name != want.Name || n.Signal.NameExpr != want.NameExpr {
			t.Errorf("%s: event %q signal %+v, want %+v", id, n.Event, n.Signal, want)
		}
	}
	if b := p.Node("b"); b.Interrupting {
		t.Errorf("boundary b: cancelActivity=false must be non-interrupting")
	}
	if got := p.SignalStarts(); len(got) != 1 || got[0].ID != "s" {
		t.Errorf("signal starts %v", got)
	}
}

func TestSignalImportRefusals(t *testing.T) {
	catch := func(def string) string {
		return around(`<bpmn:intermediateCatchEvent id="t">` + def + `</bpmn:intermediateCatchEvent>`)
	}
	cases := []struct{ name, src, marker, msg string }{
		{"no signalRef", catch(`<bpmn:signalEventDefinition/>`), "<bpmn:signalEventDefinition", "a signal event needs signalRef"},
		{"unknown signalRef", catch(`<bpmn:signalEventDefinition signalRef="nope"/>`), "<bpmn:signalEventDefinition", `signalRef "nope" names no <signal>`},
		{"Camunda 7 bad expression name", strings.Replace(catch(`<bpmn:signalEventDefinition signalRef="x"/>`), `<bpmn:process`, `<bpmn:signal id="x" name="${name"/><bpmn:process`, 1),
			`<bpmn:signal id="x"`, `missing closing "}"`},
		{"Camunda 7 variables", strings.Replace(around(`<bpmn:intermediateThrowEvent id="t"><bpmn:signalEventDefinition signalRef="x">
  <bpmn:extensionElements><camunda:in variables="all"/></bpmn:extensionElements></bpmn:signalEventDefinition></bpmn:intermediateThrowEvent>`),
			`<bpmn:process`, `<bpmn:signal id="x" name="n"/><bpmn:process`, 1), "<camunda:in", "camunda:in is not supported on a signal event"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := importError(t, parseErr(t, c.src))
			line := lineOf(t, c.src, c.marker)
			if e.Line != line || !strings.Contains(e.Msg, c.msg) {
				t.Errorf("got %v\nwant line %d: ...%s", e, line, c.msg)
			}
		})
	}
}

func TestSignalStartNameMustBeLiteral(t *testing.T) {
	src := signalDoc(`<bpmn:startEvent id="s"><bpmn:signalEventDefinition signalRef="fe"/></bpmn:startEvent>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="e"/>
<bpmn:endEvent id="e"/>`)
	err := parseErr(t, src)
	if !strings.Contains(err.Error(), "a signal start event's name must be a literal") {
		t.Fatalf("got %v", err)
	}
}
func TestSignalThrowInputsBothDialects(t *testing.T) {
	for _, ext := range []string{`<zeebe:ioMapping><zeebe:input source="=a" target="amount"/></zeebe:ioMapping>`,
		`<camunda:inputOutput><camunda:inputParameter name="amount">${a}</camunda:inputParameter></camunda:inputOutput>`} {
		p := mustParse(t, signalDoc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
<bpmn:intermediateThrowEvent id="t"><bpmn:extensionElements>`+ext+`</bpmn:extensionElements><bpmn:signalEventDefinition signalRef="go"/></bpmn:intermediateThrowEvent>
<bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
<bpmn:endEvent id="e"/>`))
		if len(p.Node("t").Inputs) != 1 {
			t.Errorf("%s: inputs %v", ext, p.Node("t").Inputs)
		}
	}
}
