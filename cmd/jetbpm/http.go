package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jetbpm/jetbpm/engine/camunda7"
	"github.com/jetbpm/jetbpm/internal/metrics"
)

// serveHTTP listens on addr and serves h in the background. It returns the
// function that shuts the server down and the address it listens on.
func serveHTTP(addr string, h http.Handler, logger *slog.Logger) (stop func(context.Context), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--http: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http server", "err", err)
		}
	}()
	return func(ctx context.Context) {
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}, ln.Addr().String(), nil
}

// newHTTPHandler routes GET /healthz, GET /metrics and the Camunda 7 REST
// API under /engine-rest, which answers once the engine runs (c7).
func newHTTPHandler(h *health, reg *metrics.Registry, c7 *lateHandler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", h)
	mux.Handle("GET /metrics", metrics.Handler(reg))
	mux.Handle(camunda7.Prefix+"/", c7)
	return mux
}

// lateHandler serves a handler set once what it needs exists (the HTTP
// listener starts before the engine); until then, and after it is
// cleared, it answers 503 with a Camunda 7 error body.
type lateHandler struct{ h atomic.Pointer[http.Handler] }

func (l *lateHandler) set(h http.Handler) {
	if h == nil {
		l.h.Store(nil)
		return
	}
	l.h.Store(&h)
}

func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := l.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"type":"ProcessEngineException","message":"the jetbpm engine is not running (starting or stopping); see /healthz"}`))
}
