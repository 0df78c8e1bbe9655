package camunda7

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/lease"
)

// Prefix is the path Camunda 7 clients expect the REST API under; mount
// the Handler there with http.StripPrefix(Prefix, h).
const Prefix = "/engine-rest"

// MaxAsyncResponseTimeout caps a fetchAndLock long poll, as Camunda 7 does.
const MaxAsyncResponseTimeout = 30 * time.Minute

// Options configure a Handler. The zero value works.
type Options struct {
	// Logger receives the facade's records (default slog.Default()).
	Logger *slog.Logger
	// VerdictTimeout bounds the wait for the engine's answer to a worker
	// report (complete, failure, …); default 30 s. Past it the request
	// fails with 503 and the worker may send it again.
	VerdictTimeout time.Duration
	// PollSlice is the longest one JetStream pull waits inside a long
	// poll (default 10 s); a client that goes away costs at most this.
	PollSlice time.Duration
	// Authorize, if set, is asked before every request runs: an error
	// refuses it with 403. Access says what the request does; an HTTP auth
	// layer uses it to confine a worker credential to its topics.
	Authorize func(r *http.Request, a Access) error
	// Now is the clock for lock expiration times (default time.Now).
	Now func() time.Time
}

// Access describes what a request does, for Options.Authorize.
type Access struct {
	// Operation is one of the Op constants.
	Operation string
	// Topics are the topics an external-task operation touches.
	Topics []string
}

// The operations of Access.
const (
	OpFetch            = "externalTask.fetch"  // fetchAndLock
	OpReport           = "externalTask.report" // complete, failure, bpmnError, extendLock, unlock
	OpExternalTaskRead = "externalTask.read"   // GET /external-task, GET /external-task/{id}
	OpDeploy           = "deploy"              // POST /deployment/create
	OpStart            = "start"               // POST /process-definition/…/start
	OpCancel           = "cancel"              // DELETE /process-instance/{id}
	OpModify           = "modify"              // POST /process-instance/{id}/variables
	OpSignal           = "execution.signal"    // POST /execution/{id}/signal
	OpRead             = "read"                // GET /process-definition, /process-instance/{id}, /incident, /execution
	OpMessage          = "message"             // POST /message
	OpTaskRead         = "task.read"           // GET /task
	OpTaskWork         = "task.work"           // POST /task/{id}/claim, unclaim, complete
)

// Handler serves Camunda 7's REST API (the subset of
// docs/camunda7-migration.md) over an engine node. It is an http.Handler
// for the paths below Prefix.
type Handler struct {
	eng  *engine.Engine
	api  *api.Handler
	nc   *nats.Conn
	js   jetstream.JetStream
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux

	lender *lease.Lender
	// locks are the deliveries this node handed to REST workers, by
	// stream sequence: the worker that holds each, for the workerId check
	// and the lock fields of GET /external-task.
	mu    sync.Mutex
	locks map[uint64]lockInfo
}

// lockInfo is a delivery handed out by fetchAndLock.
type lockInfo struct {
	id       string
	workerID string
	until    time.Time
}

// New returns a Handler over eng; nc is a connection allowed to pull from
// the topic consumers, read JETBPM_JOBS, publish reports and receive on
// its inboxes (the engine's own connection will do). Close releases it.
func New(eng *engine.Engine, nc *nats.Conn, opts Options) (*Handler, error) {
	if eng == nil || nc == nil {
		return nil, errors.New("camunda7: nil engine or NATS connection")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// engine/lease defaults VerdictTimeout and PollSlice.
	if opts.Now == nil {
		opts.Now = time.Now
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("camunda7: %w", err)
	}
	log := opts.Logger.With("component", "camunda7")
	l, err := lease.New(eng, nc, lease.Options{Logger: log, VerdictTimeout: opts.VerdictTimeout, PollSlice: opts.PollSlice, Now: opts.Now})
	if err != nil {
		return nil, err
	}
	h := &Handler{eng: eng, api: api.NewHandler(eng), nc: nc, js: js, opts: opts, log: log,
		lender: l, locks: map[uint64]lockInfo{}}
	h.routes()
	return h, nil
}

// Close stops receiving verdicts. Requests still running fail.
func (h *Handler) Close() error { h.lender.Close(); return nil }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /external-task/fetchAndLock", h.fetchAndLock)
	m.HandleFunc("POST /external-task/{id}/complete", h.report(reportComplete))
	m.HandleFunc("POST /external-task/{id}/failure", h.report(reportFailure))
	m.HandleFunc("POST /external-task/{id}/bpmnError", h.report(reportBpmnError))
	m.HandleFunc("POST /external-task/{id}/extendLock", h.report(reportExtendLock))
	m.HandleFunc("POST /external-task/{id}/unlock", h.report(reportUnlock))
	m.HandleFunc("GET /external-task", h.listExternalTasks)
	m.HandleFunc("GET /external-task/{id}", h.getExternalTask)

	m.HandleFunc("POST /deployment/create", h.createDeployment)
	m.HandleFunc("GET /process-definition", h.listProcessDefinitions)
	m.HandleFunc("POST /process-definition/key/{key}/start", h.startByKey)
	m.HandleFunc("POST /process-definition/{id}/start", h.startByID)
	m.HandleFunc("GET /process-instance/{id}", h.getProcessInstance)
	m.HandleFunc("DELETE /process-instance/{id}", h.deleteProcessInstance)
	m.HandleFunc("POST /process-instance/{id}/variables", h.modifyVariables)
	m.HandleFunc("GET /execution", h.listExecutions)
	m.HandleFunc("POST /execution/{id}/signal", h.signalExecution)
	m.HandleFunc("POST /message", h.correlateMessage)
	m.HandleFunc("GET /task", h.listTasks)
	m.HandleFunc("POST /task/{id}/claim", h.taskOp(api.OpTaskClaim))
	m.HandleFunc("POST /task/{id}/unclaim", h.taskOp(api.OpTaskUnclaim))
	m.HandleFunc("POST /task/{id}/complete", h.taskOp(api.OpTaskComplete))
	m.HandleFunc("GET /task/{id}/form", h.taskFormKey)
	m.HandleFunc("GET /task/{id}/form-variables", h.formVariables)
	m.HandleFunc("POST /task/{id}/submit-form", h.submitForm)
	m.HandleFunc("GET /incident", h.listIncidents)
	m.HandleFunc("GET /version", h.version)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "RestException", fmt.Sprintf("no Camunda 7 endpoint %s %s in jetbpm (docs/camunda7-migration.md lists them)", r.Method, r.URL.Path))
	})
	h.mux = m
}

// authorize asks Options.Authorize; it writes the 403 and reports false
// when refused.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request, a Access) bool {
	if h.opts.Authorize == nil {
		return true
	}
	if err := h.opts.Authorize(r, a); err != nil {
		writeError(w, http.StatusForbidden, "AuthorizationException", err.Error())
		return false
	}
	return true
}

// restError is Camunda 7's error body.
type restError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// writeJSON answers with v as exactly "application/json": the JS client
// parses a body only for that content type.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"type":"ProcessEngineException","message":"cannot encode the response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, restError{Type: typ, Message: msg})
}

// writeEngineError maps an engine error onto Camunda's status and type.
func writeEngineError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, engine.ErrNotFound):
		writeError(w, http.StatusNotFound, "InvalidRequestException", err.Error())
	case errors.Is(err, engine.ErrNoSubscription):
		writeError(w, http.StatusBadRequest, "RestException", err.Error())
	case errors.Is(err, engine.ErrInvalid), errors.Is(err, engine.ErrTooLarge):
		writeError(w, http.StatusBadRequest, "InvalidRequestException", err.Error())
	case errors.Is(err, engine.ErrFinished), errors.Is(err, engine.ErrConflict), errors.Is(err, engine.ErrDuplicate):
		writeError(w, http.StatusBadRequest, "BadUserRequestException", err.Error())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, "ProcessEngineException", err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "ProcessEngineException", err.Error())
	}
}

// maxBody bounds a JSON request body.
const maxBody = 4 << 20

// decodeBody reads a JSON request body into v; an empty body leaves v as
// it is. It writes the 400 and reports false on a malformed one.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err == nil && len(data) > maxBody {
		err = fmt.Errorf("request body larger than %d bytes", maxBody)
	}
	if err == nil && len(bytes.TrimSpace(data)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		err = dec.Decode(v)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidRequestException", "malformed request body: "+err.Error())
		return false
	}
	return true
}

// do runs an api operation with a JSON request.
func (h *Handler) do(ctx context.Context, op string, req any) (any, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrInvalid, err)
	}
	return h.api.Do(ctx, op, b)
}
