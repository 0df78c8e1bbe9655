package model

import (
	"fmt"

	"github.com/jetbpm/jetbpm/expression"
	"github.com/jetbpm/jetbpm/script"
)

// Execution listener events (Camunda 7's camunda:executionListener): start
// and end on a node or a process, take on a sequence flow.
const (
	ListenStart = "start"
	ListenEnd   = "end"
	ListenTake  = "take"
)

// Task listener events (Camunda 7's camunda:taskListener on a user task):
// create when the task is created, assignment when it gets an assignee,
// update when a command changes it, complete before it completes, delete
// when it is canceled (its token left it without completing it), timeout
// when its timer (Listener.Timer, counted from the task's creation) fires
// while the task is open.
const (
	ListenCreate     = "create"
	ListenAssignment = "assignment"
	ListenUpdate     = "update"
	ListenComplete   = "complete"
	ListenDelete     = "delete"
	ListenTimeout    = "timeout"
)

// Listener is a Camunda 7 execution listener, run inline, in the step,
// when its Event happens: a node's start listeners after its input
// mappings, before its work; its end listeners after its output mappings,
// before it is left; a flow's take listeners as a token takes it; a
// process's when its instance starts and completes
// (docs/scripts-listeners-connectors.md §2.2).
//
// Source is an expression, or with Language "javascript" (script.Language)
// a JavaScript program run with Camunda 7's execution facade, whose
// execution.setVariable calls are written. An expression's value is
// written to the variable Set names (execution.setVariable("name", ...),
// Local for setVariableLocal), to the task field Field names (a task
// listener's task.setAssignee(...), "assignee", or task.setPriority(...),
// "priority"), or dropped when both are "". An execution listener that
// fails raises an incident at its element; a task listener's failure is
// its task's (docs/usertasks.md).
//
// A timeout task listener has a Timer (a duration, date or cycle, as a
// timer event's) and may have an ID (camunda:taskListener's id), which
// names it; it runs each time its timer fires and leaves the task open.
type Listener struct {
	Event    string `msgpack:"event"`
	ID       string `msgpack:"id,omitempty"`
	Timer    *Timer `msgpack:"timer,omitempty"`
	Set      string `msgpack:"set,omitempty"`
	Field    string `msgpack:"field,omitempty"`
	Local    bool   `msgpack:"local,omitempty"`
	Source   string `msgpack:"source"`
	Language string `msgpack:"lang,omitempty"`

	compiled *expression.Expression
	program  *script.Program
}

// Compiled returns the listener's compiled expression, nil for JavaScript.
func (l *Listener) Compiled() *expression.Expression { return l.compiled }

// Program returns the listener's JavaScript program, nil for an expression.
func (l *Listener) Program() *script.Program { return l.program }

// Listens reports whether any of ls listens to event.
func Listens(ls []Listener, event string) bool {
	for i := range ls {
		if ls[i].Event == event {
			return true
		}
	}
	return false
}

// compile checks l (the i-th listener of element, which takes the events
// allowed) and compiles its source; a problem is an error naming it.
func (l *Listener) compile(element string, i int, allowed ...string) error {
	what := fmt.Sprintf("execution listener %d (%s)", i+1, l.Event)
	switch l.Event {
	case ListenCreate, ListenAssignment, ListenUpdate, ListenComplete, ListenDelete, ListenTimeout:
		what = fmt.Sprintf("task listener %d (%s)", i+1, l.Event)
	}
	ok := false
	for _, e := range allowed {
		ok = ok || l.Event == e
	}
	if !ok {
		return fmt.Errorf("%s: the event %q is not one of %q here", what, l.Event, allowed)
	}
	if l.Set != "" && !validVariable(l.Set) {
		return fmt.Errorf("%s: %q is not a variable name", what, l.Set)
	}
	if l.Field != "" && (l.Field != "assignee" && l.Field != "priority" || l.Set != "" || l.Language != "") {
		return fmt.Errorf("%s: field %q: an expression sets the assignee or the priority, and nothing else", what, l.Field)
	}
	if err := l.compileTimer(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch l.Language {
	case "":
		e, err := expression.Compile(l.Source)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		l.compiled = e
	case script.Language:
		p, err := script.Compile(fmt.Sprintf("%s/listener-%d", element, i+1), l.Source)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		l.program = p
	default:
		return fmt.Errorf("%s: language %q is not supported (javascript, or an expression)", what, l.Language)
	}
	return nil
}

// compileTimer checks that a timeout listener has a timer, and no other
// listener has one, and compiles or parses it.
func (l *Listener) compileTimer() error {
	switch {
	case l.Event != ListenTimeout && l.Timer != nil:
		return fmt.Errorf("only a timeout listener has a timer")
	case l.Event != ListenTimeout:
		return nil
	case l.Timer == nil:
		return fmt.Errorf("has no timer definition (a timerEventDefinition with a timeDuration, timeDate or timeCycle)")
	}
	return l.Timer.compile()
}

// Name names the listener in messages: its ID, quoted, if it has one,
// else its position, i (from 0).
func (l *Listener) Name(i int) string {
	if l.ID != "" {
		return fmt.Sprintf("%q", l.ID)
	}
	return fmt.Sprint(i + 1)
}

// Listen adds an execution listener (start or end) to a node.
func Listen(l Listener) NodeOption { return func(n *Node) { n.Listeners = append(n.Listeners, l) } }

// OnTake adds a take listener to a sequence flow (its Event is set to
// take).
func OnTake(l Listener) FlowOption {
	return func(f *Flow) { l.Event = ListenTake; f.Listeners = append(f.Listeners, l) }
}

// Listen adds an execution listener (start or end) to the process.
func (b *Builder) Listen(l Listener) *Builder {
	b.p.Listeners = append(b.p.Listeners, l)
	return b
}

// ListenTask adds a task listener to a user task.
func ListenTask(l Listener) NodeOption {
	return func(n *Node) { n.TaskListeners = append(n.TaskListeners, l) }
}
