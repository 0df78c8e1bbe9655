package bpmnxml

import (
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
)

// User tasks. Both dialects say who may do the task, when it is due, how
// urgent it is and which form shows it; they become model.Human, whose
// fields are expressions (a static value is a literal expression):
//
//	<bpmn:userTask id="review" camunda:assignee="${requester}" camunda:candidateGroups="sales, ops"
//	               camunda:dueDate="2025-06-30T17:00:00Z" camunda:priority="70" camunda:formKey="embedded:app:review.html"/>
//
//	<bpmn:userTask id="review">
//	  <bpmn:extensionElements>
//	    <zeebe:userTask/>
//	    <zeebe:assignmentDefinition assignee="=requester" candidateGroups="sales, ops"/>
//	    <zeebe:taskSchedule dueDate="2025-06-30T17:00:00Z" followUpDate="=followUp"/>
//	    <zeebe:priorityDefinition priority="70"/>
//	    <zeebe:formDefinition formId="review-form"/>
//	  </bpmn:extensionElements>
//	</bpmn:userTask>
//
// Camunda 7's ${...} and Zeebe's =FEEL are kept as written; any other text
// is static. Camunda 7's BPMN-standard humanPerformer and potentialOwner
// (resourceAssignmentExpression forms) say the same as camunda:assignee and
// the candidate lists.

// zeebeHuman are the Zeebe extension elements of a user task, each at most
// once; zeebe:userTask only marks a Camunda user task (as opposed to a
// job-based one), which jetbpm runs the same way.
var zeebeHuman = set("userTask", "assignmentDefinition", "taskSchedule", "priorityDefinition", "formDefinition")

// keepZeebeHuman records Zeebe user task element c of user task owner.
func (im *importer) keepZeebeHuman(c, owner *elem, x *nodeExt) {
	if x.zeebeHuman[c.name.Local] != nil {
		im.probs.in(owner, c, "appears twice in the userTask; keep one")
		return
	}
	if x.zeebeHuman == nil {
		x.zeebeHuman = map[string]*elem{}
	}
	x.zeebeHuman[c.name.Local] = c
}

// humanReader reads the Human of one user task e.
type humanReader struct {
	im   *importer
	e    *elem
	h    model.Human
	by   [model.PriorityField + 1]string // what set each expression field, for "set twice"
	form string                          // what set the form
}

// userTask reads the assignment, schedule, priority and form of user task
// e into n.Human, nil when the task says nothing about them.
func (im *importer) userTask(e *elem, n *model.Node, x *nodeExt) {
	r := &humanReader{im: im, e: e}
	if _, ok := e.lookup(NamespaceCamunda, "formHandlerClass"); ok {
		r.report(e, "camunda:formHandlerClass runs Java code on the task's form; not supported (the form is the tasklist client's)")
	}
	// Camunda 7's attributes are named as the fields.
	for f := model.AssigneeField; f <= model.PriorityField; f++ {
		if v, ok := e.lookup(NamespaceCamunda, f.String()); ok {
			src, msg := camunda7Value(v, f)
			r.field(e, f, "camunda:"+f.String(), v, src, msg)
		}
	}
	r.form7()
	r.formData(x.formData)
	r.performers(x.performers)
	if z := x.zeebeHuman; z != nil {
		r.zeebe(z["assignmentDefinition"], model.AssigneeField, model.CandidateUsersField, model.CandidateGroupsField)
		r.zeebe(z["taskSchedule"], model.DueDateField, model.FollowUpDateField)
		r.zeebe(z["priorityDefinition"], model.PriorityField)
		r.zeebeForm(z["formDefinition"])
	}
	if r.h != (model.Human{}) {
		n.Human = &r.h
	}
}

func (r *humanReader) report(at *elem, format string, args ...any) {
	if at == r.e {
		r.im.probs.at(r.e, format, args...)
	} else {
		r.im.probs.in(r.e, at, format, args...)
	}
}

// field sets field f to src, the expression that what (an attribute,
// written v) says; msg is why v was refused.
func (r *humanReader) field(at *elem, f model.HumanField, what, v, src, msg string) {
	switch {
	case msg != "":
		r.report(at, "%s=%q: %s", what, v, msg)
		return
	case src == "":
		return // empty: not set
	case r.by[f] != "":
		r.report(at, "%s: the %s is already set by %s; keep one", what, f, r.by[f])
		return
	}
	if _, err := expression.Compile(src); err != nil {
		r.report(at, "%s=%q: %v", what, v, err)
		return
	}
	r.by[f] = what
	*humanField(&r.h, f) = src
}

func humanField(h *model.Human, f model.HumanField) *string {
	switch f {
	case model.AssigneeField:
		return &h.Assignee
	case model.CandidateUsersField:
		return &h.CandidateUsers
	case model.CandidateGroupsField:
		return &h.CandidateGroups
	case model.DueDateField:
		return &h.DueDate
	case model.FollowUpDateField:
		return &h.FollowUpDate
	}
	return &h.Priority
}

// form7 reads Camunda 7's camunda:formKey or camunda:formRef (a Camunda
// Form's id, as Zeebe's formId); formRefBinding and formRefVersion stay in
// Node.Extensions.
func (r *humanReader) form7() {
	if v, ok := r.e.lookup(NamespaceCamunda, "formKey"); ok {
		r.setForm(r.e, "camunda:formKey", &r.h.FormKey, v)
	}
	if v, ok := r.e.lookup(NamespaceCamunda, "formRef"); ok {
		r.setForm(r.e, "camunda:formRef", &r.h.FormID, v)
	}
}

func (r *humanReader) setForm(at *elem, what string, dst *string, v string) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		r.report(at, "%s is empty", what)
	case r.form != "":
		r.report(at, "%s: the form is already named by %s; keep one", what, r.form)
	default:
		r.form = what
		*dst = v
	}
}

// zeebe reads fields from the attributes of Zeebe element c (nil: absent),
// named as the fields.
func (r *humanReader) zeebe(c *elem, fields ...model.HumanField) {
	if c == nil {
		return
	}
	for _, f := range fields {
		if v, ok := c.lookup("", f.String()); ok {
			src, msg := zeebeValue(v, f)
			r.field(c, f, f.String(), v, src, msg)
		}
	}
}

// zeebeForm reads zeebe:formDefinition: one of formKey (job-based user
// tasks, e.g. "camunda-forms:bpmn:userTaskForm_1" naming a
// zeebe:userTaskForm of the file, kept as written and its form read:
// forms.go), formId (a deployed
// Camunda Form) or externalReference (a URL or any text the tasklist
// client understands). bindingType and versionTag say which version of a
// formId; jetbpm passes the id on and does not resolve forms.
func (r *humanReader) zeebeForm(c *elem) {
	if c == nil {
		return
	}
	named := false
	for _, a := range []struct {
		attr string
		dst  *string
	}{{"formKey", &r.h.FormKey}, {"formId", &r.h.FormID}, {"externalReference", &r.h.ExternalReference}} {
		if v, ok := c.lookup("", a.attr); ok {
			r.setForm(c, a.attr, a.dst, v)
			named = true
			if a.attr == "formKey" {
				r.embeddedForm(c, v)
			}
		}
	}
	if !named {
		r.report(c, "names no form: give formKey, formId or externalReference")
	}
}

// performers reads Camunda 7's BPMN-standard assignment: a humanPerformer
// (the assignee) and potentialOwners (candidates: "user(kermit),
// group(management), sales", a bare name being a group; several
// potentialOwners add up), each holding a formalExpression in a
// resourceAssignmentExpression. A performer that only names a <resource>
// by resourceRef is descriptive, as in Camunda 7.
func (r *humanReader) performers(ps []*elem) {
	var users, groups []string
	var at *elem // the first potentialOwner's expression
	for _, p := range ps {
		expr := formalExpression(p)
		if expr == nil {
			continue
		}
		text := strings.TrimSpace(expr.text)
		if p.name.Local == "humanPerformer" {
			src, msg := camunda7Value(text, model.AssigneeField)
			r.field(expr, model.AssigneeField, "bpmn:humanPerformer", text, src, msg)
			continue
		}
		if strings.Contains(text, "${") || strings.Contains(text, "#{") {
			r.report(expr, "potentialOwner %q: expressions are not supported here; use camunda:candidateUsers or camunda:candidateGroups", text)
			continue
		}
		if at == nil {
			at = expr
		}
		for _, item := range strings.Split(text, ",") {
			item = strings.TrimSpace(item)
			list := &groups
			for _, k := range []struct {
				prefix string
				list   *[]string
			}{{"user(", &users}, {"group(", &groups}} {
				if strings.HasPrefix(item, k.prefix) && strings.HasSuffix(item, ")") {
					item, list = strings.TrimSpace(item[len(k.prefix):len(item)-1]), k.list
				}
			}
			if item != "" {
				*list = append(*list, item)
			}
		}
	}
	for _, c := range []struct {
		f     model.HumanField
		names []string
	}{{model.CandidateUsersField, users}, {model.CandidateGroupsField, groups}} {
		if len(c.names) > 0 {
			v := strings.Join(c.names, ", ")
			r.field(at, c.f, "bpmn:potentialOwner", v, expression.Literal(v), "")
		}
	}
}

// formalExpression is the formalExpression of performer p's
// resourceAssignmentExpression, nil when it has none.
func formalExpression(p *elem) *elem {
	for _, c := range p.children {
		if c.is(NamespaceBPMN, "resourceAssignmentExpression") {
			for _, f := range c.children {
				if f.is(NamespaceBPMN, "formalExpression") || f.is(NamespaceBPMN, "expression") {
					return f
				}
			}
		}
	}
	return nil
}

// camunda7Value turns a Camunda 7 attribute into field f's expression: a
// whole ${...} or #{...} as written, other text static; "" when empty.
// msg says why v is refused.
func camunda7Value(v string, f model.HumanField) (src, msg string) {
	t := strings.TrimSpace(v)
	switch {
	case t == "":
		return "", ""
	case strings.Contains(t, "${") || strings.Contains(t, "#{"):
		src, _, err := juelText(t)
		if err != nil {
			return "", err.Error()
		}
		return src, ""
	}
	return staticValue(t, f)
}

// zeebeValue turns a Zeebe attribute into field f's expression: =FEEL as
// written, other text static; "" when empty.
func zeebeValue(v string, f model.HumanField) (src, msg string) {
	t := strings.TrimSpace(v)
	switch {
	case t == "":
		return "", ""
	case strings.HasPrefix(t, "="):
		return t, ""
	}
	return staticValue(t, f)
}

// staticValue is the literal expression of static text t for field f: an
// integer from 0 to 100 for the priority, an ISO 8601 date-time with a
// time zone for the dates, a string otherwise (a candidate list stays one
// comma-separated string).
func staticValue(t string, f model.HumanField) (src, msg string) {
	switch f {
	case model.PriorityField:
		p, err := strconv.Atoi(t)
		if err != nil || p < 0 || p > 100 {
			return "", "the priority is an integer from 0 to 100"
		}
		return strconv.Itoa(p), ""
	case model.DueDateField, model.FollowUpDateField:
		if strings.HasPrefix(t, "P") {
			return "", "relative dates (ISO 8601 durations) are not supported; write a date-time such as 2025-06-30T17:00:00Z, or an expression"
		}
		if _, err := time.Parse(time.RFC3339, t); err != nil {
			return "", "not an ISO 8601 date-time with a time zone, such as 2025-06-30T17:00:00Z or 2025-06-30T19:00:00+02:00"
		}
	}
	return expression.Literal(t), ""
}
