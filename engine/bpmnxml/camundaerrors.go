package bpmnxml

import (
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
	"github.com/jetbpm/jetbpm/jobs"
)

// Camunda 7 maps an external task's outcome to a BPMN error with
// camunda:errorEventDefinition among the task's extension elements:
//
//	<bpmn:serviceTask id="t" camunda:type="external" camunda:topic="lookup">
//	  <bpmn:extensionElements>
//	    <camunda:errorEventDefinition id="d" errorRef="notFound" expression="${true}"/>
//	  </bpmn:extensionElements>
//	</bpmn:serviceTask>
//
// Camunda 7 evaluates the definitions in order whenever the worker
// completes the task or reports a failure, and throws the referenced
// <error>'s code for the first expression that holds. jetbpm decides a
// worker's failures with ErrorMapper rules, which see the fault (its code
// and body) and nothing else, so it maps exactly the expressions that
// need nothing else:
//
//   - a constant true (${true}, #{true}, true, =true) becomes a rule
//     without code and when, classifying every failure as that BPMN error,
//     after the task's own jetbpm:errorMapper rules; and, because Camunda 7
//     evaluates it on completion too, every completion is that error
//     (model.Worker.CompleteError, the job's variables written first);
//   - a constant false, or no expression, never holds: nothing is added.
//
// Any other expression reads the process variables or Camunda 7's
// external task record (externalTask.errorDetails, ...), which jetbpm's
// rules cannot see, and is refused with a pointer to jetbpm:errorMapper,
// as is a definition on a task that runs no external job, one without an
// <error> with a constant, non-empty errorCode, and a constant true on a
// task with a custom error mapper (which replaces rules).

// camundaErrors maps the camunda:errorEventDefinition elements defs of
// task e onto n's worker.
func (im *importer) camundaErrors(e *elem, n *model.Node, defs []*elem) {
	var w *model.Worker
	if n.Service != nil {
		w = n.Service.Worker
	}
	for _, d := range defs {
		if w == nil {
			im.probs.in(e, d, "applies to external tasks only (camunda:type=\"external\"): Camunda 7 evaluates it when a worker completes the task or reports a failure")
			continue
		}
		code, ok := im.camundaErrorCode(e, d)
		if !ok {
			continue
		}
		always, ok := im.constantCondition(e, d)
		if !ok || !always {
			continue
		}
		if w.Options.Mapper != "" {
			im.probs.in(e, d, "the task's failures are classified by the custom error mapper %q, which replaces rules; map the error there", w.Options.Mapper)
			continue
		}
		w.Options.Rules = append(w.Options.Rules, jobs.Rule{Outcome: jobs.BusinessError, ErrorCode: code})
		if w.CompleteError == "" {
			w.CompleteError = code
		}
	}
}

// camundaErrorCode resolves the errorRef of definition d to its <error>'s
// code.
func (im *importer) camundaErrorCode(e, d *elem) (string, bool) {
	ref := strings.TrimSpace(d.attr("", "errorRef"))
	if ref == "" {
		im.probs.in(e, d, "names no error: add errorRef naming a <bpmn:error> with an errorCode")
		return "", false
	}
	decl, ok := im.errors[ref]
	if !ok {
		im.probs.in(e, d, "errorRef %q names no <error> of this document", ref)
		return "", false
	}
	code, ok := feelConst(decl.attr("", "errorCode"))
	switch {
	case !ok:
		im.probs.in(e, decl, "error code %q is an expression; only constant codes are supported", decl.attr("", "errorCode"))
		return "", false
	case code == "":
		im.probs.in(e, d, "error %q has no errorCode: the BPMN error thrown needs one", ref)
		return "", false
	}
	return code, true
}

// constantCondition reads the expression of definition d: whether it
// always holds (true) or never (false). ok is false, and the problem
// reported, when it depends on anything.
func (im *importer) constantCondition(e, d *elem) (always, ok bool) {
	src := strings.TrimSpace(d.attr("", "expression"))
	if src == "" {
		return false, true // Camunda 7: a definition without expression never holds
	}
	x, err := expression.Compile(src)
	if err == nil {
		switch x.Translated() {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	im.probs.in(e, d, "expression=%q: only a constant (${true} or ${false}) can be mapped; jetbpm classifies a worker's failure by its code and body with <jetbpm:errorMapper> rules, which cannot read variables or Camunda 7's externalTask: write a jetbpm:rule instead (docs/bpmn-extensions.md)", src)
	return false, false
}
