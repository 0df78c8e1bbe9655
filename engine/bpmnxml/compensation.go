package bpmnxml

import "github.com/jetbpm/jetbpm/engine/model"

// Compensation (docs/compensation.md) is written alike in Camunda 7 and
// Zeebe: a compensation boundary event on the activity, an association
// from it to the handler activity (isForCompensation="true"), and
// compensateEventDefinition on intermediate throw and end events, with an
// optional activityRef and waitForCompletion.

// compensateDef reads the compensateEventDefinition d of event e.
func (im *importer) compensateDef(e, d *elem, n *model.Node) {
	if n.Kind == model.BoundaryEvent || n.Kind == model.StartEvent {
		return
	}
	n.ActivityRef = d.attr("", "activityRef")
	wait, ok := boolAttr(d, "waitForCompletion", true)
	switch {
	case !ok:
		im.probs.in(e, d, "waitForCompletion=%q is not a boolean", d.attr("", "waitForCompletion"))
	case !wait:
		im.probs.in(e, d, `waitForCompletion="false" is not supported: a compensation throw waits for its handlers (docs/compensation.md)`)
	}
}

// forCompensation reads an activity's isForCompensation attribute.
func (im *importer) forCompensation(e *elem, n *model.Node) {
	v, ok := boolAttr(e, "isForCompensation", false)
	if !ok {
		im.probs.at(e, "isForCompensation=%q is not a boolean", e.attr("", "isForCompensation"))
	}
	n.ForCompensation = v
}

// association records an association between two elements; a
// compensation boundary event finds its handler among them.
func (im *importer) association(e *elem) {
	if im.assocs == nil {
		im.assocs = map[string][]string{}
	}
	src, dst := e.attr("", "sourceRef"), e.attr("", "targetRef")
	im.assocs[src] = append(im.assocs[src], dst)
	im.assocs[dst] = append(im.assocs[dst], src)
}

// compensationHandlers associates each compensation boundary event of p
// with the activity marked for compensation that an association connects
// it to; Validate reports a boundary left without one.
func (im *importer) compensationHandlers(p *model.Process) {
	byID := make(map[string]*model.Node, len(p.Nodes))
	for _, n := range p.Nodes {
		byID[n.ID] = n
	}
	for _, n := range p.Nodes {
		if n.Kind != model.BoundaryEvent || n.Event != model.CompensateEvent {
			continue
		}
		for _, other := range im.assocs[n.ID] {
			if h := byID[other]; h != nil && h.ForCompensation {
				if n.Handler != "" && n.Handler != h.ID {
					im.probs.add(&Error{Line: n.Line, Element: "bpmn:boundaryEvent", ID: n.ID,
						Msg: "is associated with two compensation handlers, " + n.Handler + " and " + h.ID})
					break
				}
				n.Handler = h.ID
			}
		}
	}
}
