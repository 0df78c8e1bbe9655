package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestProcessCommands(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	url, _ := p.waitReady()["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}

	if out := c.ok("processes", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("processes list before any deploy = %q; want []", out)
	}
	c.ok("deploy", orderBPMN)
	dir := t.TempDir()
	c.ok("deploy", writeFile(t, dir, "signal.bpmn", signalBPMN))

	out := c.ok("processes", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID ") || !strings.HasPrefix(lines[1], "launched ") ||
		!strings.HasPrefix(lines[2], "order ") || !strings.HasPrefix(lines[3], "waiter ") {
		t.Fatalf("processes list printed:\n%s", out)
	}
	var list []struct {
		ID       string `json:"id"`
		Version  int    `json:"version"`
		Versions []int  `json:"versions"`
	}
	if err := json.Unmarshal([]byte(c.ok("processes", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[1].ID != "order" || list[1].Version != 1 || len(list[1].Versions) != 1 {
		t.Fatalf("processes list --json = %+v", list)
	}

	want, err := os.ReadFile(orderBPMN)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ok("process", "show", "order", "--xml"); got != string(want) {
		t.Errorf("process show order --xml printed %d bytes, not the deployed document (%d bytes)", len(got), len(want))
	}
	if got := c.ok("process", "show", "waiter", "--version", "1", "--xml"); got != signalBPMN {
		t.Errorf("process show waiter --xml printed %q", got)
	}
	if out := c.ok("process", "show", "order"); !strings.Contains(out, "id:") || !strings.Contains(out, "order") || !strings.Contains(out, "versions:") {
		t.Errorf("process show order printed:\n%s", out)
	}
	c.fails(1, `process "nosuch": not found`, "process", "show", "nosuch")
	c.fails(1, `process "order" version 2: not found`, "process", "show", "order", "--version", "2")
	c.fails(2, `missing ID`, "process", "show")
	c.fails(2, `--version must be 0`, "process", "show", "order", "--version", "-1")
}
