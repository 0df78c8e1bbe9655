package workerkit

import (
	"errors"
	"fmt"
	"time"

	"github.com/jetbpm/jetbpm/jobs"
)

// A handler's error says how its job ended. BpmnError and Status are
// business outcomes the process models; Fault is a technical fault with a
// code and body for the task's ErrorMapper. Any other error is a technical
// fault with code "" and the error's text as body. Wrapped outcomes count
// (errors.As).

// BpmnError ends the job with a BPMN error for an error boundary or event
// sub-process to catch. vars, if any, are set on the task's scope first.
func BpmnError(code, message string, vars map[string]any) error {
	return &BusinessError{Code: code, Message: message, Vars: vars}
}

// Status ends the job with a business status: the engine writes value to
// the task's WithStatus variable and the task completes.
func Status(value string) error { return &BusinessStatus{Value: value} }

// Fault is a technical fault with a code (an HTTP status, an exit code,
// any string) and a body (a JSON-like value) that the task's ErrorMapper
// rules may classify as a business outcome; unclassified, it is retried.
func Fault(code string, body any) error { return &TechnicalFault{Code: code, Body: body} }

// FailWith ends the job's run with technical fault err and says what
// comes next, instead of the task's retry policy: retries more runs after
// backoff, or with 0 none — an incident now. It is Zeebe's FailJob with
// retries, and what a connector's jobError asks for; it is reported as
// is, not retried within the lock nor classified by the ErrorMapper.
func FailWith(err error, retries int, backoff time.Duration) error {
	return &Failure{Err: err, Retries: max(retries, 0), Backoff: max(backoff, 0)}
}

// Failure is the error FailWith returns.
type Failure struct {
	Err     error
	Retries int
	Backoff time.Duration
}

func (e *Failure) Error() string {
	return fmt.Sprintf("%v (retries left: %d)", e.Err, e.Retries)
}

func (e *Failure) Unwrap() error { return e.Err }

// BusinessError is the error BpmnError returns.
type BusinessError struct {
	Code    string
	Message string
	Vars    map[string]any
}

func (e *BusinessError) Error() string {
	if e.Message == "" {
		return "bpmn error " + e.Code
	}
	return "bpmn error " + e.Code + ": " + e.Message
}

// Deny ends a Zeebe task listener's job by denying the user task's
// transition it hears (an assignment, an update, a completion): the
// command is refused with reason, and the task stays as it was.
func Deny(reason string) error {
	return &TaskVerdict{Result: jobs.TaskResult{Denied: true, DeniedReason: reason}}
}

// Correct ends a Zeebe task listener's job by accepting the transition
// with corrections to the task (its assignee, dates, candidates,
// priority), applied as the transition takes effect.
func Correct(c jobs.TaskCorrections) error {
	return &TaskVerdict{Result: jobs.TaskResult{Corrections: &c}}
}

// TaskVerdict is the error Deny and Correct return: a task listener's
// completion with a result, not a failure.
type TaskVerdict struct{ Result jobs.TaskResult }

func (e *TaskVerdict) Error() string {
	if e.Result.Denied {
		return "task listener denies: " + e.Result.DeniedReason
	}
	return "task listener corrects the task"
}

// BusinessStatus is the error Status returns.
type BusinessStatus struct{ Value string }

func (e *BusinessStatus) Error() string { return "business status " + e.Value }

// TechnicalFault is the error Fault returns.
type TechnicalFault struct {
	Code string
	Body any
}

func (e *TechnicalFault) Error() string {
	if e.Body == nil {
		return "fault " + e.Code
	}
	return fmt.Sprintf("fault %s: %v", e.Code, e.Body)
}

// faultOf is the raw {code, body} of a technical error.
func faultOf(err error) (code string, body any) {
	if f, ok := errors.AsType[*TechnicalFault](err); ok {
		return f.Code, f.Body
	}
	return "", err.Error()
}
