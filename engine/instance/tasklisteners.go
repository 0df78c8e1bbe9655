package instance

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/script"
)

// Camunda 7's task listeners (camunda:taskListener on a user task) run
// inline, in the step, when their event happens to the task
// (docs/usertasks.md, "Task listeners"): create as the task is created,
// before anyone sees it; assignment when it gets an assignee (at creation
// too); update when a command changes it (claim, unclaim, assign, update),
// before assignment; complete when a complete command ends it, after the
// command's variables are visible. A listener sees the task as Camunda
// 7's DelegateTask and may change its assignee, priority and candidates;
// what it sets with setVariable is written as execution.setVariable
// writes. A command whose listener fails is refused with the listener's
// error and changes nothing, as Camunda 7 rolls its transaction back; a
// create listener that fails is an incident at the task, which a retry
// creates again.

// taskListen runs user task n's task listeners for event, in order, on
// task (which they change) over what track t sees with vars over it (a
// completion's variables). It returns what they set, checked, for the
// caller to write (writeSets) once all ran; an error names the listener.
func (r *runner) taskListen(t *Track, n *model.Node, task *Task, event string, vars map[string]any) ([]script.Set, error) {
	var sets []script.Set
	var seen map[string]any
	for i := range n.TaskListeners {
		l := &n.TaskListeners[i]
		if l.Event != event {
			continue
		}
		if seen == nil {
			seen = r.visible(t)
			maps.Copy(seen, vars)
		}
		got, err := r.taskListenerAt(t, n, i, task, seen)
		if err != nil {
			return nil, err
		}
		sets = append(sets, got...)
	}
	return sets, nil
}

// taskListenerAt runs n's i-th task listener on task over vars, which
// gets what it sets; it returns that, checked, and an error names the
// listener.
func (r *runner) taskListenerAt(t *Track, n *model.Node, i int, task *Task, vars map[string]any) ([]script.Set, error) {
	l := &n.TaskListeners[i]
	sets, err := r.taskListener(t, n, l, task, vars)
	for j := 0; err == nil && j < len(sets); j++ {
		sets[j].Value, err = r.checkValue(sets[j].Name, sets[j].Value)
		vars[sets[j].Name] = sets[j].Value
	}
	if err != nil {
		return nil, fmt.Errorf("%s task listener %s: %w", l.Event, l.Name(i), err)
	}
	return sets, nil
}

// taskListener runs l on task over vars: a JavaScript program with the
// task facade, whose changes to the task are applied; an expression
// whose value goes to its variable or task field.
func (r *runner) taskListener(t *Track, n *model.Node, l *model.Listener, task *Task, vars map[string]any) ([]script.Set, error) {
	if p := l.Program(); p != nil {
		res, err := p.Run(context.Background(), script.Env{
			Vars: vars, Execution: r.execution(n.ID, t.ID), Task: &script.Task{
				ID: task.ID, Name: task.Name, DefinitionKey: n.ID, EventName: l.Event,
				Assignee: task.Assignee, Priority: task.Priority,
				CandidateUsers: task.CandidateUsers, CandidateGroups: task.CandidateGroups,
			},
		}, r.env.Scripts)
		if err != nil {
			return nil, err
		}
		task.Assignee, task.Priority = res.Task.Assignee, res.Task.Priority
		task.CandidateUsers, task.CandidateGroups = emptyNil(res.Task.CandidateUsers), emptyNil(res.Task.CandidateGroups)
		return res.Sets, nil
	}
	// An expression reads the task as Camunda 7's JUEL does: task.assignee,
	// task.priority, ...
	vars = maps.Clone(vars)
	vars["task"] = map[string]any{
		"id": task.ID, "name": task.Name, "taskDefinitionKey": n.ID, "eventName": l.Event,
		"assignee": emptyNull(task.Assignee), "priority": int64(task.Priority),
		"processInstanceId": r.s.ID,
	}
	v, err := l.Compiled().Eval(vars)
	if err == nil {
		v, err = Normalize(v)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case l.Field == "assignee":
		u, err := taskUser(v)
		if err != nil {
			return nil, fmt.Errorf("task.setAssignee: %w", err)
		}
		task.Assignee = u
	case l.Field == "priority":
		p, err := taskPriority(v)
		if err != nil {
			return nil, fmt.Errorf("task.setPriority: %w", err)
		}
		task.Priority = p
	case l.Set != "":
		return []script.Set{{Name: l.Set, Value: v, Local: l.Local}}, nil
	}
	return nil, nil
}

// setMap is what sets set, by name, the last value of each.
func setMap(sets []script.Set) map[string]any {
	m := make(map[string]any, len(sets))
	for _, s := range sets {
		m[s.Name] = s.Value
	}
	return m
}

func emptyNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func emptyNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clip(s)
}

// taskCreated runs the create listeners of new task, then its assignment
// listeners when it has an assignee, and writes what they set.
func (r *runner) taskCreated(t *Track, n *model.Node, task *Task) error {
	sets, err := r.taskListen(t, n, task, model.ListenCreate, nil)
	sets, err = r.thenAssignment(t, n, task, "", sets, err)
	if err != nil {
		return err
	}
	settle(task)
	r.writeSets(t, sets)
	return nil
}

// settle brings an open task's state and claim in line with its assignee
// after listeners changed it.
func settle(task *Task) {
	if task.State.Finished() {
		return
	}
	task.State = TaskCreated
	if task.Assignee != "" {
		task.State = TaskAssigned
	}
	if task.ClaimedBy != task.Assignee {
		task.ClaimedBy = ""
	}
}

// taskCompleting runs the complete listeners of w's task over the
// completion's variables vars; what they set is written, and a name vars
// has too takes the listener's value (it ran after they were set). On a
// failure the task is put back as it was and the reason returned.
func (r *runner) taskCompleting(w *Wait, vars map[string]any) (reason string) {
	t, n := r.s.track(w.Track), r.p.Node(w.Node)
	if t == nil || n == nil || !model.Listens(n.TaskListeners, model.ListenComplete) {
		return ""
	}
	before := w.Task.clone()
	sets, err := r.taskListen(t, n, w.Task, model.ListenComplete, vars)
	if err != nil {
		r.restore(w.Task, before)
		return err.Error()
	}
	settle(w.Task)
	for _, set := range sets {
		if _, ok := vars[set.Name]; ok && !set.Local {
			vars[set.Name] = set.Value
		}
	}
	r.writeSets(t, sets)
	return ""
}

// restore puts task back as before was, keeping its outcomes.
func (r *runner) restore(task, before *Task) {
	outcomes := task.Outcomes
	*task = *before
	task.Outcomes = outcomes
}

// taskChanged runs the listeners a command's change to task fires —
// update, then assignment when the assignee changed to someone — with
// before as the task was. On a failure task is put back as it was and the
// reason returned; else what they set is written.
func (r *runner) taskChanged(w *Wait, before *Task) (reason string) {
	t, n := r.s.track(w.Track), r.p.Node(w.Node)
	if t == nil || n == nil || len(n.TaskListeners) == 0 {
		return ""
	}
	task := w.Task
	sets, err := r.taskListen(t, n, task, model.ListenUpdate, nil)
	sets, err = r.thenAssignment(t, n, task, before.Assignee, sets, err)
	if err != nil {
		r.restore(task, before)
		return err.Error()
	}
	settle(task)
	r.writeSets(t, sets)
	return ""
}

// thenAssignment runs task's assignment listeners after other listeners
// ran (sets and err are theirs) when those left the task assigned to
// someone other than was, its assignee before them; it returns every
// listener's sets, or the first error.
func (r *runner) thenAssignment(t *Track, n *model.Node, task *Task, was string, sets []script.Set, err error) ([]script.Set, error) {
	if err != nil || task.Assignee == "" || task.Assignee == was {
		return sets, err
	}
	more, err := r.taskListen(t, n, task, model.ListenAssignment, setMap(sets))
	return append(sets, more...), err
}
