package instance

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
)

// Zeebe's task listeners are jobs (docs/scripts-listeners-connectors.md
// §2.1), as Camunda 8.8 runs them on a user task:
//
//   - creating: before the task opens. The track waits on each listener's
//     job with the task it will open (the wait's Task); the task opens,
//     with the listeners' corrections, once the last accepts.
//   - assigning, updating, completing: before a claim, unclaim or assign,
//     an update, a completion takes effect. The command is pending
//     (Task.Pending) while the listeners' jobs run, one after the other;
//     other commands are refused meanwhile. When the last accepts, the
//     command is applied with the listeners' corrections and answered; a
//     listener that denies it refuses it with its reason, and the task
//     stays as it was.
//
// A listener's job gets the variables the task sees and the task's
// properties as it would be after the transition, in headers named as
// Zeebe names them for job workers (io.camunda.zeebe:assignee, ...).
// Where Zeebe raises an incident on a failed task listener job, a
// pending command is refused naming the failure (its caller hears it; the
// task stays as it was), and a failed creating listener raises an incident
// at the task, whose retry opens it anew.

// The headers of a task listener's job.
const (
	HeaderUserTaskKey     = "io.camunda.zeebe:userTaskKey"
	HeaderAssignee        = "io.camunda.zeebe:assignee"
	HeaderCandidateUsers  = "io.camunda.zeebe:candidateUsers"
	HeaderCandidateGroups = "io.camunda.zeebe:candidateGroups"
	HeaderDueDate         = "io.camunda.zeebe:dueDate"
	HeaderFollowUpDate    = "io.camunda.zeebe:followUpDate"
	HeaderPriority        = "io.camunda.zeebe:priority"
	HeaderFormKey         = "io.camunda.zeebe:formKey"
	HeaderAction          = "io.camunda.zeebe:action"
	HeaderEventType       = "io.camunda.zeebe:eventType"
)

// initialAssignment is the id of the assignment a task created with an
// assignee goes through under assigning listeners: no caller waits for
// it, so its outcome is not listed.
const initialAssignment = "initial-assignment"

// nextTaskListener is the index of n's first task listener of event at
// from or later, -1 when there is none.
func nextTaskListener(n *model.Node, event string, from int) int {
	for i := from; i < len(n.TaskJobListeners); i++ {
		if n.TaskJobListeners[i].Event == event {
			return i
		}
	}
	return -1
}

// taskListenerJob queues the job of n's i-th task listener for track t,
// over task as the transition would leave it, on a wait that carries
// task when it is not open yet (creating).
func (r *runner) taskListenerJob(t *Track, n *model.Node, i int, task *Task, action string, opening bool) error {
	l := &n.TaskJobListeners[i]
	typ, retries, err := r.listenerJobOptions(t, l)
	if err != nil {
		return fmt.Errorf("task listener %d (%s): %w", i+1, l.Event, err)
	}
	topicLevel := r.env.Jobs.For(typ)
	policy := l.OverridesWith(retries).Resolve(topicLevel)
	id := r.waitID(fmt.Sprintf("%s#%s%d.%d", n.ID, l.Event, i+1, r.next()), t.Activation)
	st := jobs.NewState(id, typ, policy, r.env.Now)
	st.Kept = policy.Trust == jobs.WorkerTrusted && policy.Equal(jobs.Overrides{}.Resolve(topicLevel))
	w := &Wait{ID: id, Kind: JobWait, Track: t.ID, Node: n.ID, Armed: r.env.Now, Job: st, Listener: &ListenerAt{Event: l.Event, Index: i}}
	if opening {
		w.Task = task
	}
	r.s.Waits = append(r.s.Waits, w)
	job := r.jobWith(n, st, r.visible(t), taskHeaders(task, l.Event, action))
	job.Listener = l.Event
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "job:" + id, Kind: EnqueueJob, Wait: id, Job: job})
	return nil
}

// taskHeaders describe task to its listener's job.
func taskHeaders(task *Task, event, action string) map[string]string {
	h := map[string]string{HeaderUserTaskKey: task.ID, HeaderEventType: event, HeaderPriority: strconv.Itoa(task.Priority)}
	set := func(k, v string) {
		if v != "" {
			h[k] = v
		}
	}
	list := func(k string, v []string) {
		if len(v) > 0 {
			b, _ := json.Marshal(v)
			h[k] = string(b)
		}
	}
	date := func(k string, v time.Time) {
		if !v.IsZero() {
			h[k] = v.UTC().Format(time.RFC3339)
		}
	}
	set(HeaderAssignee, task.Assignee)
	set(HeaderFormKey, task.FormKey)
	set(HeaderAction, action)
	list(HeaderCandidateUsers, task.CandidateUsers)
	list(HeaderCandidateGroups, task.CandidateGroups)
	date(HeaderDueDate, task.DueDate)
	date(HeaderFollowUpDate, task.FollowUpDate)
	return h
}

// openingListeners runs n's first creating listener for the task t is
// about to open; false when it has none.
func (r *runner) openingListeners(t *Track, n *model.Node, task *Task) bool {
	i := nextTaskListener(n, model.ListenCreating, 0)
	if i < 0 {
		return false
	}
	t.State = Waiting
	if err := r.taskListenerJob(t, n, i, task, "create", true); err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
	}
	return true
}

// gateTask makes command ev wait for the listeners of event on w's task,
// unless its node has none or ev is the command being applied after
// them; true when ev now waits. after is the task as the command would
// leave it, which the listener's job describes.
func (r *runner) gateTask(w *Wait, ev Event, event string, after *Task) bool {
	n := r.p.Node(w.Node)
	if ev.ID == r.resumed || n == nil {
		return false
	}
	i := nextTaskListener(n, event, 0)
	t := r.s.track(w.Track)
	if i < 0 || t == nil {
		return false
	}
	cmd := *ev.Task
	if err := r.taskListenerJob(t, n, i, after, string(cmd.Op), false); err != nil {
		r.conflictTask(w, ev, err.Error())
		return true
	}
	w.Task.Pending = &TaskPending{Event: event, Listener: i, Command: ev.ID, Cmd: &cmd}
	r.publishTask(w)
	return true
}

// taskListenerDone applies the outcome of task listener job wait lw.
func (r *runner) taskListenerDone(lw *Wait, out *jobs.Terminal) {
	r.dropWait(lw)
	at, t, n := *lw.Listener, r.s.track(lw.Track), r.p.Node(lw.Node)
	if t == nil || n == nil {
		r.bug("task listener wait %q has no track or node", lw.ID)
	}
	l := &n.TaskJobListeners[at.Index]
	what := fmt.Sprintf("task listener %d (%s, job type %q)", at.Index+1, at.Event, l.Type)
	failure := ""
	switch {
	case out.Kind == jobs.Errored:
		failure = fmt.Sprintf("threw BPMN error %q; a task listener may not throw one", out.ErrorCode)
	case out.Kind == jobs.StatusSet:
		failure = "reported a business status; a task listener has none"
	case out.Kind != jobs.Done:
		failure = out.Message
	case len(out.Output) > 0:
		failure = "completed with variables; a task listener's job sets none (correct the task instead)"
	case out.Result != nil && out.Result.Denied && at.Event == model.ListenCreating:
		failure = "denied the task's creation; a creating listener cannot deny"
	}
	if at.Event == model.ListenCreating {
		r.creatingDone(t, n, lw.Task, at, what, failure, out.Result)
		return
	}
	w := r.s.taskWait(TaskID(r.s.ID, t.Activation))
	if w == nil || w.Task.Pending == nil {
		return // the task ended meanwhile: its final record answers the command
	}
	p := w.Task.Pending
	ev := Event{ID: p.Command, Kind: UserTaskCommand, Task: p.Cmd}
	switch {
	case failure != "":
		w.Task.Pending = nil
		r.conflictTask(w, ev, what+" failed: "+failure)
		return
	case out.Result != nil && out.Result.Denied:
		w.Task.Pending = nil
		reason := what + " denied it"
		if out.Result.DeniedReason != "" {
			reason += ": " + out.Result.DeniedReason
		}
		r.conflictTask(w, ev, reason)
		return
	}
	corr := mergeCorrections(p.Corrections, out.Result)
	if next := nextTaskListener(n, at.Event, at.Index+1); next >= 0 {
		after := w.Task.clone()
		correctTask(after, corr)
		if err := r.taskListenerJob(t, n, next, after, string(p.Cmd.Op), false); err != nil {
			w.Task.Pending = nil
			r.conflictTask(w, ev, err.Error())
			return
		}
		w.Task.Pending = &TaskPending{Event: p.Event, Listener: next, Command: p.Command, Cmd: p.Cmd, Corrections: corr}
		r.publishTask(w)
		return
	}
	w.Task.Pending = nil
	cmd := *p.Cmd
	correctCommand(w.Task, &cmd, corr)
	r.resumed = ev.ID
	defer func() { r.resumed = "" }()
	r.applyTaskCommand(w, Event{ID: ev.ID, Kind: UserTaskCommand, Task: &cmd})
}

// creatingDone goes on after creating listener at of the task t opens:
// the next listener, or the task opens with the corrections made; a
// failure is an incident at the task, whose retry opens it anew.
func (r *runner) creatingDone(t *Track, n *model.Node, task *Task, at ListenerAt, what, failure string, res *jobs.TaskResult) {
	if failure != "" {
		r.fault(t, n, incidents.CauseDataFlow, what+": "+failure)
		return
	}
	if res != nil {
		correctTask(task, res.Corrections)
		settle(task)
	}
	if next := nextTaskListener(n, at.Event, at.Index+1); next >= 0 {
		if err := r.taskListenerJob(t, n, next, task, "create", true); err != nil {
			r.fault(t, n, incidents.CauseExpression, err.Error())
		}
		return
	}
	r.openTask(t, n, task)
}

// dropWait removes wait w, its track left as it is.
func (r *runner) dropWait(w *Wait) {
	for i, x := range r.s.Waits {
		if x == w {
			r.s.Waits = append(r.s.Waits[:i:i], r.s.Waits[i+1:]...)
			return
		}
	}
}

// mergeCorrections adds the corrections of res to those made before.
func mergeCorrections(before *jobs.TaskCorrections, res *jobs.TaskResult) *jobs.TaskCorrections {
	if res == nil || res.Corrections == nil {
		return before
	}
	out := jobs.TaskCorrections{}
	if before != nil {
		out = *before
	}
	c := res.Corrections
	if c.Assignee != nil {
		out.Assignee = c.Assignee
	}
	if c.DueDate != nil {
		out.DueDate = c.DueDate
	}
	if c.FollowUpDate != nil {
		out.FollowUpDate = c.FollowUpDate
	}
	if c.CandidateUsers != nil {
		out.CandidateUsers = c.CandidateUsers
	}
	if c.CandidateGroups != nil {
		out.CandidateGroups = c.CandidateGroups
	}
	if c.Priority != nil {
		out.Priority = c.Priority
	}
	return &out
}

// correctTask applies corrections c to task.
func correctTask(task *Task, c *jobs.TaskCorrections) {
	if c == nil {
		return
	}
	if c.Assignee != nil {
		task.Assignee = *c.Assignee
	}
	if c.DueDate != nil {
		task.DueDate = c.DueDate.UTC()
	}
	if c.FollowUpDate != nil {
		task.FollowUpDate = c.FollowUpDate.UTC()
	}
	if c.CandidateUsers != nil {
		task.CandidateUsers = emptyNil(*c.CandidateUsers)
	}
	if c.CandidateGroups != nil {
		task.CandidateGroups = emptyNil(*c.CandidateGroups)
	}
	if c.Priority != nil {
		task.Priority = *c.Priority
	}
}

// correctCommand applies corrections c to a pending command: what the
// command itself sets (the assignee of a claim or assign, the fields of
// an update) takes the corrected value; the rest is corrected on task.
func correctCommand(task *Task, cmd *TaskCommand, c *jobs.TaskCorrections) {
	if c == nil {
		return
	}
	rest := *c
	switch cmd.Op {
	case TaskClaim, TaskUnclaim, TaskAssign:
		if c.Assignee != nil {
			cmd.Op, cmd.User = TaskAssign, *c.Assignee
			rest.Assignee = nil
		}
	case TaskUpdate:
		if c.DueDate != nil {
			cmd.DueDate, rest.DueDate = c.DueDate, nil
		}
		if c.FollowUpDate != nil {
			cmd.FollowUpDate, rest.FollowUpDate = c.FollowUpDate, nil
		}
		if c.Priority != nil {
			cmd.Priority, rest.Priority = c.Priority, nil
		}
	}
	correctTask(task, &rest)
	settle(task)
}
