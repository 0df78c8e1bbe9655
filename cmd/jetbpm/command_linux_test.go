package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/testwait"
)

// TestWorkerTakesItsCommandsAlong checks a job's command does not outlive
// its worker: killed with kill -9, the worker's command gets SIGKILL from
// the kernel (an orphan would complete a job already given to another
// worker); stopped past its shutdown timeout, the command's whole process
// group is killed, its children too.
func TestWorkerTakesItsCommandsAlong(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	env := []string{"JETBPM_NATS_URL=" + p.waitReady()["nats_url"].(string)}
	c := client{t: t, env: env}
	dir := t.TempDir()
	c.ok("deploy", writeFile(t, dir, "work.bpmn", strings.Replace(workBPMN, "%PROCESSES%", strings.ReplaceAll(simpleProcess, "TOPIC", "hang"), 1)))
	// The script records its own pid and its child's, then waits forever.
	script := writeScript(t, dir, "hang.sh", `sleep 600 &
echo "$$ $!" > "$PIDS.tmp" && mv "$PIDS.tmp" "$PIDS"
wait
`)

	t.Run("kill -9", func(t *testing.T) {
		pids := filepath.Join(t.TempDir(), "pids")
		w := startWork(t, append(env, "PIDS="+pids), "--topic", "hang", "--", script)
		c.ok("start", "hang")
		shell, child := waitPids(t, pids)
		t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
		_ = w.cmd.Process.Kill()
		<-w.exited
		waitDead(t, shell, "the command of a worker killed with kill -9")
	})

	t.Run("shutdown timeout", func(t *testing.T) {
		pids := filepath.Join(t.TempDir(), "pids")
		w := startWork(t, append(env, "PIDS="+pids), "--topic", "hang", "--shutdown-timeout", "100ms", "--", script)
		c.ok("start", "hang")
		shell, child := waitPids(t, pids)
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.exited:
		case <-time.After(15 * time.Second):
			t.Fatal("jetbpm work still running 15s after SIGTERM")
		}
		waitDead(t, shell, "the command still running at the shutdown timeout")
		waitDead(t, child, "the child of the command still running at the shutdown timeout")
	})
}

// waitPids reads the two pids the hang script writes once it runs.
func waitPids(t *testing.T, path string) (shell, child int) {
	t.Helper()
	var b []byte
	testwait.Until(t, 20*time.Second, "the job's command to write its pids", func() (err error) {
		b, err = os.ReadFile(path)
		return err
	})
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("pid file %q, want two pids", b)
	}
	shell, _ = strconv.Atoi(f[0])
	child, _ = strconv.Atoi(f[1])
	return shell, child
}

// waitDead fails unless process pid is gone (or a zombie nobody reaps yet)
// within 10 s.
func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			_ = syscall.Kill(pid, syscall.SIGKILL) // do not leave it running
		}
	})
	testwait.True(t, 10*time.Second, fmt.Sprintf("%s (pid %d) to end", what, pid), func() bool {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return true
		}
		// The state follows the command name's closing parenthesis.
		i := bytes.LastIndexByte(stat, ')')
		return i > 0 && bytes.HasPrefix(stat[i+1:], []byte(" Z"))
	})
}
