package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestServeWaitsOutUnavailableJetStream starts an engine node while its
// 3-node cluster has lost quorum (two nodes SIGKILLed): serve keeps trying,
// says so, and is ready once the nodes are back, instead of exiting.
func TestServeWaitsOutUnavailableJetStream(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster takes a while")
	}
	c := streamstest.StartCluster(t, 3)
	c.Kill(1)
	c.Kill(2)
	p := startServe(t, nil, "--nats-url", c.NodeURL(0), "--replicas", "3", "--failover", "1s")
	testwait.True(t, 60*time.Second, `a "JetStream unavailable; trying again" record`, func() bool {
		select {
		case <-p.exited:
			t.Fatalf("serve exited with %d while JetStream was unavailable, want it to keep trying", p.exitCode)
		default:
		}
		return strings.Contains(p.stderr(), "JetStream unavailable; trying again")
	})
	resp, err := http.Get("http://" + p.httpAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "JetStream unavailable") {
		t.Errorf("/healthz while waiting = %d %q, want 503 naming JetStream unavailable", resp.StatusCode, body)
	}
	c.Start(1)
	c.Start(2)
	if rec := p.waitReadyWithin(90 * time.Second); rec["replicas"] != 3.0 {
		t.Errorf("ready record %v, want 3 replicas", rec)
	}
}
