package camunda7_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/camunda7"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// TestCamunda7JSClient runs the real camunda-external-task-client-js 3.1.0
// (testdata/jsclient, installed by `make jsclient`) against the facade:
// long-polling fetches, complete with typed variables, handleFailure with
// retries (retried) and with retries 0 (incident), handleBpmnError (the
// error boundary), extendLock, and unlock (refetched by another worker).
func TestCamunda7JSClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the Camunda 7 JS client test needs node and `make jsclient` (it installs node with apt-get)")
	}
	dir, _ := filepath.Abs("testdata/jsclient")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "camunda-external-task-client-js")); err != nil {
		t.Fatalf("camunda-external-task-client-js is not installed in %s: run `make jsclient` (npm ci)", dir)
	}
	f := setup(t, camunda7.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "run.mjs", f.srv.URL+camunda7.Prefix+"/", "order.bpmn")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var summary struct {
		Instances map[string]string
		Seen      struct {
			Complete struct {
				N                  any
				J                  map[string]any
				BusinessKey        string
				TopicName          string
				LockExpirationTime string
				Retries            *int
			}
			Retry struct {
				Retries      int
				ErrorMessage string
			}
			UnlockedBy, RefetchedBy string
		}
		Errors []string
	}
	if err := json.Unmarshal(bytes.TrimSpace(lastLine(stdout.Bytes())), &summary); err != nil || runErr != nil {
		t.Fatalf("node run.mjs: %v; summary %v\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.String(), stderr.String())
	}
	seen := summary.Seen
	if seen.Complete.N != 5.0 || seen.Complete.J["a"] != 1.0 || seen.Complete.BusinessKey != "bk-complete" || seen.Complete.TopicName != "js" ||
		!camundaDate.MatchString(seen.Complete.LockExpirationTime) || seen.Complete.Retries != nil {
		t.Errorf("the handler saw %+v", seen.Complete)
	}
	if seen.Retry.Retries != 1 || !strings.Contains(seen.Retry.ErrorMessage, "boom") {
		t.Errorf("the retried task: %+v", seen.Retry)
	}
	if seen.UnlockedBy != "js-1" || seen.RefetchedBy != "js-2" {
		t.Errorf("unlock: locked by %q, refetched by %q", seen.UnlockedBy, seen.RefetchedBy)
	}

	ended := func(mode string) *instanceView {
		t.Helper()
		v := f.waitEnded(t, summary.Instances[mode])
		return &instanceView{v.Status, v.Variables, v.ActiveNodes}
	}
	v := ended("complete")
	want := map[string]any{"out": int64(1), "big": int64(1 << 40), "dbl": 1.5, "b": true, "loc": "l", "dt": "1970-01-01T00:00:00.000+0000"}
	for name, w := range want {
		if v.vars[name] != w {
			t.Errorf("complete: variable %s = %#v, want %#v", name, v.vars[name], w)
		}
	}
	if m, _ := v.vars["obj"].(map[string]any); m["k"] != "v" {
		t.Errorf("complete: obj = %#v", v.vars["obj"])
	}
	if _, ok := v.vars["tr"]; ok {
		t.Error("complete: the transient variable was stored")
	}
	if v := ended("retry"); v.status != instance.Completed || v.vars["retried"] != true {
		t.Errorf("retry: %s %v", v.status, v.vars)
	}
	if v := ended("bpmnError"); v.status != instance.Completed || v.vars["reason"] != "limit" {
		t.Errorf("bpmnError: %s %v", v.status, v.vars)
	}
	if v := ended("extend"); v.vars["extended"] != true {
		t.Errorf("extend: %v", v.vars)
	}
	if v := ended("unlock"); v.vars["by"] != "js-2" {
		t.Errorf("unlock: %v", v.vars)
	}
	// retries 0: an incident on the task, with the worker's message.
	var incidents []map[string]any
	waitFor(t, "the incident of the retries-0 failure", func() error {
		f.call(t, "GET", "/incident?processInstanceId="+summary.Instances["incident"], nil).decode(t, &incidents)
		if len(incidents) != 1 {
			return fmt.Errorf("%d incidents", len(incidents))
		}
		return nil
	})
	if msg, _ := incidents[0]["incidentMessage"].(string); !strings.Contains(msg, "fatal: card store gone") || incidents[0]["activityId"] != "charge" {
		t.Errorf("incident %v", incidents[0])
	}
}

type instanceView struct {
	status instance.Status
	vars   map[string]any
	active []string
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}
