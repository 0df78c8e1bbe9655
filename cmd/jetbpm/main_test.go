package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// jetbpmBin is the jetbpm binary built once for the tests that run it, as
// it ships; failpointBin is built with the failpoint tag, for the tests that
// make serve kill itself at a chosen checkpoint write.
var jetbpmBin, failpointBin string

func TestMain(m *testing.M) {
	streamstest.ServeNodeIfAsked() // the cluster tests run this binary as NATS nodes
	dir, err := os.MkdirTemp("", "jetbpm-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	jetbpmBin, failpointBin = filepath.Join(dir, "jetbpm"), filepath.Join(dir, "jetbpm-failpoint")
	for _, build := range [][]string{{"-o", jetbpmBin}, {"-tags", "failpoint", "-o", failpointBin}} {
		if out, err := exec.Command("go", append(append([]string{"build"}, build...), ".")...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %v: %v\n%s", build, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runJetbpm runs jetbpm to completion and returns its output and exit code.
func runJetbpm(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, jetbpmBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("jetbpm %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// freeAddr returns a loopback address nothing listens on right now
// (streamstest.FreePort says why it is not port 0's).
func freeAddr(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", streamstest.FreePort(t))
}

// serveProc is a running `jetbpm serve` whose stderr is JSON log lines.
type serveProc struct {
	t        *testing.T
	cmd      *exec.Cmd
	httpAddr string
	grpcAddr string // the Zeebe gateway's
	// https, when set, is the client of a listener that serves HTTPS.
	https    *http.Client
	ready    chan map[string]any // the "jetbpm ready" record
	exited   chan struct{}
	exitCode int

	mu    sync.Mutex
	lines []string
}

// startServe starts `jetbpm serve --log-format json --http <free> args...`
// and kills it when the test ends if it is still running.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	return startServeBin(t, jetbpmBin, env, args...)
}

// startServeBin is startServe with another build of jetbpm.
func startServeBin(t *testing.T, bin string, env []string, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{t: t, httpAddr: freeAddr(t), grpcAddr: freeAddr(t), ready: make(chan map[string]any, 1), exited: make(chan struct{})}
	all := append([]string{"serve", "--log-format", "json", "--http", p.httpAddr, "--grpc", p.grpcAddr}, args...)
	p.cmd = exec.Command(bin, all...)
	p.cmd.Env = append(os.Environ(), env...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "jetbpm ready" {
				p.ready <- rec
			}
		}
	}()
	go func() {
		<-scanDone
		p.cmd.Wait()
		p.exitCode = p.cmd.ProcessState.ExitCode()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("serve stderr:\n%s", p.stderr())
		}
	})
	return p
}

func (p *serveProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitReady waits up to 20 s for /healthz to answer 200 and for the
// "jetbpm ready" record, and returns that record.
func (p *serveProc) waitReady() map[string]any {
	p.t.Helper()
	return p.waitReadyWithin(20 * time.Second)
}

// waitReadyWithin is waitReady with another bound.
func (p *serveProc) waitReadyWithin(d time.Duration) map[string]any {
	p.t.Helper()
	deadline := time.Now().Add(d)
	client, url := &http.Client{Timeout: time.Second}, "http://"+p.httpAddr+"/healthz"
	if p.https != nil {
		client, url = p.https, "https://"+p.httpAddr+"/healthz"
	}
	testwait.Until(p.t, d, "/healthz to answer 200", func() error {
		select {
		case <-p.exited:
			p.t.Fatalf("serve exited with %d before it was ready", p.exitCode)
		default:
		}
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
	select {
	case rec := <-p.ready:
		return rec
	case <-time.After(time.Until(deadline) + time.Second):
		p.t.Fatal("no \"jetbpm ready\" log record")
		return nil
	}
}

// stop sends SIGTERM and checks serve exits 0 within the 10 s it promises.
func (p *serveProc) stop() {
	p.t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(12 * time.Second):
		p.t.Fatal("serve still running 12s after SIGTERM")
	}
	if took := time.Since(start); took > 10*time.Second {
		p.t.Errorf("serve took %s to stop, want under 10s", took)
	}
	if p.exitCode != 0 {
		p.t.Errorf("serve exit code after SIGTERM = %d, want 0", p.exitCode)
	}
}

func (p *serveProc) pid() string { return strconv.Itoa(p.cmd.Process.Pid) }
