package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startSyncServer runs a nats-server with JetStream and a monitoring
// port, syncing every write or not.
func startSyncServer(t *testing.T, always bool) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		ServerName: "ext", Host: "127.0.0.1", Port: -1, HTTPHost: "127.0.0.1", HTTPPort: -1,
		JetStream: true, StoreDir: t.TempDir(), SyncAlways: always, NoSigs: true, NoLog: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return ns
}

// serve --durability sync against an external server reads its sync
// policy from --nats-monitor and says at start whether the server syncs
// before it acknowledges; without a way to read it, it says it cannot.
func TestServeReadsExternalSyncPolicy(t *testing.T) {
	for _, c := range []struct {
		name    string
		always  bool
		monitor bool
		want    string
	}{
		{"syncs every write", true, true, `"msg":"durability sync: the NATS server syncs every write before it acknowledges it","server":"ext"`},
		{"syncs every two minutes", false, true, `"server":"ext","sync_interval":"2m0s"`},
		{"cannot tell", true, false, `not in the system account; give --nats-monitor`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := startSyncServer(t, c.always)
			args := []string{"--nats-url", ns.ClientURL(), "--durability", "sync"}
			if c.monitor {
				args = append(args, "--nats-monitor", "http://"+ns.MonitorAddr().String())
			}
			p := startServe(t, nil, args...)
			p.waitReady()
			defer p.stop()
			if !strings.Contains(p.stderr(), c.want) {
				t.Fatalf("serve's log does not say %s", c.want)
			}
		})
	}
}
