package streams

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectConfig says how to reach an existing NATS server or cluster.
type ConnectConfig struct {
	URL       string // one URL or several, comma-separated; default nats.DefaultURL
	Name      string // connection name shown by the server; default "jetbpm"
	CredsFile string // JWT + nkey credentials file

	User, Password string
	Token          string

	// TLS: PEM files. Setting any of them turns TLS on; a client certificate
	// needs both TLSCert and TLSKey.
	TLSCA, TLSCert, TLSKey string

	// TLSInsecureSkipVerify accepts any server certificate. It exists for
	// tests against self-signed servers; never set it in production, where it
	// makes TLS worthless against an active attacker.
	TLSInsecureSkipVerify bool

	// InboxPrefix is the subject prefix of the connection's reply inboxes.
	// Empty with a User means "_INBOX.<user>", so a role can be allowed its
	// own replies only (nats.conf: the worker role subscribes to
	// _INBOX.worker.> and cannot read anyone else's).
	InboxPrefix string

	// Logger receives disconnect/reconnect notices; nil → slog.Default().
	Logger *slog.Logger
}

// reconnectWait is the pause between reconnect attempts to one server. An
// engine keeps retrying forever: losing NATS stops progress but loses no
// state, and it should resume by itself when NATS comes back.
const reconnectWait = time.Second

// dialTimeout bounds each attempt to open a connection and complete the
// NATS handshake. nats.go's 2 s default failed on a busy machine against a
// local server; a refused connection still fails at once.
const dialTimeout = 10 * time.Second

// reconnectBufSize buffers publishes made while reconnecting. 32 MiB lets a
// busy engine ride out a short leader election without failing publishes.
const reconnectBufSize = 32 << 20

// Connect connects to an existing NATS server or cluster with reconnect
// settings for a long-running process: infinite reconnects, a one-second
// wait with jitter, and logged disconnects. The initial connection is not
// retried, so a wrong URL or bad credentials fail fast and clearly.
func Connect(cfg ConnectConfig) (*nats.Conn, error) {
	opts, err := cfg.options()
	if err != nil {
		return nil, fmt.Errorf("streams: connect to %s: %w", RedactURLs(cfg.URL), err)
	}
	nc, err := nats.Connect(cfg.url(), opts...)
	if err != nil {
		return nil, fmt.Errorf("streams: connect to %s: %w", RedactURLs(cfg.URL), err)
	}
	return nc, nil
}

func (cfg ConnectConfig) url() string {
	if strings.TrimSpace(cfg.URL) == "" {
		return nats.DefaultURL
	}
	return cfg.URL
}

func (cfg ConnectConfig) options() ([]nats.Option, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	name := cfg.Name
	if name == "" {
		name = "jetbpm"
	}
	prefix := cfg.InboxPrefix
	if prefix == "" && cfg.User != "" && Token(cfg.User) == cfg.User {
		prefix = "_INBOX." + cfg.User
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.Timeout(dialTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(reconnectWait),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.ReconnectBufSize(reconnectBufSize),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "server", nc.ConnectedUrlRedacted(), "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("nats async error", "subject", subject, "err", err)
		}),
	}
	if prefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(prefix))
	}

	auth := 0
	if cfg.CredsFile != "" {
		auth++
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.User != "" || cfg.Password != "" {
		auth++
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	}
	if cfg.Token != "" {
		auth++
		opts = append(opts, nats.Token(cfg.Token))
	}
	if auth > 1 {
		return nil, errors.New("choose one of credentials file, user/password and token")
	}

	tlsOpts, err := cfg.tlsOptions()
	if err != nil {
		return nil, err
	}
	return append(opts, tlsOpts...), nil
}

func (cfg ConnectConfig) tlsOptions() ([]nats.Option, error) {
	if cfg.TLSCA == "" && cfg.TLSCert == "" && cfg.TLSKey == "" && !cfg.TLSInsecureSkipVerify {
		return nil, nil
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, errors.New("a TLS client certificate needs both TLSCert and TLSKey")
	}
	// Secure first: RootCAs and ClientCert add to the tls.Config it sets.
	opts := []nats.Option{nats.Secure(&tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: cfg.TLSInsecureSkipVerify, //nolint:gosec // documented test-only switch
	})}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.TLSCert != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	return opts, nil
}

// RedactURLs hides passwords and tokens in a comma-separated URL list so it
// can appear in an error or a log record; an empty list is the default URL
// a connection would use.
func RedactURLs(list string) string {
	if strings.TrimSpace(list) == "" {
		return nats.DefaultURL
	}
	parts := strings.Split(list, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := url.Parse(p); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				p = u.Redacted()
			} else {
				// A bare user part is often a token: hide it too.
				u.User = url.User("xxxxx")
				p = u.String()
			}
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}
