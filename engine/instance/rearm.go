package instance

import (
	"fmt"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

// Rearm puts back the job or the timer schedule of wait Event.Wait,
// which the store lost while the instance still waits there (the store
// check found it: docs/reliability.md, "A damaged store"). A job wait's
// job is queued again under its own id, with the inputs the task sees
// now; a timer wait (at firing Event.Firing) is scheduled again for its
// due time, so one past due fires at once. Not applied when the instance
// no longer waits there, or a timer has fired since.
const Rearm EventKind = "rearm"

// rearm applies a Rearm event.
func (r *runner) rearm(ev Event) bool {
	w := r.s.wait(ev.Wait)
	switch {
	case w == nil:
		return false
	case w.Kind == JobWait && w.Job != nil && w.Listener != nil:
		t, n := r.s.track(w.Track), r.p.Node(w.Node)
		if t == nil || n == nil {
			return false
		}
		st := w.Job
		st.Seq, st.Delivery, st.Nacked, st.LockedAt = 0, 0, 0, time.Time{}
		var job *jobs.Job
		switch task := r.listenedTask(w, t); {
		case model.IsTaskEvent(w.Listener.Event) && task != nil:
			job = r.jobWith(n, st, r.visible(t), taskHeaders(task, w.Listener.Event, ""))
			job.Listener = w.Listener.Event
		case !model.IsTaskEvent(w.Listener.Event) && w.Listener.Index < len(r.jobListeners(n, *w.Listener)):
			job = r.listenerJobOf(t, n, st, w.Listener.Event)
		default:
			return false
		}
		r.s.Outbox = append(r.s.Outbox, Effect{ID: "job:" + w.ID, Kind: EnqueueJob, Wait: w.ID, Job: job})
		return true
	case w.Kind == JobWait && w.Job != nil:
		t, n := r.s.track(w.Track), r.p.Node(w.Node)
		if t == nil || n == nil || n.Service == nil || n.Service.Worker == nil {
			return false
		}
		input := t.Locals
		if len(n.Inputs) == 0 {
			input = r.visible(t)
		}
		// A new message: the deliveries the engine heard of were of the
		// lost one.
		st := w.Job
		st.Seq, st.Delivery, st.Nacked, st.LockedAt = 0, 0, 0, time.Time{}
		r.s.Outbox = append(r.s.Outbox, Effect{ID: "job:" + w.ID, Kind: EnqueueJob, Wait: w.ID, Job: r.job(n, st, input)})
		return true
	case w.Kind.Timer() && w.Firing == ev.Firing:
		r.schedule(w)
		return true
	default:
		return false
	}
}

// job returns the job of job state st at service task n, with input.
// Only a policy that differs from its topic's default travels with the
// job (jobs.State.Kept).
func (r *runner) job(n *model.Node, st *jobs.State, input map[string]any) *jobs.Job {
	return r.jobWith(n, st, input, n.Service.Worker.Headers)
}

// jobWith returns the job of job state st at node n, with input and
// headers.
func (r *runner) jobWith(n *model.Node, st *jobs.State, input map[string]any, headers map[string]string) *jobs.Job {
	job := &jobs.Job{
		ID: st.ID, Topic: st.Topic, Instance: r.s.ID, ProcessID: r.s.ProcessID, Node: n.ID,
		Input: deepCopyMap(input), Headers: headers,
		LockDurationMs: st.Policy.LockDuration.Milliseconds(), EnqueuedAt: st.Enqueued,
	}
	if st.Policy.Trust == jobs.WorkerTrusted && !st.Kept {
		shipped := st.Policy
		job.Policy = &shipped
	}
	return job
}

// schedule schedules timer wait w's current firing.
func (r *runner) schedule(w *Wait) {
	r.s.Outbox = append(r.s.Outbox, Effect{
		ID: fmt.Sprintf("timer:%s:%d", w.ID, w.Firing), Kind: ScheduleTimer, Wait: w.ID, Due: w.Due, Firing: w.Firing,
	})
}

// listenedTask is the task a task listener's job wait w describes: the
// one it opens (creating), or t's open task.
func (r *runner) listenedTask(w *Wait, t *Track) *Task {
	if w.Task != nil {
		return w.Task
	}
	if tw := r.s.taskWait(TaskID(r.s.ID, t.Activation)); tw != nil {
		return tw.Task
	}
	return nil
}
