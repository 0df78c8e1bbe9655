package jobs

import (
	"fmt"
	"time"
)

// The worker protocol (docs/worker-protocol.md) is JSON: every language has
// it, job data is JSON-like, and a human can read it with the nats CLI.

// Job is the body of a job message on JETBPM_JOBS.
type Job struct {
	ID        string            `json:"id"`
	Topic     string            `json:"topic"`
	Instance  string            `json:"instanceId"`
	ProcessID string            `json:"processId"`
	Node      string            `json:"nodeId"`
	Input     map[string]any    `json:"input"`
	Headers   map[string]string `json:"headers,omitempty"`
	// ReportTo is the subject every check-in, extend request and report for
	// this job is published to.
	ReportTo string `json:"reportTo"`
	// LockDurationMs is the lock each delivery starts with.
	LockDurationMs int64 `json:"lockDurationMs"`
	// EnqueuedAt is when the engine queued the job (its step's time).
	EnqueuedAt time.Time `json:"enqueuedAt"`
	// Policy is shipped under WorkerTrusted only, and only when it differs
	// from the topic's default (State.Kept).
	Policy *Policy `json:"policy,omitempty"`
	// Listener is set on the job of a Zeebe listener: the event it
	// listens to (start, end; creating, assigning, updating, completing).
	Listener string `json:"listener,omitempty"`
}

// ReportKind names a worker message.
type ReportKind string

// Worker message kinds.
const (
	CheckIn   ReportKind = "checkin"   // a redelivery, before executing it
	Extend    ReportKind = "extend"    // ExtendLock
	Complete  ReportKind = "complete"  // success with output
	BpmnError ReportKind = "bpmnError" // WorkerTrusted verdict: a BPMN error
	Status    ReportKind = "status"    // WorkerTrusted verdict: a business status
	Fail      ReportKind = "fail"      // a technical fault, or the raw {code, body}
	// Release gives the delivery back unrun, for immediate redelivery to
	// any worker; it does not count as an attempt (Camunda's unlock).
	Release ReportKind = "release"
)

// Terminal reports whether a report of kind k carries the job's outcome.
func (k ReportKind) Terminal() bool {
	return k == Complete || k == BpmnError || k == Status
}

// Report is what a worker publishes to Job.ReportTo.
type Report struct {
	Kind  ReportKind `json:"kind"`
	JobID string     `json:"jobId"`
	// Delivery is the job message's reply (ack) subject as the worker
	// received it: it names the delivery the worker holds.
	Delivery string `json:"delivery"`
	Worker   string `json:"worker,omitempty"`
	// ReplyTo, if set, receives the engine's Verdict.
	ReplyTo string `json:"replyTo,omitempty"`

	Output map[string]any `json:"output,omitempty"` // complete
	// Result is a task listener's verdict on its transition (complete).
	Result    *TaskResult    `json:"result,omitempty"`
	ErrorCode string         `json:"errorCode,omitempty"` // bpmnError
	Message   string         `json:"message,omitempty"`   // bpmnError, fail
	Vars      map[string]any `json:"vars,omitempty"`      // bpmnError
	Status    string         `json:"status,omitempty"`    // status
	Code      string         `json:"code,omitempty"`      // fail
	Body      any            `json:"body,omitempty"`      // fail
	// Retries overrides the remaining retries on a fail (WorkerTrusted
	// only); RetryBackoffMs the delay before the next attempt.
	Retries        *int  `json:"retries,omitempty"`
	RetryBackoffMs int64 `json:"retryBackoffMs,omitempty"`
	// Attempts is how many times the worker ran the job within this
	// delivery before a WorkerTrusted fail (its own retries); 0 means one.
	Attempts int `json:"attempts,omitempty"`
	// CannotRunPolicy says the worker could not apply the shipped policy;
	// the engine classifies and retries for it (docs/worker-protocol.md §7).
	CannotRunPolicy bool `json:"cannotRunPolicy,omitempty"`
	// ExtendMs is the lock an extend request asks for, from now.
	ExtendMs int64 `json:"extendMs,omitempty"`
}

// Validate checks a report's shape; it names the first problem.
func (r *Report) Validate() error {
	switch {
	case r.JobID == "":
		return fmt.Errorf("report has no jobId")
	case r.Delivery == "":
		return fmt.Errorf("report for job %s has no delivery (the job message's reply subject)", r.JobID)
	}
	switch r.Kind {
	case CheckIn, Extend, Complete, Fail, Release:
	case BpmnError:
		if r.ErrorCode == "" {
			return fmt.Errorf("bpmnError report for job %s has no errorCode", r.JobID)
		}
	case Status:
		if r.Status == "" {
			return fmt.Errorf("status report for job %s has no status", r.JobID)
		}
	default:
		return fmt.Errorf("report for job %s has unknown kind %q", r.JobID, r.Kind)
	}
	if r.Retries != nil && *r.Retries < 0 {
		return fmt.Errorf("fail report for job %s has negative retries", r.JobID)
	}
	if r.Result != nil && r.Kind != Complete {
		return fmt.Errorf("%s report for job %s has a result; only complete has one", r.Kind, r.JobID)
	}
	if err := r.Result.Validate(); err != nil {
		return fmt.Errorf("complete report for job %s: %w", r.JobID, err)
	}
	return nil
}

// Verdict is the engine's answer to a worker message.
type Verdict struct {
	JobID    string     `json:"jobId"`
	Kind     ReportKind `json:"kind"`
	Accepted bool       `json:"accepted"`
	// Reason explains a refusal, or what an accepted fail led to.
	Reason string `json:"reason,omitempty"`
	// LockExpiresAt is set on a granted extend.
	LockExpiresAt *time.Time `json:"lockExpiresAt,omitempty"`
}
