package embedded_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/embedded"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// testContext bounds every wait of a test; hitting it fails the test.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// startBare starts an embedded server that nothing has provisioned yet.
func startBare(t testing.TB) (*embedded.Server, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	env := streamstest.StartBare(t)
	return env.Server, env.Conn, env.JS
}

func TestServerInProcessOnly(t *testing.T) {
	srv, nc, js := startBare(t)
	if url := srv.ClientURL(); url != "" {
		t.Errorf("ClientURL with NoListen = %q, want empty", url)
	}
	if !srv.Inner().JetStreamEnabled() {
		t.Fatal("JetStream not enabled")
	}
	if _, err := js.AccountInfo(testContext(t)); err != nil {
		t.Fatalf("account info: %v", err)
	}
	if !nc.IsConnected() {
		t.Fatal("in-process connection not connected")
	}
	srv.Shutdown()
	srv.Shutdown() // safe twice
	if srv.Inner().Running() {
		t.Fatal("server still running after Shutdown")
	}
}

func TestServerListensOnRandomPort(t *testing.T) {
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Port: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	url := srv.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":-1") || strings.HasSuffix(url, ":4222") {
		t.Fatalf("ClientURL = %q, want nats://127.0.0.1:<random port>", url)
	}
	nc, err := streams.Connect(streams.ConnectConfig{URL: url, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := streams.CheckServer(testContext(t), nc); err != nil {
		t.Fatalf("CheckServer on the embedded server: %v", err)
	}
}

func TestServerPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	start := time.Now()
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Port: port, Logger: quietLogger()})
	if err == nil {
		srv.Shutdown()
		t.Fatal("Start succeeded on a taken port")
	}
	if !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Errorf("error does not name the port %d: %v", port, err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Start took %s to report a taken port", elapsed)
	}
}

func TestServerUnusableStoreDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := embedded.Start(embedded.Config{StoreDir: file, NoListen: true, Logger: quietLogger()})
	if err == nil {
		srv.Shutdown()
		t.Fatal("Start succeeded with a file as store dir")
	}
	if !strings.Contains(err.Error(), file) {
		t.Errorf("error does not name the dir: %v", err)
	}

	if _, err := embedded.Start(embedded.Config{NoListen: true}); err == nil || !strings.Contains(err.Error(), "StoreDir") {
		t.Errorf("missing StoreDir: %v", err)
	}
}

func TestServerRestartKeepsData(t *testing.T) {
	env := streamstest.Start(t)
	ctx := testContext(t)
	subject := streams.EventSubject(streams.PartitionOf("i-1", env.Layout.Partitions), "i-1")
	if _, err := env.JS.Publish(ctx, subject, []byte("start")); err != nil {
		t.Fatal(err)
	}
	kv, err := env.JS.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "i-1", []byte("checkpoint")); err != nil {
		t.Fatal(err)
	}

	env.Restart(t)

	events, err := env.JS.Stream(ctx, streams.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatalf("event lost across restart: %v", err)
	}
	if string(msg.Data) != "start" {
		t.Errorf("event data = %q", msg.Data)
	}
	kv, err = env.JS.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "i-1")
	if err != nil || string(e.Value()) != "checkpoint" {
		t.Fatalf("checkpoint after restart = %v, %v", e, err)
	}
	layout, err := streams.ReadLayout(ctx, env.JS)
	if err != nil || layout != env.Layout {
		t.Fatalf("layout after restart = %+v, %v; want %+v", layout, err, env.Layout)
	}
	// The partition consumer survived and still delivers the event.
	cons, err := env.JS.Consumer(ctx, streams.EventsStream, streams.PartitionConsumer(streams.PartitionOf("i-1", env.Layout.Partitions)))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchPriorityGroup(streams.PriorityGroup), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got int
	for m := range batch.Messages() {
		got++
		if string(m.Data()) != "start" {
			t.Errorf("fetched %q", m.Data())
		}
	}
	if got != 1 {
		t.Fatalf("fetched %d events after restart, want 1 (err %v)", got, batch.Error())
	}
}
