package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/cmd/jetbpm/internal/config"
	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/streams"
)

const serveUsage = `usage: jetbpm serve [flags]

Runs the jetbpm engine. By default it starts an embedded NATS server with
JetStream listening on --listen and keeping its data under --data. With
--nats-url (or JETBPM_NATS_URL) it uses that NATS server or cluster instead
and embeds nothing; the server must be nats-server 2.12 or later.

serve then creates the streams and buckets jetbpm needs, logs "jetbpm ready",
and serves on --http until SIGINT or SIGTERM, when it drains and exits
within 10 seconds: GET /healthz ("ok"; "degraded: ..." while damage to
the store is recorded and open, see 'jetbpm store check'; 503 while not
ready), GET /metrics (Prometheus text), the
HTTP API /v1 (docs/http-api.md), the Camunda 7 REST API /engine-rest
(docs/camunda7-migration.md), Camunda 8's Orchestration Cluster REST API
/v2 and the web console at / (docs/console.md); and on --grpc the Zeebe
gateway protocol for Camunda 8 clients (docs/camunda8-migration.md).
--http-auth FILE makes /v1, /engine-rest, /v2, console and Zeebe callers
authenticate (HTTP Basic or bearer tokens with
roles); --http-tls-cert and --http-tls-key serve HTTPS and gRPC over TLS.
Without --http-auth, --http and --grpc must be loopback addresses, unless
--http-insecure is given.

--config FILE reads a YAML file that sets the engine-wide defaults (job
locks, retry policies, trust and error mapper rules, for all topics and per
topic; the incident retry policy; retention; limits) and any of the flags
below; flags given on the command line win, then environment variables,
then the file. docs/configuration.md lists every key with its default.`

// shutdownTimeout bounds the stop after SIGINT/SIGTERM; past it serve exits
// anyway, with status 1.
const shutdownTimeout = 10 * time.Second

type serveOptions struct {
	config               string
	data, listen, http   string
	durability           string // sync or os (docs/reliability.md, Durability)
	history              string // the history level (docs/engine.md §8.2)
	natsMonitor          string // an external server's monitoring URL, to read its sync policy
	grpc                 string // the Zeebe gateway's address; "": off
	httpAuth             string // the auth file; "": no authentication
	httpTLSCert          string
	httpTLSKey           string
	httpInsecure         bool
	auth                 *httpauth.Authenticator
	replicas, partitions int
	// partitionsGiven: --partitions (or the file's partitions) was
	// given; else an existing store keeps its count.
	partitionsGiven bool
	failover        time.Duration
	conn            *connFlags
	log             *logFlags
	connectors      *connectorFlags
	// engine holds the engine options the configuration file sets.
	engine engine.Options
}

// embedded reports whether serve runs its own NATS server.
func (o *serveOptions) embedded() bool { return o.conn.url == "" }

func runServe(ctx context.Context, args []string) error {
	o, err := parseServe(args)
	if err != nil {
		return err
	}
	return serve(ctx, *o, o.log.logger(os.Stderr))
}

// parseServe reads serve's command line and the configuration file it
// names into the options serve runs with.
func parseServe(args []string) (*serveOptions, error) {
	fs := newFlagSet("serve")
	o := &serveOptions{conn: addConnFlags(fs, "")}
	fs.StringVar(&o.config, "config", "", "read settings and engine defaults from the YAML `FILE` (docs/configuration.md); flags given here override it")
	fs.StringVar(&o.data, "data", "./jetbpm-data", "keep the embedded NATS server's data in `DIR` (the JetStream store in DIR/nats)")
	fs.StringVar(&o.natsMonitor, "nats-monitor", "", "with --nats-url, the server's monitoring `URL` (http://host:8222): at --durability sync, serve reads its /varz and warns unless it syncs every write (else it asks the system account, which answers only its own users)")
	fs.StringVar(&o.durability, "durability", "sync", "`LEVEL` of durability: \"sync\" acknowledges nothing before it is on disk (with the embedded server, jetbpm syncs the store once for every answer waiting; an external server must run sync_interval: always); \"os\" acknowledges once the operating system has it: a process crash loses nothing, a power cut or OS crash may lose the last two minutes (docs/reliability.md)")
	fs.StringVar(&o.history, "history", "full", "`LEVEL` of history, the facts written: \"full\" (every fact), \"instances\" (instance lifecycle and incident facts) or \"incidents\" (incident facts only); what a level leaves out is not written at all, and the console's timeline says so (docs/engine.md §8.2)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:4222", "`HOST:PORT` the embedded NATS server listens on for clients and workers")
	fs.StringVar(&o.http, "http", "127.0.0.1:9464", "`HOST:PORT` serving /healthz, /metrics, the HTTP API /v1, the Camunda 7 REST API /engine-rest and the web console at /; \"\" turns them off")
	fs.StringVar(&o.grpc, "grpc", "127.0.0.1:26500", "`HOST:PORT` serving the Zeebe gateway protocol (gRPC) for Camunda 8 clients, with --http's TLS and authentication (docs/camunda8-migration.md); \"\" turns it off")
	fs.StringVar(&o.httpAuth, "http-auth", "", "authenticate HTTP API callers with the users and tokens of the YAML `FILE` (docs/http-api.md)")
	fs.StringVar(&o.httpTLSCert, "http-tls-cert", "", "serve HTTPS with the certificate (chain) in the PEM `FILE`; needs --http-tls-key")
	fs.StringVar(&o.httpTLSKey, "http-tls-key", "", "the private key, PEM `FILE`, of --http-tls-cert")
	fs.BoolVar(&o.httpInsecure, "http-insecure", false, "serve the HTTP API without authentication on a non-loopback --http")
	fs.IntVar(&o.replicas, "replicas", 1, "`N` replicas of every stream and bucket: 1, or 3 on a 3-node NATS cluster")
	fs.IntVar(&o.partitions, "partitions", 8, "`N` instance partitions, fixed when the streams are first created")
	fs.DurationVar(&o.failover, "failover", streams.DefaultFailover, "how long an engine node may be silent before its partitions move to another node; events it held return after 3x this")
	o.log = addLogFlags(fs)
	o.connectors = addConnectorFlags(fs)
	rest, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, usageErrorf("serve", "unexpected argument %q", rest[0])
	}
	given := givenFlags(fs)
	o.partitionsGiven = given["partitions"]
	natsURLFrom := "--nats-url"
	if o.config != "" {
		cfg, err := config.Load(o.config)
		if err != nil {
			return nil, err
		}
		if err := applyConfig(fs, o.config, cfg, given); err != nil {
			return nil, err
		}
		o.engine = cfg.Engine
		if _, ok := cfg.Flags["partitions"]; ok {
			o.partitionsGiven = true
		}
		if s, ok := cfg.Flags["nats-url"]; ok && o.conn.url == s.Value {
			natsURLFrom = fmt.Sprintf("nats.url (%s:%d)", o.config, s.Line)
		}
	}
	if o.replicas < 1 || o.partitions < 1 {
		return nil, usageErrorf("serve", "--replicas and --partitions must be at least 1")
	}
	if o.durability != "sync" && o.durability != "os" {
		return nil, usageErrorf("serve", "--durability %q: want sync or os", o.durability)
	}
	lvl, err := history.Parse(o.history)
	if err != nil {
		return nil, usageErrorf("serve", "--history: %v", err)
	}
	o.engine.History = lvl
	if o.failover < time.Second {
		return nil, usageErrorf("serve", "--failover must be at least 1s")
	}
	if !o.embedded() && (given["data"] || given["listen"]) {
		return nil, usageErrorf("serve", "--data and --listen configure the embedded NATS server; they do not go with %s", natsURLFrom)
	}
	if err := o.checkHTTP(); err != nil {
		return nil, err
	}
	if err := o.connectors.check(); err != nil {
		return nil, err
	}
	return o, nil
}

// runEngine starts the engine and its API on a connected, provisioned NATS
// and returns the function that stops them. ctx ends at SIGINT/SIGTERM, just
// before stop is called; stop stops taking requests and events, finishes the
// batches in flight and returns by its ctx's deadline, before serve drains nc.
func runEngine(ctx context.Context, nc *nats.Conn, opts engine.Options, reg *metrics.Registry, logger *slog.Logger) (eng *engine.Engine, stop func(context.Context) error, err error) {
	opts.Logger, opts.Operations, opts.Metrics = logger, operations, reg
	eng, err = engine.Open(ctx, nc, opts)
	if err != nil {
		return nil, nil, err
	}
	srv, err := api.Serve(nc, eng, logger)
	if err != nil {
		_ = eng.Close(ctx)
		return nil, nil, err
	}
	return eng, func(ctx context.Context) error {
		return errors.Join(srv.Close(), eng.Close(ctx))
	}, nil
}

// operations are the in-process operations this binary offers to BPMN
// service tasks (jetbpm:operation="name"). An embedding Go program
// registers its own; the CLI ships none yet.
var operations = &engine.Operations{}

// serve starts everything, waits for a signal, then stops it all in the
// reverse order within shutdownTimeout.
func serve(ctx context.Context, o serveOptions, logger *slog.Logger) error {
	var stops []func(context.Context)
	err := start(ctx, o, logger, &stops)
	if err == nil {
		<-ctx.Done()
		logger.Info("jetbpm stopping", "cause", context.Cause(ctx).Error())
	}

	hard := time.AfterFunc(shutdownTimeout, func() {
		fmt.Fprintf(os.Stderr, "jetbpm: shutdown did not finish within %s; exiting\n", shutdownTimeout)
		os.Exit(1)
	})
	defer hard.Stop()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout-500*time.Millisecond)
	defer cancel()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i](sctx)
	}
	if err != nil && ctx.Err() != nil {
		return nil // interrupted while starting
	}
	if err == nil {
		logger.Info("jetbpm stopped")
	}
	return err
}

// start brings serve up to "jetbpm ready", appending to stops what undoes
// each step.
func start(ctx context.Context, o serveOptions, logger *slog.Logger, stops *[]func(context.Context)) error {
	h := newHealth()
	reg := metrics.NewRegistry()
	reg.NewGaugeFunc("jetbpm_ready", "1 when jetbpm serve is connected to NATS and provisioned, else 0.", h.ready)

	if o.embedded() {
		if err := os.MkdirAll(o.data, 0o750); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		release, err := lockDataDir(o.data)
		if err != nil {
			return err
		}
		*stops = append(*stops, func(context.Context) { release() })
	}

	httpURL := ""
	web := newHTTPHandler(h, reg, o.auth, logger)
	if o.http != "" {
		stop, url, err := serveHTTP(o, web, logger)
		if err != nil {
			return err
		}
		httpURL = url
		*stops = append(*stops, stop)
	}

	// The Zeebe gateway's port is taken now, so that a busy one fails the
	// start at once; it serves once the engine runs.
	var grpcLn net.Listener
	if o.grpc != "" {
		var err error
		if grpcLn, err = net.Listen("tcp", o.grpc); err != nil {
			return fmt.Errorf("--grpc: %w", err)
		}
		*stops = append(*stops, func(context.Context) { grpcLn.Close() })
	}

	nc, natsURL, syncer, err := connect(o, logger, stops)
	if err != nil {
		return err
	}
	h.setConn(nc)
	c7, c8 := mountCamunda7(web, nc, logger), mountCamunda8(web, nc, o, logger)
	*stops = append(*stops, func(context.Context) { c7.stop(); c8.stop() }) // after the engine stops
	reg.NewGaugeFunc("jetbpm_nats_connected", "1 while the NATS connection is up, else 0.", func() float64 {
		if nc.IsConnected() {
			return 1
		}
		return 0
	})
	reg.NewCounterFunc("jetbpm_nats_reconnects_total", "NATS reconnects since start.", func() float64 {
		return float64(nc.Stats().Reconnects)
	})

	var layout streams.Layout
	var stopEngine func(context.Context) error
	var eng *engine.Engine
	var unavailable error // the last try's, shown on /healthz until a try succeeds
	step := func(what string) {
		if unavailable != nil {
			what += " (last try: JetStream unavailable: " + unavailable.Error() + ")"
		}
		h.setReason(what)
	}
	waiting := func(err error) { unavailable = err; step("waiting to try again") }
	err = untilAvailable(ctx, logger, waiting, func(ctx context.Context) error {
		step("checking the NATS server")
		if err := streams.CheckServer(ctx, nc); err != nil {
			return err
		}
		step("provisioning streams")
		js, err := jetstream.New(nc)
		if err != nil {
			return fmt.Errorf("jetstream: %w", err)
		}
		partitions := 0 // an existing store's count, a new one's default
		if o.partitionsGiven {
			partitions = o.partitions
		}
		layout, err = streams.Provision(ctx, js, streams.Config{
			Replicas: o.replicas, Partitions: partitions, Logger: logger,
			Failover: o.failover, EventAckWait: 3 * o.failover,
		})
		if err != nil {
			return err
		}
		if syncer != nil {
			// The streams' and consumers' files are durable before anything
			// is stored in them.
			if err := syncer.SyncAll(); err != nil {
				return fmt.Errorf("sync the store: %w", err)
			}
			o.engine.Sync = syncer
			h.setStore(syncer.Failed)
		}
		if o.embedded() {
			// The marks' second place: beside the store, outside it.
			o.engine.MarksFile = filepath.Join(o.data, "jetbpm-marks")
		}
		step("starting the engine")
		if eng, stopEngine, err = runEngine(ctx, nc, o.engine, reg, logger); err != nil {
			return fmt.Errorf("start engine: %w", err)
		}
		h.setDamage(eng.StoreDamage)
		return nil
	})
	if err != nil {
		return err
	}
	stopConsole := mountConsole(web, nc, logger)
	*stops = append(*stops, func(ctx context.Context) {
		web.SetEngine(nil) // the HTTP API answers 503 from here on
		stopConsole()
		if err := stopEngine(ctx); err != nil {
			logger.Error("engine stop", "err", err)
		}
	})
	web.SetEngine(eng)
	grpcAddr := ""
	if grpcLn != nil {
		stop, addr, err := serveGRPC(o, grpcLn, eng, nc, logger)
		if err != nil {
			return err
		}
		grpcAddr = addr
		*stops = append(*stops, stop) // stops taking calls before the engine stops
	}

	stopConnectors, err := runConnectors(o.connectors, nc, logger)
	if err != nil {
		return err
	}
	*stops = append(*stops, stopConnectors) // their jobs end before the engine stops

	*stops = append(*stops, func(context.Context) { h.setReason("shutting down") }) // the first stop
	h.setReason("")
	attrs := []any{"nats_url", natsURL, "partitions", layout.Partitions, "replicas", layout.Replicas}
	if httpURL != "" {
		attrs = append(attrs, "http", httpURL)
	}
	if grpcAddr != "" {
		attrs = append(attrs, "grpc", grpcAddr)
	}
	logger.Info("jetbpm ready", attrs...)
	return nil
}

// startAttempt bounds one try at checking, provisioning and starting (a
// request to a cluster without quorum can hang this long); the pauses
// between tries grow to maxStartPause.
const (
	startAttempt  = 10 * time.Second
	maxStartPause = 5 * time.Second
)

// untilAvailable runs start until it succeeds, fails for a reason other
// than JetStream being unavailable, or ctx ends, telling waiting why it
// waits. An engine node that starts while its cluster elects leaders (a
// node just died) waits it out rather than exiting.
func untilAvailable(ctx context.Context, logger *slog.Logger, waiting func(error), start func(context.Context) error) error {
	pause := 250 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, startAttempt)
		err := start(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !streams.Unavailable(err) {
			return err
		}
		logger.Warn("JetStream unavailable; trying again", "err", err, "pause", pause)
		waiting(err)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
		pause = min(2*pause, maxStartPause)
	}
}
