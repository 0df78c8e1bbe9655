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

	"github.com/jetbpm/jetbpm/engine/checkpoint"
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
	// handlers carry the effects, one per kind (handle).
	handlers map[instance.EffectKind]effectHandler

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

func newPublisher(js jetstream.JetStream, events, jobs jetstream.Stream, incidents, tasks jetstream.KeyValue, partitions, replicas int, opts *Options, log *slog.Logger) *publisher {
	return &publisher{
		js: js, events: events, jobs: jobs, incidents: incidents, tasks: tasks, partitions: partitions,
		incidentRetention: opts.IncidentRetention, taskRetention: opts.FinishedRetention,
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

// An effectHandler carries one kind of effect of out's outbox to
// JetStream: a publish it adds to out (out.send), which the publisher
// waits for with the rest, or a request it waits for itself (a purge, a
// compare-and-set). Each kind has one handler (handle); the publisher
// knows none by name. Every handler's effect must be safe to carry twice:
// an outbox is published again after a crash or a takeover.
type effectHandler func(ctx context.Context, out *publishing, eff instance.Effect) error

// handle registers fn as the handler of kinds.
func (pub *publisher) handle(fn effectHandler, kinds ...instance.EffectKind) {
	if pub.handlers == nil {
		pub.handlers = map[instance.EffectKind]effectHandler{}
	}
	for _, k := range kinds {
		if _, dup := pub.handlers[k]; dup {
			panic(fmt.Sprintf("engine: effect kind %q has two handlers", k))
		}
		pub.handlers[k] = fn
	}
}

// publishing is an outbox on its way to JetStream: a batch starts every
// instance's publishes before it waits for any, so one instance's round
// trips do not queue behind another's. What handlers deferred (an
// operation run, say) runs once everything sent is stored.
type publishing struct {
	js        jetstream.JetStream
	partition int
	state     *instance.State
	sent      []sent
	after     []func(context.Context) error
}

// sent is a publish in flight; stored, if set, is told its outcome and
// returns the error that stands (nil accepts an expected refusal).
type sent struct {
	future jetstream.PubAckFuture
	stored func(*jetstream.PubAck, error) error
}

// send publishes m without waiting for the stream's ack; await waits.
func (out *publishing) send(m *nats.Msg, stored func(*jetstream.PubAck, error) error) error {
	f, err := out.js.PublishMsgAsync(m)
	if err != nil {
		return err
	}
	out.sent = append(out.sent, sent{future: f, stored: stored})
	return nil
}

// afterStored defers fn until every publish of the outbox is stored.
func (out *publishing) afterStored(fn func(context.Context) error) {
	out.after = append(out.after, fn)
}

// start sends s's outbox through each effect's handler without waiting
// for the stream's acks (handlers' requests are waited for).
func (pub *publisher) start(ctx context.Context, partition int, s *instance.State) (*publishing, error) {
	out := &publishing{js: pub.js, partition: partition, state: s}
	for _, eff := range s.Outbox {
		handler := pub.handlers[eff.Kind]
		if handler == nil {
			return nil, pub.failed(s, eff, fmt.Errorf("unknown effect kind %q", eff.Kind))
		}
		if err := handler(ctx, out, eff); err != nil {
			return nil, pub.failed(s, eff, err)
		}
	}
	return out, nil
}

// await waits until JetStream has stored every effect out sent, then runs
// what the handlers deferred.
func (pub *publisher) await(ctx context.Context, out *publishing) error {
	timeout := time.After(10 * time.Second)
	for _, snt := range out.sent {
		var ack *jetstream.PubAck
		var err error
		select {
		case ack = <-snt.future.Ok():
		case err = <-snt.future.Err():
		case <-timeout:
			return pub.failed(out.state, instance.Effect{}, errors.New("timed out waiting for JetStream"))
		case <-ctx.Done():
			return pub.failed(out.state, instance.Effect{}, ctx.Err())
		}
		if snt.stored != nil {
			err = snt.stored(ack, err)
		}
		if err != nil {
			return pub.failed(out.state, instance.Effect{ID: snt.future.Msg().Header.Get(jetstream.MsgIDHeader)}, err)
		}
	}
	for _, fn := range out.after {
		if err := fn(ctx); err != nil {
			return pub.failed(out.state, instance.Effect{}, err)
		}
	}
	return nil
}

func (pub *publisher) failed(s *instance.State, eff instance.Effect, err error) error {
	pub.newSession()
	return fmt.Errorf("instance %s: publish effect %s: %w", s.ID, eff.ID, err)
}

// sendMsg makes a handler of a function that turns an effect into one
// message to publish.
func sendMsg(msg func(s *instance.State, eff instance.Effect) (*nats.Msg, error)) effectHandler {
	return func(_ context.Context, out *publishing, eff instance.Effect) error {
		m, err := msg(out.state, eff)
		if err != nil {
			return err
		}
		return out.send(m, nil)
	}
}

// handleTimers registers the handlers of timer effects: a schedule is a
// message schedule on the instance's timer subject aimed at its events
// subject; a cancel purges that subject.
func (pub *publisher) handleTimers() {
	pub.handle(func(_ context.Context, out *publishing, eff instance.Effect) error {
		s := out.state
		body, err := streams.Marshal(checkpoint.Envelope{Instance: s.ID, Event: &instance.Event{
			ID: eff.ID, Kind: instance.TimerFired, Wait: eff.Wait, Firing: eff.Firing,
		}})
		if err != nil {
			return err
		}
		m := nats.NewMsg(streams.TimerSubject(out.partition, s.ID, eff.Wait))
		m.Data = body
		m.Header.Set("Nats-Schedule", "@at "+eff.Due.UTC().Format(time.RFC3339Nano))
		m.Header.Set("Nats-Schedule-Target", streams.EventSubject(out.partition, s.ID))
		m.Header.Set(jetstream.MsgIDHeader, eff.ID)
		return out.send(m, nil)
	}, instance.ScheduleTimer)
	pub.handle(func(ctx context.Context, out *publishing, eff instance.Effect) error {
		subj := streams.TimerSubject(out.partition, out.state.ID, eff.Wait)
		return pub.events.Purge(ctx, jetstream.WithPurgeSubject(subj))
	}, instance.CancelTimer)
}

// handleCalls registers the handlers of call activities' effects: a child
// starts, a child reports to its parent, a parent cancels its child. Each
// is an event on the other instance's partition.
func (pub *publisher) handleCalls() {
	pub.handle(sendMsg(func(_ *instance.State, eff instance.Effect) (*nats.Msg, error) {
		c := eff.Start
		return pub.envelopeMsg(c.ID, checkpoint.Envelope{Instance: c.ID, Start: &checkpoint.StartRequest{
			ProcessID: c.ProcessID, Version: c.Version, Vars: c.Vars, Parent: &c.Parent,
		}}, "start:"+c.ID)
	}), instance.StartChildEffect)
	pub.handle(sendMsg(func(_ *instance.State, eff instance.Effect) (*nats.Msg, error) {
		// A child reports its end once, and an escalation as often as it
		// throws one: each report has an id of its own, or the end would be
		// taken for a duplicate of an escalation sent just before it.
		id := "child:" + eff.Result.Child + ":done"
		if eff.Result.Escalation != nil {
			id = eff.ID
		}
		return pub.envelopeMsg(eff.Parent.Instance, checkpoint.Envelope{Instance: eff.Parent.Instance, Event: &instance.Event{
			ID: id, Kind: instance.ChildDone, Wait: eff.Parent.Wait, Child: eff.Result,
		}}, id)
	}), instance.NotifyParent)
	pub.handle(sendMsg(func(_ *instance.State, eff instance.Effect) (*nats.Msg, error) {
		return pub.envelopeMsg(eff.Child, checkpoint.Envelope{Instance: eff.Child, Event: &instance.Event{
			ID: "cancel:" + eff.Child, Kind: instance.Cancel, Reason: "its call activity was cancelled",
		}}, "cancel:"+eff.Child)
	}), instance.CancelChild)
}

// handleFacts registers the handler of instance lifecycle facts.
func (pub *publisher) handleFacts() {
	pub.handle(sendMsg(func(s *instance.State, eff instance.Effect) (*nats.Msg, error) {
		body, err := instance.AppendFact(make([]byte, 0, 256), eff.Fact)
		if err != nil {
			return nil, err
		}
		m := nats.NewMsg(streams.FactSubject(streams.FactInstance, s.ProcessID, string(eff.Fact.Kind)))
		m.Data = body
		m.Header.Set(jetstream.MsgIDHeader, eff.Fact.ID)
		return m, nil
	}), instance.PublishFact)
}

// handleIncidents registers the handlers of incident effects: records
// and snapshots in the incidents bucket, and incident facts.
func (pub *publisher) handleIncidents() {
	pub.handle(func(ctx context.Context, out *publishing, eff instance.Effect) error {
		if eff.Incident.State.Closed() {
			if err := pub.expireSnapshots(ctx, out, eff.Incident); err != nil {
				return err
			}
		}
		m, err := pub.kvPut(streams.IncidentKey(eff.Incident.ID), eff.Incident, eff.Incident.State.Closed())
		if err != nil {
			return err
		}
		return out.send(m, nil)
	}, instance.PutIncident)
	pub.handle(sendMsg(pub.snapshotMsg), instance.PutSnapshot)
	pub.handle(sendMsg(func(_ *instance.State, eff instance.Effect) (*nats.Msg, error) {
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
func (pub *publisher) snapshotMsg(s *instance.State, eff instance.Effect) (*nats.Msg, error) {
	return pub.kvPut(streams.SnapshotKey(eff.Snapshot.Incident, eff.Snapshot.Attempt), eff.Snapshot, !incidentOpen(s, eff.Snapshot.Incident))
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
func (pub *publisher) expireSnapshots(ctx context.Context, out *publishing, rec *incidents.Record) error {
	s := out.state
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
		if err := out.send(pub.incidentsMsg(key, entry.Value(), true), nil); err != nil {
			return err
		}
	}
	return nil
}

// envelopeMsg is an event for instance id on its own partition: effects
// that reach another instance (a child, a parent) travel as its events,
// idempotent by msgID and by the receiver's waits.
func (pub *publisher) envelopeMsg(id string, env checkpoint.Envelope, msgID string) (*nats.Msg, error) {
	body, err := streams.Marshal(env)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(streams.EventSubject(streams.PartitionOf(id, pub.partitions), id))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, msgID)
	return m, nil
}
