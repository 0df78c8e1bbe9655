package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// publisher carries a node's effects to JetStream: every partition of the
// node publishes its checkpoints' outboxes through it. It owns the node's
// session, which says whether an outbox this node wrote is known to be
// published (docs/engine.md §5), and the stream sequences of the jobs it
// queued.
type publisher struct {
	js     jetstream.JetStream
	events jetstream.Stream
	jobs   jetstream.Stream
	// incidents holds incident records and snapshots; a closing incident's
	// snapshots are read back to be written again with a TTL.
	incidents jetstream.KeyValue
	// tasks holds user task records; a put reads the stored record's
	// revision first (putTask).
	tasks      jetstream.KeyValue
	partitions int
	// incidentRetention is how long closed incident records and snapshots
	// live; taskRetention, finished task records (the finished-instance
	// retention).
	incidentRetention time.Duration
	taskRetention     time.Duration
	// runner runs the in-process operations RunOperation effects ask for.
	runner *operationRunner

	mu      sync.Mutex
	current string // changes whenever this node may have lost outbox effects

	// jobSeqs remembers the stream sequence of each job this node queued,
	// to check deliveries without a read.
	jobSeqs sync.Map
	// topics holds the topics whose consumer this node has seen or made
	// (ensureTopic); replicas is their replica count.
	topics   sync.Map
	replicas int
	log      *slog.Logger
}

func newPublisher(js jetstream.JetStream, events, jobs jetstream.Stream, incidents, tasks jetstream.KeyValue, partitions, replicas int, opts *Options, runner *operationRunner, log *slog.Logger) *publisher {
	return &publisher{
		js: js, events: events, jobs: jobs, incidents: incidents, tasks: tasks, partitions: partitions,
		incidentRetention: opts.IncidentRetention, taskRetention: opts.FinishedRetention, runner: runner,
		current: nuid.Next(), replicas: replicas, log: log,
	}
}

// ensureTopic makes sure the consumer of a job's topic exists before the
// job is queued, once per topic and node: a topic a topic expression gives
// has none until its first job (deploy made the others').
func (pub *publisher) ensureTopic(ctx context.Context, job *jobs.Job) error {
	if _, ok := pub.topics.Load(job.Topic); ok {
		return nil
	}
	lock := time.Duration(job.LockDurationMs) * time.Millisecond
	if err := streams.CreateTopic(ctx, pub.js, job.Topic, lock, pub.replicas, pub.log); err != nil {
		return fmt.Errorf("topic %q: %w", job.Topic, err)
	}
	pub.topics.Store(job.Topic, true)
	return nil
}

// session names this node's current session: a checkpoint whose outbox
// another session wrote may hold effects that were never published.
func (pub *publisher) session() string {
	pub.mu.Lock()
	defer pub.mu.Unlock()
	return pub.current
}

// newSession is called after a failure to publish effects: from now on this
// node treats outboxes it wrote before as possibly unpublished.
func (pub *publisher) newSession() {
	pub.mu.Lock()
	pub.current = nuid.Next()
	pub.mu.Unlock()
}

// publish sends every effect of s's outbox and waits until JetStream has
// stored each. Every effect is safe to publish twice (see instance.Effect),
// so after a crash the outbox is simply published again.
func (pub *publisher) publish(ctx context.Context, partition int, s *instance.State) error {
	p, err := pub.start(ctx, partition, s)
	if err != nil {
		return err
	}
	return pub.await(ctx, p)
}

// publishing is an outbox on its way to JetStream: a batch starts every
// instance's publishes before it waits for any, so one instance's round
// trips do not queue behind another's. Its operation runs are handed over
// once everything else is stored.
type publishing struct {
	state   *instance.State
	futures []jetstream.PubAckFuture
	runs    []instance.Effect
}

// start sends s's outbox without waiting for the stream's acks (purges,
// which are requests, are waited for).
func (pub *publisher) start(ctx context.Context, partition int, s *instance.State) (*publishing, error) {
	p := &publishing{state: s}
	for _, eff := range s.Outbox {
		switch eff.Kind {
		case instance.CancelTimer:
			subj := streams.TimerSubject(partition, s.ID, eff.Wait)
			if err := pub.events.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
				return nil, pub.failed(s, eff, err)
			}
			continue
		case instance.CancelJob:
			if err := pub.cancelJob(ctx, eff.Topic, eff.Wait); err != nil {
				return nil, pub.failed(s, eff, err)
			}
			continue
		case instance.PutIncident:
			if eff.Incident.State.Closed() {
				if err := pub.expireSnapshots(ctx, s, eff.Incident, p); err != nil {
					return nil, pub.failed(s, eff, err)
				}
			}
		case instance.PutTask:
			// A compare-and-set on the stored record (taskoutbox.go), so
			// a request: waited for here, as purges are.
			if err := pub.putTask(ctx, eff.Task); err != nil {
				return nil, pub.failed(s, eff, err)
			}
			continue
		case instance.EnqueueJob:
			if err := pub.ensureTopic(ctx, eff.Job); err != nil {
				return nil, pub.failed(s, eff, err)
			}
		case instance.RunOperation:
			p.runs = append(p.runs, eff)
			continue
		case instance.CancelOperation:
			pub.runner.cancel(eff.Wait)
			continue
		}
		msg, err := pub.effectMsg(partition, s, eff)
		if err != nil {
			return nil, pub.failed(s, eff, err)
		}
		f, err := pub.js.PublishMsgAsync(msg)
		if err != nil {
			return nil, pub.failed(s, eff, err)
		}
		p.futures = append(p.futures, f)
	}
	return p, nil
}

// await waits until JetStream has stored every effect p sent, then hands
// p's operation runs to the runner.
func (pub *publisher) await(ctx context.Context, p *publishing) error {
	timeout := time.After(10 * time.Second)
	for _, f := range p.futures {
		select {
		case ack := <-f.Ok():
			if id := f.Msg().Header.Get(headerJob); id != "" {
				pub.jobSeqs.Store(id, ack.Sequence)
			}
		case err := <-f.Err():
			if f.Msg().Header.Get(headerJob) != "" && alreadyQueued(err) {
				continue
			}
			return pub.failed(p.state, instance.Effect{ID: f.Msg().Header.Get(jetstream.MsgIDHeader)}, err)
		case <-timeout:
			return pub.failed(p.state, instance.Effect{}, errors.New("timed out waiting for JetStream"))
		case <-ctx.Done():
			return pub.failed(p.state, instance.Effect{}, ctx.Err())
		}
	}
	for _, eff := range p.runs {
		if err := pub.runner.submit(ctx, eff); err != nil {
			return pub.failed(p.state, eff, err)
		}
	}
	return nil
}

func (pub *publisher) failed(s *instance.State, eff instance.Effect, err error) error {
	pub.newSession()
	return fmt.Errorf("instance %s: publish effect %s: %w", s.ID, eff.ID, err)
}

func (pub *publisher) effectMsg(partition int, s *instance.State, eff instance.Effect) (*nats.Msg, error) {
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
		return pub.enqueueMsg(partition, s, eff)
	case instance.StartChildEffect:
		c := eff.Start
		return pub.envelopeMsg(c.ID, envelope{Instance: c.ID, Start: &startRequest{
			ProcessID: c.ProcessID, Version: c.Version, Vars: c.Vars, Parent: &c.Parent,
		}}, "start:"+c.ID)
	case instance.NotifyParent:
		// A child reports its end once, and an escalation as often as it
		// throws one: each report has an id of its own, or the end would be
		// taken for a duplicate of an escalation sent just before it.
		id := "child:" + eff.Result.Child + ":done"
		if eff.Result.Escalation != nil {
			id = eff.ID
		}
		return pub.envelopeMsg(eff.Parent.Instance, envelope{Instance: eff.Parent.Instance, Event: &instance.Event{
			ID: id, Kind: instance.ChildDone, Wait: eff.Parent.Wait, Child: eff.Result,
		}}, id)
	case instance.CancelChild:
		return pub.envelopeMsg(eff.Child, envelope{Instance: eff.Child, Event: &instance.Event{
			ID: "cancel:" + eff.Child, Kind: instance.Cancel, Reason: "its call activity was cancelled",
		}}, "cancel:"+eff.Child)
	case instance.PutIncident:
		return pub.kvPut(streams.IncidentKey(eff.Incident.ID), eff.Incident, eff.Incident.State.Closed())
	case instance.PutSnapshot:
		return pub.kvPut(streams.SnapshotKey(eff.Snapshot.Incident, eff.Snapshot.Attempt), eff.Snapshot, !incidentOpen(s, eff.Snapshot.Incident))
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
		body, err := instance.AppendFact(make([]byte, 0, 256), eff.Fact)
		if err != nil {
			return nil, err
		}
		m := nats.NewMsg(streams.FactSubject(streams.FactInstance, s.ProcessID, string(eff.Fact.Kind)))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, eff.Fact.ID)
		return m, nil
	case instance.Subscribe, instance.Unsubscribe, instance.RejectMessage, instance.StartEnded, instance.PublishMessage:
		return messageEffectMsg(s, eff)
	case instance.PublishTaskFact:
		return taskFactMsg(eff.TaskFact)
	case instance.SignalSubscribe, instance.SignalUnsubscribe, instance.BroadcastSignal:
		return signalEffectMsg(s, eff)
	}
	return nil, fmt.Errorf("unknown effect kind %q", eff.Kind)
}

// kvPut is a write of v to the incidents bucket; with expire the record
// lives for the incident retention only (closed records and their
// snapshots). Records and snapshots of an open incident never expire.
func (pub *publisher) kvPut(key string, v any, expire bool) (*nats.Msg, error) {
	body, err := streams.Marshal(v)
	if err != nil {
		return nil, err
	}
	return pub.incidentsMsg(key, body, expire), nil
}

func (pub *publisher) incidentsMsg(key string, body []byte, expire bool) *nats.Msg {
	m := nats.NewMsg("$KV." + streams.IncidentsBucket + "." + key)
	m.Data = body
	if expire {
		m.Header.Set("Nats-TTL", pub.incidentRetention.String())
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
func (pub *publisher) expireSnapshots(ctx context.Context, s *instance.State, rec *incidents.Record, p *publishing) error {
	for _, attempt := range rec.Snapshots {
		if slices.ContainsFunc(s.Outbox, func(eff instance.Effect) bool {
			return eff.Kind == instance.PutSnapshot && eff.Snapshot.Incident == rec.ID && eff.Snapshot.Attempt == attempt
		}) {
			continue
		}
		key := streams.SnapshotKey(rec.ID, attempt)
		entry, err := pub.incidents.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", key, err)
		}
		f, err := pub.js.PublishMsgAsync(pub.incidentsMsg(key, entry.Value(), true))
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
func (pub *publisher) envelopeMsg(id string, env envelope, msgID string) (*nats.Msg, error) {
	body, err := streams.Marshal(env)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(streams.EventSubject(streams.PartitionOf(id, pub.partitions), id))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, msgID)
	return m, nil
}
