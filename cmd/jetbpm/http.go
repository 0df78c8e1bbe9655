package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

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

// newHTTPHandler routes GET /healthz and GET /metrics.
func newHTTPHandler(h *health, reg *metrics.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", h)
	mux.Handle("GET /metrics", metrics.Handler(reg))
	return mux
}
