package bpmnxml

import (
	"regexp"
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
// variable: ${execution.setVariable("name", value)} (or setVariableLocal);
// value is the rest up to the closing parenthesis.
var setVariableExpr = regexp.MustCompile(`(?s)^[$#]\{\s*execution\s*\.\s*setVariable(Local)?\s*\(\s*(?:"([A-Za-z_$][\w$]*)"|'([A-Za-z_$][\w$]*)')\s*,(.*)\)\s*\}$`)

// executionListener imports Camunda 7's camunda:executionListener c of
// owner into dst (docs/scripts-listeners-connectors.md §2.2): an
// expression — execution.setVariable("name", value) writes value, any
// other expression is evaluated for its errors — or a camunda:script
// (JavaScript, inline or from the deployment; a script of any language
// made only of setVariable statements with literals). Java (class,
// delegateExpression) is refused by name.
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
	for _, java := range []string{"class", "delegateExpression"} {
		if _, ok := c.lookup("", java); ok {
			im.probs.in(owner, c, "an execution listener with camunda:%s runs Java code, which jetbpm cannot run: use an expression or a JavaScript script listener, or move the work to an external task", java)
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
			im.probs.in(owner, k, "not supported inside an execution listener")
			return
		}
	}
	switch {
	case hasExpr && scr != nil:
		im.probs.in(owner, c, "an execution listener has an expression or a script, not both")
	case hasExpr:
		if l, ok := im.expressionListener(owner, c, expr); ok {
			l.Event = event
			*dst.to = append(*dst.to, l)
		}
	case scr != nil:
		for _, l := range im.scriptListener(owner, scr) {
			l.Event = event
			*dst.to = append(*dst.to, l)
		}
	default:
		im.probs.in(owner, c, "an execution listener needs an expression or a camunda:script")
	}
}

func (im *importer) expressionListener(owner, c *elem, text string) (model.Listener, bool) {
	text = strings.TrimSpace(text)
	var l model.Listener
	if m := setVariableExpr.FindStringSubmatch(text); m != nil {
		l.Local, l.Set, text = m[1] != "", m[2]+m[3], "${"+strings.TrimSpace(m[4])+"}"
	} else if strings.Contains(text, "setVariable") {
		im.probs.in(owner, c, `execution listener expression %q: the one call jetbpm runs here is ${execution.setVariable("name", value)} (or setVariableLocal), alone in the expression`, text)
		return l, false
	}
	src, isExpr, err := juelText(text)
	switch {
	case err != nil:
		im.probs.in(owner, c, "execution listener expression: %v", err)
		return l, false
	case !isExpr:
		im.probs.in(owner, c, "execution listener expression %q is not an expression (want ${...})", text)
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
