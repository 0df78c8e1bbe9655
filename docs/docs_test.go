// Package docs holds jetbpm's documentation; its test checks that the
// pages say no more than the code does.
package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// unfinished are words a status column must not use for a part that is
// built: when a part is done, its row says so.
var unfinished = regexp.MustCompile(`(?i)\b(in progress|pending|not yet|todo|tbd|wip)\b`)

// The status column of architecture.md's NATS mapping says "done" (with
// notes) for every row: a part that is not built has no row there.
func TestArchitectureStatusIsTrue(t *testing.T) {
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "## The NATS mapping as implemented")
	if !ok {
		t.Fatal("architecture.md has no section \"The NATS mapping as implemented\"")
	}
	rows := 0
	for line := range strings.Lines(table) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| concept") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		status := strings.TrimSpace(cells[len(cells)-1])
		rows++
		if !strings.HasPrefix(status, "done") || unfinished.MatchString(status) {
			t.Errorf("status %q of row %q: a built part says done", status, strings.TrimSpace(cells[0]))
		}
	}
	if rows < 10 {
		t.Fatalf("found %d rows in the NATS mapping table; the test no longer reads it", rows)
	}
}
