package signals_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/engine/signals"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

func newBroadcaster(t *testing.T, env *streamstest.Env) *signals.Broadcaster {
	t.Helper()
	defs, err := deploy.Open(context.Background(), env.JS)
	if err != nil {
		t.Fatal(err)
	}
	return signals.New(signals.Config{
		JS: env.JS, Defs: defs, Partitions: env.Layout.Partitions, Log: slog.New(slog.DiscardHandler),
		Metrics: signals.NewMetrics(metrics.NewRegistry()),
		CheckValue: func(name string, v any) error {
			if s, ok := v.(string); ok && len(s) > 16 {
				return errdefs.ErrTooLarge
			}
			return nil
		},
	})
}

// A catch's index entry, written as its instance's effect, makes a
// broadcast send that instance one event naming the wait; once the entry
// is dropped, a broadcast reaches no one.
func TestBroadcastReachesTheIndexedWaits(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := newBroadcaster(t, env)
	pub := outbox.New(env.JS)
	signals.Handle(pub)
	s := &instance.State{ID: "i-1", ProcessID: "p", Outbox: []instance.Effect{{
		ID: "e1", Kind: instance.SignalSubscribe, Wait: "w-7", Sub: &instance.Subscription{Name: "go"},
	}}}
	if err := pub.Publish(ctx, 0, s); err != nil {
		t.Fatal(err)
	}
	events, err := env.Conn.SubscribeSync(streams.EventSubject(streams.PartitionOf("i-1", env.Layout.Partitions), "i-1"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Broadcast(ctx, signals.Signal{Name: "go", ID: "b-1", Vars: map[string]any{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != "b-1" || len(res.Instances) != 1 || res.Instances[0] != "i-1" || len(res.Started) != 0 {
		t.Fatalf("result %+v, want i-1 reached", res)
	}
	m, err := events.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var env1 checkpoint.Envelope
	if err := streams.Unmarshal(m.Data, &env1); err != nil {
		t.Fatal(err)
	}
	ev := env1.Event
	if ev == nil || ev.Kind != instance.SignalTo || ev.Signal.Name != "go" || len(ev.Signal.Waits) != 1 || ev.Signal.Waits[0] != "w-7" || ev.Vars["n"] != int64(1) {
		t.Fatalf("event %+v", ev)
	}
	if err := signals.DropEntries(ctx, env.JS, "i-1", []instance.Event{*ev}); err != nil {
		t.Fatal(err)
	}
	res, err = b.Broadcast(ctx, signals.Signal{Name: "go"})
	if err != nil || len(res.Instances) != 0 {
		t.Fatalf("after the drop: %+v %v, want no one reached", res, err)
	}
}

// A broadcast that cannot be applied is refused, naming why, and sends
// nothing.
func TestBroadcastRefusesBadSignals(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	b := newBroadcaster(t, env)
	for _, tc := range []struct {
		sig  signals.Signal
		want string
	}{
		{signals.Signal{Name: "  "}, "needs a name"},
		{signals.Signal{Name: "go", ID: "a\nb"}, "signal id"},
		{signals.Signal{Name: strings.Repeat("n", 300)}, "signal name"},
		{signals.Signal{Name: "go", Vars: map[string]any{"big": strings.Repeat("x", 64)}}, `"big"`},
	} {
		_, err := b.Broadcast(context.Background(), tc.sig)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Broadcast(%.40q) = %v, want an error naming %s", tc.sig.Name, err, tc.want)
		}
		if tc.want != `"big"` && !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Broadcast(%.40q) = %v, want ErrInvalid", tc.sig.Name, err)
		}
	}
}
