package bpmnxml

import (
	"strconv"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
)

// loop reads multiInstanceLoopCharacteristics c of node e: isSequential,
// loopCardinality, completionCondition, Camunda's camunda:collection and
// camunda:elementVariable, Zeebe's zeebe:loopCharacteristics
// (inputCollection, inputElement, outputCollection, outputElement).
func (im *importer) loop(e, c *elem, n *model.Node) {
	l := &model.Loop{}
	if v := c.attr("", "isSequential"); v != "" {
		seq, err := strconv.ParseBool(v)
		if err != nil {
			im.probs.in(e, c, "isSequential=%q is not a boolean", v)
		}
		l.Sequential = seq
	}
	l.Collection = loopExpr(c.attr(NamespaceCamunda, "collection"))
	l.ElementVariable = strings.TrimSpace(c.attr(NamespaceCamunda, "elementVariable"))
	for _, x := range c.children {
		switch {
		case x.is(NamespaceBPMN, "loopCardinality"):
			l.Cardinality = loopExpr(x.text)
		case x.is(NamespaceBPMN, "completionCondition"):
			l.CompletionCondition = strings.TrimSpace(x.text)
		case x.is(NamespaceBPMN, "extensionElements"):
			for _, z := range x.children {
				switch {
				case z.is(NamespaceZeebe, "loopCharacteristics"):
					l.Collection = loopExpr(z.attr("", "inputCollection"))
					l.ElementVariable = strings.TrimSpace(z.attr("", "inputElement"))
					l.OutputCollection = strings.TrimSpace(z.attr("", "outputCollection"))
					l.OutputElement = strings.TrimSpace(z.attr("", "outputElement"))
				case z.name.Space == NamespaceCamunda && z.name.Local == "failedJobRetryTimeCycle":
					im.probs.in(e, z, "not supported; configure retries with <jetbpm:retryPolicy> instead")
				default:
					im.probs.in(e, z, "not supported inside multiInstanceLoopCharacteristics")
				}
			}
		case x.name.Space == NamespaceBPMN && (x.name.Local == "loopDataInputRef" || x.name.Local == "inputDataItem" ||
			x.name.Local == "loopDataOutputRef" || x.name.Local == "outputDataItem"):
			im.probs.in(e, x, "data-item multi-instance is not supported; use camunda:collection or zeebe:loopCharacteristics")
		case x.name.Space == NamespaceBPMN:
			im.probs.in(e, x, "not supported inside multiInstanceLoopCharacteristics")
		}
	}
	n.Loop = l
}

// loopExpr reads a collection or cardinality: an expression in any dialect;
// a bare variable name (Camunda's camunda:collection="items") is one.
func loopExpr(s string) string { return strings.TrimSpace(s) }
