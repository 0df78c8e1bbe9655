package instance

import (
	"fmt"
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
)

// Commands on a user task are UserTaskCommand events: the partition's
// single writer applies them one after the other, so two at once resolve
// in order (the second complete finds the task completed). Each command's
// outcome — applied, or refused with the reason — is listed on the task's
// record (Task.Outcomes), which is emitted again (PutTask) even when the
// command was refused, so the API can answer with it. A refused command
// changes nothing else. A command already listed (the same command id)
// is not applied again.
//
// A command for a task the instance does not wait on — it was never
// created, or ended in an earlier step, or the instance has ended — is
// not applied at all (Env.Discarded hears of it): the engine answers it
// from the stored record (Task.EndedReason). A task that ended earlier in
// the same step still lists it, refused, on its final record.

// taskCommand applies UserTaskCommand ev.
func (r *runner) taskCommand(ev Event) bool {
	c := ev.Task
	if c == nil {
		return false
	}
	w := r.s.taskWait(c.Task)
	if w == nil {
		return r.refuseEnded(ev)
	}
	if _, seen := w.Task.Outcome(ev.ID); seen {
		return false
	}
	if p := w.Task.Pending; p != nil {
		if p.Command == ev.ID {
			return false // a redelivery of the command that waits
		}
		r.conflictTask(w, ev, fmt.Sprintf("task %s is %s: its %s waits for task listener %d (job type %q)",
			c.Task, p.Event, p.Cmd.Op, p.Listener+1, r.p.Node(w.Node).TaskJobListeners[p.Listener].Type))
		return true
	}
	r.applyTaskCommand(w, ev)
	return true
}

// applyTaskCommand applies command ev to open task w.
func (r *runner) applyTaskCommand(w *Wait, ev Event) {
	c := ev.Task
	switch c.Op {
	case TaskClaim:
		r.claimTask(w, ev)
	case TaskUnclaim:
		r.assignTask(w, ev, "")
	case TaskAssign:
		r.assignTask(w, ev, c.User)
	case TaskUpdate:
		r.updateTask(w, ev)
	case TaskComplete, TaskThrow:
		r.endTask(w, ev)
	case TaskEscalate:
		r.escalateTask(w, ev)
	default:
		r.refuseTask(w, ev, fmt.Sprintf("unknown task operation %q (want claim, unclaim, assign, update, complete, error or escalate)", c.Op))
	}
}

// taskOutcome lists ev's outcome on task: applied when reason is "". The
// engine's own initial assignment is not listed.
func (r *runner) taskOutcome(task *Task, ev Event, reason string) {
	if ev.ID == initialAssignment {
		return
	}
	task.Outcomes = append(task.Outcomes, TaskOutcome{
		ID: ev.ID, Op: ev.Task.Op, User: ev.Task.User, OK: reason == "", Reason: reason, Time: r.env.Now,
	})
	if n := len(task.Outcomes); n > MaxTaskOutcomes {
		task.Outcomes = slices.Delete(task.Outcomes, 0, n-MaxTaskOutcomes)
	}
}

// refuseTask lists ev as refused for reason; nothing else changes.
func (r *runner) refuseTask(w *Wait, ev Event, reason string) {
	r.taskOutcome(w.Task, ev, reason)
	r.publishTask(w)
}

// conflictTask is refuseTask for a refusal the task's state makes (its
// listeners), not the command.
func (r *runner) conflictTask(w *Wait, ev Event, reason string) {
	r.taskOutcome(w.Task, ev, reason)
	if n := len(w.Task.Outcomes); n > 0 && w.Task.Outcomes[n-1].ID == ev.ID {
		w.Task.Outcomes[n-1].Conflict = true
	}
	r.publishTask(w)
}

// refuseEnded refuses a command whose task ended earlier in this step:
// its final record, still in this step's outbox, lists the refusal.
func (r *runner) refuseEnded(ev Event) bool {
	for _, e := range r.s.Outbox[r.outboxBase:] {
		if e.Kind != PutTask || e.Task.ID != ev.Task.Task || !e.Task.State.Finished() {
			continue
		}
		if _, seen := e.Task.Outcome(ev.ID); seen {
			return false
		}
		rec := e.Task.clone()
		r.taskOutcome(rec, ev, rec.EndedReason())
		rec.Revision++
		r.putTask(rec)
		return true
	}
	return false
}

// claimTask gives the task to the command's user, unless another user
// holds it; its holder's claim changes nothing but is applied.
func (r *runner) claimTask(w *Wait, ev Event) {
	task, user := w.Task, ev.Task.User
	switch {
	case user == "":
		r.refuseTask(w, ev, "claim names no user")
		return
	case task.Assignee != "" && task.Assignee != user:
		r.refuseTask(w, ev, fmt.Sprintf("task %s is assigned to %s", task.ID, task.Assignee))
		return
	}
	claimed := task.Assignee == ""
	if claimed && r.gateTask(w, ev, model.ListenAssigning, withAssignee(task, user)) {
		return
	}
	if claimed {
		before := task.clone()
		task.Assignee, task.ClaimedBy, task.State = user, user, TaskAssigned
		if reason := r.taskChanged(w, before); reason != "" {
			r.refuseTask(w, ev, reason)
			return
		}
	}
	r.taskOutcome(task, ev, "")
	r.publishTask(w)
	if claimed {
		r.taskFact(task, TaskFactAssigned, user)
	}
}

// assignTask gives the task to user whoever holds it; "" leaves it to
// nobody (unclaim, or assign to nobody).
func (r *runner) assignTask(w *Wait, ev Event, user string) {
	task := w.Task
	if task.Assignee != user && r.gateTask(w, ev, model.ListenAssigning, withAssignee(task, user)) {
		return
	}
	changed, before := task.Assignee != user, task.clone()
	task.Assignee, task.ClaimedBy, task.State = user, "", TaskAssigned
	if user == "" {
		task.State = TaskCreated
	}
	if changed {
		if reason := r.taskChanged(w, before); reason != "" {
			r.refuseTask(w, ev, reason)
			return
		}
	}
	changed = task.Assignee != before.Assignee // a listener may have changed it
	r.taskOutcome(task, ev, "")
	r.publishTask(w)
	if changed && task.Assignee != "" {
		r.taskFact(task, TaskFactAssigned, "") // the operator who assigns is not named
	}
}

// updateTask sets what the command sets of the due date, follow-up date
// and priority; a priority outside 0–100, or an update that sets nothing,
// is refused.
func (r *runner) updateTask(w *Wait, ev Event) {
	task, c := w.Task, ev.Task
	if c.DueDate == nil && c.FollowUpDate == nil && c.Priority == nil {
		r.refuseTask(w, ev, "update sets nothing: give a due date, a follow-up date or a priority")
		return
	}
	if c.Priority != nil {
		if err := checkPriority(int64(*c.Priority)); err != nil {
			r.refuseTask(w, ev, err.Error())
			return
		}
	}
	if r.gateTask(w, ev, model.ListenUpdating, updated(task, c)) {
		return
	}
	before := task.clone()
	if c.Priority != nil {
		task.Priority = *c.Priority
	}
	if c.DueDate != nil {
		task.DueDate = c.DueDate.UTC()
	}
	if c.FollowUpDate != nil {
		task.FollowUpDate = c.FollowUpDate.UTC()
	}
	if reason := r.taskChanged(w, before); reason != "" {
		r.refuseTask(w, ev, reason)
		return
	}
	r.taskOutcome(task, ev, "")
	r.publishTask(w)
}

// endTask completes the task (complete) or ends it with a BPMN error
// (error). Its variables are checked first: one that cannot be stored
// refuses the command, and nothing changes. Then the record goes to
// completed and the token moves: a completion through the task's output
// mappings (else its variables are merged), as any activity completes; an
// error sets the variables and is thrown at the task, as a worker's
// BPMN error is (jobDone). A failure on the way (an output mapping)
// raises an incident on the task, whose retry creates a new task.
func (r *runner) endTask(w *Wait, ev Event) {
	task, c := w.Task, ev.Task
	if c.Op == TaskThrow && c.ErrorCode == "" {
		r.refuseTask(w, ev, "error names no error code")
		return
	}
	vars, reason := r.taskVars(c.Vars)
	if reason == "" && c.Op == TaskComplete && r.gateTask(w, ev, model.ListenCompleting, task) {
		return
	}
	if reason == "" && c.Op == TaskComplete {
		reason = r.taskCompleting(w, vars)
	}
	if reason != "" {
		r.refuseTask(w, ev, reason)
		return
	}
	task.State, task.CompletedBy, task.EndedAt = TaskCompleted, c.User, r.env.Now
	if c.Op == TaskThrow {
		task.Error = &TaskError{Code: c.ErrorCode, Message: c.ErrorMessage}
	}
	r.taskOutcome(task, ev, "")
	r.publishTask(w)
	r.taskFact(task, TaskFactCompleted, c.User)
	t, n := r.wake(w)
	if isTimeout(t.Listener) {
		t.Listener = nil
		r.overtake(t, "the task ended")
	}
	if c.Op == TaskComplete {
		r.complete(t, n, t.Locals, vars)
		return
	}
	for _, k := range sortedKeys(vars) {
		r.storeVar(t.Scope, k, vars[k])
	}
	r.throw(t, n.ID, t.Scope, c.ErrorCode, c.ErrorMessage)
}

// taskVars normalizes a command's variables and checks each against the
// engine's limits; reason says why they cannot be stored.
func (r *runner) taskVars(vars map[string]any) (clean map[string]any, reason string) {
	clean, err := NormalizeVars(vars)
	if err != nil {
		return nil, err.Error()
	}
	for _, k := range sortedKeys(clean) {
		if k == "" {
			return nil, "a variable has an empty name"
		}
		if r.env.CheckValue == nil {
			continue
		}
		if err := r.env.CheckValue(k, clean[k]); err != nil {
			return nil, fmt.Sprintf("variable %q: %v", k, err)
		}
	}
	return clean, ""
}

// withAssignee is task as an assignment to user would leave it.
func withAssignee(task *Task, user string) *Task {
	after := task.clone()
	after.Assignee = user
	return after
}

// updated is task as update c would leave it.
func updated(task *Task, c *TaskCommand) *Task {
	after := task.clone()
	if c.Priority != nil {
		after.Priority = *c.Priority
	}
	if c.DueDate != nil {
		after.DueDate = c.DueDate.UTC()
	}
	if c.FollowUpDate != nil {
		after.FollowUpDate = c.FollowUpDate.UTC()
	}
	return after
}
