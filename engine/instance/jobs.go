package instance

import (
	"fmt"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
)

// enqueue parks t on an external service task: it resolves the job's
// policy (the task's options over the engine's), queues the job and arms
// the task's timer boundaries. The job id is the wait id, unique per
// activation and the worker's idempotency key.
func (r *runner) enqueue(t *Track, n *model.Node) {
	locals, input := r.taskInput(t, n)
	w := n.Service.Worker
	topic, err := r.topic(w, t, locals)
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	topicLevel := r.env.Jobs.For(topic)
	policy := w.Overrides().Resolve(topicLevel)
	id := r.waitID(n.ID, t.Activation)
	st := jobs.NewState(id, topic, policy, r.env.Now)
	// The engine runs a default policy itself (jobs.State.Kept).
	st.Kept = policy.Trust == jobs.WorkerTrusted && policy.Equal(jobs.Overrides{}.Resolve(topicLevel))
	job := r.job(n, st, input)
	t.State, t.Locals = Waiting, locals
	r.s.Waits = append(r.s.Waits, &Wait{
		ID: id, Kind: JobWait, Track: t.ID, Node: n.ID, Armed: r.env.Now,
		Job: st,
	})
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "job:" + id, Kind: EnqueueJob, Wait: id, Job: job})
	r.armBoundaries(t, n)
}

// MaxTopicLen bounds a topic a topic expression gives, in bytes: escaped
// into a consumer name (streams.TopicConsumer) it stays within the
// server's 255-byte limit.
const MaxTopicLen = 80

// topic returns the job topic of worker w: its literal topic, or what its
// topic expression gives over the variables track t sees with locals (the
// task's inputs), a non-empty string of at most MaxTopicLen bytes.
func (r *runner) topic(w *model.Worker, t *Track, locals map[string]any) (string, error) {
	e := w.TopicCompiled()
	if e == nil {
		return w.Topic, nil
	}
	v, err := e.Eval(r.visibleWith(t, locals))
	if err != nil {
		return "", fmt.Errorf("topic %q: %w", w.TopicExpr, err)
	}
	topic, ok := v.(string)
	switch {
	case !ok || strings.TrimSpace(topic) == "":
		return "", fmt.Errorf("topic %q is %s, want a non-empty string", w.TopicExpr, describe(v))
	case len(topic) > MaxTopicLen:
		return "", fmt.Errorf("topic %q gives a topic of %d bytes, at most %d", w.TopicExpr, len(topic), MaxTopicLen)
	}
	return topic, nil
}

// jobDone applies a job's terminal outcome: the track wakes once.
func (r *runner) jobDone(w *Wait, out *jobs.Terminal) {
	if w.Listener != nil && model.IsTaskEvent(w.Listener.Event) {
		r.taskListenerDone(w, out)
		return
	}
	if w.Listener != nil {
		r.listenerDone(w, out)
		return
	}
	t, n := r.wake(w)
	switch out.Kind {
	case jobs.Done:
		clean, err := NormalizeVars(out.Output)
		if err != nil {
			r.fault(t, n, incidents.CauseDataFlow, "job output: "+err.Error())
			return
		}
		if code := n.Service.Worker.CompleteError; code != "" {
			r.bpmnError(t, n, code, "", clean) // model.WithCompleteError
			return
		}
		r.complete(t, n, t.Locals, clean)
	case jobs.Errored:
		r.bpmnError(t, n, out.ErrorCode, out.Message, out.Vars)
	case jobs.StatusSet:
		r.writeStatus(t, n, w.Job.Policy, out.Status)
	default:
		r.fault(t, n, failureClass(out), out.Message)
	}
}

// bpmnError writes the variables a job's BPMN error carries, then throws
// it from the task.
func (r *runner) bpmnError(t *Track, n *model.Node, code, message string, vars map[string]any) {
	for _, k := range sortedKeys(vars) {
		v, ok := r.checkVar(t, n, k, vars[k])
		if !ok {
			return
		}
		r.storeVar(t.Scope, k, v)
	}
	r.throw(t, n.ID, t.Scope, code, message)
}

// writeStatus writes a business status to the task's WithStatus variable
// and completes the task. An existing variable with overwrite off is a
// collision: a data-flow incident, and the job is not run again.
func (r *runner) writeStatus(t *Track, n *model.Node, p jobs.Policy, value string) {
	if p.Status == "" {
		r.fault(t, n, incidents.CauseDataFlow, "the worker reported status "+value+" but the task has no WithStatus variable")
		return
	}
	if _, exists := r.visible(t)[p.Status]; exists && !p.StatusOverwrite {
		r.fault(t, n, incidents.CauseDataFlow, "status variable "+p.Status+" already exists and WithStatus does not overwrite it (status "+value+" not written)")
		return
	}
	r.storeVar(t.Scope, p.Status, value)
	r.complete(t, n, t.Locals, nil)
}

// failureClass names the cause class of a job's terminal failure.
func failureClass(out *jobs.Terminal) string {
	if out.Cause == jobs.CauseDataFlow {
		return incidents.CauseDataFlow
	}
	return incidents.CauseRetriesExhausted
}
