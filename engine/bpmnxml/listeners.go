package bpmnxml

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/script"
)

// listenerDst is where the camunda:executionListener elements of the
// extensionElements being read go when they are not a node's: a
// process's or a sequence flow's (set around that im.extensions call).
type listenerDst struct {
	to   *[]model.Listener
	flow bool // a sequence flow: take listeners
}

// setVariableExpr matches a JUEL expression listener that sets one
// variable: ${execution.setVariable("name", value)} (or setVariableLocal;
// a task listener's task.setVariable too); value is the rest up to the
// closing parenthesis. setTaskExpr matches a task listener's
// ${task.setAssignee(value)} or ${task.setPriority(value)}.
var (
	setVariableExpr = regexp.MustCompile(`(?s)^[$#]\{\s*(execution|task)\s*\.\s*setVariable(Local)?\s*\(\s*(?:"([A-Za-z_$][\w$]*)"|'([A-Za-z_$][\w$]*)')\s*,(.*)\)\s*\}$`)
	setTaskExpr     = regexp.MustCompile(`(?s)^[$#]\{\s*task\s*\.\s*set(Assignee|Priority)\s*\((.*)\)\s*\}$`)
)

// executionListener imports Camunda 7's camunda:executionListener c of
// owner into dst (docs/scripts-listeners-connectors.md §2.2).
func (im *importer) executionListener(c, owner *elem, dst listenerDst) {
	event := strings.TrimSpace(c.attr("", "event"))
	switch {
	case event == "" && dst.flow:
		event = model.ListenTake
	case event == "":
		im.probs.in(owner, c, "an execution listener needs an event (start or end)")
		return
	case dst.flow && event != model.ListenTake:
		im.probs.in(owner, c, "a sequence flow's execution listener listens to take, not %q", event)
		return
	case !dst.flow && event != model.ListenStart && event != model.ListenEnd:
		im.probs.in(owner, c, "execution listener event %q: want start or end (take is a sequence flow's)", event)
		return
	}
	im.listener(c, owner, "an execution listener", event, dst.to)
}

// taskListener imports Camunda 7's camunda:taskListener c of user task
// owner into its node's task listeners (docs/usertasks.md).
func (im *importer) taskListener(c, owner *elem, n *model.Node) {
	event := strings.TrimSpace(c.attr("", "event"))
	switch event {
	case model.ListenCreate, model.ListenAssignment, model.ListenUpdate, model.ListenComplete, model.ListenDelete:
	case model.ListenTimeout:
		im.timeoutListener(c, owner, n)
		return
	case "":
		im.probs.in(owner, c, "a task listener needs an event (create, assignment, update, complete, delete or timeout)")
		return
	default:
		im.probs.in(owner, c, "task listener event %q: want create, assignment, update, complete, delete or timeout", event)
		return
	}
	im.listener(c, owner, "a task listener", event, &n.TaskListeners)
}

// timeoutListener imports timeout task listener c: its work, as any task
// listener's, and its timer, the timerEventDefinition inside it (Camunda
// 7 names the listener by its id).
func (im *importer) timeoutListener(c, owner *elem, n *model.Node) {
	var def *elem
	work := *c
	work.children = nil
	for _, k := range c.children {
		if k.is(NamespaceBPMN, "timerEventDefinition") && def == nil {
			def = k
			continue
		}
		work.children = append(work.children, k)
	}
	if def == nil {
		im.probs.in(owner, c, "a timeout task listener needs a timerEventDefinition (a timeDuration, timeDate or timeCycle)")
		return
	}
	before := len(im.probs.errs)
	tm := im.timerOf(owner, def)
	if tm == nil {
		if len(im.probs.errs) == before {
			im.probs.in(owner, def, "a timeout task listener's timerEventDefinition needs a timeDuration, timeDate or timeCycle")
		}
		return
	}
	from := len(n.TaskListeners)
	im.listener(&work, owner, "a task listener", model.ListenTimeout, &n.TaskListeners)
	for i := from; i < len(n.TaskListeners); i++ {
		n.TaskListeners[i].ID, n.TaskListeners[i].Timer = c.attr("", "id"), tm
	}
}

// listener reads the work of listener c (what names its kind in a
// problem) for event into dst: an expression — a setVariable call writes
// its value, a task listener's task.setAssignee or setPriority sets that
// field, any other expression is evaluated for its errors — or a
// camunda:script (JavaScript, inline or from the deployment; a script of
// any language made only of setVariable statements with literals). Java
// (class, delegateExpression, fields) is refused by name.
func (im *importer) listener(c, owner *elem, what, event string, dst *[]model.Listener) {
	for _, java := range []string{"class", "delegateExpression"} {
		if _, ok := c.lookup("", java); ok {
			im.probs.in(owner, c, "%s with camunda:%s runs Java code, which jetbpm cannot run: use an expression or a JavaScript script listener, or move the work to an external task", what, java)
			return
		}
	}
	expr, hasExpr := c.lookup("", "expression")
	var scr *elem
	for _, k := range c.children {
		switch {
		case k.is(NamespaceCamunda, "script") && scr == nil:
			scr = k
		case k.is(NamespaceCamunda, "field"):
			im.probs.in(owner, k, "camunda:field configures a Java listener class, which jetbpm cannot run")
			return
		default:
			im.probs.in(owner, k, "not supported inside %s", strings.TrimPrefix(strings.TrimPrefix(what, "an "), "a "))
			return
		}
	}
	switch {
	case hasExpr && scr != nil:
		im.probs.in(owner, c, "%s has an expression or a script, not both", what)
	case hasExpr:
		if l, ok := im.expressionListener(owner, c, expr, what); ok {
			l.Event = event
			*dst = append(*dst, l)
		}
	case scr != nil:
		for _, l := range im.scriptListener(owner, scr) {
			l.Event = event
			*dst = append(*dst, l)
		}
	default:
		im.probs.in(owner, c, "%s needs an expression or a camunda:script", what)
	}
}

func (im *importer) expressionListener(owner, c *elem, text, what string) (model.Listener, bool) {
	text = strings.TrimSpace(text)
	what = strings.TrimPrefix(strings.TrimPrefix(what, "an "), "a ")
	task := what == "task listener"
	var l model.Listener
	if m := setVariableExpr.FindStringSubmatch(text); m != nil && (task || m[1] == "execution") {
		l.Local, l.Set, text = m[2] != "", m[3]+m[4], "${"+strings.TrimSpace(m[5])+"}"
	} else if m := setTaskExpr.FindStringSubmatch(text); m != nil && task {
		l.Field, text = strings.ToLower(m[1]), "${"+strings.TrimSpace(m[2])+"}"
	} else if strings.Contains(text, "setVariable") || task && strings.Contains(text, "task.set") {
		calls := `${execution.setVariable("name", value)} (or setVariableLocal)`
		if task {
			calls = `${execution.setVariable("name", value)}, ${task.setVariable("name", value)}, ${task.setAssignee(value)} and ${task.setPriority(value)}`
		}
		im.probs.in(owner, c, "%s expression %q: the calls jetbpm runs here are %s, each alone in the expression", what, text, calls)
		return l, false
	}
	src, isExpr, err := juelText(text)
	switch {
	case err != nil:
		im.probs.in(owner, c, "%s expression: %v", what, err)
		return l, false
	case !isExpr:
		im.probs.in(owner, c, "%s expression %q is not an expression (want ${...})", what, text)
		return l, false
	}
	l.Source = src
	return l, true
}

// scriptListener reads a listener's camunda:script s: one JavaScript
// listener, or one listener per setVariable statement of a script in
// another language; nil when a problem was reported.
func (im *importer) scriptListener(owner, s *elem) []model.Listener {
	format := s.attr("", "scriptFormat")
	if script.IsJavaScript(format) {
		var src string
		ok := true
		if res, fromFile := s.lookup("", "resource"); fromFile {
			src, ok = im.scriptResource(owner, s, res)
		} else if src = strings.TrimSpace(s.text); src == "" {
			im.probs.in(owner, s, "the listener's script is empty")
			ok = false
		}
		if !ok {
			return nil
		}
		return []model.Listener{{Source: src, Language: script.Language}}
	}
	if _, ok := s.lookup("", "resource"); ok {
		im.probs.in(owner, s, "scripts loaded from a resource are supported for JavaScript only")
		return nil
	}
	if sets, ok := setVariableScript(s.text); ok {
		ls := make([]model.Listener, len(sets))
		for i, m := range sets {
			ls[i] = model.Listener{Set: m.Target, Source: m.Source}
		}
		return ls
	}
	src, msg := scriptSource(format, s.text, true)
	if msg == "" && src == "" {
		msg = "the listener's script is empty"
	}
	if msg != "" {
		im.probs.in(owner, s, "%s", msg)
		return nil
	}
	return []model.Listener{{Source: src}}
}

// zeebeListeners reads Zeebe's execution listeners (jobs) of a node or
// a process into dst:
//
//	<zeebe:executionListeners>
//	  <zeebe:executionListener eventType="start" type="audit" retries="3"/>
//	</zeebe:executionListeners>
//
// The job type and retries are constants (a FEEL string or number
// literal too); where a listener may run is the model's to check.
func (im *importer) zeebeListeners(c, owner *elem, dst *[]model.JobListener) {
	*dst = append(*dst, im.jobListeners(c, owner, "executionListener")...)
}

// zeebeTaskListeners reads a user task's Zeebe task listeners (jobs):
// <zeebe:taskListeners><zeebe:taskListener eventType="completing"
// type="audit" retries="3"/></zeebe:taskListeners>.
func (im *importer) zeebeTaskListeners(c, owner *elem, n *model.Node) {
	n.TaskJobListeners = append(n.TaskJobListeners, im.jobListeners(c, owner, "taskListener")...)
}

// jobListeners reads the <zeebe:NAME> listeners inside c.
func (im *importer) jobListeners(c, owner *elem, name string) []model.JobListener {
	var out []model.JobListener
	for _, l := range c.children {
		if !l.is(NamespaceZeebe, name) {
			if l.name.Space == NamespaceZeebe {
				im.probs.in(owner, l, "not supported inside zeebe:%s", c.name.Local)
			}
			continue
		}
		jl := model.JobListener{Event: strings.TrimSpace(l.attr("", "eventType"))}
		if name == "taskListener" && jl.Event == "canceling" {
			im.probs.in(owner, l, "eventType canceling: canceling listeners are not run yet")
			continue
		}
		typ, ok := feelConst(l.attr("", "type"))
		switch {
		case !ok:
			jl.TypeExpr = strings.TrimSpace(l.attr("", "type")) // evaluated as the listener runs
		case typ == "":
			im.probs.in(owner, l, "has no type (the job type a worker fetches)")
			continue
		default:
			jl.Type = typ
		}
		if r, present := l.lookup("", "retries"); present && strings.TrimSpace(r) != "" {
			v, ok := feelConst(r)
			count, err := strconv.Atoi(v)
			switch {
			case !ok:
				jl.RetriesExpr = strings.TrimSpace(r) // evaluated as the listener runs
			case err != nil || count < 1:
				im.probs.in(owner, l, "retries %q must be a positive integer", r)
				continue
			default:
				jl.Retries = count
			}
		}
		out = append(out, jl)
	}
	return out
}
