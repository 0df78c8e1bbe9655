package bpmnxml

import (
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
)

// link reads the linkEventDefinition d of a link throw or catch event e:
// its name pairs them (docs/gateways.md §2). BPMN's source and target
// references are descriptive, as in Zeebe and Camunda 7.
func (im *importer) link(e, d *elem, n *model.Node) {
	n.Link = strings.TrimSpace(d.attr("", "name"))
	if n.Link == "" {
		im.probs.in(e, d, "a link event needs a name (name=\"...\"): a throw goes to the catch of the same name")
	}
	for _, c := range d.children {
		switch {
		case c.name.Space != NamespaceBPMN:
		case c.name.Local == "documentation" || c.name.Local == "source" || c.name.Local == "target":
		case c.name.Local == "extensionElements":
			im.extensions(c, e, nil)
		default:
			im.probs.in(e, c, "not supported inside a linkEventDefinition")
		}
	}
}
