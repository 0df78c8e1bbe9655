package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine/api"
)

// killRig is what the kill -9 tests share: jetbpm serve on a data
// directory of its own, the environment that points the other commands at
// it, and an API client on a connection that reconnects quickly across
// the kills.
type killRig struct {
	t     *testing.T
	dir   string
	args  []string
	serve *serveProc
	env   []string
	nc    *nats.Conn
	api   *api.Client
	ctx   context.Context
}

// newKillRig starts serve with extra flags; the rig's context bounds the
// whole test.
func newKillRig(t *testing.T, extra ...string) *killRig {
	dir := t.TempDir()
	r := &killRig{t: t, dir: dir, args: append([]string{"--data", filepath.Join(dir, "data"), "--listen", freeAddr(t), "--failover", "1s"}, extra...)}
	r.serve = startServe(t, nil, r.args...)
	url := r.serve.waitReady()["nats_url"].(string)
	r.env = []string{"JETBPM_NATS_URL=" + url}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	r.nc, r.api = nc, api.NewClient(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	r.ctx = ctx
	return r
}

// start starts an instance, retrying while the engine restarts.
func (r *killRig) start(req api.StartRequest) {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(r.ctx, 2*time.Second)
		_, err := r.api.Start(ctx, req)
		cancel()
		if err == nil {
			return
		}
		if attempt > 100 {
			r.t.Fatalf("start %s: %v", req.ID, err)
		}
		time.Sleep(100 * time.Millisecond) // the engine is restarting: nothing to wait on but time
	}
}

// kill SIGKILLs serve (with its embedded NATS server) and waits until it
// is gone.
func (r *killRig) kill() {
	_ = r.serve.cmd.Process.Kill()
	<-r.serve.exited
}

// restart starts serve again on the same data and waits until it is ready.
func (r *killRig) restart() {
	r.serve = startServe(r.t, nil, r.args...)
	r.serve.waitReady()
}
