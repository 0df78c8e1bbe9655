package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/lazyfs"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// powerCut runs jetbpm serve at durability level on a data directory that
// lazyfs can cut, starts n instances through the CLI (each start
// acknowledged), SIGKILLs serve, cuts the power and starts serve again.
// It returns the acknowledged starts the restarted serve does not know.
func powerCut(t *testing.T, level string, n int) (lost []string) {
	t.Helper()
	data := t.TempDir()
	fs := mountLazy(t, data, "power-cut")

	serveAt := func() (*serveProc, client) {
		p := startServe(t, nil, "--data", data, "--listen", freeAddr(t), "--durability", level)
		url, _ := p.waitReady()["nats_url"].(string)
		return p, client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	}
	p, c := serveAt()
	dir := t.TempDir()
	c.ok("deploy", writeFile(t, dir, "cut.bpmn", strings.Replace(workBPMN, "%PROCESSES%", strings.ReplaceAll(simpleProcess, "TOPIC", "cut"), 1)))
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strings.TrimSpace(c.ok("start", "cut", "--id", fmt.Sprintf("cut-%d", i)))
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	if err := fs.Cut(); err != nil {
		t.Fatal(err)
	}

	p, c = serveAt() // serve must start unaided on what the cut left
	defer p.stop()
	for _, id := range ids {
		if _, stderr, code := c.run("instance", "show", id); code != 0 {
			if !strings.Contains(stderr, "not found") {
				t.Fatalf("instance show %s: exit %d, %s", id, code, stderr)
			}
			lost = append(lost, id)
		}
	}
	return lost
}

// At durability sync a power cut loses no acknowledged start.
func TestPowerCutAtSyncLosesNothing(t *testing.T) {
	if lost := powerCut(t, "sync", 20); len(lost) > 0 {
		t.Fatalf("a power cut lost %d acknowledged starts at durability sync: %v", len(lost), lost)
	}
}

// At durability os the same cut loses acknowledged starts: the harness
// bites, and os promises only what it says.
func TestPowerCutAtOSCanLose(t *testing.T) {
	lost := powerCut(t, "os", 20)
	if len(lost) == 0 {
		t.Fatal("a power cut right after 20 starts lost none at durability os: the cut does not bite")
	}
	t.Logf("durability os: the cut lost %d of 20 acknowledged starts", len(lost))
}

// A disk whose fsync fails (EIO): at durability sync serve acknowledges no
// start it could not sync, says why to the caller and in its log, and
// acknowledges nothing more once the disk works again (after a failed
// fsync the page cache's state is unknown: only a restart reads the store
// again).
func TestFailingSyncAcknowledgesNothing(t *testing.T) {
	data := t.TempDir()
	fs := mountLazy(t, data, "failing-disk")
	p := startServe(t, nil, "--data", data, "--listen", freeAddr(t), "--durability", "sync")
	url, _ := p.waitReady()["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, t.TempDir(), "eio.bpmn", strings.Replace(workBPMN, "%PROCESSES%", strings.ReplaceAll(simpleProcess, "TOPIC", "eio"), 1)))
	c.ok("start", "eio", "--id", "before")

	fs.FailSync(syscall.EIO)
	failedStart := func(id string) {
		t.Helper()
		stdout, stderr, code := c.run("start", "eio", "--id", id, "--timeout", "5s")
		if code == 0 || stdout != "" {
			t.Fatalf("start %s was acknowledged after fsync failed: exit %d, %q", id, code, stdout)
		}
		if !strings.Contains(stderr, "could not be made durable") || !strings.Contains(stderr, "input/output error") || !strings.Contains(stderr, ".blk") {
			t.Fatalf("the failed start %s says %q; want it to say the store could not be synced, the file and the I/O error", id, stderr)
		}
	}
	failedStart("during")
	fs.FailSync(0)
	failedStart("after") // the disk works again; what the failed fsync dropped is unknown
	testwait.Until(t, 10*time.Second, "serve to log the failed sync", func() error {
		if !strings.Contains(p.stderr(), "input/output error") {
			return errors.New("no log line names the I/O error")
		}
		return nil
	})
}

// TestPowerCutKillNine is TestKillNine with a power cut at every kill:
// serve's data is on lazyfs, and each SIGKILL of serve drops every write
// it had not synced. The kills land at random points of the work in flight
// (a seeded pause; JETBPM_SEED repeats a run). The checks are TestKillNine's:
// every acknowledged start exists and ends as its input implies, every
// completed instance has one completed fact, every failing one one
// incident, every acknowledged message one correlation, and a job runs
// again only after a kill or on a new delivery. JETBPM_SOAK=1 cuts 200
// times.
func TestPowerCutKillNine(t *testing.T) {
	n, cuts := 110, 10
	if os.Getenv("JETBPM_SOAK") != "" {
		n, cuts = 2000, 200
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("JETBPM_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("JETBPM_SEED=%q: %v", s, err)
		}
	}
	t.Logf("JETBPM_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	killNine(t, newCutRig(t), n, cuts, func() time.Duration {
		return time.Duration(rng.IntN(300)) * time.Millisecond
	})
}

// TestPowerCutZeebeWorker is TestKillNineZeebeWorker (a Camunda 8 client's
// job worker through serve's gateway) with a power cut at every kill: no
// instance is lost, none completes twice, no completion is accepted
// twice, and no key is handed out twice.
func TestPowerCutZeebeWorker(t *testing.T) {
	n, cuts := 40, 4
	if os.Getenv("JETBPM_SOAK") != "" {
		n, cuts = 600, 30
	}
	killNineZeebe(t, newCutRig, n, cuts)
}

// TestPowerCutCompensation is TestKillNineCompensation with a power cut at
// every kill. It waits out job locks after each cut, so it runs in make
// soak only (JETBPM_SOAK=1).
func TestPowerCutCompensation(t *testing.T) {
	if os.Getenv("JETBPM_SOAK") == "" {
		t.Skip("runs in make soak (JETBPM_SOAK=1): each cut waits out job locks")
	}
	killNineCompensation(t, newCutRig(t), 600, 30)
}

// A full disk (every write failing with ENOSPC): at durability sync serve
// acknowledges nothing it could not store, and once the store has failed
// it refuses at once, naming the disk's error, until it restarts — room
// coming back does not make the failed stream store again (nats-server
// keeps it failed). Restarted (after a power cut, even), it has
// everything it acknowledged and takes work again.
func TestFullDiskAcknowledgesNothing(t *testing.T) {
	data := t.TempDir()
	fs := mountLazy(t, data, "full-disk")
	args := []string{"--data", data, "--listen", freeAddr(t), "--durability", "sync"}
	p := startServe(t, nil, args...)
	url, _ := p.waitReady()["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, t.TempDir(), "full.bpmn", strings.Replace(workBPMN, "%PROCESSES%", strings.ReplaceAll(simpleProcess, "TOPIC", "full"), 1)))
	c.ok("start", "full", "--id", "before")

	fs.FailWrite(syscall.ENOSPC)
	// The first start meets the full disk: the server stores nothing and
	// answers nothing, so it ends at its timeout, unacknowledged.
	if stdout, _, code := c.run("start", "full", "--id", "first", "--timeout", "2s"); code == 0 || stdout != "" {
		t.Fatalf("a start was acknowledged on a full disk: exit %d, %q", code, stdout)
	}
	refused := func(id string) {
		t.Helper()
		stdout, stderr, code := c.run("start", "full", "--id", id, "--timeout", "5s")
		if code == 0 || stdout != "" {
			t.Fatalf("start %s was acknowledged after the store failed: exit %d, %q", id, code, stdout)
		}
		if !strings.Contains(stderr, "no space left on device") || !strings.Contains(stderr, "could not be made durable") {
			t.Fatalf("start %s says %q; want the store's failure, naming the full disk", id, stderr)
		}
	}
	refused("full")
	resp, err := http.Get("http://" + p.httpAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "no space left on device") {
		t.Fatalf("/healthz with a failed store: %s %q, want 503 naming the full disk", resp.Status, body)
	}
	fs.FailWrite(0)
	refused("room-again") // the failed stream stays failed until a restart

	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	if err := fs.Cut(); err != nil {
		t.Fatal(err)
	}
	p = startServe(t, nil, args...)
	url, _ = p.waitReady()["nats_url"].(string)
	c = client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	defer p.stop()
	c.ok("instance", "show", "before")
	c.ok("start", "full", "--id", "after-restart")
	for _, id := range []string{"first", "full", "room-again"} {
		if _, stderr, code := c.run("instance", "show", id); code == 0 || !strings.Contains(stderr, "not found") {
			t.Fatalf("instance %s, never acknowledged, after the restart: exit %d, %s", id, code, stderr)
		}
	}
}

// mountLazy mounts a lazy file system at data, an empty directory, until
// the test ends; where FUSE cannot mount, the test is skipped and says
// which (what) test could not run.
func mountLazy(t *testing.T, data, what string) *lazyfs.FS {
	t.Helper()
	fs, err := lazyfs.Mount(data, t.TempDir())
	if err != nil {
		t.Skipf("FUSE cannot mount here, so the %s test cannot run: %v", what, err)
	}
	t.Cleanup(func() { _ = fs.Unmount() })
	return fs
}
