package engine

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

// publish sends every effect of s's outbox and waits until JetStream has
// stored each. Every effect is safe to publish twice (see instance.Effect),
// so after a crash the outbox is simply published again.
func (e *Engine) publish(ctx context.Context, partition int, s *instance.State) error {
	p, err := e.startPublish(ctx, partition, s)
	if err != nil {
		return err
	}
	return e.awaitPublish(ctx, p)
}

// publishing is an outbox on its way to JetStream: a batch starts every
// instance's publishes before it waits for any, so one instance's round
// trips do not queue behind another's.
type publishing struct {
	state   *instance.State
	futures []jetstream.PubAckFuture
}

// startPublish sends s's outbox without waiting for the stream's acks
// (purges, which are requests, are waited for).
func (e *Engine) startPublish(ctx context.Context, partition int, s *instance.State) (*publishing, error) {
	p := &publishing{state: s}
	for _, eff := range s.Outbox {
		switch eff.Kind {
		case instance.CancelTimer:
			subj := streams.TimerSubject(partition, s.ID, eff.Wait)
			if err := e.events.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
				return nil, e.publishFailed(s, eff, err)
			}
			continue
		case instance.CancelJob:
			if err := e.cancelJob(ctx, eff.Topic, eff.Wait); err != nil {
				return nil, e.publishFailed(s, eff, err)
			}
			continue
		case instance.PutIncident:
			if eff.Incident.State.Closed() {
				if err := e.expireSnapshots(ctx, s, eff.Incident, p); err != nil {
					return nil, e.publishFailed(s, eff, err)
				}
			}
		}
		msg, err := e.effectMsg(partition, s, eff)
		if err != nil {
			return nil, e.publishFailed(s, eff, err)
		}
		f, err := e.js.PublishMsgAsync(msg)
		if err != nil {
			return nil, e.publishFailed(s, eff, err)
		}
		p.futures = append(p.futures, f)
	}
	return p, nil
}

// awaitPublish waits until JetStream has stored every effect p sent.
func (e *Engine) awaitPublish(ctx context.Context, p *publishing) error {
	timeout := time.After(10 * time.Second)
	for _, f := range p.futures {
		select {
		case ack := <-f.Ok():
			if id := f.Msg().Header.Get(headerJob); id != "" {
				e.jobSeqs.Store(id, ack.Sequence)
			}
		case err := <-f.Err():
			if f.Msg().Header.Get(headerJob) != "" && alreadyQueued(err) {
				continue
			}
			return e.publishFailed(p.state, instance.Effect{ID: f.Msg().Header.Get(jetstream.MsgIDHeader)}, err)
		case <-timeout:
			return e.publishFailed(p.state, instance.Effect{}, errors.New("timed out waiting for JetStream"))
		case <-ctx.Done():
			return e.publishFailed(p.state, instance.Effect{}, ctx.Err())
		}
	}
	return nil
}

func (e *Engine) publishFailed(s *instance.State, eff instance.Effect, err error) error {
	e.newSession()
	return fmt.Errorf("instance %s: publish effect %s: %w", s.ID, eff.ID, err)
}

func (e *Engine) effectMsg(partition int, s *instance.State, eff instance.Effect) (*nats.Msg, error) {
	switch eff.Kind {
	case instance.ScheduleTimer:
		body, err := streams.Marshal(envelope{Instance: s.ID, Event: &instance.Event{
			ID: eff.ID, Kind: instance.TimerFired, Wait: eff.Wait, Firing: eff.Firing,
		}})
		if err != nil {
			return nil, err
		}
		m := nats.NewMsg(streams.TimerSubject(partition, s.ID, eff.Wait))
		m.Data = body
		m.Header.Set("Nats-Schedule", "@at "+eff.Due.UTC().Format(time.RFC3339Nano))
		m.Header.Set("Nats-Schedule-Target", streams.EventSubject(partition, s.ID))
		m.Header.Set(jetstream.MsgIDHeader, eff.ID)
		return m, nil
	case instance.EnqueueJob:
		return e.enqueueMsg(partition, s, eff)
	case instance.StartChildEffect:
		c := eff.Start
		return e.envelopeMsg(c.ID, envelope{Instance: c.ID, Start: &startRequest{
			ProcessID: c.ProcessID, Version: c.Version, Vars: c.Vars, Parent: &c.Parent,
		}}, "start:"+c.ID)
	case instance.NotifyParent:
		return e.envelopeMsg(eff.Parent.Instance, envelope{Instance: eff.Parent.Instance, Event: &instance.Event{
			ID: "child:" + eff.Result.Child + ":done", Kind: instance.ChildDone, Wait: eff.Parent.Wait, Child: eff.Result,
		}}, "child:"+eff.Result.Child+":done")
	case instance.CancelChild:
		return e.envelopeMsg(eff.Child, envelope{Instance: eff.Child, Event: &instance.Event{
			ID: "cancel:" + eff.Child, Kind: instance.Cancel, Reason: "its call activity was cancelled",
		}}, "cancel:"+eff.Child)
	case instance.PutIncident:
		return e.kvPut(streams.IncidentKey(eff.Incident.ID), eff.Incident, eff.Incident.State.Closed())
	case instance.PutSnapshot:
		return e.kvPut(streams.SnapshotKey(eff.Snapshot.Incident, eff.Snapshot.Attempt), eff.Snapshot, !incidentOpen(s, eff.Snapshot.Incident))
	case instance.PublishIncidentFact:
		f := eff.IncidentFact
		body, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		m := nats.NewMsg(streams.FactSubject(streams.FactIncident, f.ProcessID, string(f.Kind)))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, f.FactID)
		return m, nil
	case instance.PublishFact:
		body, err := json.Marshal(eff.Fact)
		if err != nil {
			return nil, err
		}
		m := nats.NewMsg(streams.FactSubject(streams.FactInstance, s.ProcessID, string(eff.Fact.Kind)))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, eff.Fact.ID)
		return m, nil
	}
	return nil, fmt.Errorf("unknown effect kind %q", eff.Kind)
}

// kvPut is a write of v to the incidents bucket; with expire the record
// lives for the incident retention only (closed records and their
// snapshots). Records and snapshots of an open incident never expire.
func (e *Engine) kvPut(key string, v any, expire bool) (*nats.Msg, error) {
	body, err := streams.Marshal(v)
	if err != nil {
		return nil, err
	}
	return e.incidentsMsg(key, body, expire), nil
}

func (e *Engine) incidentsMsg(key string, body []byte, expire bool) *nats.Msg {
	m := nats.NewMsg("$KV." + streams.IncidentsBucket + "." + key)
	m.Data = body
	if expire {
		m.Header.Set("Nats-TTL", e.opts.IncidentRetention.String())
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
func (e *Engine) expireSnapshots(ctx context.Context, s *instance.State, rec *incidents.Record, p *publishing) error {
	for _, attempt := range rec.Snapshots {
		if slices.ContainsFunc(s.Outbox, func(eff instance.Effect) bool {
			return eff.Kind == instance.PutSnapshot && eff.Snapshot.Incident == rec.ID && eff.Snapshot.Attempt == attempt
		}) {
			continue
		}
		key := streams.SnapshotKey(rec.ID, attempt)
		entry, err := e.incidents.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", key, err)
		}
		f, err := e.js.PublishMsgAsync(e.incidentsMsg(key, entry.Value(), true))
		if err != nil {
			return err
		}
		p.futures = append(p.futures, f)
	}
	return nil
}

// envelopeMsg is an event for instance id on its own partition: effects
// that reach another instance (a child, a parent) travel as its events,
// idempotent by msgID and by the receiver's waits.
func (e *Engine) envelopeMsg(id string, env envelope, msgID string) (*nats.Msg, error) {
	body, err := streams.Marshal(env)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(streams.EventSubject(e.partitionOf(id), id))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, msgID)
	return m, nil
}
