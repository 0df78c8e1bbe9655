package bpmnxml

import (
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
)

// Signals. A <bpmn:signal id="..." name="..."/> at definitions level
// declares a signal; signal events name it with signalEventDefinition
// signalRef. In the Zeebe dialect the name may be a FEEL expression
// ("=..."), evaluated when the element is entered (a start event's must be
// a literal: model validation says so); a Camunda 7 name with ${...} is
// refused (it would need JUEL at broadcast time), and so are Camunda 7's
// camunda:in variable passing and camunda:async on a signal throw
// (docs/signals.md §2).

// signalEvent resolves the signal a signal event catches or throws.
func (im *importer) signalEvent(e, d *elem, n *model.Node) {
	for _, c := range d.children {
		switch {
		case c.name.Space != NamespaceBPMN:
		case c.name.Local == "documentation":
		case c.name.Local == "extensionElements":
			for _, x := range c.children {
				if x.name.Space == NamespaceCamunda || x.name.Space == NamespaceZeebe || x.name.Space == Namespace {
					im.probs.in(e, x, "%s is not supported on a signal event (a throw sends the variables of its input mappings)", x.tag())
				}
			}
		default:
			im.probs.in(e, c, "not supported inside a signalEventDefinition")
		}
	}
	if _, ok := d.lookup(NamespaceCamunda, "async"); ok {
		im.probs.in(e, d, "camunda:async on a signal event is not supported; the broadcast is an effect of the step already")
	}
	ref := d.attr("", "signalRef")
	if ref == "" {
		im.probs.in(e, d, "a signal event needs signalRef naming a <signal> of this document")
		return
	}
	decl, ok := im.signals[ref]
	if !ok {
		im.probs.in(e, d, "signalRef %q names no <signal> of this document", ref)
		return
	}
	name := strings.TrimSpace(decl.attr("", "name"))
	sig := &model.Signal{}
	switch {
	case name == "":
		im.probs.at(decl, "the signal has no name")
		return
	case strings.HasPrefix(name, "="):
		if v, ok := feelConst(name); ok {
			sig.Name = v
		} else {
			sig.NameExpr = zeebeSource(name)
			if _, err := expression.Compile(sig.NameExpr); err != nil {
				im.probs.at(decl, "signal name %q: %v", name, err)
				return
			}
		}
	case strings.Contains(name, "${") || strings.Contains(name, "#{"):
		src, _, err := juelText(name)
		if err == nil {
			_, err = expression.Compile(src)
		}
		if err != nil {
			im.probs.at(decl, "signal name %q: %v", name, err)
			return
		}
		sig.NameExpr = src
	default:
		sig.Name = name
	}
	n.Signal = sig
}
