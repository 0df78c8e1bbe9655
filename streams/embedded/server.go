package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Config configures an embedded nats-server with JetStream.
// The zero value of every field but StoreDir is a working default.
type Config struct {
	StoreDir   string // JetStream file store; required unless ConfigFile sets store_dir
	Host       string // client listen host; default "127.0.0.1"
	Port       int    // client port: 0 → 4222, -1 → a random free port
	ServerName string // default "jetbpm"
	NoListen   bool   // in-process connections only (tests, bench)
	MaxPayload int32  // 0 → the nats default (1 MiB)

	// SyncAlways syncs every write to disk before the server acknowledges
	// it (nats-server's sync_interval: always), so a power cut or an OS
	// crash loses nothing acknowledged. False keeps the server's setting:
	// the config file's, else a sync every two minutes, which a process
	// crash survives (the page cache does) and a power cut does not.
	SyncAlways bool

	// ConfigFile is an optional nats-server config file (accounts, TLS,
	// cluster...). It is loaded first; the fields above override it where
	// they are set.
	ConfigFile string

	// Logger receives the server's log lines; nil → slog.Default().
	Logger *slog.Logger
}

// startTimeout bounds how long Start waits for the server to accept
// connections; a JetStream store recovering a large backlog can take seconds.
const startTimeout = 10 * time.Second

// Server is a running embedded nats-server.
type Server struct {
	ns       *server.Server
	opts     *server.Options
	syncer   *syncer
	shutdown sync.Once
}

// Start starts an embedded nats-server with JetStream and waits until
// it accepts connections. The server ignores OS signals: the process that
// embeds it decides when to call Shutdown.
func Start(cfg Config) (*Server, error) {
	opts, err := cfg.options()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.StoreDir, 0o750); err != nil {
		return nil, fmt.Errorf("embedded: JetStream store dir %q is unusable: %w", opts.StoreDir, err)
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded: configure nats-server: %w", err)
	}
	logger := newServerLogger(cfg.Logger)
	ns.SetLoggerV2(logger, logger.debugEnabled(), false, false)

	ns.Start()
	if err := waitReady(ns, opts, logger); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, err
	}
	return &Server{ns: ns, opts: opts, syncer: newSyncer(opts.StoreDir, logger.storeError)}, nil
}

// waitReady waits for the listener and JetStream, returning early with the
// server's own words when it logged a fatal error (port taken, bad store dir).
func waitReady(ns *server.Server, opts *server.Options, logger *serverLogger) error {
	deadline := time.Now().Add(startTimeout)
	for {
		if msg := logger.fatalError(); msg != "" {
			return fmt.Errorf("embedded: start nats-server (%s): %s", describeListen(opts), msg)
		}
		if ns.ReadyForConnections(100 * time.Millisecond) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("embedded: nats-server (%s) not ready for connections after %s", describeListen(opts), startTimeout)
		}
	}
	if !ns.JetStreamEnabled() {
		return fmt.Errorf("embedded: nats-server started without JetStream (store dir %q)", opts.StoreDir)
	}
	return nil
}

func describeListen(opts *server.Options) string {
	if opts.DontListen {
		return "in-process only"
	}
	if opts.Port == server.RANDOM_PORT {
		return "listen " + net.JoinHostPort(opts.Host, "random port")
	}
	return "listen " + net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
}

// options turns the config into nats-server options: the config file first,
// then the fields that are set, then defaults for what neither set.
func (cfg Config) options() (*server.Options, error) {
	opts := &server.Options{}
	if cfg.ConfigFile != "" {
		fo, err := server.ProcessConfigFile(cfg.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("embedded: load nats-server config: %w", err)
		}
		opts = fo
	}
	if cfg.StoreDir != "" {
		opts.StoreDir = cfg.StoreDir
	}
	if opts.StoreDir == "" {
		return nil, errors.New("embedded: Config.StoreDir is required (the JetStream file store)")
	}
	if cfg.Host != "" {
		opts.Host = cfg.Host
	} else if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	switch {
	case cfg.Port < -1:
		return nil, fmt.Errorf("embedded: Config.Port %d is invalid (use 0 for 4222, -1 for a random port)", cfg.Port)
	case cfg.Port != 0:
		opts.Port = cfg.Port
	case opts.Port == 0:
		opts.Port = server.DEFAULT_PORT
	}
	if cfg.ServerName != "" {
		opts.ServerName = cfg.ServerName
	} else if opts.ServerName == "" {
		opts.ServerName = "jetbpm"
	}
	if cfg.MaxPayload != 0 {
		opts.MaxPayload = cfg.MaxPayload
	}
	if cfg.SyncAlways {
		opts.SyncAlways = true
	}
	opts.DontListen = cfg.NoListen
	opts.JetStream = true
	opts.NoSigs = true
	return opts, nil
}

// ClientURL is the URL other processes connect to, e.g.
// "nats://127.0.0.1:4222"; "" when the server does not listen.
func (s *Server) ClientURL() string {
	if s.opts.DontListen {
		return ""
	}
	addr, ok := s.ns.Addr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	host := s.opts.Host
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1" // listening everywhere: loopback reaches it
	}
	scheme := "nats"
	if s.opts.TLSConfig != nil {
		scheme = "tls"
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// Connect opens an in-process connection to the server: no socket, no
// authentication round trip through the network. opts are applied after
// the in-process option and a default connection name.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{nats.InProcessServer(s.ns), nats.Name("jetbpm")}, opts...)
	nc, err := nats.Connect("", all...)
	if err != nil {
		return nil, fmt.Errorf("embedded: connect in-process to nats-server %q: %w", s.opts.ServerName, err)
	}
	return nc, nil
}

// Shutdown stops the server and waits until it has. It is safe to call more
// than once.
func (s *Server) Shutdown() {
	s.shutdown.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		s.syncer.close()
	})
}

// Inner is the nats-server itself, for what this package does not wrap.
func (s *Server) Inner() *server.Server { return s.ns }
