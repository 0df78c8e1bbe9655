package model

import (
	"time"

	"github.com/jetbpm/jetbpm/jobs"
)

// WorkerOption configures the external-worker locus of a service task.
type WorkerOption func(*Worker)

// WithWorker makes a service task external: on activation it
// enqueues a job on topic for workers to fetch, and waits. The task must
// not also name an in-process operation; pass "" as the operation.
func WithWorker(topic string, opts ...WorkerOption) NodeOption {
	return func(n *Node) {
		if n.Service == nil {
			n.Service = &Service{}
		}
		w := &Worker{Topic: topic}
		for _, o := range opts {
			o(w)
		}
		n.Service.Worker = w
	}
}

// WithWorkerTopicExpr is WithWorker with a topic that expr, an
// expression, gives over the task's variables each time the task starts
// (Worker.TopicExpr).
func WithWorkerTopicExpr(expr string, opts ...WorkerOption) NodeOption {
	return func(n *Node) {
		WithWorker("", opts...)(n)
		n.Service.Worker.TopicExpr = expr
	}
}

// WithRetryPolicy sets the job's retry policy, e.g.
// jobs.FixedDelaySpec(5, time.Second).
func WithRetryPolicy(spec jobs.RetrySpec) WorkerOption {
	return func(w *Worker) { w.Options.Retry = &spec }
}

// WithErrorMapper classifies the worker's faults by rules, first match
// wins.
func WithErrorMapper(rules ...jobs.Rule) WorkerOption {
	return func(w *Worker) { w.Options.Rules = rules }
}

// WithCustomErrorMapper classifies faults with a Go ErrorMapper registered
// with the engine under name; the job then runs EngineAuthoritative.
func WithCustomErrorMapper(name string) WorkerOption {
	return func(w *Worker) { w.Options.Mapper = name }
}

// WithOutputMapping extracts variables from the worker's payload.
func WithOutputMapping(rules ...jobs.OutputRule) WorkerOption {
	return func(w *Worker) { w.Options.Outputs = rules }
}

// WithStatus names the variable a business status is written to; with
// overwrite false an existing variable is a data-flow failure (an incident).
func WithStatus(name string, overwrite bool) WorkerOption {
	return func(w *Worker) { w.Options.Status, w.Options.StatusOverwrite = name, overwrite }
}

// WithWorkerTrust says who runs the job's policy (docs/jobs.md §4).
func WithWorkerTrust(t jobs.Trust) WorkerOption {
	return func(w *Worker) { w.Options.Trust = t }
}

// WithLockDuration sets the topic's lock (the lock duration is per topic,
// so every service on the topic must agree).
func WithLockDuration(d time.Duration) WorkerOption {
	return func(w *Worker) { w.Options.LockDuration = d }
}

// WithMaxLockDuration caps one delivery's total lock time.
func WithMaxLockDuration(d time.Duration) WorkerOption {
	return func(w *Worker) { w.Options.MaxLockDuration = d }
}

// WithHeaders passes static key/values to the worker with every job.
func WithHeaders(h map[string]string) WorkerOption {
	return func(w *Worker) { w.Headers = h }
}

// WithCompleteError makes the worker's completion of the job throw the
// BPMN error code instead of completing the task; the completion's
// variables are written first, as a BPMN error report's are. It is the
// Go form of Camunda 7's camunda:errorEventDefinition with an expression
// that always holds, which Camunda 7 evaluates when the worker completes
// the task as well as when it reports a failure (docs/bpmn-extensions.md);
// pair it with a catch-all WithErrorMapper rule for the failures.
func WithCompleteError(code string) WorkerOption {
	return func(w *Worker) { w.CompleteError = code }
}
