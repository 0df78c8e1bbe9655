package layout

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"

	"github.com/jetbpm/jetbpm/engine/model"
)

// Document returns a BPMN 2.0 document of p with diagram interchange laid
// out as the package describes. p need not be validated.
func Document(p *model.Process) []byte {
	d := place(p)
	w := &writer{}
	w.line(0, `<?xml version="1.0" encoding="UTF-8"?>`)
	w.line(0, `<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:bpmndi="http://www.omg.org/spec/BPMN/20100524/DI"`+
		` xmlns:dc="http://www.omg.org/spec/DD/20100524/DC" xmlns:di="http://www.omg.org/spec/DD/20100524/DI" id="%s" targetNamespace="https://jetbpm.dev/layout">`,
		attr(p.ID+"_definitions"))
	w.line(1, `<bpmn:process id="%s"%s isExecutable="true">`, attr(p.ID), nameAttr(p.Name))
	w.elements(d, "", 2)
	w.line(1, `</bpmn:process>`)
	w.line(1, `<bpmndi:BPMNDiagram id="%s">`, attr(p.ID+"_diagram"))
	w.line(2, `<bpmndi:BPMNPlane id="%s" bpmnElement="%s">`, attr(p.ID+"_plane"), attr(p.ID))
	for _, n := range p.Nodes {
		b, ok := d.boxes[n.ID]
		if !ok {
			continue
		}
		expanded := ""
		if n.Kind == model.SubProcess {
			expanded = ` isExpanded="true"`
		}
		w.line(3, `<bpmndi:BPMNShape id="%s" bpmnElement="%s"%s><dc:Bounds x="%s" y="%s" width="%s" height="%s"/></bpmndi:BPMNShape>`,
			attr(n.ID+"_di"), attr(n.ID), expanded, num(b.x), num(b.y), num(b.w), num(b.h))
	}
	for _, f := range p.Flows {
		if _, ok := d.boxes[f.Source]; !ok {
			continue
		}
		if _, ok := d.boxes[f.Target]; !ok {
			continue
		}
		w.edge(f.ID, d.waypoints(f.Source, f.Target))
	}
	for _, n := range p.Nodes {
		if association(n) {
			s, t := d.boxes[n.ID], d.boxes[n.Handler]
			w.edge(n.ID+"_handler", []point{{s.cx(), s.bottom()}, {s.cx(), t.cy()}, {t.x, t.cy()}})
		}
	}
	w.line(2, `</bpmndi:BPMNPlane>`)
	w.line(1, `</bpmndi:BPMNDiagram>`)
	w.line(0, `</bpmn:definitions>`)
	return w.buf.Bytes()
}

// association reports whether n is a compensation boundary event whose
// handler is drawn, linked by an association.
func association(n *model.Node) bool {
	return n.Kind == model.BoundaryEvent && n.Event == model.CompensateEvent && n.Handler != ""
}

type writer struct{ buf bytes.Buffer }

func (w *writer) line(indent int, format string, args ...any) {
	for range indent {
		w.buf.WriteString("  ")
	}
	fmt.Fprintf(&w.buf, format, args...)
	w.buf.WriteByte('\n')
}

// elements writes the nodes of scope, each sub-process with its contents,
// then the scope's flows and associations.
func (w *writer) elements(d *diagram, scope string, indent int) {
	p := d.p
	ids := map[string]bool{}
	for _, n := range p.Nodes {
		if n.Scope != scope {
			continue
		}
		ids[n.ID] = true
		w.node(d, n, indent)
	}
	for _, f := range p.Flows {
		if ids[f.Source] && ids[f.Target] {
			w.line(indent, `<bpmn:sequenceFlow id="%s" sourceRef="%s" targetRef="%s"/>`, attr(f.ID), attr(f.Source), attr(f.Target))
		}
	}
	for _, n := range p.Nodes {
		if n.Scope == scope && association(n) {
			w.line(indent, `<bpmn:association id="%s" associationDirection="One" sourceRef="%s" targetRef="%s"/>`,
				attr(n.ID+"_handler"), attr(n.ID), attr(n.Handler))
		}
	}
}

// node writes n: its kind's element with the attributes that change how
// it is drawn, its event definition and its multi-instance marker.
func (w *writer) node(d *diagram, n *model.Node, indent int) {
	tag := string(n.Kind)
	if n.Transaction {
		tag = "transaction"
	}
	attrs := nameAttr(n.Name)
	switch {
	case n.Kind == model.BoundaryEvent:
		attrs += fmt.Sprintf(` attachedToRef="%s" cancelActivity="%t"`, attr(n.AttachedTo), n.Interrupting)
	case n.TriggeredByEvent:
		attrs += ` triggeredByEvent="true"`
	case n.Kind == model.StartEvent && n.Scope != "":
		if sp := d.nodes[n.Scope]; sp != nil && sp.TriggeredByEvent && !sp.Interrupting {
			attrs += ` isInterrupting="false"`
		}
	}
	if n.ForCompensation {
		attrs += ` isForCompensation="true"`
	}
	var inner []string
	if n.Loop != nil {
		inner = append(inner, fmt.Sprintf(`<bpmn:multiInstanceLoopCharacteristics isSequential="%t"/>`, n.Loop.Sequential))
	}
	if n.Event != model.NoneEvent {
		inner = append(inner, "<bpmn:"+string(n.Event)+"EventDefinition/>")
	}
	if len(inner) == 0 && n.Kind != model.SubProcess {
		w.line(indent, `<bpmn:%s id="%s"%s/>`, tag, attr(n.ID), attrs)
		return
	}
	w.line(indent, `<bpmn:%s id="%s"%s>`, tag, attr(n.ID), attrs)
	for _, s := range inner {
		w.line(indent+1, "%s", s)
	}
	if n.Kind == model.SubProcess {
		w.elements(d, n.ID, indent+1)
	}
	w.line(indent, `</bpmn:%s>`, tag)
}

// edge writes a BPMNEdge for element id along pts.
func (w *writer) edge(id string, pts []point) {
	w.line(3, `<bpmndi:BPMNEdge id="%s" bpmnElement="%s">`, attr(id+"_di"), attr(id))
	for _, pt := range pts {
		w.line(4, `<di:waypoint x="%s" y="%s"/>`, num(pt.x), num(pt.y))
	}
	w.line(3, `</bpmndi:BPMNEdge>`)
}

func nameAttr(name string) string {
	if name == "" {
		return ""
	}
	return ` name="` + attr(name) + `"`
}

// attr escapes s for an attribute value.
func attr(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
