package streams_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/streams"
)

func TestCheckServerEmbedded(t *testing.T) {
	_, nc, _ := startBare(t)
	if err := streams.CheckServer(testContext(t), nc); err != nil {
		t.Fatalf("CheckServer on nats-server %s: %v", server.VERSION, err)
	}
}

func TestCheckServerWithoutJetStream(t *testing.T) {
	ns, err := server.NewServer(&server.Options{DontListen: true, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(testTimeout) {
		t.Fatal("plain nats-server not ready")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	err = streams.CheckServer(testContext(t), nc)
	if !errors.Is(err, streams.ErrServerUnsupported) {
		t.Fatalf("CheckServer without JetStream = %v, want ErrServerUnsupported", err)
	}
	t.Log(err)
	for _, want := range []string{"nats-server >= " + streams.MinServerVersion, "without JetStream"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
