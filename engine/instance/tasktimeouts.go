package instance

import (
	"fmt"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// Camunda 7's timeout task listeners (camunda:taskListener event
// "timeout", docs/usertasks.md "Task listeners") each have a timer,
// armed as the task opens and counted from then (a TaskTimeoutWait of the
// task's track). When it fires the listener runs, inline, on the task as
// any task listener does — what it sets is written, what it changes of
// the task is made, an assignee it sets fires the assignment listeners —
// and the task stays open; a cycle fires again while it is.
//
// A listener that fails raises an incident at the task (Track.Listener
// names it) and the task stays open, as Camunda 7's failed timer job
// leaves it: a retry runs the listener again; a resolve takes its work as
// done; completing the task closes the incident (overtaken), as Camunda 7
// deletes the failed job with its task; abandoning the incident cancels
// the task, as it cancels any token.

// taskTimeout is a timeout listener's timer resolved for arming.
type taskTimeout struct {
	index int
	timer *model.Timer
	value string // what an expression gave, kept on the wait
}

// taskTimeouts resolves the timers of n's timeout listeners over what t
// sees; an error names the listener.
func (r *runner) taskTimeouts(t *Track, n *model.Node) ([]taskTimeout, error) {
	var out []taskTimeout
	var vars map[string]any
	for i := range n.TaskListeners {
		l := &n.TaskListeners[i]
		if l.Event != model.ListenTimeout {
			continue
		}
		if vars == nil {
			vars = r.visible(t)
		}
		tm, err := l.Timer.Resolve(vars)
		if err != nil {
			return nil, fmt.Errorf("timeout task listener %s: %w", l.Name(i), err)
		}
		value := ""
		if l.Timer.Expr != "" {
			value = tm.Value
		}
		out = append(out, taskTimeout{i, tm, value})
	}
	return out, nil
}

// armTaskTimeouts arms timeouts for t's task at user task n, from now.
func (r *runner) armTaskTimeouts(t *Track, n *model.Node, timeouts []taskTimeout) {
	for _, to := range timeouts {
		if due, ok := to.timer.Due(r.env.Now, 0); ok {
			r.arm(&Wait{
				ID: r.waitID(fmt.Sprintf("%s#timeout%d", n.ID, to.index+1), t.Activation), Kind: TaskTimeoutWait,
				Track: t.ID, Node: n.ID, Due: due, Armed: r.env.Now, Timer: to.value,
				Listener: &ListenerAt{Event: model.ListenTimeout, Index: to.index},
			})
		}
	}
}

// taskTimedOut runs the timeout listener of fired wait w (already
// removed) and arms its cycle's next firing.
func (r *runner) taskTimedOut(t *Track, n *model.Node, w *Wait) {
	at := *w.Listener
	if at.Index >= len(n.TaskListeners) {
		r.bug("timeout wait %q names task listener %d of %q, which has %d", w.ID, at.Index, n.ID, len(n.TaskListeners))
	}
	if due, ok := r.waitTimer(n.TaskListeners[at.Index].Timer, w).Following(w.Armed, w.Due, w.Firing+1); ok {
		next := *w
		next.Due, next.Firing = due, w.Firing+1
		r.arm(&next)
	}
	r.timeoutListen(t, n, at)
}

// timeoutListen runs timeout listener at on t's open task at n: its
// changes are made and its sets written, or, when it fails, the task is
// left as it was and an incident raised at it.
func (r *runner) timeoutListen(t *Track, n *model.Node, at ListenerAt) {
	w := r.openTaskOf(t)
	if w == nil {
		r.bug("timeout listener of track %s at %q: the track has no open task", t.ID, n.ID)
	}
	task, before := w.Task, w.Task.clone()
	vars := r.visible(t)
	sets, err := r.taskListenerAt(t, n, at.Index, task, vars)
	sets, err = r.thenAssignment(t, n, task, before.Assignee, sets, err)
	if err != nil {
		r.restore(task, before)
		t.Listener = &at
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	settle(task)
	r.writeSets(t, sets)
	r.publishTask(w)
	if task.Assignee != "" && task.Assignee != before.Assignee {
		r.taskFact(task, TaskFactAssigned, "")
	}
}

// openTaskOf is the wait of the task t has open, nil if none.
func (r *runner) openTaskOf(t *Track) *Wait {
	for _, w := range r.s.Waits {
		if w.Kind == UserTaskWait && w.Track == t.ID {
			return w
		}
	}
	return nil
}

// isTimeout reports whether at, a track's listener, is a timeout
// listener: its incident leaves the task open.
func isTimeout(at *ListenerAt) bool { return at != nil && at.Event == model.ListenTimeout }
