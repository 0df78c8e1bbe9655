// Package nodetest runs the Node.js scripts that drive real, unmodified
// client libraries (installed by `make jsclient`) against a test's server,
// and reads the one JSON summary line each prints last.
//
//	var summary struct{ Errors []string }
//	nodetest.Run(t, "testdata/client", "@camunda8/orchestration-cluster-api", &summary, "run.mjs", url)
package nodetest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// Timeout bounds one script's run.
const Timeout = 2 * time.Minute

// Run runs node script args in dir, where package pkg must be installed
// (the test fails, naming `make jsclient`, when it is not; it is skipped
// when node is not installed), and decodes the last line the script
// prints into summary. The test fails, with the script's output, when the
// script fails, the line is not JSON, or the summary's Errors field (a
// []string, if it has one) is not empty.
func Run(t *testing.T, dir, pkg string, summary any, script string, args ...string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: this test needs node and `make jsclient` (it installs node with apt-get)")
	}
	dir, _ = filepath.Abs(dir)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg))); err != nil {
		t.Fatalf("%s is not installed in %s: run `make jsclient` (npm ci)", pkg, dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	out := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	err = json.Unmarshal(out, summary)
	var errs any
	if v := reflect.Indirect(reflect.ValueOf(summary)); v.Kind() == reflect.Struct {
		if f := v.FieldByName("Errors"); f.IsValid() && f.Len() > 0 {
			errs = f.Interface()
		}
	}
	if runErr != nil || err != nil || errs != nil {
		t.Fatalf("node %s: %v; summary %v %v\nstdout:\n%s\nstderr:\n%s", script, runErr, err, errs, stdout.String(), stderr.String())
	}
}
