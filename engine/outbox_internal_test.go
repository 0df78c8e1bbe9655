package engine

import (
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
	pub := &publisher{incidentRetention: 2 * time.Hour}
	s := &instance.State{ID: "i-1", Incidents: []*instance.Incident{{Record: incidents.Record{ID: "i-1/a/1", State: incidents.Open}}}}
	for _, tc := range []struct {
		incident string
		ttl      string
	}{
		{"i-1/a/1", ""},       // still open after the step
		{"i-1/b/1", "2h0m0s"}, // raised and closed within the step
	} {
		m, err := pub.effectMsg(0, s, instance.Effect{Kind: instance.PutSnapshot, Snapshot: &incidents.Snapshot{Incident: tc.incident, Attempt: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get("Nats-TTL"); got != tc.ttl {
			t.Errorf("snapshot of %s: Nats-TTL %q, want %q", tc.incident, got, tc.ttl)
		}
	}
}
