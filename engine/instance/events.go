package instance

import (
	"slices"
	"time"

	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
)

// EventKind names what happened.
type EventKind string

// Event kinds an instance accepts.
const (
	// TimerFired wakes the wait Event.Wait for its Event.Firing-th firing.
	TimerFired EventKind = "timerFired"
	// Cancel terminates the instance.
	Cancel EventKind = "cancel"
	// JobOutcome is a job's terminal outcome (Event.Outcome) for the job
	// wait Event.Wait; classification and retries happened before it.
	JobOutcome EventKind = "jobOutcome"
	// IncidentRetry, IncidentResolve and IncidentAbandon are operator
	// commands on incident Event.Incident; Event.ID is the command id.
	IncidentRetry   EventKind = "incidentRetry"
	IncidentResolve EventKind = "incidentResolve"
	IncidentAbandon EventKind = "incidentAbandon"
	// ChildDone reports a child instance's end (Event.Child) to the call
	// activity's wait Event.Wait.
	ChildDone EventKind = "childDone"
	// OperationDone reports an in-process operation's result
	// (Event.Result) to the operation wait Event.Wait.
	OperationDone EventKind = "operationDone"
	// Correlate delivers a message (Event.Vars) to the message wait
	// Event.Wait, as correlation Event.Correlation. A correlation applied
	// before (State.Correlations) is skipped. If the wait is gone, or is
	// not a wait for that name and key, or the instance has ended, the
	// instance rejects it (RejectMessage) so the message can go to another
	// subscription.
	Correlate EventKind = "correlate"
	// MessageTo delivers message Event.Message (Event.Vars) straight to
	// this instance, bypassing correlation keys: the oldest open message
	// wait of that name takes it; with none, it is discarded. An
	// Event.Correlation with a MessageID makes it apply once.
	MessageTo EventKind = "message"
	// UserTaskCommand is an operation on the user task Event.Task.Task
	// (claim, complete, ...); Event.ID is the command id, which the
	// task's Outcomes list whether the command applied or was refused. A
	// command for a task the instance no longer waits on is not applied,
	// unless the task ended earlier in the same step: then its final
	// record lists it as refused (docs/usertasks.md §4).
	UserTaskCommand EventKind = "task"
	// Compensate is the operator's compensation: every token is
	// cancelled, the handlers of the journal's completions (of node
	// Event.Node only, when set) run, and the instance ends terminated.
	Compensate EventKind = "compensate"
	// SetVars is the operator's variable modification: Event.Vars are
	// written to the instance's root scope, each a variable write that
	// conditional events see. Event.ID is the request id; a request
	// applied before (State.Correlations) is skipped.
	SetVars EventKind = "setVars"
)

// Event is an input to an instance. Start is not an event: it creates the
// state (see Start).
type Event struct {
	// ID identifies the event for logs and de-duplication at the edge.
	ID       string           `msgpack:"id"`
	Kind     EventKind        `msgpack:"kind"`
	Wait     string           `msgpack:"wait,omitempty"`
	Firing   int              `msgpack:"firing,omitempty"`
	Reason   string           `msgpack:"reason,omitempty"`
	Outcome  *jobs.Terminal   `msgpack:"outcome,omitempty"`
	Incident string           `msgpack:"incident,omitempty"`
	Vars     map[string]any   `msgpack:"vars,omitempty"`
	Child    *ChildResult     `msgpack:"child,omitempty"`
	Result   *OperationResult `msgpack:"result,omitempty"`

	Correlation *Correlation `msgpack:"correlation,omitempty"`
	Message     string       `msgpack:"message,omitempty"`

	Task *TaskCommand `msgpack:"task,omitempty"`

	// Signal is the broadcast a SignalTo event delivers (signals.go).
	Signal *Broadcast `msgpack:"signal,omitempty"`

	// Node is the node a Compensate event compensates ("" for all).
	Node string `msgpack:"node,omitempty"`
}

// EffectKind names something the engine must do after the checkpoint.
type EffectKind string

// Effect kinds.
const (
	ScheduleTimer EffectKind = "scheduleTimer"
	CancelTimer   EffectKind = "cancelTimer"
	PublishFact   EffectKind = "fact"
	EnqueueJob    EffectKind = "enqueueJob" // publish Effect.Job, at most once
	CancelJob     EffectKind = "cancelJob"  // remove job Effect.Wait on topic Effect.Topic
	// PutIncident writes Effect.Incident to the incidents bucket,
	// PutSnapshot a variables snapshot, PublishIncidentFact an incident fact.
	PutIncident         EffectKind = "putIncident"
	PutSnapshot         EffectKind = "putSnapshot"
	PublishIncidentFact EffectKind = "incidentFact"
	// StartChildEffect starts Effect.Start; NotifyParent sends Effect.Result to
	// Effect.Parent; CancelChild cancels the child instance Effect.Child.
	StartChildEffect EffectKind = "startChild"
	NotifyParent     EffectKind = "notifyParent"
	CancelChild      EffectKind = "cancelChild"
	// RunOperation asks the engine to run Effect.Call beside the step, by
	// Effect.Due (zero: no deadline), and report the result to the wait
	// Effect.Wait; CancelOperation stops a run of that wait's operation
	// on this node, if there is one.
	RunOperation    EffectKind = "runOperation"
	CancelOperation EffectKind = "cancelOperation"
	// Subscribe opens Effect.Sub at its message partition; Unsubscribe
	// closes it (Effect.Wait is Sub.Wait for both). RejectMessage hands
	// correlation Effect.Correlation of Effect.Sub back: the wait it was
	// offered to was gone; for a message the partition does not keep
	// (Correlation.ReturnBy set), Effect.Message is the message handed
	// back (its variables and id). PublishMessage publishes Effect.Message (a
	// declarative throw); Effect.ID is unique per activation of the
	// throw. StartEnded tells the message partition of Effect.Correlation
	// that the instance this message started has ended. See
	// docs/messages.md §4 for when each is emitted.
	Subscribe      EffectKind = "subscribe"
	Unsubscribe    EffectKind = "unsubscribe"
	RejectMessage  EffectKind = "rejectMessage"
	PublishMessage EffectKind = "publishMessage"
	StartEnded     EffectKind = "startEnded"
	// PutTask writes Effect.Task, the whole record of a user task as of
	// this step, to the tasks bucket under its id; a finished one
	// (Task.State.Finished) with the finished-instance retention as its
	// TTL. A put whose Task.Revision is below the stored record's is
	// stale and skipped. PublishTaskFact publishes Effect.TaskFact on
	// jetbpm.fact.task.<process>.<kind>, with Nats-Msg-Id its ID.
	PutTask         EffectKind = "putTask"
	PublishTaskFact EffectKind = "taskFact"
)

// Effect is one entry of the outbox. Publishing an effect again must be
// harmless: a timer is rescheduled onto the same subject, a cancel purges
// an empty subject, a fact carries its id for consumers to de-duplicate.
type Effect struct {
	ID   string     `msgpack:"id"`
	Kind EffectKind `msgpack:"kind"`
	// Wait and Due describe a timer; Firing is echoed by the fired event.
	Wait   string    `msgpack:"wait,omitempty"`
	Due    time.Time `msgpack:"due,omitempty"`
	Firing int       `msgpack:"firing,omitempty"`
	Fact   *Fact     `msgpack:"fact,omitempty"`
	Job    *jobs.Job `msgpack:"job,omitempty"`
	Topic  string    `msgpack:"topic,omitempty"`

	Incident     *incidents.Record   `msgpack:"incident,omitempty"`
	Snapshot     *incidents.Snapshot `msgpack:"snapshot,omitempty"`
	IncidentFact *incidents.Fact     `msgpack:"incidentFact,omitempty"`

	Start  *ChildStart  `msgpack:"start,omitempty"`
	Parent *ParentRef   `msgpack:"parent,omitempty"`
	Result *ChildResult `msgpack:"result,omitempty"`
	Child  string       `msgpack:"child,omitempty"`

	Call *Call `msgpack:"call,omitempty"`

	Sub         *Subscription `msgpack:"sub,omitempty"`
	Correlation *Correlation  `msgpack:"correlation,omitempty"`
	Message     *OutMessage   `msgpack:"message,omitempty"`

	Task     *Task     `msgpack:"task,omitempty"`
	TaskFact *TaskFact `msgpack:"taskFact,omitempty"`

	// Signal is the signal a BroadcastSignal effect broadcasts.
	Signal *Broadcast `msgpack:"signal,omitempty"`
}

// FactKind is the kind of a lifecycle fact.
type FactKind string

// Instance lifecycle facts.
const (
	FactStarted    FactKind = "started"
	FactCompleted  FactKind = "completed"
	FactFailed     FactKind = "failed"
	FactTerminated FactKind = "terminated"
	// A compensation handler started or ended (Fact.Node is the
	// handler, Fact.Activity the activity it compensates).
	FactCompensationStarted   FactKind = "compensation-started"
	FactCompensationCompleted FactKind = "compensation-completed"
)

// Fact is a lifecycle fact about an instance, published for integrations.
type Fact struct {
	ID        string    `msgpack:"id" json:"id"`
	Kind      FactKind  `msgpack:"kind" json:"kind"`
	Instance  string    `msgpack:"instance" json:"instanceId"`
	ProcessID string    `msgpack:"process" json:"processId"`
	Version   int       `msgpack:"version" json:"version"`
	Time      time.Time `msgpack:"time" json:"time"`
	Error     string    `msgpack:"error,omitempty" json:"error,omitempty"`
	Node      string    `msgpack:"node,omitempty" json:"node,omitempty"`
	Activity  string    `msgpack:"activity,omitempty" json:"activity,omitempty"`
}

// StepsWhenFinished reports whether a finished instance still steps
// events: a correlation offered to it, which the step rejects so the
// message goes to another subscription (docs/messages.md §4). Other events
// for a finished instance are not stepped.
func StepsWhenFinished(events []Event) bool {
	return slices.ContainsFunc(events, func(ev Event) bool { return ev.Kind == Correlate })
}
