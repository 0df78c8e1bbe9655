// Package console serves jetbpm's web console: an overview of the
// deployed processes and their instances, process diagrams with per-node
// counts, instances, incidents and a task list, for operators and task
// users (docs/console.md).
//
// The console is a client of the HTTP API: its pages read and change the
// engine through the /v1 routes only, so a role the API refuses is refused
// in the console too. The Handler serves what a browser page needs on top
// of that, all read-only:
//
//   - the pages: one HTML shell for every page route, plain ES modules and
//     the vendored bpmn-js viewer, embedded in the binary (no build step,
//     nothing fetched at run time) and cached by the browser under a
//     prefix named by their hash (static.go);
//   - GET /console/events: the facts stream as Server-Sent Events, one
//     JetStream ordered consumer per page;
//   - GET /console/overview and /console/processes/{id}/nodes: instance,
//     incident and task counts kept by the Handler, refreshed at most once
//     a second after facts arrive, so a page never waits for a scan of
//     every instance;
//   - GET /console/instances/{id}/timeline: the facts of one instance,
//     read by the sequences an in-memory index of the facts stream keeps
//     per instance (factindex.go), so it reads the instance's facts only.
//
// Mount it at / behind the same authentication as the API
// (httpapi.Server.Handle), which stores the caller for it: the operator
// and viewer roles read everything it serves; the tasklist role reads the
// pages and the task facts of the event feed (its pages then read the
// tasks through the API). Close it on shutdown.
package console

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/internal/httpauth"
)

//go:embed assets vendor
var files embed.FS

// A Handler serves the console. Make one with New.
type Handler struct {
	eng       *engine.Engine
	js        jetstream.JetStream
	logger    *slog.Logger
	heartbeat time.Duration
	refresh   time.Duration
	indexCap  int
	mux       *http.ServeMux
	overview  *overview
	facts     *factIndex

	stop context.CancelFunc
	done sync.WaitGroup
}

// An Option configures a Handler.
type Option func(*Handler)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(h *Handler) { h.logger = l } }

// WithHeartbeat sets how often the event feed writes a comment to keep
// idle connections open (default 15 s).
func WithHeartbeat(d time.Duration) Option { return func(h *Handler) { h.heartbeat = d } }

// WithRefresh sets the shortest time between two recomputations of the
// counts (default 1 s): facts arriving faster are folded into one.
func WithRefresh(d time.Duration) Option { return func(h *Handler) { h.refresh = d } }

// New returns a console for eng, reading the facts stream through nc. It
// starts watching the facts to keep its counts current; Close stops it.
func New(eng *engine.Engine, nc *nats.Conn, opts ...Option) (*Handler, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	h := &Handler{eng: eng, js: js, logger: slog.Default(), heartbeat: 15 * time.Second, refresh: time.Second, indexCap: maxIndexedFacts}
	for _, o := range opts {
		o(h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	h.overview = newOverview(eng, h.logger)
	h.facts = newFactIndex(h.indexCap)
	h.done.Go(func() { h.overview.run(ctx, js, h.refresh) })
	h.done.Go(func() { h.facts.run(ctx, js, h.logger) })
	h.routes()
	return h, nil
}

// Close stops watching the facts. Open event feeds end with their
// requests.
func (h *Handler) Close() {
	h.stop()
	h.done.Wait()
}

// pages are the routes answered with the HTML shell, and the page module
// app.js renders each with.
var pages = map[string]string{
	"GET /{$}":            "overview",
	"GET /processes/{id}": "process",
	"GET /instances":      "instances",
	"GET /instances/{id}": "instance",
	"GET /incidents":      "incidents",
	"GET /tasks":          "tasks",
	"GET /store":          "store",
}

func (h *Handler) routes() {
	h.mux = http.NewServeMux()
	tmpl, err := files.ReadFile(shellFile)
	if err != nil {
		panic("console: the embedded shell is missing: " + err.Error())
	}
	st := newStatic(files)
	for pattern, name := range pages {
		shell := st.shell(tmpl, name)
		page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-cache")
			w.Write(shell)
		})
		h.mux.Handle(pattern, allow(page, httpauth.Read, httpauth.TaskRead))
	}
	h.mux.Handle("GET /console/static/", allow(http.HandlerFunc(st.versioned), httpauth.Read, httpauth.TaskRead))
	h.mux.Handle("GET /console/assets/", allow(st.revalidated("assets"), httpauth.Read, httpauth.TaskRead))
	h.mux.Handle("GET /console/vendor/", allow(st.revalidated("vendor"), httpauth.Read, httpauth.TaskRead))
	h.mux.Handle("GET /console/events", allow(http.HandlerFunc(h.events), httpauth.Read, httpauth.TaskRead))
	h.mux.Handle("GET /console/overview", allow(http.HandlerFunc(h.serveOverview), httpauth.Read))
	h.mux.Handle("GET /console/processes/{id}/nodes", allow(http.HandlerFunc(h.serveNodes), httpauth.Read))
	h.mux.Handle("GET /console/instances/{id}/timeline", allow(http.HandlerFunc(h.timeline), httpauth.Read))
}

// allow serves next to the callers (httpauth.FromContext) allowed any of
// the accesses, and 403 to the others. Without a caller (the Handler not
// mounted behind authentication) everyone is refused.
func allow(next http.Handler, accesses ...httpauth.Access) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := httpauth.FromContext(r.Context())
		for _, a := range accesses {
			if p.Allows(a) {
				next.ServeHTTP(w, r)
				return
			}
		}
		who := "no authenticated caller"
		if p != nil {
			who = "user " + p.Name
		}
		writeProblem(w, http.StatusForbidden, fmt.Sprintf("%s may not read the console: it needs the operator, viewer or tasklist role", who))
	})
}

// ServeHTTP serves the pages, the assets and the console's read routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The pages load scripts and styles from this origin only.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'")
	w.Header().Set("X-Frame-Options", "DENY")
	h.mux.ServeHTTP(w, r)
}
