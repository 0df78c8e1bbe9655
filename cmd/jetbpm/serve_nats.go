package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/embedded"
)

// connect starts the embedded NATS server or connects to --nats-url, and
// returns the connection, the URL clients and workers use, and at
// durability sync with the embedded server, the server as the engine's
// Syncer (its group commit); nil otherwise.
func connect(o serveOptions, logger *slog.Logger, stops *[]func(context.Context)) (*nats.Conn, string, engine.Syncer, error) {
	if !o.embedded() {
		cfg := o.conn.config("jetbpm serve")
		cfg.Logger = logger
		nc, err := streams.Connect(cfg)
		if err != nil {
			return nil, "", nil, err
		}
		*stops = append(*stops, func(ctx context.Context) { drain(ctx, nc, logger) })
		if o.durability == "sync" {
			logServerSync(o, nc, logger)
		} else {
			logDurability(o, logger)
		}
		return nc, nc.ConnectedUrlRedacted(), nil, nil
	}

	host, port, err := splitListen(o.listen)
	if err != nil {
		return nil, "", nil, err
	}
	if err := checkPortFree(host, port); err != nil {
		return nil, "", nil, err
	}
	srv, err := embedded.Start(embedded.Config{
		StoreDir: filepath.Join(o.data, "nats"), Host: host, Port: port, Logger: logger,
	})
	if err != nil {
		return nil, "", nil, err
	}
	*stops = append(*stops, func(context.Context) { srv.Shutdown() })
	logDurability(o, logger)
	nc, err := srv.Connect(nats.Name("jetbpm serve"))
	if err != nil {
		return nil, "", nil, err
	}
	*stops = append(*stops, func(ctx context.Context) { drain(ctx, nc, logger) })
	if o.durability != "sync" {
		return nc, srv.ClientURL(), nil, nil
	}
	return nc, srv.ClientURL(), srv, nil
}

// logDurability says at start what an acknowledgement survives.
func logDurability(o serveOptions, logger *slog.Logger) {
	switch {
	case o.durability == "os":
		logger.Warn("durability os: a process crash loses nothing, but a power cut or an OS crash may lose the last two minutes of acknowledged work (--durability sync)")
	default:
		logger.Info("durability sync: what jetbpm acknowledges is on disk first (one fsync round for every answer waiting); a raw NATS publish's PubAck is not (docs/reliability.md)")
	}
}

// splitListen parses --listen; port 0 asks for any free port.
func splitListen(listen string) (string, int, error) {
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("--listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("--listen %q: bad port", listen)
	}
	if port == 0 {
		port = -1 // embedded.Config: -1 is a random port, 0 the default 4222
	}
	return host, port, nil
}

// checkPortFree fails with the operating system's words when the embedded
// server could not listen on host:port, before it starts and logs about it.
func checkPortFree(host string, port int) error {
	if port < 0 {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	return ln.Close()
}

// drain lets in-flight messages finish and closes nc, or closes it at once
// when ctx ends first.
func drain(ctx context.Context, nc *nats.Conn, logger *slog.Logger) {
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		if !errors.Is(err, nats.ErrConnectionClosed) {
			logger.Warn("nats drain", "err", err)
		}
		nc.Close()
		return
	}
	select {
	case <-closed:
	case <-ctx.Done():
		logger.Warn("nats drain did not finish in time; closing")
		nc.Close()
	}
}
