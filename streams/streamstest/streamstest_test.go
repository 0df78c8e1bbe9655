package streamstest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

func TestStartProvisionsAndRestartKeepsData(t *testing.T) {
	env := streamstest.Start(t, streamstest.WithPartitions(2), streamstest.WithListen())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	if env.Layout != (streams.Layout{Partitions: 2, Replicas: 1}) {
		t.Fatalf("layout = %+v", env.Layout)
	}
	if !strings.HasPrefix(env.Server.ClientURL(), "nats://127.0.0.1:") {
		t.Fatalf("WithListen: ClientURL = %q", env.Server.ClientURL())
	}
	other := env.NewConn(t)
	if _, err := other.Request(streams.APISubject("none"), nil, 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("second connection: %v", err)
	}
	if _, err := env.JS.Publish(ctx, streams.FactSubject(streams.FactInstance, "p", "started"), []byte("f")); err != nil {
		t.Fatal(err)
	}

	env.Restart(t)

	facts, err := env.JS.Stream(ctx, streams.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := facts.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("facts after restart: %d, want 1", n)
	}
	if layout, err := streams.ReadLayout(ctx, env.JS); err != nil || layout != env.Layout {
		t.Fatalf("ReadLayout after restart = %+v, %v", layout, err)
	}
}
