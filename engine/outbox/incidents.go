package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/streams"
)

// incidentWriter writes incident records and snapshots to the incidents
// bucket (kv). Closed records and their snapshots live for retention;
// those of an open incident never expire.
type incidentWriter struct {
	kv        jetstream.KeyValue
	retention time.Duration
}

// HandleIncidents registers the handlers of incident effects: records and
// snapshots in the incidents bucket kv, whose closed records live for
// retention, and incident facts.
func HandleIncidents(pub *Publisher, kv jetstream.KeyValue, retention time.Duration) {
	w := &incidentWriter{kv: kv, retention: retention}
	pub.Handle(func(ctx context.Context, out *Outbox, eff instance.Effect) error {
		if eff.Incident.State.Closed() {
			if err := w.expireSnapshots(ctx, out, eff.Incident); err != nil {
				return err
			}
		}
		m, err := w.put(streams.IncidentKey(eff.Incident.ID), eff.Incident, eff.Incident.State.Closed())
		if err != nil {
			return err
		}
		return out.Send(m, nil)
	}, instance.PutIncident)
	pub.Handle(SendMsg(w.snapshotMsg), instance.PutSnapshot)
	pub.Handle(SendMsg(func(_ *instance.State, eff instance.Effect) (*nats.Msg, error) {
		f := eff.IncidentFact
		body, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		m := nats.NewMsg(streams.FactSubject(streams.FactIncident, f.ProcessID, string(f.Kind)))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, f.FactID)
		return m, nil
	}), instance.PublishIncidentFact)
}

// snapshotMsg writes a variables snapshot; it expires with the incident
// retention unless its incident is still open after the step.
func (w *incidentWriter) snapshotMsg(s *instance.State, eff instance.Effect) (*nats.Msg, error) {
	return w.put(streams.SnapshotKey(eff.Snapshot.Incident, eff.Snapshot.Attempt), eff.Snapshot, !incidentOpen(s, eff.Snapshot.Incident))
}

// put is a write of v to the incidents bucket; with expire the record
// lives for the incident retention only.
func (w *incidentWriter) put(key string, v any, expire bool) (*nats.Msg, error) {
	body, err := streams.Marshal(v)
	if err != nil {
		return nil, err
	}
	return w.msg(key, body, expire), nil
}

func (w *incidentWriter) msg(key string, body []byte, expire bool) *nats.Msg {
	m := nats.NewMsg(streams.KVSubject(streams.IncidentsBucket, key))
	m.Data = body
	if expire {
		m.Header.Set(jetstream.MsgTTLHeader, w.retention.String())
	}
	return m
}

// incidentOpen reports whether incident id is still open after the step
// that produced s's outbox.
func incidentOpen(s *instance.State, id string) bool {
	return slices.ContainsFunc(s.OpenIncidents(), func(inc *instance.Incident) bool { return inc.ID == id })
}

// expireSnapshots starts the retention of a closing incident's snapshots:
// written while it was open, they carry no TTL, so each is written again
// with one. Snapshots in this same outbox get their TTL as they are
// written; one already gone (a republished outbox) is skipped.
func (w *incidentWriter) expireSnapshots(ctx context.Context, out *Outbox, rec *incidents.Record) error {
	s := out.state
	for _, attempt := range rec.Snapshots {
		if slices.ContainsFunc(s.Outbox, func(eff instance.Effect) bool {
			return eff.Kind == instance.PutSnapshot && eff.Snapshot.Incident == rec.ID && eff.Snapshot.Attempt == attempt
		}) {
			continue
		}
		key := streams.SnapshotKey(rec.ID, attempt)
		entry, err := w.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", key, err)
		}
		if err := out.Send(w.msg(key, entry.Value(), true), nil); err != nil {
			return err
		}
	}
	return nil
}
