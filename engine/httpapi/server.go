// Package httpapi serves jetbpm's own HTTP API, /v1, as a thin layer over
// the engine API (package api): each route names one operation of
// api.Handler and builds its JSON request from the path, the query string
// or the body, so the NATS API, the CLI and HTTP share each operation's
// logic. docs/http-api.md lists the routes; GET /v1/openapi.json
// describes them as OpenAPI 3, made from the same route table.
//
// Errors are RFC 9457 problem details (application/problem+json) with a
// stable type per class of error (ProblemTypes): 400 a request this layer
// cannot read (malformed JSON, an unknown field or query parameter), 401
// no valid credentials, 403 a role that does not allow the route, 404 no
// such process, instance, incident or task, 409 a state that refuses the
// change (finished, claimed by another user, a duplicate message), 413 a
// body over the limit, 422 a well-formed request the engine refuses
// (a BPMN document that does not import), 503 the engine not started or
// JetStream out of reach.
//
// A Server also carries the other HTTP front ends of a node (the Camunda 7
// REST layer, the console) behind the same authentication: see Handle and
// HandleEngine. Callers are authenticated by an httpauth.Authenticator;
// each /v1 route needs one httpauth.Access.
//
//	srv := httpapi.New(httpauth.Open())
//	srv.SetEngine(eng) // until then /v1 answers 503
//	http.ListenAndServe("127.0.0.1:9464", srv)
package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// Body limits: a deploy carries BPMN documents, every other request a few
// fields and variables.
const (
	DefaultMaxBody       = 1 << 20
	DefaultMaxDeployBody = 10 << 20
)

// Server is the HTTP handler of a node's listener.
type Server struct {
	auth          *httpauth.Authenticator
	log           *slog.Logger
	maxBody       int64
	maxDeployBody int64
	routes        []*route
	mux           *http.ServeMux

	mu      sync.RWMutex
	eng     *engine.Engine
	h       *api.Handler
	mounted []*engineMount
}

// Option configures a Server.
type Option func(*Server)

// WithLogger logs internal errors to l.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithMaxBody sets the body limits, in bytes, of a deploy and of every
// other request; 0 keeps the default.
func WithMaxBody(deploy, other int64) Option {
	return func(s *Server) {
		if deploy > 0 {
			s.maxDeployBody = deploy
		}
		if other > 0 {
			s.maxBody = other
		}
	}
}

// New returns a Server authenticating with auth (nil: httpauth.Open, every
// caller an operator). It answers 503 on /v1 until SetEngine.
func New(auth *httpauth.Authenticator, opts ...Option) *Server {
	if auth == nil {
		auth = httpauth.Open()
	}
	s := &Server{auth: auth, log: slog.Default(), maxBody: DefaultMaxBody, maxDeployBody: DefaultMaxDeployBody,
		routes: routes(), mux: http.NewServeMux()}
	for _, o := range opts {
		o(s)
	}
	v1 := http.NewServeMux()
	for _, rt := range s.routes {
		v1.Handle(rt.method+" "+rt.path, s.routeHandler(rt))
	}
	v1.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		if m := s.allowed(r.URL.Path); m != "" {
			w.Header().Set("Allow", m)
			writeProblem(w, r, methodNotAllow.problem(fmt.Sprintf("%s %s: this path takes %s", r.Method, r.URL.Path, m)))
			return
		}
		writeProblem(w, r, notFound.problem(fmt.Sprintf("no route %s %s (GET /v1/openapi.json lists them)", r.Method, r.URL.Path)))
	})
	s.mux.HandleFunc("GET /v1/openapi.json", s.serveOpenAPI)
	s.mux.Handle("/v1/", auth.Middleware(v1, Deny))
	return s
}

// allowed lists the methods of the routes matching path, or "".
func (s *Server) allowed(path string) string {
	var ms []string
	for _, rt := range s.routes {
		mux := http.NewServeMux()
		mux.Handle(rt.method+" "+rt.path, http.NotFoundHandler())
		r, _ := http.NewRequest(rt.method, path, nil)
		if r == nil {
			continue
		}
		if _, pattern := mux.Handler(r); pattern != "" {
			ms = append(ms, rt.method)
		}
	}
	return strings.Join(ms, ", ")
}

// SetEngine makes the server serve eng (nil: answer 503, as while the
// node starts or stops) and builds the handlers of HandleEngine for it.
func (s *Server) SetEngine(eng *engine.Engine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eng = eng
	s.h = nil
	if eng != nil {
		s.h = api.NewHandler(eng)
	}
	for _, m := range s.mounted {
		m.set(eng)
	}
}

// Engine returns the engine SetEngine set, or nil.
func (s *Server) Engine() *engine.Engine {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.eng
}

func (s *Server) handler() *api.Handler {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.h
}

// ServeHTTP serves /v1, GET /v1/openapi.json (without authentication)
// and what Handle, HandleEngine and HandlePublic mounted.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// MountOption configures a mounted handler.
type MountOption func(*mountConfig)

type mountConfig struct{ deny httpauth.DenyFunc }

// DenyWith answers the mounted handler's unauthenticated requests with
// deny (in that API's error format) instead of a problem+json.
func DenyWith(deny httpauth.DenyFunc) MountOption {
	return func(c *mountConfig) { c.deny = deny }
}

// Handle mounts h on pattern (a net/http ServeMux pattern such as
// "/engine-rest/") behind the server's authentication: h runs only for
// authenticated callers and finds the caller with httpauth.FromContext,
// to check its roles (Principal.Allows, Principal.MayWork) itself.
func (s *Server) Handle(pattern string, h http.Handler, opts ...MountOption) {
	c := mountConfig{deny: Deny}
	for _, o := range opts {
		o(&c)
	}
	s.mux.Handle(pattern, s.auth.Middleware(h, c.deny))
}

// HandlePublic mounts h on pattern without authentication (health checks,
// metrics).
func (s *Server) HandlePublic(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// HandleEngine mounts, like Handle, the handler build makes for the
// engine: build runs at each SetEngine with an engine; until the first,
// and while the engine is unset, requests get 503 (from deny, if given).
func (s *Server) HandleEngine(pattern string, build func(*engine.Engine) http.Handler, opts ...MountOption) {
	c := mountConfig{deny: Deny}
	for _, o := range opts {
		o(&c)
	}
	m := &engineMount{build: build, deny: c.deny}
	s.mu.Lock()
	s.mounted = append(s.mounted, m)
	m.set(s.eng)
	s.mu.Unlock()
	s.Handle(pattern, m, opts...)
}

type engineMount struct {
	build func(*engine.Engine) http.Handler
	deny  httpauth.DenyFunc
	mu    sync.RWMutex
	h     http.Handler
}

func (m *engineMount) set(eng *engine.Engine) {
	var h http.Handler
	if eng != nil {
		h = m.build(eng)
	}
	m.mu.Lock()
	m.h = h
	m.mu.Unlock()
}

func (m *engineMount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.RLock()
	h := m.h
	m.mu.RUnlock()
	if h == nil {
		m.deny(w, r, http.StatusServiceUnavailable, "the engine is not running (starting or stopping)")
		return
	}
	h.ServeHTTP(w, r)
}

// routeHandler serves one route: role check, request, operation, answer.
func (s *Server) routeHandler(rt *route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := httpauth.FromContext(r.Context())
		if !p.Allows(rt.access) {
			Deny(w, r, http.StatusForbidden, fmt.Sprintf("%s may not %s %s: it needs one of the roles %s",
				principalName(p), rt.method, rt.path, roleNames(httpauth.RolesFor(rt.access))))
			return
		}
		if rt.serve != nil {
			rt.serve(s, w, r, rt)
			return
		}
		body, err := s.buildRequest(rt, r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		res, err := s.do(r.Context(), rt.op, body)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		status := http.StatusOK
		if rt.status != 0 {
			status = rt.status
		}
		if sr, ok := res.(api.StartResponse); ok && status == http.StatusCreated {
			w.Header().Set("Location", "/v1/instances/"+sr.ID)
		}
		writeJSON(w, status, res)
	})
}

// do runs an operation, or fails with 503 while there is no engine.
func (s *Server) do(ctx context.Context, op string, body []byte) (any, error) {
	h := s.handler()
	if h == nil {
		return nil, &requestError{class: unavailable, detail: "the engine is not running (starting or stopping)"}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, api.DefaultTimeout)
		defer cancel()
	}
	return h.Do(ctx, op, body)
}

// fail answers with the problem of err.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if re, ok := err.(*requestError); ok {
		writeProblem(w, r, re.class.problem(re.detail))
		return
	}
	p := errorProblem(err)
	if p.Status >= 500 {
		s.log.Warn("http api", "method", r.Method, "path", r.URL.Path, "status", p.Status, "err", err)
	}
	writeProblem(w, r, p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		body, status = []byte(`{"type":"`+problemBase+`internal","status":500}`), http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

func principalName(p *httpauth.Principal) string {
	if p == nil {
		return "an unauthenticated caller"
	}
	return fmt.Sprintf("%q (roles %s)", p.Name, roleNames(p.Roles))
}

func roleNames(rs []httpauth.Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}
