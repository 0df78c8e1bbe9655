// Package rest serves Camunda 8's Orchestration Cluster REST API (/v2)
// over an engine node, so that the clients Camunda 8.8+ uses by default —
// the Node, Java and Python SDKs' REST clients — deploy, start, message
// and work jobs through jetbpm unmodified (docs/camunda8-migration.md
// §5). It serves what engine/camunda8's Service does, as the Zeebe gRPC
// gateway does, and answers in Camunda's terms: keys as JSON strings,
// errors as problem details, the tenant "<default>".
//
//	h, err := rest.New(eng, nc, rest.Options{})
//	mux.Handle(rest.Prefix+"/", http.StripPrefix(rest.Prefix, h))
//
// A route it does not serve answers 501 naming it; an unknown route 404.
package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// Prefix is the path the clients expect the API under; mount the Handler
// there with http.StripPrefix(Prefix, h).
const Prefix = "/v2"

// tenant is the one tenant jetbpm has.
const tenant = "<default>"

// Options configures a Handler; the zero value works.
type Options struct {
	Logger *slog.Logger
	// Host and Port are what the topology reports for this node.
	Host string
	Port int
	// Version is the gateway and broker version the topology reports.
	Version string
	// LongPoll is how long a job activation waits for a first job when the
	// request sets no requestTimeout (default 10 s, as Camunda's).
	LongPoll time.Duration
	// RequestTimeout bounds a process instance creation that awaits
	// completion without a requestTimeout (default 15 s, as Camunda's
	// gateway).
	RequestTimeout time.Duration
	// VerdictTimeout bounds the wait for the engine's answer to a job
	// report (default 30 s): past it the request fails 503.
	VerdictTimeout time.Duration
	// MaxBody caps a request body (default 4 MiB; a deployment's 16 MiB).
	MaxBody int64
	// Now is the clock of job deadlines (default time.Now).
	Now func() time.Time
}

// Handler serves the API below Prefix.
type Handler struct {
	svc  *camunda8.Service
	opts Options
	mux  *http.ServeMux
}

// New returns a Handler over eng; nc reaches the topic consumers and the
// Camunda 8 keys bucket (the engine's own connection will do). Close it
// when the server stopped.
func New(eng *engine.Engine, nc *nats.Conn, opts Options) (*Handler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "8.8.0"
	}
	if opts.LongPoll <= 0 {
		opts.LongPoll = 10 * time.Second
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 15 * time.Second
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 4 << 20
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("camunda 8 REST: %w", err)
	}
	svc, err := camunda8.NewService(eng, js, camunda8.Options{Logger: opts.Logger, VerdictTimeout: opts.VerdictTimeout, Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("camunda 8 REST: %w", err)
	}
	h := &Handler{svc: svc, opts: opts, mux: http.NewServeMux()}
	h.routes()
	return h, nil
}

// Close stops extending the locks of activated jobs and receiving
// verdicts.
func (h *Handler) Close() { h.svc.Close() }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// route registers a pattern that needs access a.
func (h *Handler) route(pattern string, a httpauth.Access, f http.HandlerFunc) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if p := httpauth.FromContext(r.Context()); p != nil && !p.Allows(a) {
			problem(w, r, http.StatusForbidden, "FORBIDDEN", fmt.Sprintf("%s may not %s %s: it needs one of the roles %v", p.Name, r.Method, r.URL.Path, httpauth.RolesFor(a)))
			return
		}
		f(w, r)
	})
}

func (h *Handler) routes() {
	h.route("GET /topology", httpauth.Read, h.topology)
	h.route("GET /status", httpauth.Read, h.status)
	h.route("POST /deployments", httpauth.Operate, h.deploy)
	h.route("POST /process-instances", httpauth.Operate, h.createInstance)
	h.route("GET /process-instances/{key}", httpauth.Read, h.getInstance)
	h.route("POST /process-instances/{key}/cancellation", httpauth.Operate, h.keyOperation(h.svc.Cancel))
	h.route("POST /process-instances/search", httpauth.Read, h.searchInstances)
	h.route("POST /process-instances/{key}/incident-resolution", httpauth.Operate, h.resolveInstanceIncidents)
	h.route("PUT /element-instances/{key}/variables", httpauth.Operate, h.setVariables)
	h.route("POST /process-definitions/search", httpauth.Read, h.searchDefinitions)
	h.route("GET /process-definitions/{key}", httpauth.Read, h.getDefinition)
	h.route("GET /process-definitions/{key}/xml", httpauth.Read, h.definitionXML)
	h.route("POST /variables/search", httpauth.Read, h.searchVariables)
	h.route("GET /variables/{key}", httpauth.Read, h.getVariable)
	h.route("POST /user-tasks/search", httpauth.TaskRead, h.searchTasks)
	h.route("GET /user-tasks/{key}", httpauth.TaskRead, h.getTask)
	h.route("POST /user-tasks/{key}/assignment", httpauth.TaskWork, h.assignTask)
	h.route("DELETE /user-tasks/{key}/assignee", httpauth.TaskWork, h.unassignTask)
	h.route("POST /user-tasks/{key}/completion", httpauth.TaskWork, h.completeTask)
	h.route("PATCH /user-tasks/{key}", httpauth.TaskWork, h.updateTask)
	h.route("POST /jobs/activation", httpauth.Work, h.activateJobs)
	h.route("POST /jobs/{key}/completion", httpauth.Work, h.completeJob)
	h.route("POST /jobs/{key}/failure", httpauth.Work, h.failJob)
	h.route("POST /jobs/{key}/error", httpauth.Work, h.throwError)
	h.route("PATCH /jobs/{key}", httpauth.Work, h.updateJob)
	h.route("POST /messages/publication", httpauth.Integrate, h.publish)
	h.route("POST /messages/correlation", httpauth.Integrate, h.correlate)
	h.route("POST /signals/broadcast", httpauth.Integrate, h.broadcast)
	h.route("POST /incidents/search", httpauth.Read, h.searchIncidents)
	h.route("GET /incidents/{key}", httpauth.Read, h.getIncident)
	h.route("POST /incidents/{key}/resolution", httpauth.Operate, h.keyOperation(h.svc.ResolveIncident))
	for _, p := range refused {
		h.mux.HandleFunc(p, notImplemented)
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		problem(w, r, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("no route %s %s%s in the Orchestration Cluster REST API", r.Method, Prefix, r.URL.Path))
	})
}

// refused are the API's routes jetbpm does not serve (yet): 501 names
// them, where an unknown route is 404.
var refused = []string{
	"/process-instances/{key}/", "POST /process-instances/cancellation",
	"POST /process-instances/migration", "POST /process-instances/modification",
	"POST /process-instances/incident-resolution", "POST /process-instances/deletion", "POST /jobs/search",
	"/process-definitions/{key}/", "/element-instances/", "/variables/{key}/", "/user-tasks/{key}/",
	"/decision-definitions/", "/decision-instances/", "/decision-requirements/", "/decision-evaluation", "/forms/",
	"/batch-operations/", "/batch-operation-items/", "/users/", "/groups/", "/roles/", "/tenants/", "/authorizations/",
	"/mapping-rules/", "/cluster-variables/", "/audit-logs/", "/resources/", "/message-subscriptions/",
	"/correlated-message-subscriptions/", "/usage-metrics", "/license", "/authentication/",
	"/clock", "/clock/", "/documents", "/documents/", "/expression/", "/global-task-listeners/",
}

func notImplemented(w http.ResponseWriter, r *http.Request) {
	problem(w, r, http.StatusNotImplemented, "NOT_IMPLEMENTED", fmt.Sprintf("%s %s%s is not supported by jetbpm yet (docs/camunda8-migration.md §5 lists the routes it serves)", r.Method, Prefix, r.URL.Path))
}

// A problemDetail is an RFC 9457 problem, as Camunda answers errors.
type problemDetail struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
}

func problem(w http.ResponseWriter, r *http.Request, status int, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(problemDetail{Type: "about:blank", Title: title, Status: status, Detail: detail, Instance: Prefix + r.URL.Path})
}

// Deny answers a request the listener's authentication refused, as a
// problem detail (httpauth.DenyFunc).
func Deny(w http.ResponseWriter, r *http.Request, status int, detail string) {
	title := "UNAUTHORIZED"
	switch status {
	case http.StatusForbidden:
		title = "FORBIDDEN"
	case http.StatusServiceUnavailable:
		title = "UNAVAILABLE"
	}
	problem(w, r, status, title, detail)
}

// fail answers err in Camunda's terms: the rejection's kind picks the
// status and title, its text is the detail.
func fail(w http.ResponseWriter, r *http.Request, err error) {
	status, title := http.StatusInternalServerError, "INTERNAL"
	switch {
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, camunda8.ErrBadKey), errors.Is(err, camunda8.ErrJobNotFound):
		status, title = http.StatusNotFound, "NOT_FOUND"
	case errors.Is(err, engine.ErrInvalid):
		status, title = http.StatusBadRequest, "INVALID_ARGUMENT"
	case errors.Is(err, engine.ErrTooLarge):
		status, title = http.StatusRequestEntityTooLarge, "RESOURCE_EXHAUSTED"
	case errors.Is(err, engine.ErrFinished), errors.Is(err, engine.ErrConflict), errors.Is(err, camunda8.ErrReportRefused):
		status, title = http.StatusConflict, "INVALID_STATE"
	case errors.Is(err, engine.ErrDuplicate):
		status, title = http.StatusConflict, "ALREADY_EXISTS"
	case errors.Is(err, errors.ErrUnsupported):
		status, title = http.StatusNotImplemented, "NOT_IMPLEMENTED"
	case errors.Is(err, engine.ErrClosed), errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders):
		status, title = http.StatusServiceUnavailable, "UNAVAILABLE"
	case errors.Is(err, context.DeadlineExceeded):
		status, title = http.StatusGatewayTimeout, "DEADLINE_EXCEEDED"
	case errors.Is(err, context.Canceled):
		status, title = 499, "CANCELED"
	}
	problem(w, r, status, title, err.Error())
}

// invalid answers 400 for a malformed request.
func invalid(w http.ResponseWriter, r *http.Request, format string, args ...any) {
	problem(w, r, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf(format, args...))
}

// reply writes v as JSON with status.
func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON request body into v: numbers in variables stay
// exact (json.Number), one object only, at most MaxBody bytes. An empty
// body leaves v as it is (every field of a request body is optional or
// checked by its handler). It answers the error itself and returns false.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		problem(w, r, http.StatusRequestEntityTooLarge, "RESOURCE_EXHAUSTED", fmt.Sprintf("the request body is over %d bytes", tooBig.Limit))
		return false
	case err != nil:
		invalid(w, r, "read the request body: %v", err)
		return false
	case len(bytes.TrimSpace(body)) == 0:
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		invalid(w, r, "the request body is not the JSON object expected: %v", err)
		return false
	}
	if dec.More() {
		invalid(w, r, "the request body holds more than one JSON value")
		return false
	}
	return true
}

// pathKey reads the {key} path value: a key's decimal text.
func pathKey(w http.ResponseWriter, r *http.Request) (int64, bool) {
	s := r.PathValue("key")
	k, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		invalid(w, r, "expected the key in the path to be a number, but it is %q", s)
		return 0, false
	}
	return k, true
}

// A key is a key in a request body: Camunda's LongKey, a JSON string of
// digits; a JSON number is taken too.
type key int64

func (k *key) UnmarshalJSON(b []byte) error {
	s := string(b)
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("expected a key (a string of digits), but got %s", b)
	}
	*k = key(n)
	return nil
}

// checkTenant refuses a tenant other than jetbpm's one.
func checkTenant(w http.ResponseWriter, r *http.Request, t string) bool {
	if t != "" && t != tenant {
		invalid(w, r, "tenant %q: jetbpm has no tenants; leave tenantId out or send %q", t, tenant)
		return false
	}
	return true
}

// timestamp writes t as Camunda does: UTC, milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// keyOperation serves a POST on a key that takes a body of only an
// operationReference (Camunda's idempotency hint, which jetbpm's commands
// do not need: each is applied once) and answers 204 when do succeeds.
func (h *Handler) keyOperation(do func(ctx context.Context, k int64) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k, ok := pathKey(w, r)
		if !ok {
			return
		}
		var body struct {
			OperationReference *int64 `json:"operationReference"`
		}
		if !h.decode(w, r, &body) {
			return
		}
		if err := do(r.Context(), k); err != nil {
			fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}
