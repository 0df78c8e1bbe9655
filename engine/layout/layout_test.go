package layout

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/model"
)

// order has what a diagram must place: a gateway with two branches and a
// loop back, a sub-process with a timer boundary, a compensation handler,
// a multi-instance task and an event sub-process.
func order(t *testing.T) *model.Process {
	t.Helper()
	b := model.NewBuilder("order").StartEvent("start").ExclusiveGateway("check").
		UserTask("review", model.Named("review")).ServiceTask("charge", "", model.WithWorker("pay")).
		ScriptTask("refund", "true", "refunded", model.ForCompensation()).CompensationBoundary("chargeComp", "charge", "refund").
		ExclusiveGateway("again").EndEvent("end").
		TimerBoundary("late", "ship", model.Duration("PT1H"), true).EndEvent("lateEnd").
		Task("notify", model.WithLoop(model.Loop{Collection: "people", ElementVariable: "p", Sequential: true})).
		Sequence("start", "check").Flow("check", "review", model.When("big")).DefaultFlow("check", "charge").
		Flow("review", "charge").Sequence("charge", "ship", "notify", "again").Flow("again", "check", model.When("retry")).
		DefaultFlow("again", "end").Flow("late", "lateEnd")
	sub := b.SubProcess("ship")
	sub.StartEvent("ss").Task("pack").EndEvent("se").Sequence("ss", "pack", "se")
	b.EventSubProcess("cancel", true).MessageStartEvent("cancelled", "cancel", model.CorrelationKey("id")).EndEvent("ce").Flow("cancelled", "ce")
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlacement(t *testing.T) {
	p := order(t)
	d := place(p)
	for _, n := range p.Nodes {
		if _, ok := d.boxes[n.ID]; !ok {
			t.Errorf("%s has no shape", n.ID)
		}
	}
	// Forward flows go left to right; the loop back runs below.
	for _, f := range p.Flows {
		s, tg := d.boxes[f.Source], d.boxes[f.Target]
		back := f.Source == "again" && f.Target == "check"
		if s.x >= tg.x != back {
			t.Errorf("flow %s→%s: source x %v, target x %v (back edge %v)", f.Source, f.Target, s.x, tg.x, back)
		}
	}
	// No two shapes of a scope overlap.
	for i, a := range p.Nodes {
		for _, b := range p.Nodes[i+1:] {
			if a.Scope != b.Scope || a.Kind == model.BoundaryEvent || b.Kind == model.BoundaryEvent {
				continue
			}
			if x, y := d.boxes[a.ID], d.boxes[b.ID]; x.x < y.right() && y.x < x.right() && x.y < y.bottom() && y.y < x.bottom() {
				t.Errorf("%s %v overlaps %s %v", a.ID, x, b.ID, y)
			}
		}
	}
	inside := func(inner, outer box) bool {
		return inner.x >= outer.x && inner.right() <= outer.right() && inner.y >= outer.y && inner.bottom() <= outer.bottom()
	}
	for _, id := range []string{"ss", "pack", "se"} {
		if !inside(d.boxes[id], d.boxes["ship"]) {
			t.Errorf("%s %v is not inside its sub-process %v", id, d.boxes[id], d.boxes["ship"])
		}
	}
	if l, s := d.boxes["late"], d.boxes["ship"]; l.cy() != s.bottom() || l.x < s.x || l.right() > s.right() {
		t.Errorf("boundary %v is not on the lower edge of %v", l, s)
	}
	if h, c := d.boxes["refund"], d.boxes["charge"]; h.x <= c.right() {
		t.Errorf("handler %v is not right of its activity %v", h, c)
	}
	main := 0.0
	for _, n := range p.Nodes {
		if n.Scope == "" && !n.TriggeredByEvent {
			main = max(main, d.boxes[n.ID].bottom())
		}
	}
	if e := d.boxes["cancel"]; e.y <= main {
		t.Errorf("event sub-process %v is not below the flow (bottom %v)", e, main)
	}
}

// The document is well-formed BPMN with a shape per node and an edge per
// flow, and carries what the viewer draws.
func TestDocument(t *testing.T) {
	p := order(t)
	doc := Document(p)
	dec := xml.NewDecoder(strings.NewReader(string(doc)))
	shapes, edges := map[string]bool{}, map[string]bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v\n%s", err, doc)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				if a.Name.Local == "bpmnElement" && se.Name.Local == "BPMNShape" {
					shapes[a.Value] = true
				}
				if a.Name.Local == "bpmnElement" && se.Name.Local == "BPMNEdge" {
					edges[a.Value] = true
				}
			}
		}
	}
	for _, n := range p.Nodes {
		if !shapes[n.ID] {
			t.Errorf("no shape for %s", n.ID)
		}
	}
	for _, f := range p.Flows {
		if !edges[f.ID] {
			t.Errorf("no edge for flow %s", f.ID)
		}
	}
	for _, want := range []string{
		`<bpmn:userTask id="review" name="review"/>`,
		`<bpmn:boundaryEvent id="late" attachedToRef="ship" cancelActivity="true">`,
		`<bpmn:timerEventDefinition/>`,
		`<bpmn:multiInstanceLoopCharacteristics isSequential="true"/>`,
		`<bpmn:subProcess id="cancel" triggeredByEvent="true">`,
		`<bpmn:scriptTask id="refund" isForCompensation="true"/>`,
		`<bpmn:association id="chargeComp_handler" associationDirection="One" sourceRef="chargeComp" targetRef="refund"/>`,
		`isExpanded="true"`,
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("document lacks %s", want)
		}
	}
}

// Names are escaped; a process of one node is drawn.
func TestEscapingAndTiny(t *testing.T) {
	p := &model.Process{ID: "p", Name: `a "b" <c>`, Nodes: []*model.Node{{ID: "s", Kind: model.StartEvent, Name: "x & y"}}}
	doc := string(Document(p))
	if !strings.Contains(doc, `name="a &#34;b&#34; &lt;c&gt;"`) || !strings.Contains(doc, `name="x &amp; y"`) {
		t.Errorf("names not escaped:\n%s", doc)
	}
	if err := xml.Unmarshal([]byte(doc), new(struct{})); err != nil {
		t.Errorf("not well-formed: %v", err)
	}
}
