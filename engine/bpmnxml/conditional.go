package bpmnxml

import (
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/script"
)

// Conditional events (Camunda 7; docs/conditional-events.md). A
// conditionalEventDefinition holds one <condition> (an expression, JUEL in
// Camunda 7 files, or a script format the importer knows) and may restrict
// its re-evaluation with camunda:variableName and camunda:variableEvents
// (a comma-separated list of create, update, delete). The Zeebe dialect
// has no conditional events: a Zeebe file that holds one is refused.

// conditionalEvent reads the condition of conditional event e.
func (im *importer) conditionalEvent(e, d *elem, n *model.Node) {
	if im.zeebeModel {
		im.probs.in(e, d, "conditional events are not supported in the Zeebe dialect (Camunda 7 files only)")
		return
	}
	c := &model.Condition{VariableName: strings.TrimSpace(d.attr(NamespaceCamunda, "variableName"))}
	if events, ok := d.lookup(NamespaceCamunda, "variableEvents"); ok {
		for _, ev := range strings.Split(events, ",") {
			ev = strings.TrimSpace(ev)
			switch ev {
			case model.VariableCreate, model.VariableUpdate, model.VariableDelete:
				c.VariableEvents = append(c.VariableEvents, ev)
			default:
				im.probs.in(e, d, "camunda:variableEvents=%q: %q is not create, update or delete", events, ev)
				return
			}
		}
	}
	var cond *elem
	for _, ch := range d.children {
		switch {
		case ch.name.Space != NamespaceBPMN:
		case ch.name.Local == "condition" && cond == nil:
			cond = ch
		case ch.name.Local == "condition":
			im.probs.in(e, ch, "a conditional event has one condition")
			return
		case ch.name.Local == "documentation":
		default:
			im.probs.in(e, ch, "not supported inside a conditionalEventDefinition")
			return
		}
	}
	if cond == nil {
		im.probs.in(e, d, "a conditional event needs a <condition>")
		return
	}
	if _, ok := cond.lookup(NamespaceCamunda, "resource"); ok {
		im.probs.in(e, cond, "conditions loaded from a resource (camunda:resource) are not supported")
		return
	}
	if src, js := im.jsCondition(e, cond); js {
		if src != "" {
			c.Expression, c.Language = src, script.Language
			n.Conditional = c
		}
		return
	}
	src, msg := scriptSource(cond.attr("", "language"), cond.text, false)
	switch {
	case msg != "":
		im.probs.in(e, cond, "%s", msg)
		return
	case src == "":
		im.probs.in(e, cond, "the condition is empty")
		return
	}
	c.Expression = src
	n.Conditional = c
}
