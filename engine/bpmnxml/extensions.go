package bpmnxml

import (
	"strconv"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/script"
)

// nodeExt gathers what a node's attributes and extension elements say before
// it is turned into the node's service or script.
type nodeExt struct {
	task       *elem // zeebe:taskDefinition
	headers    map[string]string
	hasHeaders bool
	script     *elem            // zeebe:script
	bpmnScript *elem            // bpmn:script
	jetbpm     map[string]*elem // jetbpm extension elements by local name
	// definition is a message throw event's messageEventDefinition, where
	// Camunda 7 says how the message is sent (camunda:type, ...).
	definition *elem
	// A call activity's zeebe:calledElement and camunda:in/out.
	calledElement         *elem
	camundaIn, camundaOut []*elem
	// A user task's Zeebe elements by local name, and its
	// humanPerformer and potentialOwner.
	zeebeHuman map[string]*elem
	performers []*elem
	// formData is a user task's camunda:formData (forms.go).
	formData *elem
	// camundaErrors are Camunda 7's camunda:errorEventDefinition elements
	// of an external task, in order (camundaerrors.go).
	camundaErrors []*elem
	// connector is Camunda 7's camunda:connector (connector.go).
	connector *elem
}

// extTarget is the flow node extension elements apply to.
type extTarget struct {
	node *model.Node
	ext  *nodeExt
}

// Vendor extension elements accepted and ignored: modeler metadata, forms
// (a process's zeebe:userTaskForm, read when a user task's formKey names
// it; a start event's form), and
// elements that only configure elements jetbpm refuses anyway.
var (
	zeebeIgnored = set("properties", "userTaskForm", "formDefinition", "versionTag",
		"calledDecision", "linkedResources")
	camundaIgnored = set("properties", "formProperty", "potentialStarter")
)

func setExt(n *model.Node, key, value string) {
	if n.Extensions == nil {
		n.Extensions = map[string]string{}
	}
	n.Extensions[key] = value
}

// attributes records a node's Camunda and Zeebe attributes in
// Node.Extensions, checks its jetbpm attributes, and reads the attributes
// that choose the implementation of a service task or a message throw.
func (im *importer) attributes(e *elem, n *model.Node, x *nodeExt) {
	for _, a := range e.attrs {
		switch a.Name.Space {
		case NamespaceCamunda, NamespaceZeebe:
			setExt(n, qualify(a.Name), a.Value)
		case Namespace:
			switch a.Name.Local {
			case "operation", "timeout":
				if n.Kind != model.ServiceTask && !throws(n) {
					im.probs.at(e, "jetbpm:%s applies to service tasks, send tasks and message throw events only", a.Name.Local)
				}
			case "resultVariable":
				if n.Kind != model.ScriptTask {
					im.probs.at(e, "jetbpm:%s applies to a %s only", a.Name.Local, model.ScriptTask)
				}
			default:
				im.probs.at(e, "unknown attribute jetbpm:%s", a.Name.Local)
			}
		}
	}
	switch {
	case n.Kind == model.ServiceTask || n.Kind == model.SendTask:
		im.serviceAttrs(e, e, n)
	case throws(n):
		// Camunda 7 says how a throw event sends its message on the
		// messageEventDefinition, not on the event.
		for _, a := range camundaImpl {
			if _, ok := e.lookup(NamespaceCamunda, a); ok {
				im.probs.at(e, "camunda:%s belongs on the event's bpmn:messageEventDefinition, where Camunda 7 reads it", a)
			}
		}
		im.serviceAttrs(e, x.definition, n)
	}
}

// camunda7Worker is the external worker of camunda:topic: an expression
// in it (${...}) is evaluated as each job is queued, as Camunda 7 does.
// A composite topic ("orders-${region}") that does not translate is kept
// as written, for validation to refuse with the expression's error.
func camunda7Worker(topic string) *model.Worker {
	src, isExpr, err := juelText(topic)
	switch {
	case err != nil:
		return &model.Worker{TopicExpr: strings.TrimSpace(topic)}
	case isExpr:
		return &model.Worker{TopicExpr: src}
	}
	return &model.Worker{Topic: src}
}

// camundaImpl are the Camunda 7 attributes that say how a service task, a
// send task or a message throw event does its work.
var camundaImpl = []string{"type", "topic", "class", "delegateExpression", "expression"}

// serviceAttrs reads the Camunda 7 implementation of a service task, a send
// task or a message throw event from impl (the element itself, or a throw
// event's messageEventDefinition), and its jetbpm implementation from e.
func (im *importer) serviceAttrs(e, impl *elem, n *model.Node) {
	s := &model.Service{}
	n.Service = s
	report := func(format string, args ...any) {
		if impl == e {
			im.probs.at(e, format, args...)
		} else {
			im.probs.in(e, impl, format, args...)
		}
	}
	var inProcess []string
	if t, ok := impl.lookup(NamespaceCamunda, "type"); ok {
		if t != "external" {
			report("camunda:type=%q is not supported (only \"external\")", t)
		} else {
			s.Worker = camunda7Worker(impl.attr(NamespaceCamunda, "topic"))
		}
	}
	for _, a := range []string{"class", "delegateExpression", "expression"} {
		if v, ok := impl.lookup(NamespaceCamunda, a); ok {
			inProcess = append(inProcess, "camunda:"+a)
			s.Operation = strings.TrimSpace(v)
		}
	}
	if v, ok := e.lookup(Namespace, "operation"); ok {
		inProcess = append(inProcess, "jetbpm:operation")
		s.Operation = strings.TrimSpace(v)
	}
	if len(inProcess) > 1 {
		im.probs.at(e, "several in-process implementations (%s); keep one", strings.Join(inProcess, ", "))
	}
	if v, ok := e.lookup(Namespace, "timeout"); ok {
		if d, msg := clockDuration(v); msg != "" {
			im.probs.at(e, "jetbpm:timeout=%q: %s", v, msg)
		} else {
			s.Timeout = d
		}
	}
}

// extensions imports the vendor extension elements of owner; t is nil when
// owner is a process or a sequence flow.
func (im *importer) extensions(x, owner *elem, t *extTarget) {
	for _, c := range x.children {
		switch c.name.Space {
		case NamespaceZeebe:
			im.zeebe(c, owner, t)
		case NamespaceCamunda:
			im.camunda(c, owner, t)
		case Namespace:
			im.jetbpmExt(c, owner, t)
		}
		// other namespaces: another tool's metadata
	}
}

func (im *importer) zeebe(c, owner *elem, t *extTarget) {
	local := c.name.Local
	userTask := t != nil && t.node.Kind == model.UserTask
	switch {
	case zeebeHuman[local] && userTask:
		im.keepZeebeHuman(c, owner, t.ext)
		return
	case zeebeIgnored[local]:
		return
	case zeebeHuman[local]:
		im.probs.in(owner, c, "applies to user tasks only")
		return
	case local == "executionListeners":
		switch {
		case t != nil:
			im.zeebeListeners(c, owner, &t.node.JobListeners)
		case owner.name.Local == "process" && im.proc != nil:
			im.zeebeListeners(c, owner, &im.proc.JobListeners)
		default:
			im.probs.in(owner, c, "applies to processes, activities, events and gateways only")
		}
		return
	case local == "taskListeners":
		if !userTask {
			im.probs.in(owner, c, "applies to user tasks only")
			return
		}
		im.zeebeTaskListeners(c, owner, t.node)
		return
	case local == "taskHeaders" && userTask:
		im.probs.in(owner, c, "a user task is not a job: its headers would reach no worker, and the task record has none; remove them")
		return
	case local == "calledElement" && t != nil && t.node.Kind == model.CallActivity:
		t.ext.calledElement = c
		return
	case local == "subscription":
		im.probs.in(owner, c, "belongs in the extensionElements of the <bpmn:message> the element refers to")
		return
	case local != "taskDefinition" && local != "taskHeaders" && local != "ioMapping" && local != "script":
		im.probs.in(owner, c, "not supported")
		return
	case t == nil:
		im.probs.in(owner, c, "not supported on a %s", owner.name.Local)
		return
	}
	kind := t.node.Kind
	switch local {
	case "taskDefinition":
		if kind == model.ScriptTask {
			im.probs.in(owner, c, "script tasks run by job workers are not supported; use a service task")
		} else if kind != model.ServiceTask && !throws(t.node) {
			im.probs.in(owner, c, "applies to service tasks, send tasks and message throw events only")
		}
		t.ext.task = c
	case "taskHeaders":
		if t.ext.headers == nil {
			t.ext.headers = map[string]string{}
		}
		t.ext.hasHeaders = true
		for _, h := range c.children {
			if h.is(NamespaceZeebe, "header") {
				t.ext.headers[h.attr("", "key")] = h.attr("", "value")
			}
		}
	case "script":
		if kind != model.ScriptTask {
			im.probs.in(owner, c, "applies to script tasks only")
		}
		t.ext.script = c
	case "ioMapping":
		for _, m := range c.children {
			if m.name.Space != NamespaceZeebe {
				continue
			}
			mp := model.Mapping{Target: strings.TrimSpace(m.attr("", "target")), Source: zeebeSource(m.attr("", "source"))}
			switch m.name.Local {
			case "input":
				t.node.Inputs = append(t.node.Inputs, mp)
			case "output":
				t.node.Outputs = append(t.node.Outputs, mp)
			default:
				im.probs.in(owner, m, "not supported inside zeebe:ioMapping")
			}
		}
	}
}

func (im *importer) camunda(c, owner *elem, t *extTarget) {
	local := c.name.Local
	switch local {
	case "inputOutput":
		if t == nil {
			im.probs.in(owner, c, "not supported on a %s", owner.name.Local)
			return
		}
		ins, outs := im.camundaInputOutput(owner, c)
		t.node.Inputs = append(t.node.Inputs, ins...)
		t.node.Outputs = append(t.node.Outputs, outs...)
	case "in", "out":
		switch {
		case t == nil || t.node.Kind != model.CallActivity:
			im.probs.in(owner, c, "applies to call activities only")
		case local == "in":
			t.ext.camundaIn = append(t.ext.camundaIn, c)
		default:
			t.ext.camundaOut = append(t.ext.camundaOut, c)
		}
	case "executionListener":
		switch {
		case t != nil:
			im.executionListener(c, owner, listenerDst{to: &t.node.Listeners})
		case im.listeners.to != nil:
			im.executionListener(c, owner, im.listeners)
		default:
			im.probs.in(owner, c, "not supported on a %s", owner.name.Local)
		}
	case "taskListener":
		if t == nil || t.node.Kind != model.UserTask {
			im.probs.in(owner, c, "applies to user tasks only")
			return
		}
		im.taskListener(c, owner, t.node)
	case "connector":
		switch {
		case t == nil || t.node.Kind != model.ServiceTask && !throws(t.node):
			im.probs.in(owner, c, "applies to service tasks, send tasks and message throw events only")
		case t.ext.connector != nil:
			im.probs.in(owner, c, "appears twice; keep one")
		default:
			t.ext.connector = c
		}
	case "failedJobRetryTimeCycle":
		im.probs.in(owner, c, "not supported; configure retries with <jetbpm:retryPolicy> instead")
	case "errorEventDefinition":
		if t == nil {
			im.probs.in(owner, c, "not supported on a %s; it maps an external task's outcome to a BPMN error", owner.name.Local)
			return
		}
		t.ext.camundaErrors = append(t.ext.camundaErrors, c)
	case "field":
		im.probs.in(owner, c, "field injection into Java delegates is not supported")
	case "formData":
		switch {
		case t == nil || t.node.Kind != model.UserTask:
			// a start event's form: instances start through the API
		case t.ext.formData != nil:
			im.probs.in(owner, c, "appears twice in the userTask; keep one")
		default:
			t.ext.formData = c
		}
	default:
		if !camundaIgnored[local] {
			im.probs.in(owner, c, "not supported")
		}
	}
}

// camundaParam returns the expression of a camunda:inputParameter or
// outputParameter: ${...} text as written, other text as a string constant,
// an empty parameter as null, a nested camunda:script in an expression
// format as its text.
//
// A script of any language made only of execution.setVariable("name",
// literal) statements is translated: each becomes a mapping of its own
// (returned in sets) and the parameter itself is null. Any other
// JavaScript script is the parameter's program (lang script.Language).
func (im *importer) camundaParam(owner, p *elem) (src, lang string, sets []model.Mapping, ok bool) {
	if p.name.Local != "inputParameter" && p.name.Local != "outputParameter" {
		im.probs.in(owner, p, "not supported inside camunda:inputOutput")
		return "", "", nil, false
	}
	if len(p.children) == 1 && p.children[0].is(NamespaceCamunda, "script") {
		v := p.children[0]
		if sets, ok := setVariableScript(v.text); ok {
			return "nil", "", sets, true
		}
		if script.IsJavaScript(v.attr("", "scriptFormat")) {
			res, fromFile := v.lookup("", "resource")
			switch {
			case fromFile:
				src, ok = im.scriptResource(owner, v, res)
			case strings.TrimSpace(v.text) == "":
				im.probs.in(owner, v, "parameter %q: the script is empty", p.attr("", "name"))
			default:
				src, ok = strings.TrimSpace(v.text), true
			}
			if !ok {
				return "", "", nil, false
			}
			return src, script.Language, nil, true
		}
	}
	src, ok = im.camundaParamValue(owner, p)
	return src, "", nil, ok
}

func (im *importer) camundaParamValue(owner, p *elem) (string, bool) {
	if len(p.children) > 1 {
		im.probs.in(owner, p, "a parameter has one value")
		return "", false
	}
	if len(p.children) == 1 {
		v := p.children[0]
		switch {
		case v.is(NamespaceCamunda, "script"):
			if _, ok := v.lookup("", "resource"); ok {
				im.probs.in(owner, v, "scripts loaded from a resource are not supported")
				return "", false
			}
			src, msg := scriptSource(v.attr("", "scriptFormat"), v.text, true)
			if msg == "" && src == "" {
				msg = "the script is empty"
			}
			if msg != "" {
				im.probs.in(owner, v, "parameter %q: %s", p.attr("", "name"), msg)
				return "", false
			}
			return src, true
		case v.is(NamespaceCamunda, "list"), v.is(NamespaceCamunda, "map"):
			return im.camundaCollection(owner, v)
		default:
			im.probs.in(owner, v, "not supported inside a parameter")
		}
		return "", false
	}
	text := strings.TrimSpace(p.text)
	switch {
	case text == "":
		return "nil", true
	case strings.Contains(text, "${") || strings.Contains(text, "#{"):
		src, _, err := juelText(text)
		if err != nil {
			im.probs.in(owner, p, "parameter %q: %v", p.attr("", "name"), err)
			return "", false
		}
		return src, true
	}
	return expression.Literal(text), true
}

// zeebeSource reads a zeebe:input/output source: "=..." is FEEL, other text
// a static string value, and an empty source null.
func zeebeSource(s string) string {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return "nil"
	case strings.HasPrefix(t, "="):
		return t
	}
	return expression.Literal(s)
}

// finish turns what was gathered into the node's service, script, call,
// publish or user task assignment, and its incident retry policy.
func (im *importer) finish(e *elem, n *model.Node, x *nodeExt) {
	switch {
	case n.Kind == model.ServiceTask:
		im.zeebeWorker(e, n, x)
		im.jetbpmWorker(e, n, x)
		im.taskHeaders(e, n, x)
		if x.connector != nil {
			im.camundaConnector(e, n, x.connector)
		}
	case throws(n):
		im.throw(e, n, x)
	case n.Kind == model.ScriptTask:
		im.script(e, n, x)
	case n.Kind == model.CallActivity:
		im.callActivity(e, n, x)
	case n.Kind == model.UserTask:
		im.userTask(e, n, x)
	}
	if len(x.camundaErrors) > 0 {
		im.camundaErrors(e, n, x.camundaErrors)
	}
	if c := x.jetbpm["incidentRetry"]; c != nil {
		im.incidentRetry(e, c, n)
	}
}

func (im *importer) zeebeWorker(e *elem, n *model.Node, x *nodeExt) {
	s := n.Service
	if c := x.task; c != nil {
		w := &model.Worker{}
		if topic, ok := feelConst(c.attr("", "type")); ok {
			w.Topic = topic
		} else {
			w.TopicExpr = strings.TrimSpace(c.attr("", "type")) // evaluated per job
		}
		if r, present := c.lookup("", "retries"); present && strings.TrimSpace(r) != "" { // "" is the default, as in Zeebe
			v, ok := feelConst(r)
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 1 {
				im.probs.in(e, c, "retries %q must be a positive integer constant", r)
			}
			w.Retries = n
		}
		if s.Worker != nil {
			im.probs.in(e, c, "the task has both camunda:type=\"external\" and a zeebe:taskDefinition; keep one")
		}
		s.Worker = w
	}
}

// taskHeaders applies zeebe:taskHeaders to the task's external worker.
func (im *importer) taskHeaders(e *elem, n *model.Node, x *nodeExt) {
	s := n.Service
	if x.hasHeaders {
		if s.Worker == nil {
			im.probs.at(e, "zeebe:taskHeaders need an external worker (zeebe:taskDefinition)")
			return
		}
		s.Worker.Headers = x.headers
		im.retryBackoff(e, s.Worker)
	}
}

// retryBackoff reads the retryBackoff header Camunda 8's connector
// templates write (an ISO 8601 duration, PT0S by default): the connector
// runtime waits that long before each retry of the job, so the task's
// retry policy becomes a fixed delay of that duration over its retries
// (3 when the task names none, Zeebe's default), unless a
// jetbpm:retryPolicy says otherwise. A value that is not a duration is
// refused.
func (im *importer) retryBackoff(e *elem, w *model.Worker) {
	v, ok := w.Headers["retryBackoff"]
	if !ok || w.Options.Retry != nil {
		return
	}
	d, msg := clockDuration(v)
	if msg != "" {
		im.probs.at(e, "zeebe:header retryBackoff=%q: %s", v, msg)
		return
	}
	attempts := w.Retries
	if attempts == 0 {
		attempts = 3
	}
	spec := jobs.FixedDelaySpec(attempts, d)
	w.Options.Retry = &spec
}

func (im *importer) script(e *elem, n *model.Node, x *nodeExt) {
	result := e.attr(Namespace, "resultVariable")
	if result == "" && x.script != nil {
		result = x.script.attr("", "resultVariable")
	}
	if result == "" {
		result = e.attr(NamespaceCamunda, "resultVariable")
	}
	result = strings.TrimSpace(result)
	switch {
	case x.script != nil && x.bpmnScript != nil:
		im.probs.in(e, x.script, "the task has both a bpmn:script and a zeebe:script; keep one")
	case x.script != nil:
		if result == "" {
			im.probs.in(e, x.script, "a zeebe:script needs a resultVariable, as in Zeebe")
		}
		n.Script = &model.Script{Expression: strings.TrimSpace(x.script.attr("", "expression")), ResultVariable: result}
	case x.bpmnScript != nil && script.IsJavaScript(e.attr("", "scriptFormat")):
		src := strings.TrimSpace(x.bpmnScript.text)
		if src == "" {
			im.probs.in(e, x.bpmnScript, "the script is empty")
			return
		}
		n.Script = &model.Script{Expression: src, ResultVariable: result, Language: script.Language}
	case x.bpmnScript != nil:
		src, msg := scriptSource(e.attr("", "scriptFormat"), x.bpmnScript.text, true)
		if msg != "" {
			im.probs.in(e, x.bpmnScript, "%s", msg)
			return
		}
		n.Script = &model.Script{Expression: src, ResultVariable: result}
	default:
		res, ok := e.lookup(NamespaceCamunda, "resource")
		switch {
		case !ok:
		case !script.IsJavaScript(e.attr("", "scriptFormat")):
			im.probs.at(e, "scripts loaded from a resource (camunda:resource) are supported for JavaScript only")
		default:
			if src, ok := im.scriptResource(e, e, res); ok {
				n.Script = &model.Script{Expression: src, ResultVariable: result, Language: script.Language}
			}
		}
	}
}

// scriptSource turns a script or condition in the named language into an
// expression source: expr as written, feel with a leading '=', juel inside
// ${...}. JavaScript is refused here (script tasks take it before), and
// JVM languages (groovy, python, ...) by name; an absent language leaves
// the text to expression.DialectOf unless required.
func scriptSource(format, text string, required bool) (src, msg string) {
	text = strings.TrimSpace(text)
	switch f := strings.ToLower(strings.TrimSpace(format)); f {
	case "":
		if required {
			return "", "the script has no scriptFormat (want expr, feel or juel)"
		}
	case "expr", "expr-lang":
	case "feel", "http://www.omg.org/spec/feel/20140401":
		if text != "" && !strings.HasPrefix(text, "=") {
			text = "=" + text
		}
	case "juel":
		if text != "" && expression.DialectOf(text) != expression.JUEL {
			text = "${" + text + "}"
		}
	default:
		if script.IsJavaScript(f) {
			return "", "JavaScript is not supported here (it runs in script tasks, input and output parameters and conditions)"
		}
		return "", "script format " + strconv.Quote(format) + " needs a JVM script engine: not supported (javascript in script tasks, feel, juel and expr are)"
	}
	return text, ""
}
