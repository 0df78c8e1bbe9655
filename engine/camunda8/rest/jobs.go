package rest

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/jobs"
)

// maxActivate bounds one activation's jobs.
const maxActivate = 1000

type activation struct {
	Type              string   `json:"type"`
	Worker            string   `json:"worker"`
	Timeout           int64    `json:"timeout"`
	MaxJobsToActivate int      `json:"maxJobsToActivate"`
	FetchVariable     []string `json:"fetchVariable"`
	RequestTimeout    int64    `json:"requestTimeout"`
	TenantIDs         []string `json:"tenantIds"`
	TenantFilter      string   `json:"tenantFilter"`
}

type activatedJob struct {
	Type                     string            `json:"type"`
	ProcessDefinitionID      string            `json:"processDefinitionId"`
	ProcessDefinitionVersion int               `json:"processDefinitionVersion"`
	ElementID                string            `json:"elementId"`
	CustomHeaders            map[string]string `json:"customHeaders"`
	Worker                   string            `json:"worker"`
	Retries                  int               `json:"retries"`
	Deadline                 int64             `json:"deadline"`
	Variables                map[string]any    `json:"variables"`
	TenantID                 string            `json:"tenantId"`
	JobKey                   camunda8.Key      `json:"jobKey,string"`
	ProcessInstanceKey       camunda8.Key      `json:"processInstanceKey,string"`
	ProcessDefinitionKey     camunda8.Key      `json:"processDefinitionKey,string"`
	ElementInstanceKey       camunda8.Key      `json:"elementInstanceKey,string"`
	Kind                     string            `json:"kind"`
	ListenerEventType        string            `json:"listenerEventType"`
	UserTask                 *struct{}         `json:"userTask"`
	Tags                     []string          `json:"tags"`
	RootProcessInstanceKey   *string           `json:"rootProcessInstanceKey"`
}

// activateJobs lends up to maxJobsToActivate jobs of a type, waiting for
// the first up to requestTimeout (0: Options.LongPoll; negative: not at
// all), each locked until the activation's timeout (camunda8.Jobs holds
// the lock).
func (h *Handler) activateJobs(w http.ResponseWriter, r *http.Request) {
	var a activation
	if !h.decode(w, r, &a) {
		return
	}
	switch {
	case strings.TrimSpace(a.Type) == "":
		invalid(w, r, "expected to activate jobs with a non-empty type, but type is blank")
		return
	case a.MaxJobsToActivate < 1:
		invalid(w, r, "expected to activate at least 1 job, but maxJobsToActivate is %d", a.MaxJobsToActivate)
		return
	case a.Timeout < 1:
		invalid(w, r, "expected a job timeout of at least 1 ms, but it is %d", a.Timeout)
		return
	}
	for _, t := range a.TenantIDs {
		if !checkTenant(w, r, t) {
			return
		}
	}
	if !mayWork(w, r, a.Type) {
		return
	}
	wait := h.opts.LongPoll
	switch {
	case a.RequestTimeout < 0:
		wait = 0
	case a.RequestTimeout > 0:
		wait = time.Duration(a.RequestTimeout) * time.Millisecond
	}
	got := h.svc.Jobs().Activate(r.Context(), camunda8.Activation{Type: a.Type, Worker: a.Worker,
		Timeout: time.Duration(a.Timeout) * time.Millisecond, Wait: wait,
		Max: min(a.MaxJobsToActivate, maxActivate), FetchVariables: a.FetchVariable})
	out := struct {
		Jobs []activatedJob `json:"jobs"`
	}{Jobs: make([]activatedJob, 0, len(got))}
	for _, j := range got {
		kind, event := j.Kind()
		out.Jobs = append(out.Jobs, activatedJob{
			Type: j.Type, ProcessDefinitionID: j.BpmnProcessID, ProcessDefinitionVersion: j.Version, ElementID: j.ElementID,
			CustomHeaders: j.CustomHeaders, Worker: j.Worker, Retries: j.Retries, Deadline: j.Deadline.UnixMilli(),
			Variables: j.Variables, TenantID: tenant, JobKey: j.Key, ProcessInstanceKey: j.ProcessInstanceKey,
			ProcessDefinitionKey: j.DefinitionKey, ElementInstanceKey: j.ElementInstanceKey, Kind: kind,
			ListenerEventType: event, Tags: []string{},
		})
	}
	if r.Context().Err() != nil { // the client left: its jobs go back at once
		for _, j := range got {
			h.svc.Jobs().Release(j.Key)
		}
		return
	}
	reply(w, http.StatusOK, out)
}

// completeJob completes a job; its variables are the task's output (the
// task's output mappings apply). A result (user task listeners, ad-hoc
// subprocesses) is refused: jetbpm's jobs have none.
func (h *Handler) completeJob(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Variables map[string]any `json:"variables"`
		// Result is a task listener's verdict (type userTask).
		Result *struct {
			Type string `json:"type"`
			jobs.TaskResult
		} `json:"result"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	rep := jobs.Report{Kind: jobs.Complete, Output: body.Variables}
	if res := body.Result; res != nil {
		if res.Type != "" && res.Type != "userTask" {
			problem(w, r, http.StatusNotImplemented, "NOT_IMPLEMENTED", fmt.Sprintf("a job result of type %q (ad-hoc sub-processes) is not supported by jetbpm; userTask is", res.Type))
			return
		}
		if err := res.TaskResult.Validate(); err != nil {
			invalid(w, r, "result: %v", err)
			return
		}
		rep.Result = &res.TaskResult
	}
	h.report(w, r, "complete", rep)
}

// failJob fails a job: the worker says how many retries are left and
// after what backoff (honoured under WorkerTrusted, docs/jobs.md §4);
// retries 0 raises an incident.
func (h *Handler) failJob(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Retries      int            `json:"retries"` // default 0: an incident, as Camunda's
		ErrorMessage string         `json:"errorMessage"`
		RetryBackOff int64          `json:"retryBackOff"`
		Variables    map[string]any `json:"variables"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	switch {
	case body.Retries < 0:
		invalid(w, r, "expected retries to be at least 0, but it is %d", body.Retries)
		return
	case body.RetryBackOff < 0:
		invalid(w, r, "expected retryBackOff to be at least 0, but it is %d", body.RetryBackOff)
		return
	case len(body.Variables) > 0:
		invalid(w, r, "variables on a failed job are not supported: jetbpm's tasks have no local variable scope for them")
		return
	}
	h.report(w, r, "fail", jobs.Report{Kind: jobs.Fail, Message: body.ErrorMessage, Retries: &body.Retries, RetryBackoffMs: body.RetryBackOff})
}

// throwError ends a job with a BPMN error, caught by a boundary or event
// subprocess; an uncaught error raises an incident.
func (h *Handler) throwError(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ErrorCode    string         `json:"errorCode"`
		ErrorMessage string         `json:"errorMessage"`
		Variables    map[string]any `json:"variables"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	if strings.TrimSpace(body.ErrorCode) == "" {
		invalid(w, r, "expected to throw an error with a non-empty errorCode, but it is blank")
		return
	}
	h.report(w, r, "throw an error for", jobs.Report{Kind: jobs.BpmnError, ErrorCode: body.ErrorCode, Message: body.ErrorMessage, Vars: body.Variables})
}

// updateJob moves a job's deadline (changeset.timeout, from now) as
// camunda8.Jobs.UpdateTimeout does. A change of retries is refused, saying
// why: a job's retries are its task's retry policy's, set by a worker when
// it fails the job. Nothing changes when either is refused.
func (h *Handler) updateJob(w http.ResponseWriter, r *http.Request) {
	k, ok := pathKey(w, r)
	if !ok {
		return
	}
	var body struct {
		Changeset struct {
			Retries *int   `json:"retries"`
			Timeout *int64 `json:"timeout"`
		} `json:"changeset"`
		OperationReference *int64 `json:"operationReference"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	c := body.Changeset
	switch {
	case c.Retries != nil:
		problem(w, r, http.StatusNotImplemented, "NOT_IMPLEMENTED", "updating a job's retries is not supported by jetbpm: they come from its task's retry policy, a worker sets them when it fails the job (/jobs/{key}/failure), and a job in an incident runs again when the incident is resolved")
		return
	case c.Timeout == nil:
		invalid(w, r, "expected a changeset with a timeout, but none given")
		return
	case *c.Timeout < 1:
		invalid(w, r, "expected a job timeout of at least 1 ms, but it is %d", *c.Timeout)
		return
	}
	_, err := h.svc.Jobs().UpdateTimeout(r.Context(), k, time.Duration(*c.Timeout)*time.Millisecond, func(topic string) error { return workAllowed(r, topic) })
	h.jobDone(w, r, k, "update", err)
}

// report sends r for the job the path's key names and answers 204, or the
// refusal in Camunda's terms.
func (h *Handler) report(w http.ResponseWriter, r *http.Request, verb string, rep jobs.Report) {
	k, ok := pathKey(w, r)
	if !ok {
		return
	}
	err := h.svc.Jobs().Report(r.Context(), k, rep, func(topic string) error { return workAllowed(r, topic) })
	h.jobDone(w, r, k, verb, err)
}

// jobDone answers a job request: 204, or its refusal in Camunda's terms.
func (h *Handler) jobDone(w http.ResponseWriter, r *http.Request, k int64, verb string, err error) {
	var denied *forbidden
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.As(err, &denied):
		problem(w, r, http.StatusForbidden, "FORBIDDEN", denied.Error())
	case errors.Is(err, camunda8.ErrJobNotFound):
		problem(w, r, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("expected to %s job with key '%d', but no such job was found: %v", verb, k, err))
	case errors.Is(err, camunda8.ErrReportRefused):
		problem(w, r, http.StatusConflict, "INVALID_STATE", fmt.Sprintf("expected to %s job with key '%d', but the engine refused: %v", verb, k, err))
	case errors.Is(err, engine.ErrTooLarge):
		problem(w, r, http.StatusRequestEntityTooLarge, "RESOURCE_EXHAUSTED", fmt.Sprintf("job %d: %v", k, err))
	default:
		problem(w, r, http.StatusServiceUnavailable, "UNAVAILABLE", fmt.Sprintf("job %d: %v", k, err))
	}
}

// A forbidden error refuses a worker credential a job type.
type forbidden struct{ msg string }

func (f *forbidden) Error() string { return f.msg }

// workAllowed refuses a worker credential the jobs of a topic it does not
// serve; with no credentials checked everyone may.
func workAllowed(r *http.Request, topic string) error {
	if p := httpauth.FromContext(r.Context()); p != nil && !p.MayWork(topic) {
		return &forbidden{fmt.Sprintf("%s may not work jobs of type %q", p.Name, topic)}
	}
	return nil
}

// mayWork answers 403 when workAllowed refuses.
func mayWork(w http.ResponseWriter, r *http.Request, topic string) bool {
	if err := workAllowed(r, topic); err != nil {
		problem(w, r, http.StatusForbidden, "FORBIDDEN", err.Error())
		return false
	}
	return true
}
