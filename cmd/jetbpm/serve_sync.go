package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// serverSync is what a NATS server says of its JetStream sync policy.
type serverSync struct {
	Name     string
	Always   bool          // sync_interval: always
	Interval time.Duration // otherwise, how often it syncs
}

// varz is the part of nats-server's /varz (and $SYS VARZ answer) read here.
type varz struct {
	Name      string `json:"server_name"`
	JetStream struct {
		Config *struct {
			SyncInterval time.Duration `json:"sync_interval"`
			SyncAlways   bool          `json:"sync_always"`
		} `json:"config"`
	} `json:"jetstream"`
}

func (v varz) sync() (serverSync, error) {
	if v.JetStream.Config == nil {
		return serverSync{}, fmt.Errorf("server %q reports no JetStream configuration", v.Name)
	}
	return serverSync{Name: v.Name, Always: v.JetStream.Config.SyncAlways, Interval: v.JetStream.Config.SyncInterval}, nil
}

// readServerSync reads the sync policy of an external NATS server: from
// monitorURL's /varz when given (the server's monitoring port), else by
// asking every server of the system account ($SYS.REQ.SERVER.PING.VARZ),
// which answers only a connection of the system account. An error says
// why it could not be read.
func readServerSync(ctx context.Context, nc *nats.Conn, monitorURL string) ([]serverSync, error) {
	if monitorURL != "" {
		u := strings.TrimSuffix(monitorURL, "/") + "/varz"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, fmt.Errorf("--nats-monitor %q: %w", monitorURL, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", u, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("read %s: %s", u, resp.Status)
		}
		var v varz
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return nil, fmt.Errorf("read %s: %w", u, err)
		}
		s, err := v.sync()
		if err != nil {
			return nil, err
		}
		return []serverSync{s}, nil
	}
	// Every server of the cluster answers the ping; gather for a moment.
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest("$SYS.REQ.SERVER.PING.VARZ", inbox, nil); err != nil {
		return nil, err
	}
	var out []serverSync
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			if len(out) > 0 && errors.Is(err, context.DeadlineExceeded) {
				return out, nil
			}
			return nil, errors.New("no server answered the system account's VARZ request (the connection is not in the system account; give --nats-monitor to read /varz)")
		}
		var r struct {
			Data  varz `json:"data"`
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return nil, fmt.Errorf("VARZ answer: %w", err)
		}
		if r.Error != nil {
			return nil, fmt.Errorf("VARZ answer: %s", r.Error.Description)
		}
		s, err := r.Data.sync()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
}

// logServerSync says at start whether the external server gives what
// --durability sync asks: a sync before every acknowledgement.
func logServerSync(o serveOptions, nc *nats.Conn, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	servers, err := readServerSync(ctx, nc, o.natsMonitor)
	if err != nil {
		logger.Warn("durability sync: jetbpm cannot set an external NATS server's sync policy, nor read it here; acknowledged work survives a power cut only if the server syncs before it acknowledges (jetstream { sync_interval: always }, docs/reliability.md)", "err", err)
		return
	}
	for _, s := range servers {
		if !s.Always {
			logger.Warn("durability sync: the NATS server syncs only every interval, not before it acknowledges: a power cut or OS crash may lose acknowledged work; set jetstream { sync_interval: always } (docs/reliability.md)",
				"server", s.Name, "sync_interval", s.Interval.String())
			continue
		}
		logger.Info("durability sync: the NATS server syncs every write before it acknowledges it", "server", s.Name)
	}
}
