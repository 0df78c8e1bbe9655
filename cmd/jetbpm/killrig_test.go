package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/internal/lazyfs"
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
	// cut, when set, is the lazy file system under serve's data: every
	// kill is a power cut as well (powercut_test.go).
	cut *lazyfs.FS
	// httpAPI is the loopback API the workload's REST connector calls
	// (serve runs the connector: --connectors http); calls counts them.
	httpAPI *httptest.Server
	calls   atomic.Int64
}

// newKillRig starts serve with extra flags; the rig's context bounds the
// whole test (5 minutes, 45 in make soak).
func newKillRig(t *testing.T, extra ...string) *killRig {
	return startKillRig(t, t.TempDir(), nil, extra...)
}

// newCutRig is newKillRig with serve's data on a lazy file system: every
// kill also drops what serve had not synced, as a power cut does. Where
// FUSE cannot mount, the test is skipped and says why.
func newCutRig(t *testing.T, extra ...string) *killRig {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o750); err != nil {
		t.Fatal(err)
	}
	return startKillRig(t, dir, mountLazy(t, data, "power-cut"), extra...)
}

func startKillRig(t *testing.T, dir string, cut *lazyfs.FS, extra ...string) *killRig {
	r := &killRig{t: t, dir: dir, cut: cut}
	// The workload's REST connector calls this API: it triples the amount
	// its path names.
	r.httpAPI = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.calls.Add(1)
		n, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/triple/"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"n": %d}`, 3*n)
	}))
	t.Cleanup(r.httpAPI.Close)
	// The workload's listener jobs (topic kill-heard) and connector jobs
	// are locked as its charge jobs are.
	cfg := writeFile(t, dir, "jetbpm.yaml", "jobs:\n  topics:\n    kill-heard:\n      lockDuration: 5s\n    \"io.camunda:http-json:1\":\n      lockDuration: 5s\n"+
		"connectors:\n  kinds: [http]\n  hosts: [\""+r.httpAPI.Listener.Addr().String()+"\"]\n")
	r.args = append([]string{"--data", filepath.Join(dir, "data"), "--listen", freeAddr(t), "--failover", "1s", "--config", cfg}, extra...)
	r.serve = startServe(t, nil, r.args...)
	url := r.serve.waitReady()["nats_url"].(string)
	r.env = []string{"JETBPM_NATS_URL=" + url}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	r.nc, r.api = nc, api.NewClient(nc)
	bound := 5 * time.Minute
	if os.Getenv("JETBPM_SOAK") != "" {
		bound = 45 * time.Minute // 200 power cuts take longer than 5
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
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
// is gone; on a cut rig it then cuts the power.
func (r *killRig) kill() {
	_ = r.serve.cmd.Process.Kill()
	<-r.serve.exited
	if r.cut != nil {
		if err := r.cut.Cut(); err != nil {
			r.t.Fatal(err)
		}
	}
}

// restart starts serve again on the same data and waits until it is ready.
func (r *killRig) restart() {
	r.serve = startServe(r.t, nil, r.args...)
	r.serve.waitReady()
}
