package model

import (
	"strings"

	"github.com/jetbpm/jetbpm/expression"
)

// Human is the work of a user task. Every field but the form is an
// expression, evaluated when the task is created (a static value is a
// literal expression: `"alice"`, `["sales", "ops"]`):
//
//   - Assignee: a string, the user the task is assigned to.
//   - CandidateUsers, CandidateGroups: a list of strings, or one string
//     holding a comma-separated list.
//   - DueDate, FollowUpDate: an ISO 8601 date-time string (or a time).
//   - Priority: an integer from 0 to 100; without one, 50.
//
// FormKey, FormID and ExternalReference name the task's form as the
// modeller wrote it (Camunda 7 formKey, Zeebe formId or
// externalReference); jetbpm passes them on. Form is the form the file
// itself holds, as a Camunda Forms (form-js) JSON schema: a
// zeebe:userTaskForm the formKey names, or one made from Camunda 7's
// camunda:formData (docs/forms.md); "" for none.
type Human struct {
	Assignee        string `msgpack:"assignee,omitempty"`
	CandidateUsers  string `msgpack:"candidateUsers,omitempty"`
	CandidateGroups string `msgpack:"candidateGroups,omitempty"`
	DueDate         string `msgpack:"dueDate,omitempty"`
	FollowUpDate    string `msgpack:"followUpDate,omitempty"`
	Priority        string `msgpack:"priority,omitempty"`

	FormKey           string `msgpack:"formKey,omitempty"`
	FormID            string `msgpack:"formId,omitempty"`
	ExternalReference string `msgpack:"externalReference,omitempty"`
	Form              string `msgpack:"form,omitempty"`

	compiled [humanFields]*expression.Expression
}

// HumanField names one expression field of a Human.
type HumanField int

// The expression fields of a Human, in the order Compiled takes them.
const (
	AssigneeField HumanField = iota
	CandidateUsersField
	CandidateGroupsField
	DueDateField
	FollowUpDateField
	PriorityField
	humanFields
)

// String is the field's name as in BPMN and the task record.
func (f HumanField) String() string {
	return [...]string{"assignee", "candidateUsers", "candidateGroups", "dueDate", "followUpDate", "priority"}[f]
}

func (h *Human) source(f HumanField) string {
	return [...]string{h.Assignee, h.CandidateUsers, h.CandidateGroups, h.DueDate, h.FollowUpDate, h.Priority}[f]
}

// Compiled returns field f's compiled expression, nil when it is not set.
func (h *Human) Compiled(f HumanField) *expression.Expression { return h.compiled[f] }

// WithHuman sets a user task's assignment, schedule, priority and form.
func WithHuman(h Human) NodeOption { return func(n *Node) { n.Human = &h } }

// UserTask adds a task done by a person: it waits until the task is
// completed through the task API. WithHuman says who, when and how.
func (b *Builder) UserTask(id string, opts ...NodeOption) *Builder {
	return b.node(id, UserTask, NoneEvent, opts)
}

// human compiles a user task's expressions.
func (v *validator) human(n *Node) {
	h := n.Human
	if h == nil {
		return // anyone may claim it, no dates, priority 50
	}
	for f := range humanFields {
		if src := h.source(f); strings.TrimSpace(src) != "" {
			h.compiled[f] = v.compile(n, f.String(), src)
		} else {
			h.compiled[f] = nil
		}
	}
}
