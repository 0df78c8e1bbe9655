package main

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestServeEmbedded(t *testing.T) {
	data := t.TempDir()
	p := startServe(t, nil, "--data", data, "--listen", freeAddr(t))
	rec := p.waitReady()
	if url, _ := rec["nats_url"].(string); !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Errorf("ready record nats_url = %v, want nats://127.0.0.1:PORT", rec["nats_url"])
	}

	resp, err := http.Get("http://" + p.httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "# TYPE jetbpm_ready gauge\njetbpm_ready 1\n") {
		t.Errorf("/metrics: %d\n%s", resp.StatusCode, body)
	}

	// The Camunda 7 REST API is mounted on the same listener.
	for path, want := range map[string]int{"/engine-rest/version": 200, "/engine-rest/no/such/endpoint": 404} {
		resp, err := http.Get("http://" + p.httpAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || resp.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(string(body), "{") {
			t.Errorf("GET %s: %d %q %s, want %d with a JSON body", path, resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
		}
	}

	t.Run("second serve on the same data dir", func(t *testing.T) {
		_, stderr, code := runJetbpm(t, nil, "serve", "--data", data, "--listen", freeAddr(t), "--http", "")
		want := `^jetbpm: data directory ` + regexp.QuoteMeta(data) + ` is in use by another jetbpm serve \(pid ` + p.pid() + `\)\n$`
		if code != 1 || !regexp.MustCompile(want).MatchString(stderr) {
			t.Errorf("exit %d, stderr %q; want exit 1 and %s", code, stderr, want)
		}
	})

	p.stop()

	t.Run("restart on the same data dir", func(t *testing.T) {
		p := startServe(t, nil, "--data", data, "--listen", freeAddr(t))
		p.waitReady()
		p.stop()
	})
}

func TestServeBusyPorts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()

	for _, flag := range []string{"--listen", "--http", "--grpc"} {
		args := []string{"serve", "--data", t.TempDir(), "--listen", freeAddr(t), "--http", freeAddr(t), "--grpc", freeAddr(t)}
		args = append(args, flag, busy)
		_, stderr, code := runJetbpm(t, nil, args...)
		want := `^jetbpm: ` + flag + `: listen tcp ` + regexp.QuoteMeta(busy) + `: bind: address already in use\n$`
		if code != 1 || !regexp.MustCompile(want).MatchString(stderr) {
			t.Errorf("busy %s: exit %d, stderr %q; want exit 1 and %s", flag, code, stderr, want)
		}
	}
}

// The partition count is fixed when the store is created: serve on it
// with another --partitions is refused, naming both counts; without
// --partitions it keeps the store's.
func TestServeRefusesAnotherPartitionCount(t *testing.T) {
	data := t.TempDir()
	p := startServe(t, nil, "--data", data, "--listen", freeAddr(t), "--partitions", "4")
	p.waitReady()
	p.stop()

	_, stderr, code := runJetbpm(t, nil, "serve", "--data", data, "--listen", freeAddr(t), "--http", freeAddr(t), "--grpc", freeAddr(t), "--partitions", "8")
	if code != 1 || !strings.Contains(stderr, "8 partitions were asked for, but the store was created with 4; run every node with --partitions 4 (or without it)") {
		t.Errorf("serve --partitions 8 on a store of 4: exit %d, stderr %q", code, stderr)
	}
	p = startServe(t, nil, "--data", data, "--listen", freeAddr(t))
	if rec := p.waitReady(); rec["partitions"] != 4.0 {
		t.Errorf("serve without --partitions on a store of 4: ready %v", rec)
	}
	p.stop()
}
