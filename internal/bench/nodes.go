package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A node is an engine node the bench runs as a process of its own
// (Config.EngineCommand): `jetbpm serve` on the bench's NATS server.
type node struct {
	cmd     *exec.Cmd
	metrics string // its /metrics URL
	exited  chan struct{}
	stderr  strings.Builder
}

// startNode starts engine node process i with command (the jetbpm
// binary and any arguments before "serve") against NATS at url, and
// waits until it is ready.
func startNode(ctx context.Context, command []string, url string, cfg Config, i int) (*node, error) {
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	grpcAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := append(command[1:len(command):len(command)], "serve", "--nats-url", url, "--http", httpAddr, "--grpc", grpcAddr,
		"--replicas", strconv.Itoa(max(cfg.Replicas, 1)), "--log-format", "json") // info: "jetbpm ready" says when it is
	if cfg.History != "" {
		args = append(args, "--history", string(cfg.History))
	}
	n := &node{cmd: exec.Command(command[0], args...), metrics: "http://" + httpAddr + "/metrics", exited: make(chan struct{})}
	out, err := n.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("engine node %d: %w", i, err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(n.exited)
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			var rec map[string]any
			if !signalled && json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "jetbpm ready" {
				close(ready)
				signalled = true
				continue
			}
			if lvl, _ := rec["level"].(string); lvl != "INFO" && lvl != "DEBUG" && n.stderr.Len() < 4096 {
				n.stderr.WriteString(line + "\n")
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = n.cmd.Wait()
	}()
	select {
	case <-ready:
		return n, nil
	case <-n.exited:
		return nil, fmt.Errorf("engine node %d exited before it was ready: %s", i, strings.TrimSpace(n.stderr.String()))
	case <-time.After(time.Minute):
		n.stop()
		return nil, fmt.Errorf("engine node %d: not ready after a minute: %s", i, strings.TrimSpace(n.stderr.String()))
	case <-ctx.Done():
		n.stop()
		return nil, fmt.Errorf("engine node %d: not ready: %w", i, ctx.Err())
	}
}

// completed reads the node's count of completed instances from its
// /metrics; -1 when it cannot be read.
func (n *node) completed() int64 {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(n.metrics)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	return completedIn(string(b))
}

// stop ends the node as an operator would (SIGTERM: it hands its
// partitions over) and waits for it, killing it after 10 s.
func (n *node) stop() {
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
