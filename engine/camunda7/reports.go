package camunda7

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/lease"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// An external task's id is its delivery: the job message's ack reply
// subject without "$JS.ACK.", e.g. JETBPM_JOBS.topic-payments.1.5.5.1795984665629790684.0.
// It names the stream sequence and the delivery count, so every report
// made with it is fenced by the engine exactly as a NATS worker's: once
// the lock has moved to a newer delivery, the old id is stale. A new
// delivery of the same job (after a lock expiry, a retry, an unlock) has
// a new id.
const ackPrefix = "$JS.ACK."

func taskID(delivery string) string { return strings.TrimPrefix(delivery, ackPrefix) }

// parseTaskID returns the delivery subject an id names.
func parseTaskID(id string) (string, jobs.Delivery, error) {
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '=') {
			return "", jobs.Delivery{}, fmt.Errorf("external task id %q has a character outside [A-Za-z0-9._=-]", id)
		}
	}
	subject := ackPrefix + id
	d, err := jobs.ParseDelivery(subject)
	if err == nil && (d.Stream != streams.JobsStream || !strings.HasPrefix(d.Consumer, "topic-")) {
		err = fmt.Errorf("external task id %q does not name a job delivery", id)
	}
	return subject, d, err
}

// jobOf reads the job message a delivery names; errTaskGone once the job
// is done (the work-queue stream dropped it) or when the id names a
// message of another topic.
func (h *Handler) jobOf(ctx context.Context, d jobs.Delivery) (*jobs.Job, error) {
	return h.lender.Job(ctx, d.Consumer, d.Seq)
}

var errTaskGone = lease.ErrGone

type reportKind int

const (
	reportComplete reportKind = iota
	reportFailure
	reportBpmnError
	reportExtendLock
	reportUnlock
)

var reportVerbs = map[reportKind]string{reportComplete: "completed", reportFailure: "failed", reportBpmnError: "reported as a BPMN error",
	reportExtendLock: "extended", reportUnlock: "unlocked"}

// reportBody is the union of the report endpoints' request bodies.
type reportBody struct {
	WorkerID       string              `json:"workerId"`
	Variables      map[string]Variable `json:"variables"`
	LocalVariables map[string]Variable `json:"localVariables"`
	ErrorMessage   string              `json:"errorMessage"`
	ErrorDetails   *string             `json:"errorDetails"`
	Retries        *int                `json:"retries"`
	RetryTimeout   int64               `json:"retryTimeout"`
	ErrorCode      string              `json:"errorCode"`
	NewDuration    int64               `json:"newDuration"`
}

// report serves complete, failure, bpmnError, extendLock and unlock: each
// becomes a worker report on the job's reportTo, decided by the engine
// like any NATS worker's, and the verdict becomes the status.
func (h *Handler) report(kind reportKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var body reportBody
		if !decodeBody(w, r, &body) {
			return
		}
		rep, err := body.toReport(kind)
		if err != nil {
			writeError(w, http.StatusBadRequest, "InvalidRequestException", err.Error())
			return
		}
		delivery, d, err := parseTaskID(id)
		if err != nil {
			writeError(w, http.StatusNotFound, "RestException", fmt.Sprintf("External task %s not found", id))
			return
		}
		ctx := r.Context()
		job, err := h.jobOf(ctx, d)
		if errors.Is(err, errTaskGone) {
			writeError(w, http.StatusNotFound, "RestException", fmt.Sprintf("External task %s not found", id))
			return
		}
		if err != nil {
			writeEngineError(w, err)
			return
		}
		if !h.authorize(w, r, Access{Operation: OpReport, Topics: []string{job.Topic}}) {
			return
		}
		h.mu.Lock()
		li, held := h.locks[d.Seq]
		h.mu.Unlock()
		if held && li.id == id && kind != reportUnlock && li.workerID != body.WorkerID {
			writeError(w, http.StatusBadRequest, "BadUserRequestException", fmt.Sprintf("External Task %s cannot be %s by worker '%s'. It is locked by worker '%s'.", id, reportVerbs[kind], body.WorkerID, li.workerID))
			return
		}
		rep.Worker = body.WorkerID
		v, err := h.lender.Report(ctx, job, delivery, rep)
		if errors.Is(err, engine.ErrTooLarge) {
			writeEngineError(w, err)
			return
		}
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "ProcessEngineException", fmt.Sprintf("external task %s: %v", id, err))
			return
		}
		if !v.Accepted {
			if strings.Contains(v.Reason, "unknown or finished job") {
				writeError(w, http.StatusNotFound, "RestException", fmt.Sprintf("External task %s not found: %s", id, v.Reason))
				return
			}
			writeError(w, http.StatusBadRequest, "BadUserRequestException", fmt.Sprintf("External task %s cannot be %s: %s", id, reportVerbs[kind], v.Reason))
			return
		}
		h.mu.Lock()
		if li, ok := h.locks[d.Seq]; ok && li.id == id {
			if kind == reportExtendLock && v.LockExpiresAt != nil {
				li.until = *v.LockExpiresAt
				h.locks[d.Seq] = li
			} else if kind != reportExtendLock {
				delete(h.locks, d.Seq)
			}
		}
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}
}

// toReport checks a request body and turns it into the worker report.
func (b *reportBody) toReport(kind reportKind) (jobs.Report, error) {
	if kind != reportUnlock && b.WorkerID == "" {
		return jobs.Report{}, errors.New("workerId is required")
	}
	switch kind {
	case reportComplete:
		out, err := decodeVariables(b.Variables)
		if err != nil {
			return jobs.Report{}, err
		}
		local, err := decodeVariables(b.LocalVariables)
		if err != nil {
			return jobs.Report{}, fmt.Errorf("localVariables: %w", err)
		}
		for k, v := range local {
			out[k] = v
		}
		return jobs.Report{Kind: jobs.Complete, Output: out}, nil
	case reportFailure:
		retries := 0
		if b.Retries != nil {
			retries = *b.Retries
		}
		if retries < 0 {
			return jobs.Report{}, fmt.Errorf("retries %d: must not be negative", retries)
		}
		if b.RetryTimeout < 0 {
			return jobs.Report{}, fmt.Errorf("retryTimeout %d: must not be negative", b.RetryTimeout)
		}
		r := jobs.Report{Kind: jobs.Fail, Message: b.ErrorMessage, Retries: &retries, RetryBackoffMs: b.RetryTimeout}
		if b.ErrorDetails != nil {
			r.Body = *b.ErrorDetails
		}
		return r, nil
	case reportBpmnError:
		if b.ErrorCode == "" {
			return jobs.Report{}, errors.New("errorCode is required")
		}
		vars, err := decodeVariables(b.Variables)
		if err != nil {
			return jobs.Report{}, err
		}
		return jobs.Report{Kind: jobs.BpmnError, ErrorCode: b.ErrorCode, Message: b.ErrorMessage, Vars: vars}, nil
	case reportExtendLock:
		if b.NewDuration <= 0 {
			return jobs.Report{}, fmt.Errorf("newDuration %d: the lock duration must be greater than 0", b.NewDuration)
		}
		return jobs.Report{Kind: jobs.Extend, ExtendMs: b.NewDuration}, nil
	}
	return jobs.Report{Kind: jobs.Release}, nil
}
