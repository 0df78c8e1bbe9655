package bpmnxml

import (
	"encoding/xml"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
	"github.com/jetbpm/jetbpm/jobs"
)

// jetbpmElements are the jetbpm extension elements of a service task (or
// of a send task or message throw event run as a job), in the order they
// are applied; each configures the external job (model.Worker) and may
// appear once.
var jetbpmElements = []string{"worker", "retryPolicy", "errorMapper", "outputMapping", "status"}

// jetbpmExt collects a jetbpm extension element of a flow node; it is
// applied by finish, once the node's vendor extensions have said whether
// the task is external. jetbpm:incidentRetry may be on any activity,
// jetbpm:publish on a message throw; the other elements configure an
// external job.
func (im *importer) jetbpmExt(c, owner *elem, t *extTarget) {
	local := c.name.Local
	if local == "incidentRetry" {
		switch {
		case t == nil:
			im.probs.in(owner, c, "not supported on a %s; it configures an activity", owner.name.Local)
		case !t.node.Kind.IsActivity():
			im.probs.in(owner, c, "applies to activities only (tasks, sub-processes, call activities)")
		case t.ext.jetbpm[local] != nil:
			im.probs.in(owner, c, "appears twice in the %s; keep one", owner.name.Local)
		default:
			t.ext.keepJetbpm(c)
		}
		return
	}
	if local == "publish" {
		switch {
		case t == nil:
			im.probs.in(owner, c, "not supported on a %s; it publishes the message of a message throw", owner.name.Local)
		case !throws(t.node):
			im.probs.in(owner, c, "applies to send tasks and message throw events (intermediate throw and end events with a messageEventDefinition) only")
		case t.ext.jetbpm[local] != nil:
			im.probs.in(owner, c, "appears twice in the %s; keep one", owner.name.Local)
		default:
			t.ext.keepJetbpm(c)
		}
		return
	}
	switch {
	case !slices.Contains(jetbpmElements, local):
		im.probs.in(owner, c, "unknown jetbpm extension element")
	case t == nil:
		im.probs.in(owner, c, "not supported on a %s; it configures an external service task", owner.name.Local)
	case t.node.Kind != model.ServiceTask && !throws(t.node):
		im.probs.in(owner, c, "applies to external service tasks, send tasks and message throw events only")
	case t.ext.jetbpm[local] != nil:
		im.probs.in(owner, c, "appears twice in the task; keep one")
	default:
		t.ext.keepJetbpm(c)
	}
}

// keepJetbpm records jetbpm extension element c for finish.
func (x *nodeExt) keepJetbpm(c *elem) {
	if x.jetbpm == nil {
		x.jetbpm = map[string]*elem{}
	}
	x.jetbpm[c.name.Local] = c
}

// jetbpmWorker applies a service task's jetbpm extension elements. It runs
// after zeebeWorker: camunda:type="external", zeebe:taskDefinition or a
// jetbpm:worker topic make the task external, and only an external task
// takes job options.
func (im *importer) jetbpmWorker(e *elem, n *model.Node, x *nodeExt) {
	s := n.Service
	if c := x.jetbpm["worker"]; c != nil {
		im.workerElem(e, c, s)
	}
	if s.Worker == nil {
		if x.jetbpm["worker"] != nil {
			return // its problem is reported
		}
		why := "job options apply to external service tasks only; this task runs in process"
		switch {
		case n.Kind == model.ServiceTask:
		case s.Operation != "":
			why = "job options apply to external jobs only; this " + string(n.Kind) + " runs in process"
		default:
			why = "job options apply to external jobs only; this " + string(n.Kind) + " runs no job"
		}
		for _, local := range jetbpmElements[1:] {
			if c := x.jetbpm[local]; c != nil {
				im.probs.in(e, c, "%s (make it external with camunda:type=\"external\", zeebe:taskDefinition or jetbpm:worker topic)", why)
			}
		}
		return
	}
	w := s.Worker
	if c := x.jetbpm["retryPolicy"]; c != nil {
		im.retryPolicy(e, c, w)
	}
	if c := x.jetbpm["status"]; c != nil {
		im.status(e, c, w)
	}
	if c := x.jetbpm["errorMapper"]; c != nil {
		im.errorMapper(e, c, w)
	}
	if c := x.jetbpm["outputMapping"]; c != nil {
		im.outputMapping(e, c, w)
	}
	if w.Options.Mapper != "" && w.Options.Trust == jobs.WorkerTrusted {
		im.probs.in(e, x.jetbpm["worker"], "trust=%q contradicts the custom error mapper %q, which runs in the engine only; use trust=%q or omit trust",
			jobs.WorkerTrusted, w.Options.Mapper, jobs.EngineAuthoritative)
	}
}

// workerElem reads <jetbpm:worker topic trust lockDuration
// maxLockDuration/>. With a topic it makes the task external; without one
// it configures a task made external by camunda:type or
// zeebe:taskDefinition.
func (im *importer) workerElem(e, c *elem, s *model.Service) {
	a, ok := im.jetbpmAttrs(e, c, "topic", "trust", "lockDuration", "maxLockDuration")
	if !ok {
		return
	}
	im.noChildren(e, c)
	if topic, has := a["topic"]; has {
		switch {
		case strings.TrimSpace(topic) == "":
			im.probs.in(e, c, "topic is empty")
			return
		case s.Worker != nil:
			im.probs.in(e, c, "the task is already external (camunda:type=\"external\" or zeebe:taskDefinition); keep one topic")
			return
		}
		s.Worker = &model.Worker{Topic: strings.TrimSpace(topic)}
	} else if s.Worker == nil {
		im.probs.in(e, c, "has no topic and the task is not external otherwise; add topic=\"...\"")
		return
	}
	o := &s.Worker.Options
	if v, has := a["trust"]; has {
		switch t := jobs.Trust(v); t {
		case jobs.WorkerTrusted, jobs.EngineAuthoritative:
			o.Trust = t
		default:
			im.probs.in(e, c, "trust=%q is neither %q nor %q", v, jobs.WorkerTrusted, jobs.EngineAuthoritative)
		}
	}
	for _, name := range []string{"lockDuration", "maxLockDuration"} {
		v, has := a[name]
		if !has {
			continue
		}
		d, msg := clockDuration(v)
		if msg == "" && d <= 0 {
			msg = "must be positive"
		}
		if msg != "" {
			im.probs.in(e, c, "%s=%q: %s", name, v, msg)
			continue
		}
		if name == "lockDuration" {
			o.LockDuration = d
		} else {
			o.MaxLockDuration = d
		}
	}
	if o.LockDuration > 0 && o.MaxLockDuration > 0 && o.MaxLockDuration < o.LockDuration {
		im.probs.in(e, c, "maxLockDuration %s is shorter than lockDuration %s", o.MaxLockDuration, o.LockDuration)
	}
}

// status reads <jetbpm:status variable="..." overwrite="false"/>.
func (im *importer) status(e, c *elem, w *model.Worker) {
	a, ok := im.jetbpmAttrs(e, c, "variable", "overwrite")
	if !ok {
		return
	}
	im.noChildren(e, c)
	v := strings.TrimSpace(a["variable"])
	if !isIdentifier(v) {
		im.probs.in(e, c, "variable=%q is not a variable name", a["variable"])
		return
	}
	over, ok := im.boolean(e, c, a, "overwrite")
	if !ok {
		return
	}
	w.Options.Status, w.Options.StatusOverwrite = v, over
}

// ruleOutcomes are the attributes of a jetbpm:rule that choose its outcome;
// a rule has exactly one.
var ruleOutcomes = []string{"bpmnError", "status", "statusFrom", "technical"}

// errorMapper reads <jetbpm:errorMapper custom="name"?> and its
// <jetbpm:rule> children.
func (im *importer) errorMapper(e, c *elem, w *model.Worker) {
	a, ok := im.jetbpmAttrs(e, c, "custom")
	if !ok {
		return
	}
	custom, hasCustom := a["custom"]
	custom = strings.TrimSpace(custom)
	if hasCustom && custom == "" {
		im.probs.in(e, c, "custom is empty; name an ErrorMapper registered with the engine")
		return
	}
	var rules []jobs.Rule
	bad := false
	for _, r := range c.children {
		if !r.is(Namespace, "rule") {
			im.probs.in(e, r, "not supported inside jetbpm:errorMapper (only jetbpm:rule)")
			bad = true
			continue
		}
		rule, ok := im.rule(e, r, w)
		bad = bad || !ok
		rules = append(rules, rule)
	}
	switch {
	case bad:
		return
	case custom != "" && len(rules) > 0:
		im.probs.in(e, c, "has both custom=%q and rules; a custom mapper replaces the rules, keep one", custom)
		return
	case custom == "" && len(rules) == 0:
		im.probs.in(e, c, "has no jetbpm:rule and no custom mapper")
		return
	}
	if err := jobs.ValidateRules(rules); err != nil { // checked per rule already
		im.probs.in(e, c, "%v", err)
		return
	}
	w.Options.Rules, w.Options.Mapper = rules, custom
}

// rule reads one <jetbpm:rule code? when? (bpmnError message? | status |
// statusFrom | technical="true")/>.
func (im *importer) rule(e, r *elem, w *model.Worker) (jobs.Rule, bool) {
	a, ok := im.jetbpmAttrs(e, r, "code", "when", "bpmnError", "message", "status", "statusFrom", "technical")
	if !ok {
		return jobs.Rule{}, false
	}
	im.noChildren(e, r)
	var outcomes []string
	for _, o := range ruleOutcomes {
		if has(a, o) {
			outcomes = append(outcomes, o)
		}
	}
	if len(outcomes) != 1 {
		what := "none"
		if len(outcomes) > 1 {
			what = strings.Join(outcomes, ", ")
		}
		im.probs.in(e, r, "a rule has exactly one outcome: bpmnError, status, statusFrom or technical=\"true\" (got %s)", what)
		return jobs.Rule{}, false
	}
	rule := jobs.Rule{}
	ok = true
	for _, name := range []string{"code", "when", "bpmnError", "status", "statusFrom"} {
		if v, has := a[name]; has && strings.TrimSpace(v) == "" {
			im.probs.in(e, r, "%s is empty", name)
			ok = false
		}
	}
	rule.Code = strings.TrimSpace(a["code"])
	rule.When = strings.TrimSpace(a["when"])
	if rule.When != "" {
		if _, err := expression.Compile(rule.When); err != nil {
			im.probs.in(e, r, "when=%q: %v", rule.When, err)
			ok = false
		}
	}
	if has(a, "message") && outcomes[0] != "bpmnError" {
		im.probs.in(e, r, "message applies to a bpmnError rule only")
		ok = false
	}
	switch outcomes[0] {
	case "bpmnError":
		rule.Outcome, rule.ErrorCode, rule.Message = jobs.BusinessError, strings.TrimSpace(a["bpmnError"]), a["message"]
	case "status", "statusFrom":
		rule.Outcome, rule.Value, rule.ValueFrom = jobs.BusinessStatus, strings.TrimSpace(a["status"]), strings.TrimSpace(a["statusFrom"])
		if rule.ValueFrom != "" {
			if _, err := expression.Compile(rule.ValueFrom); err != nil {
				im.probs.in(e, r, "statusFrom=%q: %v", rule.ValueFrom, err)
				ok = false
			}
		}
		if w.Options.Status == "" {
			im.probs.in(e, r, "a status outcome needs <jetbpm:status variable=\"...\"/> on the task, the variable it writes")
			ok = false
		}
	case "technical":
		if v := strings.TrimSpace(a["technical"]); v != "true" {
			im.probs.in(e, r, "technical=%q: write technical=\"true\" (a rule that is not technical names bpmnError or status)", a["technical"])
			ok = false
		}
		rule.Outcome = jobs.Technical
	}
	return rule, ok
}

// outputMapping reads <jetbpm:outputMapping> and its <jetbpm:output path
// variable required?/> children.
func (im *importer) outputMapping(e, c *elem, w *model.Worker) {
	if _, ok := im.jetbpmAttrs(e, c); !ok {
		return
	}
	var outs []jobs.OutputRule
	seen := map[string]bool{}
	bad := false
	for _, o := range c.children {
		if !o.is(Namespace, "output") {
			im.probs.in(e, o, "not supported inside jetbpm:outputMapping (only jetbpm:output)")
			bad = true
			continue
		}
		a, ok := im.jetbpmAttrs(e, o, "path", "variable", "required")
		if !ok {
			bad = true
			continue
		}
		im.noChildren(e, o)
		r := jobs.OutputRule{Path: strings.TrimSpace(a["path"]), Variable: strings.TrimSpace(a["variable"])}
		switch {
		case !isIdentifier(r.Variable):
			im.probs.in(e, o, "variable=%q is not a variable name", a["variable"])
			bad = true
		case seen[r.Variable]:
			im.probs.in(e, o, "variable %q is mapped twice", r.Variable)
			bad = true
		case r.Path == "":
			im.probs.in(e, o, "variable %q has no path (e.g. path=\"body.data.id\")", r.Variable)
			bad = true
		default:
			if _, err := expression.Compile(r.Path); err != nil {
				im.probs.in(e, o, "path=%q: %v", r.Path, err)
				bad = true
			}
		}
		seen[r.Variable] = true
		if r.Required, ok = im.boolean(e, o, a, "required"); !ok {
			bad = true
		}
		outs = append(outs, r)
	}
	switch {
	case bad:
		return
	case len(outs) == 0:
		im.probs.in(e, c, "has no jetbpm:output")
		return
	}
	if _, err := jobs.CompileOutputs(outs); err != nil { // checked per output already
		im.probs.in(e, c, "%v", err)
		return
	}
	w.Options.Outputs = outs
}

// jetbpmAttrs returns the unqualified attributes of jetbpm element c,
// refusing any not in allowed. Namespace declarations and other tools'
// attributes are ignored; jetbpm-qualified ones are refused.
func (im *importer) jetbpmAttrs(owner, c *elem, allowed ...string) (map[string]string, bool) {
	out := map[string]string{}
	ok := true
	for _, at := range c.attrs {
		switch {
		case isNamespaceDecl(at.Name):
		case at.Name.Space == "" && slices.Contains(allowed, at.Name.Local):
			out[at.Name.Local] = at.Value
		case at.Name.Space == "" || at.Name.Space == Namespace:
			want := "no attributes"
			if len(allowed) > 0 {
				want = "attributes " + strings.Join(allowed, ", ")
			}
			im.probs.in(owner, c, "unknown attribute %s (%s takes %s)", qualify(at.Name), c.tag(), want)
			ok = false
		}
	}
	return out, ok
}

func isNamespaceDecl(n xml.Name) bool {
	return n.Space == "xmlns" || n.Space == "" && n.Local == "xmlns"
}

// noChildren refuses child elements of a jetbpm element that has none.
func (im *importer) noChildren(owner, c *elem) {
	for _, ch := range c.children {
		im.probs.in(owner, ch, "not supported inside %s", c.tag())
	}
}

// boolean reads an optional xs:boolean attribute, false when absent.
func (im *importer) boolean(owner, c *elem, a map[string]string, name string) (bool, bool) {
	v, present := a[name]
	if !present {
		return false, true
	}
	switch strings.TrimSpace(v) {
	case "true", "1":
		return true, true
	case "false", "0":
		return false, true
	}
	im.probs.in(owner, c, "%s=%q is not a boolean (true or false)", name, v)
	return false, false
}

// clockDuration reads an ISO-8601 duration in hours, minutes and seconds
// (PT30S, PT1M30S, PT0.5S); msg explains a refusal.
func clockDuration(v string) (time.Duration, string) {
	p, err := model.ParsePeriod(strings.TrimSpace(v))
	switch {
	case err != nil:
		return 0, err.Error()
	case p.Years != 0 || p.Months != 0 || p.Days != 0:
		return 0, "use hours, minutes and seconds only (e.g. PT30S, PT2H)"
	}
	return p.Clock, ""
}

func has(a map[string]string, name string) bool {
	_, ok := a[name]
	return ok
}

// isIdentifier reports whether s is a variable name: a letter or '_', then
// letters, digits and '_' (as jobs' output variables).
func isIdentifier(s string) bool {
	for i, c := range s {
		if !(c == '_' || unicode.IsLetter(c) || i > 0 && unicode.IsDigit(c)) {
			return false
		}
	}
	return s != ""
}
