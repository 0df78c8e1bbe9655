package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda7"
	"github.com/jetbpm/jetbpm/engine/camunda8/rest"
	"github.com/jetbpm/jetbpm/engine/console"
	"github.com/jetbpm/jetbpm/engine/httpapi"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/internal/metrics"
)

// checkHTTP checks the HTTP flags and loads the auth file. Without
// authentication the listener must be on a loopback address (only this
// machine can call), unless --http-insecure says otherwise.
func (o *serveOptions) checkHTTP() error {
	if (o.httpTLSCert == "") != (o.httpTLSKey == "") {
		return usageErrorf("serve", "--http-tls-cert and --http-tls-key go together")
	}
	o.auth = httpauth.Open()
	if o.httpAuth != "" {
		a, err := httpauth.Load(o.httpAuth)
		if err != nil {
			return err
		}
		o.auth = a
	}
	if o.httpAuth != "" || o.httpInsecure {
		return nil
	}
	for _, l := range []struct{ flag, addr, what string }{{"--http", o.http, "the HTTP API"}, {"--grpc", o.grpc, "the Zeebe gateway"}} {
		if l.addr == "" {
			continue
		}
		host, _, err := net.SplitHostPort(l.addr)
		if err != nil {
			return usageErrorf("serve", "%s %q: %v", l.flag, l.addr, err)
		}
		if !loopback(host) {
			return usageErrorf("serve", "%s %s is not a loopback address: give --http-auth FILE so callers authenticate, or --http-insecure to serve %s to anyone who can reach it", l.flag, l.addr, l.what)
		}
	}
	return nil
}

// loopback reports whether host names only this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveHTTP listens on o.http (with TLS if o gives a certificate) and
// serves h in the background. It returns the function that shuts the
// server down and the URL it serves on.
func serveHTTP(o serveOptions, h http.Handler, logger *slog.Logger) (stop func(context.Context), url string, err error) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	scheme := "http"
	if o.httpTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.httpTLSCert, o.httpTLSKey)
		if err != nil {
			return nil, "", fmt.Errorf("--http-tls-cert, --http-tls-key: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		scheme = "https"
	}
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return nil, "", fmt.Errorf("--http: %w", err)
	}
	if srv.TLSConfig != nil {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http server", "err", err)
		}
	}()
	return func(ctx context.Context) {
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}, scheme + "://" + ln.Addr().String(), nil
}

// newHTTPHandler serves GET /healthz and GET /metrics without
// authentication, and the HTTP API /v1 (httpapi) behind auth. Other front
// ends mount on the returned server (Handle, HandleEngine).
func newHTTPHandler(h *health, reg *metrics.Registry, auth *httpauth.Authenticator, logger *slog.Logger) *httpapi.Server {
	srv := httpapi.New(auth, httpapi.WithLogger(logger))
	srv.HandlePublic("GET /healthz", h)
	srv.HandlePublic("GET /metrics", metrics.Handler(reg))
	return srv
}

// mountConsole serves the web console (engine/console) at / of the
// listener, behind its authentication, once the engine runs. The returned
// func stops the console's watch of the facts.
func mountConsole(web *httpapi.Server, nc *nats.Conn, logger *slog.Logger) (stop func()) {
	var mu sync.Mutex
	var cur *console.Handler
	stop = func() {
		mu.Lock()
		defer mu.Unlock()
		if cur != nil {
			cur.Close()
			cur = nil
		}
	}
	web.HandleEngine("/", func(eng *engine.Engine) http.Handler {
		stop()
		c, err := console.New(eng, nc, console.WithLogger(logger))
		if err != nil {
			logger.Error("console", "err", err)
			return http.NotFoundHandler()
		}
		mu.Lock()
		cur = c
		mu.Unlock()
		return c
	})
	return stop
}

// A doorMount serves a compatibility door under its prefix behind the
// listener's authentication (refusals in the door's own error format): a
// handler built for each engine, the one it replaces closed.
type doorMount struct {
	mu    sync.Mutex
	close func()
}

// mountDoor mounts the handler build makes under prefix; build returns it
// with the function that releases it. A door that cannot start answers
// 503 in its own terms.
func mountDoor(web *httpapi.Server, prefix, name string, deny httpauth.DenyFunc, logger *slog.Logger,
	build func(*engine.Engine) (http.Handler, func(), error)) *doorMount {
	m := &doorMount{}
	web.HandleEngine(prefix+"/", func(eng *engine.Engine) http.Handler {
		h, closeH, err := build(eng)
		if err != nil {
			logger.Error(name+" is not served", "err", err)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				deny(w, r, http.StatusServiceUnavailable, name+" could not start: "+err.Error())
			})
		}
		m.mu.Lock()
		old := m.close
		m.close = closeH
		m.mu.Unlock()
		if old != nil {
			old()
		}
		return http.StripPrefix(prefix, h)
	}, httpapi.DenyWith(deny))
	return m
}

// mountCamunda7 serves the Camunda 7 REST API under /engine-rest
// (docs/camunda7-migration.md): a worker credential fetches and reports
// the external tasks of its topics only. It speaks the worker protocol
// for REST workers on nc.
func mountCamunda7(web *httpapi.Server, nc *nats.Conn, logger *slog.Logger) *doorMount {
	return mountDoor(web, camunda7.Prefix, "the Camunda 7 REST API", camunda7.Deny, logger,
		func(eng *engine.Engine) (http.Handler, func(), error) {
			h, err := camunda7.New(eng, nc, camunda7.Options{Logger: logger, Authorize: camunda7.AuthorizePrincipal})
			if err != nil {
				return nil, nil, err
			}
			return h, func() { _ = h.Close() }, nil
		})
}

// mountCamunda8 serves Camunda 8's Orchestration Cluster REST API under
// /v2 (docs/camunda8-migration.md §5): a worker credential activates and
// reports the jobs of its topics only. Its topology names the Zeebe
// gateway's address (--grpc), as the gRPC door's does.
func mountCamunda8(web *httpapi.Server, nc *nats.Conn, o serveOptions, logger *slog.Logger) *doorMount {
	host, port, _ := net.SplitHostPort(o.grpc)
	p, _ := strconv.Atoi(port)
	return mountDoor(web, rest.Prefix, "the Orchestration Cluster REST API", rest.Deny, logger,
		func(eng *engine.Engine) (http.Handler, func(), error) {
			h, err := rest.New(eng, nc, rest.Options{Logger: logger, Host: host, Port: p})
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		})
}

// stop releases the door's handler (its verdict subscription, its held
// job locks).
func (m *doorMount) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.close != nil {
		m.close()
		m.close = nil
	}
}
