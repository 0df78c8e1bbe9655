package instance

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// DefaultTaskPriority is the priority of a user task whose model sets none.
const DefaultTaskPriority = 50

// userTask parks t on user task n: its input mappings, then its
// assignment, schedule and priority (model.Human, evaluated over the
// inputs and the variables the task sees), then the task's wait, its
// record (PutTask) and facts, and its boundary events. A value that
// cannot be evaluated, or is not what its field takes, raises an incident
// (cause expression) before anything is opened; a retry evaluates again,
// as a new activation with a new task id, and once the task is created
// the incident is resolved (the retry succeeded).
func (r *runner) userTask(t *Track, n *model.Node) {
	task, err := r.newTask(t, n, r.visible(t)) // its inputs are t's locals
	if err == nil && len(n.TaskListeners) > 0 {
		err = r.taskCreated(t, n, task)
	}
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	if r.openingListeners(t, n, task) {
		return // the task opens once its creating listeners are done
	}
	r.openTask(t, n, task)
}

// openTask opens task, of t's visit of user task n: its wait, record,
// facts and boundary events.
func (r *runner) openTask(t *Track, n *model.Node, task *Task) {
	timeouts, err := r.taskTimeouts(t, n)
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	t.State = Waiting
	// A task created with an assignee, under Zeebe assigning listeners,
	// opens unassigned; their assignment follows (tasklistenjobs.go).
	assignee := ""
	if task.Assignee != "" && nextTaskListener(n, model.ListenAssigning, 0) >= 0 {
		assignee, task.Assignee = task.Assignee, ""
		settle(task)
	}
	w := &Wait{ID: r.waitID(n.ID, t.Activation), Kind: UserTaskWait, Track: t.ID, Node: n.ID, Armed: r.env.Now, Task: task}
	r.s.Waits = append(r.s.Waits, w)
	if assignee != "" {
		r.gateTask(w, Event{ID: initialAssignment, Kind: UserTaskCommand, Task: &TaskCommand{Task: task.ID, Op: TaskAssign, User: assignee}},
			model.ListenAssigning, withAssignee(task, assignee))
	}
	r.publishTask(w)
	r.taskFact(task, TaskFactCreated, "")
	if task.Assignee != "" {
		r.taskFact(task, TaskFactAssigned, "")
	}
	r.armTaskTimeouts(t, n, timeouts)
	if !r.armBoundaries(t, n) {
		return // a failed message boundary took the task back (cancelTask)
	}
	// A retry that created the task has succeeded: its incident closes
	// now, not when the task is done, days later perhaps.
	r.retrySucceeded(t)
}

// newTask builds the task of t's visit of user task n, its fields
// evaluated over vars.
func (r *runner) newTask(t *Track, n *model.Node, vars map[string]any) (*Task, error) {
	task := &Task{
		ID: TaskID(r.s.ID, t.Activation), Instance: r.s.ID, ProcessID: r.s.ProcessID, Version: r.s.Version,
		Node: n.ID, Name: n.Name, Priority: DefaultTaskPriority, CreatedAt: r.env.Now, State: TaskCreated,
	}
	h := n.Human
	if h == nil {
		return task, nil // anyone may claim it, no dates, the default priority
	}
	task.FormKey, task.FormID, task.ExternalReference = h.FormKey, h.FormID, h.ExternalReference
	task.FormEmbedded = h.Form != ""
	for _, err := range []error{
		humanField(h, model.AssigneeField, vars, taskUser, &task.Assignee),
		humanField(h, model.CandidateUsersField, vars, taskUsers, &task.CandidateUsers),
		humanField(h, model.CandidateGroupsField, vars, taskUsers, &task.CandidateGroups),
		humanField(h, model.DueDateField, vars, taskTime, &task.DueDate),
		humanField(h, model.FollowUpDateField, vars, taskTime, &task.FollowUpDate),
		humanField(h, model.PriorityField, vars, taskPriority, &task.Priority),
	} {
		if err != nil {
			return nil, err
		}
	}
	if task.Assignee != "" {
		task.State = TaskAssigned
	}
	return task, nil
}

// humanField evaluates field f of h over vars and converts the value into
// *into; a field the model leaves empty keeps *into as it is.
func humanField[T any](h *model.Human, f model.HumanField, vars map[string]any, conv func(any) (T, error), into *T) error {
	e := h.Compiled(f)
	if e == nil {
		return nil
	}
	v, err := e.Eval(vars)
	if err == nil {
		v, err = Normalize(v)
	}
	if err == nil {
		var x T
		if x, err = conv(v); err == nil {
			*into = x
			return nil
		}
	}
	return fmt.Errorf("user task %s %q: %w", f, e.Source(), err)
}

// taskUser reads an assignee: a string (trimmed), or null for nobody.
func taskUser(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return strings.TrimSpace(x), nil
	}
	return "", fmt.Errorf("is %s, want a user id (a string) or null", describe(v))
}

// taskUsers reads candidate users or groups: a list of strings, or one
// string holding a comma-separated list; each entry is trimmed, empty and
// repeated ones are dropped. Null is none.
func taskUsers(v any) ([]string, error) {
	var items []string
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		items = strings.Split(x, ",")
	case []any:
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("entry %d is %s, want a string", i+1, describe(e))
			}
			items = append(items, s)
		}
	default:
		return nil, fmt.Errorf("is %s, want a list of strings or a comma-separated string", describe(v))
	}
	var out []string
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// taskTimeLayouts are the date-time forms a due or follow-up date may
// take: RFC 3339; Camunda 7's form with a numeric offset without colon
// (2015-10-06T16:34:42.000+0200); a date-time without offset, read as
// UTC; a date alone, read as midnight UTC.
var taskTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04:05.999999999",
	time.DateOnly,
}

// taskTime reads a due or follow-up date: an ISO 8601 date-time string
// (taskTimeLayouts; a time value arrives as RFC 3339 text), or null or ""
// for none. The time is kept in UTC.
func taskTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok && v != nil {
		return time.Time{}, fmt.Errorf("is %s, want an ISO 8601 date-time such as 2026-12-01T17:00:00Z", describe(v))
	}
	if s = strings.TrimSpace(s); s == "" {
		return time.Time{}, nil
	}
	for _, layout := range taskTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO 8601 date-time such as 2026-12-01T17:00:00Z", s)
}

// taskPriority reads a priority: an integer from 0 to 100 (a number, or a
// string holding one); null is the default, 50.
func taskPriority(v any) (int, error) {
	var p int64
	switch x := v.(type) {
	case nil:
		return DefaultTaskPriority, nil
	case int64:
		p = x
	case float64:
		if x != math.Trunc(x) {
			return 0, fmt.Errorf("%v is not an integer", x)
		}
		if x < 0 || x > 100 {
			return 0, fmt.Errorf("priority %v is outside 0 to 100", x)
		}
		p = int64(x)
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", x)
		}
		p = n
	default:
		return 0, fmt.Errorf("is %s, want an integer from 0 to 100", describe(v))
	}
	if err := checkPriority(p); err != nil {
		return 0, err
	}
	return int(p), nil
}

func checkPriority(p int64) error {
	if p < 0 || p > 100 {
		return fmt.Errorf("priority %d is outside 0 to 100", p)
	}
	return nil
}

// publishTask counts a change of w's task and emits its record as of now
// (PutTask).
func (r *runner) publishTask(w *Wait) {
	w.Task.Revision++
	r.putTask(r.s.taskRecord(w))
}

// putTask emits rec; a record of the same task emitted earlier in this
// step is superseded by it.
func (r *runner) putTask(rec *Task) {
	mine := slices.DeleteFunc(r.s.Outbox[r.outboxBase:], func(e Effect) bool {
		return e.Kind == PutTask && e.Task.ID == rec.ID
	})
	r.s.Outbox = append(r.s.Outbox[:r.outboxBase+len(mine)],
		Effect{ID: fmt.Sprintf("task:%s:%d", rec.ID, rec.Revision), Kind: PutTask, Task: rec})
}

// taskFact announces a change of task; user is the user who acted. It
// returns the fact, for the caller to add to.
func (r *runner) taskFact(task *Task, kind TaskFactKind, user string) *TaskFact {
	f := &TaskFact{
		ID: fmt.Sprintf("%s.%d.%s", task.ID, task.Revision, kind), Kind: kind, Task: task.ID,
		Instance: task.Instance, ProcessID: task.ProcessID, Node: task.Node, Name: task.Name,
		Assignee: task.Assignee, User: user, Time: r.env.Now,
		CandidateUsers: slices.Clone(task.CandidateUsers), CandidateGroups: slices.Clone(task.CandidateGroups),
	}
	if kind == TaskFactCompleted && task.Error != nil {
		f.ErrorCode = task.Error.Code
	}
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "tfact:" + f.ID, Kind: PublishTaskFact, TaskFact: f})
	return f
}

// cancelTask ends user task wait w, whose token left the task without
// completing it: an interrupting boundary, a terminate end, a cancel, an
// abandoned incident, a multi-instance activity completing early (it is
// called wherever a wait is disarmed: unschedule). The record goes to
// canceled and the canceled fact is published. A task created in this
// same step, and not yet commanded, is taken back instead: its record and
// facts leave the outbox, so it never appears.
func (r *runner) cancelTask(w *Wait) {
	id := w.Task.ID
	mine := r.s.Outbox[r.outboxBase:]
	isNew := len(w.Task.Outcomes) == 0 && slices.ContainsFunc(mine, func(e Effect) bool {
		return e.Kind == PublishTaskFact && e.TaskFact.Task == id && e.TaskFact.Kind == TaskFactCreated
	})
	if isNew {
		mine = slices.DeleteFunc(mine, func(e Effect) bool {
			return e.Kind == PutTask && e.Task.ID == id || e.Kind == PublishTaskFact && e.TaskFact.Task == id
		})
		r.s.Outbox = r.s.Outbox[:r.outboxBase+len(mine)]
		return
	}
	w.Task.State, w.Task.EndedAt = TaskCanceled, r.env.Now
	r.taskDeleted(w)
	r.publishTask(w)
	r.taskFact(w.Task, TaskFactCanceled, "")
}

// taskDeleted runs the delete task listeners of w's task, which was just
// canceled: what they set is written; a failure cannot undo the
// cancellation (Camunda 7 would roll the command back), so it is kept on
// the task's record (ListenerError).
func (r *runner) taskDeleted(w *Wait) {
	if r.p == nil {
		return // an abort without the process: no listener can run
	}
	t, n := r.s.track(w.Track), r.p.Node(w.Node)
	if t == nil || n == nil || !model.Listens(n.TaskListeners, model.ListenDelete) {
		return
	}
	sets, err := r.taskListen(t, n, w.Task, model.ListenDelete, nil)
	if err != nil {
		w.Task.ListenerError = err.Error()
		return
	}
	r.writeSets(t, sets)
}
