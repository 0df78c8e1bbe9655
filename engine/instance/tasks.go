package instance

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/jobs"
)

// A user task parks its token on a wait of kind UserTaskWait that carries
// the task (Wait.Task): the checkpoint is the authority on the task's
// state. Each change reaches the task list as a PutTask effect holding the
// whole record as of that step, and as task facts (PublishTaskFact); the
// engine writes the record to the tasks bucket under its id. Operations on
// a task are UserTaskCommand events naming it (Event.Task). See
// docs/usertasks.md.

// TaskState is where a task is in its life.
type TaskState string

// Task states. Created and Assigned are open: the task's token waits on it.
// Completed and Canceled are final.
const (
	TaskCreated   TaskState = "created"   // open, nobody holds it
	TaskAssigned  TaskState = "assigned"  // open, held by Task.Assignee
	TaskCompleted TaskState = "completed" // completed, or ended by a BPMN error (Task.Error)
	TaskCanceled  TaskState = "canceled"  // its token left without completing it
)

// Finished reports whether s is final.
func (s TaskState) Finished() bool { return s == TaskCompleted || s == TaskCanceled }

// Task is a user task: the record the engine stores in the tasks bucket
// (msgpack, key Task.ID) and serves (JSON), and, while the task is open,
// the state its wait carries on the checkpoint.
//
// Variables are the task's own variables: the values of its input
// mappings, evaluated when the task was created. A task without input
// mappings has none; what it shows of the instance is the modeller's
// choice, made with input mappings (Camunda shows a task's local
// variables likewise). On the checkpoint the wait's Task leaves them out:
// they are its track's locals, added when a record is built (State.Task,
// PutTask).
//
// Revision counts the records the step emitted for the task, from 1 at
// creation: a record with a lower revision than the stored one is stale
// (a late republish) and must not replace it.
type Task struct {
	ID        string `msgpack:"id" json:"id"`
	Instance  string `msgpack:"instance" json:"instanceId"`
	ProcessID string `msgpack:"process" json:"processId"`
	Version   int    `msgpack:"version" json:"version"`
	Node      string `msgpack:"node" json:"nodeId"`
	Name      string `msgpack:"name,omitempty" json:"name,omitempty"`

	// Assignee holds the task; "" while nobody does.
	Assignee        string    `msgpack:"assignee,omitempty" json:"assignee,omitempty"`
	CandidateUsers  []string  `msgpack:"candidateUsers,omitempty" json:"candidateUsers,omitempty"`
	CandidateGroups []string  `msgpack:"candidateGroups,omitempty" json:"candidateGroups,omitempty"`
	DueDate         time.Time `msgpack:"dueDate,omitempty" json:"dueDate,omitzero"`
	FollowUpDate    time.Time `msgpack:"followUpDate,omitempty" json:"followUpDate,omitzero"`
	// Priority is from 0 to 100; 50 unless the model says otherwise.
	Priority int `msgpack:"priority" json:"priority"`

	FormKey           string `msgpack:"formKey,omitempty" json:"formKey,omitempty"`
	FormID            string `msgpack:"formId,omitempty" json:"formId,omitempty"`
	ExternalReference string `msgpack:"externalReference,omitempty" json:"externalReference,omitempty"`
	// FormEmbedded says the task's BPMN file holds its form, which the
	// API's task.form serves (docs/forms.md); Camunda 8's isFormEmbedded.
	FormEmbedded bool `msgpack:"formEmbedded,omitempty" json:"formEmbedded,omitempty"`

	Variables map[string]any `msgpack:"variables,omitempty" json:"variables,omitempty"`

	CreatedAt time.Time `msgpack:"createdAt" json:"createdAt"`
	State     TaskState `msgpack:"state" json:"state"`
	// ClaimedBy is the user who claimed the task and holds it still;
	// unclaim and assign clear it. CompletedBy is the user a complete or
	// error command named.
	ClaimedBy   string    `msgpack:"claimedBy,omitempty" json:"claimedBy,omitempty"`
	CompletedBy string    `msgpack:"completedBy,omitempty" json:"completedBy,omitempty"`
	EndedAt     time.Time `msgpack:"endedAt,omitempty" json:"endedAt,omitzero"`
	// Error is the BPMN error a user threw from the task (state completed).
	Error *TaskError `msgpack:"error,omitempty" json:"error,omitempty"`
	// ListenerError is why a delete task listener failed as the task was
	// canceled (the cancellation stands).
	ListenerError string `msgpack:"listenerError,omitempty" json:"listenerError,omitempty"`

	// Pending is a command waiting for the task's Zeebe task listeners:
	// until they are done, other commands are refused.
	Pending *TaskPending `msgpack:"pending,omitempty" json:"pending,omitempty"`

	// Outcomes are the last MaxTaskOutcomes commands applied to the task
	// or refused, oldest first: the API finds its command's answer here.
	Outcomes []TaskOutcome `msgpack:"outcomes,omitempty" json:"outcomes,omitempty"`
	Revision uint64        `msgpack:"rev" json:"revision"`
}

// TaskPending is a command on a task that waits for the task's Zeebe
// task listeners (tasklistenjobs.go): its event (assigning, updating,
// completing), the listener whose job runs, the command, and the
// corrections the listeners before it made.
type TaskPending struct {
	Event       string                `msgpack:"event" json:"event"`
	Listener    int                   `msgpack:"listener" json:"listener"`
	Command     string                `msgpack:"command" json:"command"`
	Cmd         *TaskCommand          `msgpack:"cmd" json:"-"`
	Corrections *jobs.TaskCorrections `msgpack:"corrections,omitempty" json:"-"`
}

// TaskError is a BPMN error thrown from a user task.
type TaskError struct {
	Code    string `msgpack:"code" json:"code"`
	Message string `msgpack:"message,omitempty" json:"message,omitempty"`
}

// MaxTaskOutcomes bounds Task.Outcomes.
const MaxTaskOutcomes = 8

// TaskOutcome is what became of one command on a task: applied (OK), or
// refused with the reason.
type TaskOutcome struct {
	ID     string    `msgpack:"id" json:"id"`
	Op     TaskOp    `msgpack:"op" json:"op"`
	User   string    `msgpack:"user,omitempty" json:"user,omitempty"`
	OK     bool      `msgpack:"ok" json:"ok"`
	Reason string    `msgpack:"reason,omitempty" json:"reason,omitempty"`
	Time   time.Time `msgpack:"time" json:"time"`
	// Conflict marks a refusal for the task's state, not the command's
	// content: a task listener denied it or failed, or another command
	// waits for the task's listeners.
	Conflict bool `msgpack:"conflict,omitempty" json:"conflict,omitempty"`
}

// Outcome returns the outcome of command id, if the task lists it.
func (t *Task) Outcome(id string) (TaskOutcome, bool) {
	i := slices.IndexFunc(t.Outcomes, func(o TaskOutcome) bool { return o.ID == id })
	if i < 0 {
		return TaskOutcome{}, false
	}
	return t.Outcomes[i], true
}

// EndedReason is why a command on a finished task is refused: "task X is
// completed by alice", "task X is canceled". The step uses it, and the
// engine answers with it for a command whose task's wait is gone.
func (t *Task) EndedReason() string {
	switch {
	case t.Error != nil:
		by := ""
		if t.CompletedBy != "" {
			by = " by " + t.CompletedBy
		}
		return fmt.Sprintf("task %s ended with BPMN error %q%s", t.ID, t.Error.Code, by)
	case t.State == TaskCompleted && t.CompletedBy != "":
		return fmt.Sprintf("task %s is completed by %s", t.ID, t.CompletedBy)
	}
	return fmt.Sprintf("task %s is %s", t.ID, t.State)
}

// clone returns a copy of t that shares no slice or map with it.
func (t *Task) clone() *Task {
	c := *t
	c.CandidateUsers, c.CandidateGroups = slices.Clone(t.CandidateUsers), slices.Clone(t.CandidateGroups)
	c.Outcomes = slices.Clone(t.Outcomes)
	c.Variables = nil
	if len(t.Variables) > 0 {
		c.Variables = deepCopyMap(t.Variables)
	}
	if t.Error != nil {
		e := *t.Error
		c.Error = &e
	}
	return &c
}

// TaskID names the task of one activation of a user task in instance:
// "<instance>.t<activation>". Instance ids never contain '.' (letters,
// digits, '-' and '_'), so the id routes to its instance (TaskInstance).
func TaskID(instance string, activation uint64) string {
	return instance + ".t" + strconv.FormatUint(activation, 10)
}

// TaskInstance returns the instance a task id belongs to; ok is false
// when id is not a task id.
func TaskInstance(id string) (instance string, ok bool) {
	instance, act, found := strings.Cut(id, ".")
	if !found || instance == "" || len(act) < 2 || act[0] != 't' {
		return "", false
	}
	if _, err := strconv.ParseUint(act[1:], 10, 64); err != nil {
		return "", false
	}
	return instance, true
}

// Task returns the record of open task id as of this checkpoint, with its
// variables; nil when the instance does not wait on it (unknown, finished
// or never created). The engine reads it when the bucket has no record
// yet: the checkpoint is written before the record.
func (s *State) Task(id string) *Task {
	w := s.taskWait(id)
	if w == nil {
		return nil
	}
	return s.taskRecord(w)
}

// OpenTasks returns the records of the instance's open tasks, in the
// order they were created.
func (s *State) OpenTasks() []*Task {
	var out []*Task
	for _, w := range s.Waits {
		if w.Kind == UserTaskWait {
			out = append(out, s.taskRecord(w))
		}
	}
	return out
}

func (s *State) taskWait(id string) *Wait {
	for _, w := range s.Waits {
		if w.Kind == UserTaskWait && w.Task != nil && w.Task.ID == id {
			return w
		}
	}
	return nil
}

// taskRecord returns the record of user task wait w: its task with the
// variables of its track.
func (s *State) taskRecord(w *Wait) *Task {
	rec := w.Task.clone()
	if t := s.track(w.Track); t != nil && len(t.Locals) > 0 {
		rec.Variables = deepCopyMap(t.Locals)
	}
	return rec
}

// TaskOp is an operation on a user task.
type TaskOp string

// Task operations (TaskCommand.Op).
const (
	// TaskClaim gives the task to TaskCommand.User. Refused when another
	// user holds it; for its holder it changes nothing.
	TaskClaim TaskOp = "claim"
	// TaskUnclaim clears the assignee.
	TaskUnclaim TaskOp = "unclaim"
	// TaskAssign gives the task to TaskCommand.User whoever holds it ("":
	// nobody), the operator's override.
	TaskAssign TaskOp = "assign"
	// TaskUpdate sets the due date, follow-up date and priority that the
	// command sets (non-nil).
	TaskUpdate TaskOp = "update"
	// TaskComplete completes the task with TaskCommand.Vars as its
	// results: its output mappings apply over them, else they are merged
	// into the instance; the token moves on.
	TaskComplete TaskOp = "complete"
	// TaskThrow ends the task with the BPMN error ErrorCode: Vars are set
	// first, then an error boundary catches it, or it raises an incident
	// like a worker's uncaught BPMN error.
	TaskThrow TaskOp = "error"
	// TaskEscalate raises the escalation EscalationCode from the task
	// (Camunda 7's TaskService.handleEscalation): Vars are set first, then
	// an escalation boundary on the task catches it, else an escalation
	// event sub-process or a boundary of an enclosing scope. An
	// interrupting catcher ends the task (canceled); otherwise the task
	// stays open. Refused, changing nothing, when nothing in the instance
	// catches it and the instance has no caller to report it to.
	TaskEscalate TaskOp = "escalate"
)

// TaskCommand is an operation on a user task, the payload of a
// UserTaskCommand event (Event.Task); the event's ID is the command id
// that the task's Outcomes list.
type TaskCommand struct {
	// Task is the task id (TaskID).
	Task string `msgpack:"task"`
	Op   TaskOp `msgpack:"op"`
	// User is the user who takes the task for claim and assign (for
	// assign, "" unassigns); for the other operations the acting user,
	// recorded in the outcome (and as CompletedBy), and may be "".
	User string `msgpack:"user,omitempty"`
	// DueDate, FollowUpDate and Priority are the changes of an update:
	// nil leaves a field as it is; a zero time clears a date. (Not
	// omitempty: msgpack would leave a zero time out, and a clear would
	// arrive as "leave it".)
	DueDate      *time.Time `msgpack:"dueDate"`
	FollowUpDate *time.Time `msgpack:"followUpDate"`
	Priority     *int       `msgpack:"priority,omitempty"`
	// Vars are the results of complete, the variables set by error.
	Vars map[string]any `msgpack:"vars,omitempty"`
	// ErrorCode (required) and ErrorMessage are the BPMN error of error.
	ErrorCode    string `msgpack:"errorCode,omitempty"`
	ErrorMessage string `msgpack:"errorMessage,omitempty"`
	// EscalationCode (required) is the escalation of escalate.
	EscalationCode string `msgpack:"escalationCode,omitempty"`
}

// TaskFactKind is the kind of a task fact.
type TaskFactKind string

// Task facts, published on jetbpm.fact.task.<process>.<kind>.
const (
	TaskFactCreated   TaskFactKind = "created"   // the task was created
	TaskFactAssigned  TaskFactKind = "assigned"  // a user got it: at creation, claim or assign
	TaskFactCompleted TaskFactKind = "completed" // completed, or ended by a BPMN error (ErrorCode)
	TaskFactCanceled  TaskFactKind = "canceled"  // its token left without completing it
	// TaskFactEscalated: a user raised an escalation from the task
	// (EscalationCode); a canceled fact follows when it interrupted it.
	TaskFactEscalated TaskFactKind = "escalated"
)

// TaskFact announces a change of a task to integrations (a notifier, a
// metrics exporter). Facts are at least once: consumers de-duplicate by
// ID. Un-assigning a task (unclaim, assign to nobody) and updating its
// dates or priority publish no fact: the record shows them.
type TaskFact struct {
	ID        string       `msgpack:"id" json:"id"`
	Kind      TaskFactKind `msgpack:"kind" json:"kind"`
	Task      string       `msgpack:"task" json:"taskId"`
	Instance  string       `msgpack:"instance" json:"instanceId"`
	ProcessID string       `msgpack:"process" json:"processId"`
	Node      string       `msgpack:"node" json:"nodeId"`
	Name      string       `msgpack:"name,omitempty" json:"name,omitempty"`
	// Assignee holds the task after the change; User is the user who
	// acted (a claim's, complete's or error's; "" for what the instance
	// did itself: creation, cancellation).
	Assignee        string    `msgpack:"assignee,omitempty" json:"assignee,omitempty"`
	User            string    `msgpack:"user,omitempty" json:"user,omitempty"`
	CandidateUsers  []string  `msgpack:"candidateUsers,omitempty" json:"candidateUsers,omitempty"`
	CandidateGroups []string  `msgpack:"candidateGroups,omitempty" json:"candidateGroups,omitempty"`
	ErrorCode       string    `msgpack:"errorCode,omitempty" json:"errorCode,omitempty"`
	EscalationCode  string    `msgpack:"escalationCode,omitempty" json:"escalationCode,omitempty"`
	Time            time.Time `msgpack:"time" json:"time"`
}
