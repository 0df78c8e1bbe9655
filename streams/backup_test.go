package streams_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

func TestBackupOrder(t *testing.T) {
	got := streams.BackupOrder([]string{"KV_jetbpm-meta", "KV_jetbpm-instances", "JETBPM_JOBS", "KV_jetbpm-definitions", "KV_jetbpm-tasks", "JETBPM_EVENTS"})
	want := []string{"JETBPM_EVENTS", "JETBPM_JOBS", "KV_jetbpm-tasks", "KV_jetbpm-instances", "KV_jetbpm-definitions", "KV_jetbpm-meta"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// A backup of a provisioned store restored into an empty server holds the
// same streams, the same messages and the same sequence numbers.
func TestBackupAndRestore(t *testing.T) {
	ctx := testContext(t)
	from := streamstest.Start(t)
	kv, err := from.JS.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if _, err := kv.Put(ctx, fmt.Sprintf("i-%03d", i), []byte(strings.Repeat("x", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := from.JS.Publish(ctx, streams.JobSubject("charge", "i-001/charge/1"), []byte(`{"id":"i-001/charge/1"}`)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	saved, err := streams.Backup(ctx, from.Conn, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved) != 18 {
		t.Errorf("saved %d streams, want every jetbpm stream (18)", len(saved))
	}
	for _, name := range []string{"KV_jetbpm-instances.json", "KV_jetbpm-instances.snapshot", "JETBPM_JOBS.snapshot"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("backup lacks %s: %v", name, err)
		}
	}

	to := streamstest.StartBare(t)
	restored, err := streams.Restore(ctx, to.Conn, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(restored) != len(saved) {
		t.Fatalf("restored %d streams of %d", len(restored), len(saved))
	}
	kv2, err := to.JS.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 250, 499} {
		e, err := kv2.Get(ctx, fmt.Sprintf("i-%03d", i))
		if err != nil || len(e.Value()) != i || e.Revision() != uint64(i+1) {
			t.Fatalf("restored i-%03d: %v, %v; want %d bytes at revision %d", i, e, err, i, i+1)
		}
	}
	jobs, err := to.JS.Stream(ctx, streams.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := jobs.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("restored jobs stream: %+v, %v", info, err)
	}
	if _, err := streams.Provision(ctx, to.JS, streams.Config{}); err != nil {
		t.Fatalf("provisioning over the restored store: %v", err)
	}

	// Restoring over existing streams is refused unless replace.
	if _, err := streams.Restore(ctx, to.Conn, dir, false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("restore over existing streams: %v", err)
	}
	if _, err := streams.Restore(ctx, to.Conn, dir, true); err != nil {
		t.Fatalf("restore with replace: %v", err)
	}
	if _, err := streams.Restore(ctx, to.Conn, t.TempDir(), true); err == nil || !strings.Contains(err.Error(), "holds no backup") {
		t.Fatalf("restore from an empty directory: %v", err)
	}
}
