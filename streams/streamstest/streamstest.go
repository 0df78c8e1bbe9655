// Package streamstest starts a real, provisioned JetStream server for tests:
//
//	env := streamstest.Start(t)
//	_, err := env.JS.Publish(ctx, streams.EventSubject(0, "i-1"), data)
//
// Each call gets its own embedded nats-server with file storage in
// t.TempDir(), torn down when the test ends. Restart stops and starts the
// server on the same store, which is how a test proves state survives.
//
// StartCluster runs a JetStream cluster of nats-server processes instead,
// for tests that SIGKILL a node; the package's TestMain must call
// ServeNodeIfAsked first:
//
//	func TestMain(m *testing.M) {
//		streamstest.ServeNodeIfAsked()
//		os.Exit(m.Run())
//	}
package streamstest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/embedded"
)

// Env is a running, provisioned server and a connection to it.
type Env struct {
	Server *embedded.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
	Dir    string
	Layout streams.Layout

	cfg config
}

type config struct {
	partitions int
	failover   time.Duration
	listen     bool
}

// Option changes how Start sets up the server.
type Option func(*config)

// WithFastFailover provisions partition consumers with a short AckWait and
// pinned TTL (d each), so tests of crashes and failover run in seconds.
func WithFastFailover(d time.Duration) Option { return func(c *config) { c.failover = d } }

// WithPartitions provisions n instance partitions instead of 4.
func WithPartitions(n int) Option { return func(c *config) { c.partitions = n } }

// WithListen makes the server also listen on a random loopback port, for
// tests that need a URL (Env.Server.ClientURL()).
func WithListen() Option { return func(c *config) { c.listen = true } }

// setupTimeout bounds provisioning; a test that hits it fails loudly.
const setupTimeout = 30 * time.Second

// logger shows the server's and provisioning's warnings and errors only;
// a test run should not print "stream created" for every test.
var logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// Start starts an embedded JetStream server with file storage in
// t.TempDir(), provisions it with streams.Provision and registers cleanup.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	cfg := config{partitions: 4}
	for _, o := range opts {
		o(&cfg)
	}
	e := startEnv(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	layout, err := streams.Provision(ctx, e.JS, streams.Config{Partitions: cfg.partitions, Logger: logger, EventAckWait: cfg.failover, Failover: cfg.failover})
	if err != nil {
		t.Fatalf("streamstest: provision: %v", err)
	}
	e.Layout = layout
	return e
}

// StartBare starts an embedded JetStream server like Start, but provisions
// nothing: for tests of provisioning itself and of the server.
func StartBare(t testing.TB, opts ...Option) *Env {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return startEnv(t, cfg)
}

func startEnv(t testing.TB, cfg config) *Env {
	t.Helper()
	e := &Env{Dir: t.TempDir(), cfg: cfg}
	e.start(t)
	t.Cleanup(e.stop)
	return e
}

func (e *Env) start(t testing.TB) {
	t.Helper()
	sc := embedded.Config{StoreDir: e.Dir, NoListen: !e.cfg.listen, Logger: logger}
	if e.cfg.listen {
		sc.Port = -1
	}
	srv, err := embedded.Start(sc)
	if err != nil {
		t.Fatalf("streamstest: start server: %v", err)
	}
	nc, err := srv.Connect(nats.Name(t.Name()))
	if err != nil {
		srv.Shutdown()
		t.Fatalf("streamstest: connect: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		srv.Shutdown()
		t.Fatalf("streamstest: jetstream: %v", err)
	}
	e.Server, e.Conn, e.JS = srv, nc, js
}

func (e *Env) stop() {
	if e.Conn != nil {
		e.Conn.Close()
	}
	if e.Server != nil {
		e.Server.Shutdown()
	}
}

// NewConn opens another in-process connection, closed when the test ends.
// Connections made this way do not survive Restart.
func (e *Env) NewConn(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := e.Server.Connect(nats.Name(t.Name()))
	if err != nil {
		t.Fatalf("streamstest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Restart shuts the server down and starts it again on the same store
// directory, keeping every stream, consumer and bucket. e.Conn and e.JS are
// replaced by a connection to the new server; with WithListen the port may
// change.
func (e *Env) Restart(t testing.TB) {
	t.Helper()
	e.RestartWith(t, nil)
}

// RestartWith is Restart that calls change, if not nil, with the store
// directory while the server is down: how a test damages the store's
// files as a disk would.
func (e *Env) RestartWith(t testing.TB, change func(dir string)) {
	t.Helper()
	e.stop()
	e.Server, e.Conn, e.JS = nil, nil, nil
	if change != nil {
		change(e.Dir)
	}
	e.start(t)
}
