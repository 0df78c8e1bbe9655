package model

import (
	"fmt"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/expression"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/script"
)

// Kind is the BPMN element type of a node, named as in BPMN XML.
type Kind string

// The node kinds jetbpm executes.
const (
	StartEvent             Kind = "startEvent"
	EndEvent               Kind = "endEvent"
	IntermediateCatchEvent Kind = "intermediateCatchEvent"
	BoundaryEvent          Kind = "boundaryEvent"
	Task                   Kind = "task"
	ManualTask             Kind = "manualTask"
	ScriptTask             Kind = "scriptTask"
	ServiceTask            Kind = "serviceTask"
	ExclusiveGateway       Kind = "exclusiveGateway"
	ParallelGateway        Kind = "parallelGateway"
	InclusiveGateway       Kind = "inclusiveGateway"
	SubProcess             Kind = "subProcess"
	CallActivity           Kind = "callActivity"
	ReceiveTask            Kind = "receiveTask"
	SendTask               Kind = "sendTask"
	IntermediateThrowEvent Kind = "intermediateThrowEvent"
	EventBasedGateway      Kind = "eventBasedGateway"
	UserTask               Kind = "userTask"
)

// IsActivity reports whether nodes of kind k do work and can carry boundary
// events and data mappings.
func (k Kind) IsActivity() bool {
	switch k {
	case Task, ManualTask, ScriptTask, ServiceTask, SubProcess, CallActivity, ReceiveTask, SendTask, UserTask:
		return true
	}
	return false
}

// HasOutputs reports whether nodes of kind k may have output mappings: the
// activities and, as in Zeebe, events that catch (start, intermediate
// catch, boundary), applied when the event completes.
func (k Kind) HasOutputs() bool {
	return k.IsActivity() || k == StartEvent || k == IntermediateCatchEvent || k == BoundaryEvent
}

// EventType is the event definition of an event node.
type EventType string

// Event definitions. None is the zero value.
const (
	NoneEvent      EventType = ""
	ErrorEvent     EventType = "error"
	TerminateEvent EventType = "terminate"
	TimerEvent     EventType = "timer"
	MessageEvent   EventType = "message"
	LinkEvent      EventType = "link"
)

// Process is a deployable process definition. Build one with NewBuilder or
// package bpmnxml; a Process decoded from storage must pass Validate before use.
type Process struct {
	ID      string  `msgpack:"id"`
	Name    string  `msgpack:"name,omitempty"`
	Version int     `msgpack:"version,omitempty"` // assigned at deploy
	Nodes   []*Node `msgpack:"nodes"`
	Flows   []*Flow `msgpack:"flows"`
	// HistoryTimeToLive is how long Camunda 7 keeps the history of its
	// instances (camunda:historyTimeToLive: days, or P<n>D), kept as
	// written for the Camunda 7 REST API to show; jetbpm's retention is
	// its own (finished-instance retention, docs/engine.md).
	HistoryTimeToLive string `msgpack:"historyTTL,omitempty"`
	// Listeners are the process's Camunda 7 execution listeners: start
	// when an instance starts, before its first node; end when it
	// completes.
	Listeners []Listener `msgpack:"listeners,omitempty"`
	// JobListeners are the process's Zeebe execution listeners (start:
	// before its start event; end: when its last token ends), jobs for
	// workers (JobListener).
	JobListeners []JobListener `msgpack:"jobListeners,omitempty"`
	// Warnings are what its import found that deploys but does not run as
	// written (a data association, say); a deploy reports them. They are
	// not stored with the version.
	Warnings []Warning `msgpack:"-"`

	index *index // built by Validate
}

// Warning is one thing a model deploys with that does not run as its
// author may expect: Node names the element (and Line its XML line, when
// it was imported) and Message says what jetbpm does with it.
type Warning struct {
	Node    string `json:"node,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

func (w Warning) String() string {
	switch {
	case w.Line > 0:
		return fmt.Sprintf("line %d: %q: %s", w.Line, w.Node, w.Message)
	case w.Node != "":
		return fmt.Sprintf("%q: %s", w.Node, w.Message)
	}
	return w.Message
}

// Node is one flow node: an event, an activity or a gateway.
type Node struct {
	ID    string    `msgpack:"id"`
	Name  string    `msgpack:"name,omitempty"`
	Kind  Kind      `msgpack:"kind"`
	Event EventType `msgpack:"event,omitempty"`
	// Scope is the id of the enclosing sub-process, "" at process level.
	Scope string `msgpack:"scope,omitempty"`
	// Line is the XML source line, 0 for nodes built in Go.
	Line int `msgpack:"line,omitempty"`

	// ErrorCode is the code an error end event throws, or the code an error
	// boundary catches ("" catches every error).
	ErrorCode    string `msgpack:"errorCode,omitempty"`
	ErrorMessage string `msgpack:"errorMessage,omitempty"`
	// Timer is set on timer catch and timer boundary events.
	Timer *Timer `msgpack:"timer,omitempty"`
	// AttachedTo and Interrupting describe a boundary event. Interrupting
	// is also set on an interrupting event sub-process.
	AttachedTo   string `msgpack:"attachedTo,omitempty"`
	Interrupting bool   `msgpack:"interrupting,omitempty"`
	// TriggeredByEvent makes a sub-process an event sub-process: its start
	// event's trigger runs it (eventsubprocess.go).
	TriggeredByEvent bool `msgpack:"triggered,omitempty"`
	// Transaction makes a sub-process a transaction: a cancel end event in
	// it compensates it and leaves by its cancel boundary (transaction.go).
	Transaction bool `msgpack:"transaction,omitempty"`
	// Escalation is the code an escalation event throws, or the code an
	// escalation boundary or start event catches ("" catches every code).
	Escalation string `msgpack:"escalation,omitempty"`
	// Default is the id of the flow taken when no condition holds.
	Default string `msgpack:"default,omitempty"`

	// Message is set on the nodes that catch or throw a message: message
	// start, intermediate catch, boundary, intermediate throw and end
	// events, receive tasks and send tasks.
	Message *Message `msgpack:"message,omitempty"`
	// Publish, on a message throw event or send task, publishes the
	// message itself instead of handing a job to a worker.
	Publish *Publish `msgpack:"publish,omitempty"`
	// Signal is set on signal events (signal.go).
	Signal *Signal `msgpack:"signal,omitempty"`
	// Conditional is the condition of a conditional event (conditional.go).
	Conditional *Condition `msgpack:"conditional,omitempty"`

	// Handler is a compensation boundary event's associated handler
	// activity; ForCompensation marks that activity (compensation.go).
	// ActivityRef, on a compensation throw or end event, names the one
	// activity it compensates ("" for every completed one of its scope).
	Handler         string `msgpack:"handler,omitempty"`
	ForCompensation bool   `msgpack:"forCompensation,omitempty"`
	ActivityRef     string `msgpack:"activityRef,omitempty"`

	// Link is the name of a link event: a link throw moves its token to
	// the link catch of the same name in its scope (links.go).
	Link string `msgpack:"link,omitempty"`

	// Human is the work of a user task: who may do it, when, and its form.
	Human *Human `msgpack:"human,omitempty"`

	Script  *Script  `msgpack:"script,omitempty"`
	Service *Service `msgpack:"service,omitempty"`
	Call    *Call    `msgpack:"call,omitempty"`
	// Loop, when set, makes the activity multi-instance.
	Loop *Loop `msgpack:"loop,omitempty"`

	// Inputs build the activity's local variables (and an external job's
	// input); Outputs write its results back to the enclosing scopes.
	Inputs  []Mapping `msgpack:"inputs,omitempty"`
	Outputs []Mapping `msgpack:"outputs,omitempty"`
	// Listeners are its Camunda 7 execution listeners (start, end), in
	// the order of the model.
	Listeners []Listener `msgpack:"listeners,omitempty"`
	// TaskListeners are a user task's Camunda 7 task listeners (create,
	// assignment, update, complete), in the order of the model.
	TaskListeners []Listener `msgpack:"taskListeners,omitempty"`
	// JobListeners are its Zeebe execution listeners (start, end), jobs
	// for workers, in the order declared (JobListener).
	JobListeners []JobListener `msgpack:"jobListeners,omitempty"`
	// TaskJobListeners are a user task's Zeebe task listeners (creating,
	// assigning, updating, completing), jobs for workers, in the order
	// declared (JobListener).
	TaskJobListeners []JobListener `msgpack:"taskJobListeners,omitempty"`

	// IncidentRetry is the activity's incident retry policy; nil
	// defers to the engine's default, which retries nothing automatically.
	IncidentRetry *jobs.RetrySpec `msgpack:"incidentRetry,omitempty"`

	// Extensions records vendor attributes as imported (e.g.
	// "camunda:asyncBefore"), for diagnostics; jetbpm does not act on them.
	Extensions map[string]string `msgpack:"ext,omitempty"`
}

// Flow is a sequence flow between two nodes of the same scope.
type Flow struct {
	ID        string `msgpack:"id"`
	Name      string `msgpack:"name,omitempty"`
	Source    string `msgpack:"source"`
	Target    string `msgpack:"target"`
	Condition string `msgpack:"condition,omitempty"`
	// Language "javascript" (script.Language) makes Condition a
	// JavaScript program whose value, a boolean, is the condition.
	Language string `msgpack:"lang,omitempty"`
	Line     int    `msgpack:"line,omitempty"`
	// Listeners are its Camunda 7 take listeners, in the order of the
	// model.
	Listeners []Listener `msgpack:"listeners,omitempty"`

	cond    *expression.Expression
	program *script.Program
}

// Script is the work of a script task: an expression whose value is written
// to ResultVariable; with none, the value is dropped (Camunda 7 runs a
// script without camunda:resultVariable for its effects). With Language
// "javascript" (script.Language), Expression is a JavaScript program
// instead, run with Camunda 7's execution facade: the value of its last
// statement is the result, and the variables it sets are written as it
// sets them (docs/scripts-listeners-connectors.md).
type Script struct {
	Expression     string `msgpack:"expr"`
	ResultVariable string `msgpack:"result"`
	Language       string `msgpack:"lang,omitempty"`

	compiled *expression.Expression
	program  *script.Program
}

// Service is the work of a service task. Operation names an in-process
// function registered with the engine; Worker, when set, sends the work to
// external workers instead.
type Service struct {
	Operation string        `msgpack:"op,omitempty"`
	Timeout   time.Duration `msgpack:"timeout,omitempty"`
	Worker    *Worker       `msgpack:"worker,omitempty"`
}

// Worker describes the external-worker locus of a service task.
type Worker struct {
	Topic string `msgpack:"topic"`
	// TopicExpr, when set instead of Topic, is an expression evaluated
	// over the task's variables each time the task starts, giving that
	// job's topic (Camunda 7's camunda:topic="${...}", Zeebe's job type
	// "=..."). The topic's consumer is then created when its first job
	// is queued, not at deploy.
	TopicExpr string `msgpack:"topicExpr,omitempty"`
	// Retries is the number of executions allowed before the job is
	// exhausted, as imported from zeebe:taskDefinition; 0 means the default.
	Retries int `msgpack:"retries,omitempty"`
	// Headers are static key/values passed to the worker with every job.
	Headers map[string]string `msgpack:"headers,omitempty"`
	// Options are the per-service job options (WithRetryPolicy,
	// WithErrorMapper, ...); engine-wide defaults fill what they leave.
	Options jobs.Overrides `msgpack:"options,omitempty"`
	// CompleteError, when set, turns every completion of the job into
	// the BPMN error with this code (WithCompleteError).
	CompleteError string `msgpack:"completeError,omitempty"`
	// ResultsLocal keeps the job's results to the task: only its output
	// mappings write variables, and without any nothing is written
	// (Camunda 7's connectors, whose response is seen only by the
	// connector's output parameters).
	ResultsLocal bool `msgpack:"resultsLocal,omitempty"`

	topic *expression.Expression
}

// TopicCompiled returns the compiled topic expression, nil for a literal
// topic.
func (w *Worker) TopicCompiled() *expression.Expression { return w.topic }

// Overrides returns the service's job options, with a Zeebe retries count
// standing in for a retry policy when none is set.
func (w *Worker) Overrides() jobs.Overrides {
	o := w.Options
	if o.Retry == nil && w.Retries > 0 {
		spec := jobs.DefaultRetrySpec
		spec.MaxAttempts = w.Retries
		o.Retry = &spec
	}
	return o
}

// Call is the work of a call activity: a child instance of another
// process. Inputs map the caller's variables into the child's; without
// them the child gets every variable the activity sees (Zeebe's default)
// unless NoInputPropagation. Outputs map the child's final variables back;
// without them all propagate unless NoOutputPropagation (Camunda's
// default: nothing crosses without camunda:in/out).
type Call struct {
	ProcessID string `msgpack:"process"`
	// Version pins a version; 0 takes the latest when the child starts.
	Version             int  `msgpack:"version,omitempty"`
	NoInputPropagation  bool `msgpack:"noInputs,omitempty"`
	NoOutputPropagation bool `msgpack:"noOutputs,omitempty"`
}

// Mapping assigns the value of Source (an expression) to the variable Target.
// An input or output mapping's Target may be nested, as in Zeebe:
// "authentication.type" sets property type of the object variable
// authentication, creating the object, or the property, as needed
// (TargetPath).
type Mapping struct {
	Target string `msgpack:"target"`
	Source string `msgpack:"source"`
	// Language "javascript" (script.Language) makes Source a JavaScript
	// program (a camunda:script parameter): its last value is the
	// mapping's, and what it sets with execution.setVariable is written.
	Language string `msgpack:"lang,omitempty"`

	compiled *expression.Expression
	program  *script.Program
}

// Compiled returns the compiled condition of f, nil when it has none or
// it is JavaScript.
func (f *Flow) Compiled() *expression.Expression { return f.cond }

// Program returns f's JavaScript condition, nil when it has none.
func (f *Flow) Program() *script.Program { return f.program }

// Compiled returns the compiled script expression (nil for JavaScript).
func (s *Script) Compiled() *expression.Expression { return s.compiled }

// Program returns the compiled JavaScript program, nil for an expression.
func (s *Script) Program() *script.Program { return s.program }

// Compiled returns the compiled source expression (nil for JavaScript).
func (m *Mapping) Compiled() *expression.Expression { return m.compiled }

// Program returns the mapping's JavaScript program, nil for an expression.
func (m *Mapping) Program() *script.Program { return m.program }

// TargetPath splits a nested target into its variable and the property
// path under it ("a.b.c": "a", ["b", "c"]); a plain target has no path.
func (m *Mapping) TargetPath() (variable string, path []string) {
	variable, rest, nested := strings.Cut(m.Target, ".")
	if !nested {
		return m.Target, nil
	}
	return variable, strings.Split(rest, ".")
}

// IsExternal reports whether n is a service task run by external workers.
func (n *Node) IsExternal() bool { return n.Service != nil && n.Service.Worker != nil }
