package bpmnxml

import (
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// inclusive is a fork/join pair of inclusive gateways with conditions
// cond1, cond2 and a default flow, written as each dialect does.
func inclusive(cond1, cond2 string) string {
	return proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f0" sourceRef="s" targetRef="fork"/>
<bpmn:inclusiveGateway id="fork" default="toC"/>
<bpmn:sequenceFlow id="toA" sourceRef="fork" targetRef="a">
  <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">` + cond1 + `</bpmn:conditionExpression>
</bpmn:sequenceFlow>
<bpmn:sequenceFlow id="toB" sourceRef="fork" targetRef="b">
  <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">` + cond2 + `</bpmn:conditionExpression>
</bpmn:sequenceFlow>
<bpmn:sequenceFlow id="toC" sourceRef="fork" targetRef="c"/>
<bpmn:task id="a"/><bpmn:task id="b"/><bpmn:task id="c"/>
<bpmn:sequenceFlow id="fa" sourceRef="a" targetRef="join"/>
<bpmn:sequenceFlow id="fb" sourceRef="b" targetRef="join"/>
<bpmn:sequenceFlow id="fc" sourceRef="c" targetRef="join"/>
<bpmn:inclusiveGateway id="join"/>
<bpmn:sequenceFlow id="f9" sourceRef="join" targetRef="e"/>
<bpmn:endEvent id="e"/>`)
}

func TestInclusiveGatewayImport(t *testing.T) {
	for _, tt := range []struct {
		dialect, cond1, cond2 string
	}{
		{"zeebe", "=amount &gt; 100", `=kind = "gold"`},
		{"camunda7", "${amount &gt; 100}", "${kind == 'gold'}"},
	} {
		t.Run(tt.dialect, func(t *testing.T) {
			p := mustParse(t, inclusive(tt.cond1, tt.cond2))
			for _, id := range []string{"fork", "join"} {
				if n := node(t, p, id); n.Kind != model.InclusiveGateway {
					t.Errorf("%s: %s, want an inclusive gateway", id, n.Kind)
				}
			}
			if d := node(t, p, "fork").Default; d != "toC" {
				t.Errorf("default %q", d)
			}
			want := strings.NewReplacer("&gt;", ">").Replace(tt.cond1)
			if c := p.Flow("toA").Condition; c != want || p.Flow("toA").Compiled() == nil {
				t.Errorf("condition %q, want %q compiled", c, want)
			}
			if !p.IsInclusiveJoin("join") || p.IsInclusiveJoin("fork") {
				t.Error("join should join, fork should not")
			}
			if !p.Reaches("a", "join") || p.Reaches("e", "join") {
				t.Error("reach sets not built")
			}
		})
	}
}

// links are throw/catch pairs of linkEventDefinition by name, in both
// dialects (their XML is the same).
func TestLinkImport(t *testing.T) {
	p := mustParse(t, proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="jump"/>
<bpmn:intermediateThrowEvent id="jump" name="to B">
  <bpmn:linkEventDefinition id="l1" name="B"><bpmn:target>l2</bpmn:target></bpmn:linkEventDefinition>
</bpmn:intermediateThrowEvent>
<bpmn:intermediateCatchEvent id="land" name="B">
  <bpmn:linkEventDefinition id="l2" name="B"><bpmn:source>l1</bpmn:source></bpmn:linkEventDefinition>
</bpmn:intermediateCatchEvent>
<bpmn:sequenceFlow id="f2" sourceRef="land" targetRef="e"/>
<bpmn:endEvent id="e"/>`))
	throw, catch := node(t, p, "jump"), node(t, p, "land")
	if throw.Kind != model.IntermediateThrowEvent || throw.Event != model.LinkEvent || throw.Link != "B" {
		t.Errorf("throw %+v", throw)
	}
	if catch.Kind != model.IntermediateCatchEvent || catch.Event != model.LinkEvent || catch.Link != "B" {
		t.Errorf("catch %+v", catch)
	}
	if got := p.LinkTarget("jump"); got != catch {
		t.Errorf("LinkTarget(jump) = %v", got)
	}
}

func TestLinkImportRefusals(t *testing.T) {
	for _, tt := range []struct {
		name, src, marker, msg string
	}{
		{"throw without catch", around(`<bpmn:intermediateThrowEvent id="t">
  <bpmn:linkEventDefinition name="nowhere"/></bpmn:intermediateThrowEvent>`),
			`<bpmn:intermediateThrowEvent id="t"`, `link "nowhere" has no link catch event in the same scope`},
		{"no name", proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"/>
<bpmn:intermediateThrowEvent id="t">
  <bpmn:linkEventDefinition/></bpmn:intermediateThrowEvent>`),
			"<bpmn:linkEventDefinition", "a link event needs a name"},
		{"flow into a catch", around(`<bpmn:intermediateCatchEvent id="t">
  <bpmn:linkEventDefinition name="x"/></bpmn:intermediateCatchEvent>`),
			`<bpmn:intermediateCatchEvent id="t"`, "reached by its link throw events only"},
		{"unknown child", proc(`<bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"/>
<bpmn:intermediateThrowEvent id="t">
  <bpmn:linkEventDefinition name="x">
    <bpmn:condition/></bpmn:linkEventDefinition></bpmn:intermediateThrowEvent>`),
			"<bpmn:condition", "not supported inside a linkEventDefinition"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := parseErr(t, tt.src)
			if !hasProblem(err, lineOf(t, tt.src, tt.marker), tt.msg) {
				t.Errorf("got %v\nwant line %d: ...%s", err, lineOf(t, tt.src, tt.marker), tt.msg)
			}
		})
	}
}

// A none intermediate throw event takes input and output mappings in
// both dialects (a milestone).
func TestMilestoneImport(t *testing.T) {
	for _, tt := range []struct {
		dialect, ext string
	}{
		{"zeebe", `<zeebe:ioMapping><zeebe:input source="=&quot;shipped&quot;" target="step"/><zeebe:output source="=step" target="milestone"/></zeebe:ioMapping>`},
		{"camunda7", `<camunda:inputOutput><camunda:inputParameter name="step">shipped</camunda:inputParameter><camunda:outputParameter name="milestone">${step}</camunda:outputParameter></camunda:inputOutput>`},
	} {
		t.Run(tt.dialect, func(t *testing.T) {
			p := mustParse(t, around(`<bpmn:intermediateThrowEvent id="t"><bpmn:extensionElements>`+tt.ext+`</bpmn:extensionElements></bpmn:intermediateThrowEvent>`))
			n := node(t, p, "t")
			if len(n.Inputs) != 1 || n.Inputs[0].Target != "step" || len(n.Outputs) != 1 || n.Outputs[0].Target != "milestone" {
				t.Errorf("mappings: inputs %+v outputs %+v", n.Inputs, n.Outputs)
			}
		})
	}
}

// hasProblem reports whether err holds a problem at line whose message
// contains msg.
func hasProblem(err error, line int, msg string) bool {
	for _, e := range flatten(err) {
		switch e := e.(type) {
		case *Error:
			if e.Line == line && strings.Contains(e.Msg, msg) {
				return true
			}
		case *model.Error:
			if e.Line == line && strings.Contains(e.Msg, msg) {
				return true
			}
		}
	}
	return false
}
