package instance

import (
	"fmt"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
)

// Zeebe's execution listeners are jobs (docs/scripts-listeners-connectors.md
// §2.1): a node's start listeners run after its input mappings (and any
// Camunda 7 start listener), before its work; its end listeners after its
// output mappings, before it is left. The track waits on each listener's
// job in turn, as on a service task's: the job is fenced, retried and
// raises an incident the same way, and a retry of that incident runs the
// failed listener again (Track.Listener), not the ones before it. What a
// start listener's job completes with becomes the node's locals, so the
// node's work sees it; an end listener's is written as a job's output is.
// After the last start listener the track is Entered: its node's work
// runs next, without entering it again.

// listenFrom queues the job of n's first listener of event at index from
// or later and parks t on it; false when there is none.
func (r *runner) listenFrom(t *Track, n *model.Node, event string, from int) bool {
	return r.listenAt(t, n, ListenerAt{Event: event, Index: from})
}

// listenAt queues the job of the first listener of at's event, at its
// index or later — n's, or the process's at n — and parks t on it;
// false when there is none.
func (r *runner) listenAt(t *Track, n *model.Node, at ListenerAt) bool {
	ls := r.jobListeners(n, at)
	for i := at.Index; i < len(ls); i++ {
		if ls[i].Event == at.Event {
			at.Index = i
			r.listenerJob(t, n, at)
			return true
		}
	}
	return false
}

// jobListeners are the listeners at names: the process's or n's.
func (r *runner) jobListeners(n *model.Node, at ListenerAt) []model.JobListener {
	if at.Process {
		return r.p.JobListeners
	}
	return n.JobListeners
}

// listenerJob parks t on the job of listener at, at node n; a type
// expression that gives no type faults n, naming the listener (a retry
// evaluates it again).
func (r *runner) listenerJob(t *Track, n *model.Node, at ListenerAt) {
	l := &r.jobListeners(n, at)[at.Index]
	typ, retries, err := r.listenerJobOptions(t, l)
	if err != nil {
		t.Listener = &at
		r.fault(t, n, incidents.CauseExpression, fmt.Sprintf("%s execution listener %d: %v", at.Event, at.Index+1, err))
		return
	}
	topicLevel := r.env.Jobs.For(typ)
	policy := l.OverridesWith(retries).Resolve(topicLevel)
	owner := n.ID
	if at.Process {
		owner = "process"
	}
	id := r.waitID(fmt.Sprintf("%s#%s%d", owner, l.Event, at.Index+1), t.Activation)
	st := jobs.NewState(id, typ, policy, r.env.Now)
	st.Kept = policy.Trust == jobs.WorkerTrusted && policy.Equal(jobs.Overrides{}.Resolve(topicLevel))
	t.State = Waiting
	w := &Wait{ID: id, Kind: JobWait, Track: t.ID, Node: n.ID, Armed: r.env.Now, Job: st, Listener: &at}
	r.s.Waits = append(r.s.Waits, w)
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "job:" + id, Kind: EnqueueJob, Wait: id, Job: r.listenerJobOf(t, n, st, l.Event)})
}

// listenerJobOf is the job of listener job state st, of event: every
// variable t sees, and the node's task headers, if it has any.
func (r *runner) listenerJobOf(t *Track, n *model.Node, st *jobs.State, event string) *jobs.Job {
	var headers map[string]string
	if n.Service != nil && n.Service.Worker != nil {
		headers = n.Service.Worker.Headers
	}
	job := r.jobWith(n, st, r.visible(t), headers)
	job.Listener = event
	return job
}

// listenerDone applies the outcome of listener job wait w: the next
// listener, or the node's work (start), or leaving it (end).
func (r *runner) listenerDone(w *Wait, out *jobs.Terminal) {
	at := *w.Listener
	t, n := r.wake(w)
	what := fmt.Sprintf("%s execution listener %d (job type %q)", at.Event, at.Index+1, r.jobListeners(n, at)[at.Index].Type)
	if at.Process {
		what += " of the process"
	}
	t.Listener = &at // a fault from here on is this listener's: a retry runs it again
	switch out.Kind {
	case jobs.Done:
	case jobs.Errored:
		r.fault(t, n, incidents.CauseDataFlow, fmt.Sprintf("%s: threw BPMN error %q; an execution listener may not throw one", what, out.ErrorCode))
		return
	case jobs.StatusSet:
		r.fault(t, n, incidents.CauseDataFlow, fmt.Sprintf("%s: reported a business status; an execution listener has none", what))
		return
	default:
		r.fault(t, n, failureClass(out), what+": "+out.Message)
		return
	}
	vars, err := NormalizeVars(out.Output)
	if err != nil {
		r.fault(t, n, incidents.CauseDataFlow, what+": job output: "+err.Error())
		return
	}
	for _, k := range sortedKeys(vars) {
		v, ok := r.checkVar(t, n, k, vars[k])
		if !ok {
			return
		}
		vars[k] = v
	}
	for _, k := range sortedKeys(vars) {
		if at.Process {
			r.storeVar(RootScope, k, vars[k]) // the process's own scope
			continue
		}
		if at.Event == model.ListenStart {
			if t.Locals == nil {
				t.Locals = map[string]any{}
			}
			t.Locals[k] = vars[k]
		} else {
			r.storeVar(t.Scope, k, vars[k])
		}
	}
	t.Listener = nil
	next := at
	next.Index++
	switch {
	case r.listenAt(t, n, next):
	case at.Process && at.Event == model.ListenStart && !t.Firing:
		t.State = Entered // on to the start event (which has no inputs or start listeners of its own)
	case at.Process && at.Event == model.ListenEnd:
		r.finishTrack(t) // the process's end listeners ran: it completes
	case at.Event == model.ListenStart && t.Firing: // an element's, or the process's at a message start
		fired := t.Fired
		t.Firing, t.Fired = false, nil
		r.complete(t, n, t.Locals, fired) // the event happened before its listeners ran
	case at.Event == model.ListenStart:
		t.State = Entered
	default:
		r.leaveEnded(t, n)
	}
}

// resumeListener runs again the listener whose job failed at t's node:
// t is an incident's retry.
func (r *runner) resumeListener(t *Track, n *model.Node) {
	at := *t.Listener
	t.Listener = nil
	if isTimeout(&at) {
		t.State = Waiting // at its open task
		r.timeoutListen(t, n, at)
		r.retrySucceeded(t)
		return
	}
	r.listenerJob(t, n, at)
}

// leaveEnded leaves node n, whose end listeners are done: an iteration of
// a multi-instance activity completes, a terminate end event terminates
// its scope, another end event ends its track, any other node takes its
// outgoing flows.
func (r *runner) leaveEnded(t *Track, n *model.Node) {
	if t.Inner {
		values, names := t.Results, t.ResultNames
		t.Results, t.ResultNames = nil, nil
		r.journal(t, n, t.Locals, values)
		r.completeIteration(t, names, values)
		return
	}
	if n.Kind == model.EndEvent && n.Event == model.TerminateEvent {
		r.terminate(t, n)
		return
	}
	if n.Kind == model.EndEvent {
		r.endTrack(t)
		return
	}
	r.journal(t, n, t.Locals, nil)
	r.disarm(t)
	r.leave(t, n)
}

// listenerJobOptions are the job type and retries of listener l for
// track t: literals, or what their expressions give over what t sees.
func (r *runner) listenerJobOptions(t *Track, l *model.JobListener) (typ string, retries int, err error) {
	if typ, err = r.listenerType(t, l); err != nil {
		return "", 0, err
	}
	e := l.RetriesCompiled()
	if e == nil {
		return typ, l.Retries, nil
	}
	v, err := e.Eval(r.visible(t))
	if err != nil {
		return "", 0, fmt.Errorf("retries %q: %w", l.RetriesExpr, err)
	}
	n, ok := wholeNumber(v)
	if !ok || n < 1 || n > maxListenerRetries {
		return "", 0, fmt.Errorf("retries %q is %s, want a whole number from 1 to %d", l.RetriesExpr, describe(v), maxListenerRetries)
	}
	return typ, n, nil
}

// maxListenerRetries bounds what a retries expression may give.
const maxListenerRetries = 1_000_000

func wholeNumber(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), n == int64(int(n))
	case float64:
		return int(n), n == float64(int(n))
	}
	return 0, false
}

// listenerType is the job type of listener l for track t: its literal
// type, or what its type expression gives over what t sees.
func (r *runner) listenerType(t *Track, l *model.JobListener) (string, error) {
	e := l.TypeCompiled()
	if e == nil {
		return l.Type, nil
	}
	v, err := e.Eval(r.visible(t))
	if err != nil {
		return "", fmt.Errorf("type %q: %w", l.TypeExpr, err)
	}
	typ, ok := v.(string)
	switch {
	case !ok || strings.TrimSpace(typ) == "":
		return "", fmt.Errorf("type %q is %s, want a non-empty string", l.TypeExpr, describe(v))
	case len(typ) > MaxTopicLen:
		return "", fmt.Errorf("type %q gives a type of %d bytes, at most %d", l.TypeExpr, len(typ), MaxTopicLen)
	}
	return typ, nil
}
