package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/index"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/messages"
	"github.com/jetbpm/jetbpm/streams"
)

// User tasks (docs/usertasks.md). The task's state lives on its instance's
// checkpoint; every operation is an event to the instance, applied by the
// partition's single writer, and the engine answers it from the task's
// record in the tasks bucket, which lists the command's outcome. Lists
// read this node's index of the bucket (index.Tasks), never an instance.

// Task list states (TaskFilter.State) besides the task states themselves.
const (
	TasksOpen = index.TasksOpen // created or assigned: the default
	TasksAll  = index.TasksAll  // open, and finished within the retention
)

// TaskListStates are the values TaskFilter.State takes ("" is TasksOpen).
var TaskListStates = index.TaskListStates

// TaskFilter selects tasks for Tasks; see index.TaskFilter.
type TaskFilter = index.TaskFilter

// Tasks lists the task records matching f: highest priority first, then
// the oldest, then by id. It reads this node's index of the tasks bucket,
// never an instance; a node that has just started reads the bucket first
// (bounded: an error says so if it cannot). A task shows a moment after
// the step that created or changed it (its record is published after the
// checkpoint).
func (e *Engine) Tasks(ctx context.Context, f TaskFilter) ([]*instance.Task, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if err := e.taskIndex.Wait(ctx); err != nil {
		return nil, err
	}
	return e.taskIndex.List(f)
}

// Task returns a task's record: the stored one, else (the record of a task
// just created may not be stored yet) the open task on its instance's
// checkpoint.
func (e *Engine) Task(ctx context.Context, id string) (*instance.Task, error) {
	instanceID, err := taskInstance(id)
	if err != nil {
		return nil, err
	}
	entry, err := e.tasks.Get(ctx, streams.TaskKey(id))
	switch {
	case err == nil:
		var rec instance.Task
		if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
			return nil, fmt.Errorf("task %s: decode: %w", id, err)
		}
		return &rec, nil
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	s, _, err := e.store.Get(ctx, instanceID)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	if rec := s.Task(id); rec != nil {
		return rec, nil
	}
	return nil, fmt.Errorf("task %q: %w", id, ErrNotFound)
}

// TaskForm returns the form task id's BPMN file holds for it, a Camunda
// Forms (form-js) JSON schema (docs/forms.md), from the deployed version
// the task was created by. It returns ErrNotFound for an unknown task and
// for one whose form is not in the file (named by a formId, an HTML
// formKey or an external reference, or none at all), saying which.
func (e *Engine) TaskForm(ctx context.Context, id string) (string, error) {
	t, err := e.Task(ctx, id)
	if err != nil {
		return "", err
	}
	schema, err := e.FormOf(ctx, t)
	if err != nil || schema != "" {
		return schema, err
	}
	why := "its task names no form"
	for _, named := range []struct{ what, v string }{
		{"formKey", t.FormKey}, {"formId", t.FormID}, {"externalReference", t.ExternalReference},
	} {
		if named.v != "" {
			why = fmt.Sprintf("its %s %q names a form outside the BPMN file", named.what, named.v)
			break
		}
	}
	return "", fmt.Errorf("task %q: no form in the BPMN file: %s: %w", id, why, ErrNotFound)
}

// FormOf returns the form the BPMN file of task t holds, "" for none: the
// schema of t's node in the version t was created by. A task whose record
// does not say formEmbedded has none, and its definition is not read.
func (e *Engine) FormOf(ctx context.Context, t *instance.Task) (string, error) {
	if !t.FormEmbedded {
		return "", nil
	}
	p, err := e.Process(ctx, t.ProcessID, t.Version)
	if err != nil {
		return "", fmt.Errorf("task %q: %w", t.ID, err)
	}
	if n := p.Node(t.Node); n != nil && n.Human != nil {
		return n.Human.Form, nil
	}
	return "", nil
}

// taskInstance returns the instance of task id (TaskID); a string that is
// no task id names no task.
func taskInstance(id string) (string, error) {
	instanceID, ok := instance.TaskInstance(id)
	if !ok || !checkpoint.ValidID(instanceID) {
		return "", fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	return instanceID, nil
}

// ClaimTask gives the task to user. It is refused with ErrConflict when
// another user holds it; for its holder it changes nothing.
func (e *Engine) ClaimTask(ctx context.Context, id, user string) (*instance.Task, error) {
	if user == "" {
		return nil, fmt.Errorf("%w: claim names no user", ErrInvalid)
	}
	return e.taskCommand(ctx, instance.TaskCommand{Task: id, Op: instance.TaskClaim, User: user})
}

// UnclaimTask leaves the task to nobody; user, who does it, is recorded
// on the outcome and may be "".
func (e *Engine) UnclaimTask(ctx context.Context, id, user string) (*instance.Task, error) {
	return e.taskCommand(ctx, instance.TaskCommand{Task: id, Op: instance.TaskUnclaim, User: user})
}

// AssignTask gives the task to user whoever holds it (an operator's
// override); "" leaves it to nobody.
func (e *Engine) AssignTask(ctx context.Context, id, user string) (*instance.Task, error) {
	return e.taskCommand(ctx, instance.TaskCommand{Task: id, Op: instance.TaskAssign, User: user})
}

// TaskUpdate changes a task's schedule and priority: a nil field stays as
// it is, a zero time clears a date. User, who does it, is recorded on the
// outcome.
type TaskUpdate struct {
	DueDate      *time.Time
	FollowUpDate *time.Time
	// Priority is from 0 to 100.
	Priority *int
	User     string
}

// UpdateTask sets what u sets.
func (e *Engine) UpdateTask(ctx context.Context, id string, u TaskUpdate) (*instance.Task, error) {
	if u.DueDate == nil && u.FollowUpDate == nil && u.Priority == nil {
		return nil, fmt.Errorf("%w: update sets nothing: give a due date, a follow-up date or a priority", ErrInvalid)
	}
	if u.Priority != nil && (*u.Priority < 0 || *u.Priority > 100) {
		return nil, fmt.Errorf("%w: priority %d is outside 0 to 100", ErrInvalid, *u.Priority)
	}
	return e.taskCommand(ctx, instance.TaskCommand{Task: id, Op: instance.TaskUpdate, User: u.User,
		DueDate: u.DueDate, FollowUpDate: u.FollowUpDate, Priority: u.Priority})
}

// CompleteTask completes the task with vars as its results (its output
// mappings apply over them, else they are merged into the instance); the
// token moves on. user is recorded as CompletedBy, not checked against
// the assignee: the tasklist decides who may complete. A completed or
// canceled task is refused with ErrFinished, naming who completed it.
func (e *Engine) CompleteTask(ctx context.Context, id, user string, vars map[string]any) (*instance.Task, error) {
	clean, err := e.taskVars(vars)
	if err != nil {
		return nil, err
	}
	return e.taskCommand(ctx, instance.TaskCommand{Task: id, Op: instance.TaskComplete, User: user, Vars: clean})
}

// maxTaskErrorMessage bounds the message of a BPMN error thrown from a task.
const maxTaskErrorMessage = 4096

// TaskError ends the task with BPMN error code (Camunda 7's
// handleBpmnError): vars are set first, then an error boundary catches it,
// or it raises an incident on the task like a worker's uncaught BPMN error.
func (e *Engine) TaskError(ctx context.Context, id, user, code, message string, vars map[string]any) (*instance.Task, error) {
	if code == "" {
		return nil, fmt.Errorf("%w: error names no error code", ErrInvalid)
	}
	if err := messages.CheckString("error code", code); err != nil {
		return nil, err
	}
	if len(message) > maxTaskErrorMessage {
		return nil, fmt.Errorf("%w: error message is %d bytes; at most %d", ErrInvalid, len(message), maxTaskErrorMessage)
	}
	clean, err := e.taskVars(vars)
	if err != nil {
		return nil, err
	}
	return e.taskCommand(ctx, instance.TaskCommand{Task: id, Op: instance.TaskThrow, User: user,
		ErrorCode: code, ErrorMessage: message, Vars: clean})
}

// EscalateTask raises escalation code from the task (Camunda 7's
// handleEscalation): vars are set first, then an escalation boundary on
// the task catches it — an interrupting one cancels the task, a
// non-interrupting one starts its path beside it — or else an escalation
// event sub-process or boundary of a scope around the task. When nothing
// in the instance catches it (and the instance was not started by a call
// activity, to which it is then reported), the command is refused with
// ErrInvalid and nothing changes.
func (e *Engine) EscalateTask(ctx context.Context, id, user, code string, vars map[string]any) (*instance.Task, error) {
	if code == "" {
		return nil, fmt.Errorf("%w: escalate names no escalation code", ErrInvalid)
	}
	if err := messages.CheckString("escalation code", code); err != nil {
		return nil, err
	}
	clean, err := e.taskVars(vars)
	if err != nil {
		return nil, err
	}
	return e.taskCommand(ctx, instance.TaskCommand{Task: id, Op: instance.TaskEscalate, User: user,
		EscalationCode: code, Vars: clean})
}

// taskVars normalizes a command's variables and checks each against the
// engine's limits, as a start's are.
func (e *Engine) taskVars(vars map[string]any) (map[string]any, error) {
	clean, err := instance.NormalizeVars(vars)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for name, v := range clean {
		if name == "" {
			return nil, fmt.Errorf("%w: a variable has an empty name", ErrInvalid)
		}
		if err := e.opts.checkValue(name, v); err != nil {
			return nil, fmt.Errorf("variable %q: %w", name, err)
		}
	}
	return clean, nil
}

// taskCommand sends cmd to the task's instance and waits for its outcome
// on the task's record (docs/usertasks.md §4): the record lists the
// command's id, applied or refused; or it is finished without it (the task
// ended before the command reached it). The instance's single writer
// orders concurrent commands: of two completes, the second finds the task
// completed.
func (e *Engine) taskCommand(ctx context.Context, cmd instance.TaskCommand) (*instance.Task, error) {
	id := cmd.Task
	instanceID, err := taskInstance(id)
	if err != nil {
		return nil, err
	}
	if err := messages.CheckString("user", cmd.User); err != nil {
		return nil, err
	}
	// Watch before reading the record: an end that lands between the read
	// and the watch would otherwise go unseen, and a command the instance
	// then ignores would wait for an outcome that never comes.
	w, err := e.tasks.Watch(ctx, streams.TaskKey(id), jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("task %s: watch: %w", id, err)
	}
	defer func() { _ = w.Stop() }()
	rec, err := e.Task(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec.State.Finished() {
		return nil, &taskRefusedError{id: id, reason: rec.EndedReason(), kind: ErrFinished}
	}
	// A finished instance applies no command; its task's final record is
	// on its way (in the outbox of its last checkpoint).
	if s, _, err := e.store.Get(ctx, instanceID); err == nil && s.Status.Finished() {
		return nil, endedWithInstance(s, id)
	}
	cmdID := "cmd:" + nuid.Next()
	ev := &instance.Event{ID: cmdID, Kind: instance.UserTaskCommand, Task: &cmd}
	if err := e.send(ctx, checkpoint.Envelope{Instance: instanceID, Event: ev}, cmdID); err != nil {
		return nil, err
	}
	var out *instance.Task
	err = awaitPut(ctx, w, "task "+id, func(now *instance.Task) (bool, error) {
		if o, done := now.Outcome(cmdID); done {
			if o.OK {
				out = now
				return true, nil
			}
			return true, refusal(now, o)
		}
		if now.State.Finished() {
			return true, &taskRefusedError{id: id, reason: now.EndedReason(), kind: ErrFinished}
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("task %s: no outcome yet (the command is stored and will be applied): %w", id, ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	// The record that shows the outcome is durable before the answer.
	if err := e.durable.Sync(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// endedWithInstance refuses a command on task id of finished instance s:
// with the reason of the task's final record when its last outbox holds
// it, else with the instance's end.
func endedWithInstance(s *instance.State, id string) error {
	for _, eff := range slices.Backward(s.Outbox) {
		if eff.Kind == instance.PutTask && eff.Task != nil && eff.Task.ID == id && eff.Task.State.Finished() {
			return &taskRefusedError{id: id, reason: eff.Task.EndedReason(), kind: ErrFinished}
		}
	}
	return &taskRefusedError{id: id, reason: fmt.Sprintf("task %s: its instance %s is %s", id, s.ID, s.Status), kind: ErrFinished}
}

// refusal is the error of a command the step refused for reason o.Reason:
// ErrFinished for a task that ended (in the same step as the command),
// ErrConflict for a claim of a task another user holds, else ErrInvalid
// (the engine checks a command's input before it sends it; the step
// checks it again, with the instance's limits).
func refusal(rec *instance.Task, o instance.TaskOutcome) error {
	kind := ErrInvalid
	switch {
	case rec.State.Finished() && o.Reason == rec.EndedReason():
		kind = ErrFinished
	case o.Conflict, o.Op == instance.TaskClaim && strings.HasPrefix(o.Reason, "task "+rec.ID+" is assigned to "):
		kind = ErrConflict
	}
	return &taskRefusedError{id: rec.ID, reason: o.Reason, kind: kind}
}

// taskRefusedError is a command the task refused, with the step's reason;
// it matches ErrFinished, ErrConflict or ErrInvalid.
type taskRefusedError struct {
	id, reason string
	kind       error
}

func (e *taskRefusedError) Error() string {
	if strings.HasPrefix(e.reason, "task "+e.id) {
		return e.reason
	}
	return fmt.Sprintf("task %s: %s", e.id, e.reason)
}

func (e *taskRefusedError) Unwrap() error { return e.kind }
