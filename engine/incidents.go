package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/streams"
)

// IncidentView is an incident's record with the variable snapshots taken
// at each raise.
type IncidentView struct {
	*incidents.Record
	Variables []incidents.Snapshot `json:"variables"`
}

// Incident returns one incident with its snapshots.
func (e *Engine) Incident(ctx context.Context, id string) (*IncidentView, error) {
	rec, _, err := e.incidentRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	v := &IncidentView{Record: rec, Variables: []incidents.Snapshot{}}
	for _, attempt := range rec.Snapshots {
		entry, err := e.incidents.Get(ctx, streams.SnapshotKey(id, attempt))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired with the retention
		}
		if err != nil {
			return nil, err
		}
		var snap incidents.Snapshot
		if err := streams.Unmarshal(entry.Value(), &snap); err != nil {
			return nil, fmt.Errorf("incident %s: snapshot %d: %w", id, attempt, err)
		}
		v.Variables = append(v.Variables, snap)
	}
	return v, nil
}

func (e *Engine) incidentRecord(ctx context.Context, id string) (*incidents.Record, uint64, error) {
	entry, err := e.incidents.Get(ctx, streams.IncidentKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
		return nil, 0, fmt.Errorf("incident %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("incident %s: %w", id, err)
	}
	var rec incidents.Record
	if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
		return nil, 0, fmt.Errorf("incident %s: decode: %w", id, err)
	}
	return &rec, entry.Revision(), nil
}

// Incidents lists incident records matching f, oldest first failure first
// (then by id).
// It reads the incidents bucket only, never an instance: one watch of the
// records' keys delivers the current record of each (a stream of values,
// not a request per key) and ends once it has delivered them all.
func (e *Engine) Incidents(ctx context.Context, f incidents.Filter) ([]*incidents.Record, error) {
	w, err := e.incidents.WatchFiltered(ctx, []string{streams.IncidentKeys}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("incidents: watch bucket %s: %w", streams.IncidentsBucket, err)
	}
	defer func() { _ = w.Stop() }()
	now := e.opts.Now()
	var out []*incidents.Record
	for {
		var entry jetstream.KeyValueEntry
		var open bool
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("incidents: reading bucket %s (%d records so far): %w", streams.IncidentsBucket, len(out), ctx.Err())
		case entry, open = <-w.Updates():
		}
		if !open {
			return nil, fmt.Errorf("incidents: the watch of bucket %s ended early", streams.IncidentsBucket)
		}
		if entry == nil {
			break // every record stored when the watch began
		}
		var rec incidents.Record
		if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
			e.log.Warn("skipping an undecodable incident record", "key", entry.Key(), "err", err)
			continue
		}
		if f.Match(&rec, now) {
			out = append(out, &rec)
		}
	}
	slices.SortFunc(out, func(a, b *incidents.Record) int {
		if c := a.FirstFailure.Compare(b.FirstFailure); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID) // one order for equal times: pages (api) do not overlap
	})
	return out, nil
}

// RetryIncident re-enters the incident's node now, cancelling a scheduled
// automatic retry.
func (e *Engine) RetryIncident(ctx context.Context, id string) error {
	return e.incidentCommand(ctx, id, instance.IncidentRetry, nil)
}

// ResolveIncident sets vars and continues from the incident's node as if
// it had completed.
func (e *Engine) ResolveIncident(ctx context.Context, id string, vars map[string]any) error {
	clean, err := instance.NormalizeVars(vars)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for name, v := range clean {
		if err := e.opts.checkValue(name, v); err != nil {
			return fmt.Errorf("variable %q: %w", name, err)
		}
	}
	return e.incidentCommand(ctx, id, instance.IncidentResolve, clean)
}

// AbandonIncident closes the incident as dead-lettered and cancels its
// track; an instance left without a token ends terminated.
func (e *Engine) AbandonIncident(ctx context.Context, id string) error {
	return e.incidentCommand(ctx, id, instance.IncidentAbandon, nil)
}

// incidentCommand sends an operator command to the incident's instance and
// waits for its result. The instance's single writer orders concurrent
// commands: the first wins, the others find the incident closed.
func (e *Engine) incidentCommand(ctx context.Context, id string, kind instance.EventKind, vars map[string]any) error {
	// Watch before reading the record: a close that lands between the read
	// and the watch would otherwise go unseen, and a command the instance
	// then refuses would wait for an outcome that never comes.
	w, err := e.incidents.Watch(ctx, streams.IncidentKey(id), jetstream.UpdatesOnly())
	if err != nil {
		if errors.Is(err, jetstream.ErrInvalidKey) {
			return fmt.Errorf("incident %q: %w", id, ErrNotFound)
		}
		return fmt.Errorf("incident %s: watch: %w", id, err)
	}
	defer w.Stop()
	rec, _, err := e.incidentRecord(ctx, id)
	if errors.Is(err, ErrNotFound) {
		// The checkpoint is written before the record (an outbox effect):
		// an incident just raised may be on its instance only.
		rec, err = e.openIncidentOnCheckpoint(ctx, id)
	}
	if err != nil {
		return err
	}
	if rec.State.Closed() {
		return &closedError{id: id, state: rec.State}
	}
	// A finished instance applies no command; its open record can only be
	// one the instance never closed (it was aborted from outside a step).
	if s, _, err := e.store.Get(ctx, rec.Instance); err == nil && s.Status.Finished() {
		return &closedError{id: id, instance: rec.Instance, status: s.Status}
	}
	cmd := "cmd:" + nuid.Next()
	ev := &instance.Event{ID: cmd, Kind: kind, Incident: id, Vars: vars}
	if err := e.send(ctx, checkpoint.Envelope{Instance: rec.Instance, Event: ev}, cmd); err != nil {
		return err
	}
	err = awaitPut(ctx, w, "incident "+id, func(now *incidents.Record) (bool, error) {
		if _, done := now.Outcome(cmd); done {
			return true, nil
		}
		if now.State.Closed() {
			return true, &closedError{id: id, state: now.State, other: true}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	return e.durable.Sync(ctx) // the record that shows the outcome is durable before the answer
}

// openIncidentOnCheckpoint finds an open incident on its instance's
// checkpoint; an incident id begins with its instance id.
func (e *Engine) openIncidentOnCheckpoint(ctx context.Context, id string) (*incidents.Record, error) {
	instanceID, _, ok := strings.Cut(id, "/")
	if !ok {
		return nil, fmt.Errorf("incident %q: %w", id, ErrNotFound)
	}
	s, _, err := e.store.Get(ctx, instanceID)
	if err != nil {
		return nil, fmt.Errorf("incident %q: %w", id, ErrNotFound)
	}
	for _, inc := range s.OpenIncidents() {
		if inc.ID == id {
			rec := inc.Record
			return &rec, nil
		}
	}
	return nil, fmt.Errorf("incident %q: %w", id, ErrNotFound)
}

// closedError refuses an action on a closed incident (or one whose
// instance has finished); it matches ErrFinished.
type closedError struct {
	id       string
	state    incidents.State
	other    bool // closed by a concurrent action while this one waited
	instance string
	status   instance.Status
}

func (e *closedError) Error() string {
	switch {
	case e.instance != "":
		return fmt.Sprintf("incident %s: its instance %s is %s", e.id, e.instance, e.status)
	case e.other:
		return fmt.Sprintf("incident %s was %s by another action first", e.id, e.state)
	}
	return fmt.Sprintf("incident %s is %s", e.id, e.state)
}

func (e *closedError) Unwrap() error { return ErrFinished }
