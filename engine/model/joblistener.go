package model

import (
	"fmt"
	"strings"

	"github.com/jetbpm/jetbpm/expression"
	"github.com/jetbpm/jetbpm/jobs"
)

// JobListener is a Zeebe execution listener (zeebe:executionListener): a
// job of Type for a worker, run when its element starts (Event
// ListenStart: after the input mappings, before the element's work; what
// the job completes with becomes the element's local variables) or ends
// (ListenEnd: after the output mappings, before the element is left; what
// it completes with is written as a job's output is). Listeners of one
// event run one after the other, in the order declared; the element waits
// for each (docs/scripts-listeners-connectors.md §2.1).
//
// A listener job fails, retries and raises an incident as a service
// task's job does, with Retries executions (3 when 0); retrying the
// incident runs the failed listener again, not the ones before it. A
// listener job may not throw a BPMN error: one that does is an incident.
type JobListener struct {
	Event string `msgpack:"event"`
	Type  string `msgpack:"type"`
	// TypeExpr, when set instead of Type, is an expression evaluated over
	// the element's variables each time the listener runs, giving that
	// job's type (Zeebe's type="=...").
	TypeExpr string `msgpack:"typeExpr,omitempty"`
	Retries  int    `msgpack:"retries,omitempty"`
	// RetriesExpr, when set instead of Retries, is an expression
	// evaluated as the listener runs, giving its retries (a whole number
	// from 1).
	RetriesExpr string `msgpack:"retriesExpr,omitempty"`

	typ, retries *expression.Expression
}

// RetriesCompiled returns the compiled retries expression, nil for a
// literal count.
func (l *JobListener) RetriesCompiled() *expression.Expression { return l.retries }

// TypeCompiled returns the compiled type expression, nil for a literal
// type.
func (l *JobListener) TypeCompiled() *expression.Expression { return l.typ }

// Zeebe task listener events (zeebe:taskListener eventType), on a user
// task: creating before the task is open, assigning before an assignee
// is set or cleared, updating before an update takes effect, completing
// before the task completes.
const (
	ListenCreating   = "creating"
	ListenAssigning  = "assigning"
	ListenUpdating   = "updating"
	ListenCompleting = "completing"
)

// IsTaskEvent reports whether event is a Zeebe task listener's.
func IsTaskEvent(event string) bool {
	return event == ListenCreating || event == ListenAssigning || event == ListenUpdating || event == ListenCompleting
}

// ListenTaskJob adds a Zeebe task listener to a user task.
func ListenTaskJob(l JobListener) NodeOption {
	return func(n *Node) { n.TaskJobListeners = append(n.TaskJobListeners, l) }
}

// defaultListenerRetries is Zeebe's default for a listener's retries.
const defaultListenerRetries = 3

// Overrides returns the job options of the listener's jobs: a retry
// policy of Retries executions.
func (l *JobListener) Overrides() jobs.Overrides { return l.OverridesWith(l.Retries) }

// OverridesWith is Overrides with retries executions (0: the default).
func (l *JobListener) OverridesWith(retries int) jobs.Overrides {
	spec := jobs.DefaultRetrySpec
	spec.MaxAttempts = retries
	if spec.MaxAttempts == 0 {
		spec.MaxAttempts = defaultListenerRetries
	}
	return jobs.Overrides{Retry: &spec}
}

// ListenJob adds a Zeebe execution listener to a node.
func ListenJob(l JobListener) NodeOption {
	return func(n *Node) { n.JobListeners = append(n.JobListeners, l) }
}

// checkJobListeners refuses the job listeners of n that jetbpm does not
// run: where Zeebe has no such event (start on a start or boundary event,
// end on a gateway or an error end event), and where jetbpm does not yet
// run one; a cancel end event, which Zeebe does not have, runs none. On a
// multi-instance activity they run for each iteration.
func (v *validator) checkJobListeners(n *Node, p *Process) {
	for i := range n.JobListeners {
		l := &n.JobListeners[i]
		what := fmt.Sprintf("execution listener %d (%s, type %q)", i+1, l.Event, l.Type+l.TypeExpr)
		v.listenerType(n, l, what)
		if l.Retries < 0 {
			v.nodef(n, "%s: retries %d is negative", what, l.Retries)
		}
		gateway := n.Kind == ExclusiveGateway || n.Kind == ParallelGateway || n.Kind == InclusiveGateway || n.Kind == EventBasedGateway
		var why string
		switch {
		case l.Event != ListenStart && l.Event != ListenEnd:
			why = fmt.Sprintf("the event %q is not start or end", l.Event)
		case l.Event == ListenStart && (n.Kind == StartEvent || n.Kind == BoundaryEvent):
			why = "Zeebe runs no start listener on a start or boundary event"
		case l.Event == ListenEnd && gateway:
			why = "Zeebe runs no end listener on a gateway"
		case l.Event == ListenEnd && n.Kind == EndEvent && n.Event == ErrorEvent:
			why = "Zeebe runs no end listener on an error end event"
		case l.Event == ListenEnd && n.Kind == EndEvent && n.Event == CancelEvent:
			why = "Zeebe has no cancel end event (a transaction's) to run it on"
		}
		if why != "" {
			v.nodef(n, "%s: %s", what, why)
		}
	}
}

// listenerType checks l's type: a literal or an expression (compiled),
// not both, not neither.
func (v *validator) listenerType(n *Node, l *JobListener, what string) {
	switch {
	case l.TypeExpr != "" && l.Type != "":
		v.nodef(n, "%s: has both a type and a type expression; choose one", what)
	case l.TypeExpr != "":
		l.typ = v.compile(n, "listener type", l.TypeExpr)
	case strings.TrimSpace(l.Type) == "":
		v.nodef(n, "%s: has no job type", what)
	}
	if l.RetriesExpr != "" {
		l.retries = v.compile(n, "listener retries", l.RetriesExpr)
	}
}

// checkTaskJobListeners refuses Zeebe task listeners off a user task, of
// an unknown event, or of the canceling event, which jetbpm does not run
// yet.
func (v *validator) checkTaskJobListeners(n *Node) {
	for i := range n.TaskJobListeners {
		l := &n.TaskJobListeners[i]
		what := fmt.Sprintf("task listener %d (%s, type %q)", i+1, l.Event, l.Type+l.TypeExpr)
		v.listenerType(n, l, what)
		switch {
		case n.Kind != UserTask:
			v.nodef(n, "%s: only user tasks have task listeners", what)
		case l.Retries < 0:
			v.nodef(n, "%s: retries %d is negative", what, l.Retries)
		case l.Event == "canceling":
			v.nodef(n, "%s: canceling listeners are not run yet", what)
		case !IsTaskEvent(l.Event):
			v.nodef(n, "%s: the event %q is not creating, assigning, updating or completing", what, l.Event)
		case len(n.TaskListeners) > 0:
			v.nodef(n, "%s: the task has Camunda 7 task listeners too; keep one kind", what)
		}
	}
}

// processJobListeners refuses the process's Zeebe execution listeners
// of an event other than start or end, or without a type, and compiles
// their expressions.
func (v *validator) processJobListeners(p *Process) {
	for i := range p.JobListeners {
		l := &p.JobListeners[i]
		what := fmt.Sprintf("process execution listener %d (%s, type %q)", i+1, l.Event, l.Type+l.TypeExpr)
		if l.TypeExpr != "" && l.Type == "" {
			e, err := expression.Compile(l.TypeExpr)
			if err != nil {
				v.addf("", 0, "%s: %v", what, err)
			}
			l.typ = e
		}
		if l.RetriesExpr != "" {
			e, err := expression.Compile(l.RetriesExpr)
			if err != nil {
				v.addf("", 0, "%s: retries: %v", what, err)
			}
			l.retries = e
		}
		switch {
		case l.Event != ListenStart && l.Event != ListenEnd:
			v.addf("", 0, "%s: the event %q is not start or end", what, l.Event)
		case strings.TrimSpace(l.Type) == "" && l.TypeExpr == "":
			v.addf("", 0, "%s: has no job type", what)
		case l.Retries < 0:
			v.addf("", 0, "%s: retries %d is negative", what, l.Retries)
		}
	}
}
