package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// Two serve processes on one NATS server share its partitions, as
// 'jetbpm cluster status' shows; when one stops, the other holds them
// all, and the status says so.
func TestClusterStatusShowsTwoServes(t *testing.T) {
	first := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t), "--partitions", "4")
	url := first.waitReady()["nats_url"].(string)
	second := startServe(t, nil, "--nats-url", url)
	second.waitReady()
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}

	status := func() *engine.ClusterView {
		t.Helper()
		var v engine.ClusterView
		if err := json.Unmarshal([]byte(c.ok("cluster", "status", "--json")), &v); err != nil {
			t.Fatal(err)
		}
		return &v
	}
	holders := func(v *engine.ClusterView) map[string]int {
		out := map[string]int{}
		for _, p := range v.Partition {
			out[p.Node]++
		}
		return out
	}
	testwait.Until(t, 30*time.Second, "two nodes holding two partitions each", func() error {
		v := status()
		if h := holders(v); len(v.Nodes) != 2 || len(h) != 2 || h[v.Nodes[0].ID] != 2 || h[v.Nodes[1].ID] != 2 {
			return fmt.Errorf("nodes %+v, holders %v", v.Nodes, h)
		}
		return nil
	})
	out := c.ok("cluster", "status")
	t.Logf("jetbpm cluster status:\n%s", out)
	if !strings.HasPrefix(out, "2 engine node(s), 4 partitions") || !strings.Contains(out, "PARTITION  HOLDER") {
		t.Errorf("cluster status:\n%s", out)
	}

	second.stop()
	testwait.Until(t, 30*time.Second, "the first node holding all four", func() error {
		v := status()
		if h := holders(v); len(v.Nodes) != 1 || h[v.Nodes[0].ID] != 4 {
			return fmt.Errorf("nodes %+v, holders %v", v.Nodes, h)
		}
		return nil
	})
}
