package outbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/incidents"
)

// A snapshot gets the incident retention's TTL only when its incident is
// closed by the step that took it; an open incident's snapshots carry none
// (the retention starts when the incident closes, see expireSnapshots).
func TestSnapshotTTLOnlyOnceClosed(t *testing.T) {
	t.Parallel()
	w := &incidentWriter{retention: 2 * time.Hour}
	s := &instance.State{ID: "i-1", Incidents: []*instance.Incident{{Record: incidents.Record{ID: "i-1/a/1", State: incidents.Open}}}}
	for _, tc := range []struct {
		incident string
		ttl      string
	}{
		{"i-1/a/1", ""},       // still open after the step
		{"i-1/b/1", "2h0m0s"}, // raised and closed within the step
	} {
		m, err := w.snapshotMsg(s, instance.Effect{Kind: instance.PutSnapshot, Snapshot: &incidents.Snapshot{Incident: tc.incident, Attempt: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get("Nats-TTL"); got != tc.ttl {
			t.Errorf("snapshot of %s: Nats-TTL %q, want %q", tc.incident, got, tc.ttl)
		}
	}
}

// An effect kind no handler is registered for fails the outbox with the
// kind's name (the events stay unacknowledged), and a kind registered
// twice is refused when the engine opens.
func TestEffectRegistry(t *testing.T) {
	t.Parallel()
	pub := &Publisher{}
	called := 0
	pub.Handle(func(context.Context, *Outbox, instance.Effect) error { called++; return nil }, instance.CancelOperation)
	s := &instance.State{ID: "i-1", Outbox: []instance.Effect{
		{ID: "e1", Kind: instance.CancelOperation},
		{ID: "e2", Kind: "launchRocket"},
	}}
	before := pub.Session()
	_, err := pub.Start(context.Background(), 0, s)
	if err == nil || !strings.Contains(err.Error(), `unknown effect kind "launchRocket"`) || !strings.Contains(err.Error(), "e2") {
		t.Fatalf("start = %v, want the unknown kind and its effect named", err)
	}
	if called != 1 {
		t.Fatalf("the registered handler ran %d times, want 1", called)
	}
	if pub.Session() == before {
		t.Fatal("a failed outbox kept the session: its effects would not be republished")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second handler of a kind was accepted")
		}
	}()
	pub.Handle(func(context.Context, *Outbox, instance.Effect) error { return nil }, instance.CancelOperation)
}
