package bpmnxml

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

func TestMalformedXML(t *testing.T) {
	for _, c := range []struct{ name, src string }{
		{"truncated", proc(`<bpmn:startEvent id="s"/>`)[:len(proc(""))-20]},
		{"mismatched", doc("<bpmn:process id=\"p\">\n<bpmn:task id=\"t\">\n</bpmn:process>")},
		{"garbage", "not xml at all"},
		{"empty", ""},
		{"two roots", doc("") + "<x/>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := parseErr(t, c.src)
			e := importError(t, err)
			if !strings.Contains(e.Msg, "malformed XML") || e.Line < 1 || !strings.HasPrefix(err.Error(), "line ") {
				t.Errorf("got %v", err)
			}
		})
	}
	e := importError(t, parseErr(t, doc("<bpmn:process id=\"p\">\n<bpmn:task id=\"t\">\n</bpmn:process>")))
	if e.Line != 5 {
		t.Errorf("mismatched tag reported at line %d, want 5: %v", e.Line, e)
	}
}

func TestSizeLimit(t *testing.T) {
	big := proc(`<bpmn:startEvent id="s"/>` + "<!--" + strings.Repeat("x", MaxSize) + "-->")
	err := parseErr(t, big)
	if !strings.Contains(err.Error(), "larger than 10 MiB") {
		t.Errorf("got %v", err)
	}
}

func TestNotADefinitionsDocument(t *testing.T) {
	err := parseErr(t, `<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/WRONG"><process id="p"/></definitions>`)
	if !strings.Contains(err.Error(), "not a BPMN 2.0 document") {
		t.Errorf("got %v", err)
	}
	err = parseErr(t, doc(`<bpmn:process id="p" isExecutable="false"><bpmn:userTask id="u"/></bpmn:process>`))
	if e := importError(t, err); !strings.Contains(e.Msg, "no executable process") || e.Line != 2 || e.Element != "bpmn:definitions" {
		t.Errorf("got %v", err)
	}
	if err := parseErr(t, doc(``)); !strings.Contains(err.Error(), "has no <process>") {
		t.Errorf("got %v", err)
	}
	if err := parseErr(t, doc(`<bpmn:process id="p" isExecutable="yes"/>`)); !strings.Contains(err.Error(), `isExecutable="yes" is not a boolean`) {
		t.Errorf("got %v", err)
	}
}

// Elements are matched by namespace, whatever the prefix.
func TestPrefixIndependence(t *testing.T) {
	const body = `<%[1]sprocess id="p"><%[1]sstartEvent id="s"/><%[1]ssequenceFlow id="f" sourceRef="s" targetRef="t"/>
<%[1]sserviceTask id="t" c7:type="external" c7:topic="work"/></%[1]sprocess>`
	for _, prefix := range []string{"", "bpmn2:", "semantic:"} {
		decl := `xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"`
		if prefix != "" {
			decl = `xmlns:` + strings.TrimSuffix(prefix, ":") + `="http://www.omg.org/spec/BPMN/20100524/MODEL"`
		}
		src := `<` + prefix + `definitions ` + decl + ` xmlns:c7="http://camunda.org/schema/1.0/bpmn">` +
			strings.ReplaceAll(body, "%[1]s", prefix) + `</` + prefix + `definitions>`
		p := mustParse(t, src)
		if w := node(t, p, "t").Service.Worker; w == nil || w.Topic != "work" {
			t.Errorf("prefix %q: worker %+v", prefix, w)
		}
		if node(t, p, "t").Extensions["camunda:topic"] != "work" {
			t.Errorf("prefix %q: extensions %v", prefix, node(t, p, "t").Extensions)
		}
	}
	// A bpmn prefix bound to another namespace is not BPMN.
	err := parseErr(t, `<bpmn:definitions xmlns:bpmn="urn:other"><bpmn:process id="p"/></bpmn:definitions>`)
	if !strings.Contains(err.Error(), "not a BPMN 2.0 document") {
		t.Errorf("got %v", err)
	}
}

func TestSeveralProcesses(t *testing.T) {
	one := `<bpmn:process id="%s"%s><bpmn:startEvent id="s"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/><bpmn:endEvent id="e"/></bpmn:process>`
	src := doc(strings.Join([]string{
		strings.Replace(strings.Replace(one, "%s", "a", 1), "%s", ` name="A"`, 1),
		strings.Replace(strings.Replace(one, "%s", "b", 1), "%s", ` isExecutable="true"`, 1),
		strings.Replace(strings.Replace(one, "%s", "c", 1), "%s", ` isExecutable="false"`, 1),
	}, "\n"))
	ps, err := Parse(strings.NewReader(src))
	if err != nil || len(ps) != 2 || ps[0].ID != "a" || ps[0].Name != "A" || ps[1].ID != "b" || !ps[0].Validated() {
		t.Fatalf("got %v, %v", ps, err)
	}
	err = parseErr(t, doc(strings.Replace(strings.Replace(one, "%s", "a", 1), "%s", "", 1)+strings.Replace(strings.Replace(one, "%s", "a", 1), "%s", "", 1)))
	if !strings.Contains(err.Error(), `process id "a" is used twice`) {
		t.Errorf("got %v", err)
	}
}

// Lines are those of the start tag's '<', even when the tag spans lines.
func TestLines(t *testing.T) {
	src := proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
<!-- a comment
spanning lines -->
<bpmn:task
   id="t"
   name="multi-line tag"/><bpmn:sequenceFlow id="f2"
   sourceRef="t" targetRef="e"/>
<bpmn:endEvent id="e"/>`)
	p := mustParse(t, src)
	if n := node(t, p, "t"); n.Line != lineOf(t, src, "<bpmn:task") {
		t.Errorf("task line = %d, want %d", n.Line, lineOf(t, src, "<bpmn:task"))
	}
	if f := p.Flow("f2"); f.Line != lineOf(t, src, `name="multi-line tag"`) {
		t.Errorf("flow line = %d", f.Line)
	}
	if n := node(t, p, "e"); n.Line != lineOf(t, src, `<bpmn:endEvent`) {
		t.Errorf("end line = %d", n.Line)
	}
}

// Validation problems keep their lines and read on one line each.
func TestValidationErrors(t *testing.T) {
	src := proc(`<bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="gw"/>
<bpmn:exclusiveGateway id="gw"/>
<bpmn:sequenceFlow id="f2" sourceRef="nowhere" targetRef="gw"/>`)
	err := parseErr(t, src)
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("no model.Error in %v", err)
	}
	got := err.Error()
	for _, want := range []string{
		`element "gw" (line 6): exclusiveGateway: has no outgoing sequence flow`,
		`element "f2" (line 7): sequence flow connects "nowhere" to "gw"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Count(got, "\n") != 1 {
		t.Errorf("want two one-line errors:\n%s", got)
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.bpmn")
	if err := os.WriteFile(bad, []byte(proc(`<bpmn:businessRuleTask id="u"/>`+"\n"+`<bpmn:sendTask id="v"/>`)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(bad)
	if err == nil {
		t.Fatal("no error")
	}
	for _, l := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(l, bad+": line ") {
			t.Errorf("line %q lacks the file prefix", l)
		}
	}
	if e := importError(t, err); e.ID != "u" {
		t.Errorf("errors.As through the file error: %v", e)
	}
	if _, err := ParseFile(filepath.Join(dir, "missing.bpmn")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestEncodings(t *testing.T) {
	latin1 := []byte(`<?xml version="1.0" encoding="ISO-8859-1"?>` + "\n" + strings.TrimPrefix(
		proc(`<bpmn:startEvent id="s" name="Caf`+"\xe9"+`"/><bpmn:sequenceFlow id="f" sourceRef="s" targetRef="e"/><bpmn:endEvent id="e"/>`),
		`<?xml version="1.0" encoding="UTF-8"?>`+"\n"))
	ps, err := Parse(bytes.NewReader(latin1))
	if err != nil || ps[0].Node("s").Name != "Café" {
		t.Errorf("latin-1: %v %v", ps, err)
	}
	_, err = Parse(strings.NewReader(`<?xml version="1.0" encoding="EBCDIC"?><a/>`))
	if err == nil || !strings.Contains(err.Error(), `"EBCDIC" is not supported`) {
		t.Errorf("EBCDIC: %v", err)
	}
}

func TestDepthLimit(t *testing.T) {
	deep := strings.Repeat(`<bpmn:subProcess id="x">`, maxDepth) + strings.Repeat(`</bpmn:subProcess>`, maxDepth)
	err := parseErr(t, proc(deep))
	if !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("got %v", err)
	}
}

func TestIgnoredElements(t *testing.T) {
	p := mustParse(t, doc(`<bpmn:message id="m" name="M"/><bpmn:signal id="sig"/><bpmn:itemDefinition id="i"/>
<bpmn:process id="p" camunda:historyTimeToLive="P180D">
  <bpmn:documentation>doc</bpmn:documentation>
  <bpmn:extensionElements><zeebe:userTaskForm id="form">{}</zeebe:userTaskForm><camunda:properties><camunda:property name="a" value="b"/></camunda:properties></bpmn:extensionElements>
  <bpmn:laneSet id="ls"><bpmn:lane id="l"><bpmn:flowNodeRef>s</bpmn:flowNodeRef></bpmn:lane></bpmn:laneSet>
  <bpmn:dataObject id="do"/><bpmn:dataObjectReference id="dor" dataObjectRef="do"/>
  <bpmn:startEvent id="s"><bpmn:outgoing>f</bpmn:outgoing></bpmn:startEvent>
  <bpmn:sequenceFlow id="f" sourceRef="s" targetRef="t"/>
  <bpmn:task id="t"><bpmn:documentation>x</bpmn:documentation><bpmn:extensionElements><zeebe:properties><zeebe:property name="a" value="b"/></zeebe:properties><other:thing xmlns:other="urn:x"/></bpmn:extensionElements><bpmn:incoming>f</bpmn:incoming></bpmn:task>
  <bpmn:textAnnotation id="ta"><bpmn:text>note</bpmn:text></bpmn:textAnnotation>
  <bpmn:association id="as" sourceRef="t" targetRef="ta"/>
  <bpmn:group id="g"/>
</bpmn:process>
<bpmndi:BPMNDiagram xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI" id="d"><bpmndi:BPMNPlane id="pl"/></bpmndi:BPMNDiagram>`))
	if len(p.Nodes) != 2 || len(p.Flows) != 1 {
		t.Errorf("nodes %d flows %d", len(p.Nodes), len(p.Flows))
	}
}

func TestElementLimit(t *testing.T) {
	err := parseErr(t, proc(strings.Repeat("<bpmn:documentation/>", maxElements)))
	if !strings.Contains(err.Error(), "more than 200000 elements") {
		t.Errorf("got %v", err)
	}
}
