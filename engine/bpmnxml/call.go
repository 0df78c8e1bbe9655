package bpmnxml

import (
	"strconv"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
)

// callActivity reads what a call activity calls and what crosses the call:
// the BPMN calledElement attribute or zeebe:calledElement, Camunda's
// calledElementBinding/Version, camunda:in/out, and zeebe:ioMapping (read
// with the other mappings). Zeebe passes every variable both ways unless
// propagateAllChildVariables="false"; Camunda passes nothing but what
// camunda:in/out name, or all with variables="all".
func (im *importer) callActivity(e *elem, n *model.Node, x *nodeExt) {
	c := &model.Call{ProcessID: strings.TrimSpace(e.attr("", "calledElement"))}
	n.Call = c
	if z := x.calledElement; z != nil {
		if id := strings.TrimSpace(z.attr("", "processId")); id != "" {
			if strings.HasPrefix(id, "=") {
				im.probs.in(e, z, "processId %q: a called process chosen by an expression is not supported", id)
			}
			c.ProcessID = id
		}
		if v := z.attr("", "propagateAllChildVariables"); v != "" {
			all, err := strconv.ParseBool(v)
			if err != nil {
				im.probs.in(e, z, "propagateAllChildVariables=%q is not a boolean", v)
			}
			c.NoOutputPropagation = !all
		}
	}
	switch binding := e.attr(NamespaceCamunda, "calledElementBinding"); binding {
	case "", "latest":
	case "version":
		v, err := strconv.Atoi(e.attr(NamespaceCamunda, "calledElementVersion"))
		if err != nil || v < 1 {
			im.probs.at(e, "camunda:calledElementVersion must be a version number")
		}
		c.Version = v
	default:
		im.probs.at(e, "camunda:calledElementBinding=%q is not supported (latest or version)", binding)
	}
	if len(x.camundaIn) > 0 || len(x.camundaOut) > 0 || e.attr(NamespaceCamunda, "calledElementTenantId") != "" ||
		x.calledElement == nil && hasCamundaAttrs(e) {
		c.NoInputPropagation, c.NoOutputPropagation = true, true
	}
	for _, in := range x.camundaIn {
		n.Inputs = im.camundaVar(e, in, n.Inputs, &c.NoInputPropagation)
	}
	for _, out := range x.camundaOut {
		n.Outputs = im.camundaVar(e, out, n.Outputs, &c.NoOutputPropagation)
	}
}

// camundaVar reads one camunda:in or camunda:out: source/sourceExpression
// → target, or variables="all".
func (im *importer) camundaVar(e, v *elem, ms []model.Mapping, none *bool) []model.Mapping {
	if v.attr("", "variables") == "all" {
		*none = false
		return ms
	}
	target := strings.TrimSpace(v.attr("", "target"))
	src := strings.TrimSpace(v.attr("", "source"))
	if expr := strings.TrimSpace(v.attr("", "sourceExpression")); expr != "" {
		src = expr
	}
	if target == "" || src == "" {
		im.probs.in(e, v, "needs source (or sourceExpression) and target, or variables=\"all\"")
		return ms
	}
	return append(ms, model.Mapping{Target: target, Source: src})
}

func hasCamundaAttrs(e *elem) bool {
	for _, a := range e.attrs {
		if a.Name.Space == NamespaceCamunda {
			return true
		}
	}
	return false
}
