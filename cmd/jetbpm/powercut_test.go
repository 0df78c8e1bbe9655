package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/internal/lazyfs"
)

// powerCut runs jetbpm serve at durability level on a data directory that
// lazyfs can cut, starts n instances through the CLI (each start
// acknowledged), SIGKILLs serve, cuts the power and starts serve again.
// It returns the acknowledged starts the restarted serve does not know.
func powerCut(t *testing.T, level string, n int) (lost []string) {
	t.Helper()
	data := t.TempDir()
	fs, err := lazyfs.Mount(data, t.TempDir())
	if err != nil {
		t.Skipf("FUSE cannot mount here, so the power-cut test cannot run: %v", err)
	}
	t.Cleanup(func() { _ = fs.Unmount() })

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
