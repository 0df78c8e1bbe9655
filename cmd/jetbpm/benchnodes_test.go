package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// jetbpm bench --engines 2 runs the second engine node as a serve
// process of its own; the partitions are shared, so each node completes
// at least 35 % of the instances. A scenario with in-process operations
// cannot run on a serve process and is refused.
func TestBenchEngineProcesses(t *testing.T) {
	stdout, stderr, code := runJetbpm(t, nil, "bench", "--scenario", "one-task", "--duration", "2s", "--engines", "2", "--no-baseline", "--json")
	if code != 0 {
		t.Fatalf("bench: exit %d, stderr %s", code, stderr)
	}
	var res struct {
		Instances       int64   `json:"instances"`
		EngineCompleted []int64 `json:"engineCompleted"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, stdout)
	}
	if len(res.EngineCompleted) != 2 || res.Instances == 0 {
		t.Fatalf("bench: %+v", res)
	}
	for i, n := range res.EngineCompleted {
		if share := float64(n) / float64(res.Instances); share < 0.35 {
			t.Errorf("node %d completed %d of %d instances (%.0f %%), want at least 35 %%", i+1, n, res.Instances, 100*share)
		}
	}
	t.Logf("%d instances, completed per node %v", res.Instances, res.EngineCompleted)

	_, stderr, code = runJetbpm(t, nil, "bench", "--scenario", "ten-inproc", "--engines", "2", "--duration", "1s")
	if code == 0 || !strings.Contains(stderr, "scenario ten-inproc runs in-process operations, which engine node processes do not have") {
		t.Errorf("ten-inproc on 2 nodes: exit %d, stderr %q", code, stderr)
	}
}
