package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/internal/lru"
	"github.com/jetbpm/jetbpm/streams"
)

// A Partition applies the events of one partition of the events stream,
// and the workers' reports about its jobs, while this node holds the
// partition's lease (docs/engine.md §6.1). The server pins the
// partition's consumers to one engine node at a time; the checkpoint
// compare-and-set fences the moments when two nodes overlap.
type Partition struct {
	n int
	// events carries the engine's own events; reports the workers'.
	events, reports jetstream.Consumer
	cache           *lru.Cache[cached]
	superseded      superseded // wentback.go
	log             *slog.Logger
	cfg             *Config
	// direct carries starts and recovers to the loop (direct.go);
	// stopped is closed when Run returns.
	direct  chan *direct
	stopped chan struct{}
	// quarantined are the instances whose checkpoint is damaged: not
	// stepped, their events held (quarantine.go). The loop's own.
	quarantined map[string]bool
}

// New returns partition n; Run applies it.
func New(ctx context.Context, cfg *Config, n int) (*Partition, error) {
	events, err := cfg.JS.Consumer(ctx, streams.EventsStream, streams.PartitionConsumer(n))
	if err != nil {
		return nil, fmt.Errorf("partition consumer %s: %w", streams.PartitionConsumer(n), err)
	}
	reports, err := cfg.JS.Consumer(ctx, streams.ReportsStream, streams.ReportsConsumer(n))
	if err != nil {
		return nil, fmt.Errorf("reports consumer %s: %w", streams.ReportsConsumer(n), err)
	}
	return &Partition{
		n: n, events: events, reports: reports, cache: lru.New[cached](cfg.CacheSize), log: cfg.Log.With("partition", n), cfg: cfg,
		direct: make(chan *direct), stopped: make(chan struct{}), quarantined: map[string]bool{},
	}, nil
}

// Run consumes the partition's events and reports until ctx ends, then
// applies what was already received.
func (p *Partition) Run(ctx context.Context) {
	defer close(p.stopped)
	batch := p.cfg.BatchSize
	msgs := make(chan jetstream.Msg, 2*batch)
	for ctx.Err() == nil {
		var running []jetstream.ConsumeContext
		var err error
		for _, cons := range []jetstream.Consumer{p.events, p.reports} {
			var cc jetstream.ConsumeContext
			cc, err = p.consume(cons, msgs, batch)
			if err != nil {
				break
			}
			running = append(running, cc)
		}
		if err == nil {
			err = p.loop(ctx, msgs, batch, running)
		}
		// Connections reconnect forever; a closed one was closed on
		// purpose, and nothing can be consumed on it again.
		closed := err != nil && p.cfg.NC.IsClosed()
		if err != nil && !closed {
			p.log.Warn("partition consume failed; retrying", "err", err)
		}
		for _, cc := range running {
			cc.Stop()
		}
		// Apply what arrived before the stop; later deliveries go unacked
		// and return to whichever node holds the partition next.
		for _, cc := range running {
			p.drain(cc, msgs, batch)
		}
		if closed {
			p.log.Error("NATS connection closed; partition stopped (close the engine before its connection)", "err", err)
			return
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (p *Partition) consume(cons jetstream.Consumer, msgs chan jetstream.Msg, batch int) (jetstream.ConsumeContext, error) {
	return cons.Consume(func(m jetstream.Msg) { msgs <- m },
		jetstream.PullPriorityGroup(streams.PriorityGroup),
		jetstream.PullMaxMessages(batch),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if !errors.Is(err, jetstream.ErrPinIDMismatch) {
				p.log.Debug("partition consume", "err", err)
			}
		}))
}

// drain applies received messages until cc has closed.
func (p *Partition) drain(cc jetstream.ConsumeContext, msgs chan jetstream.Msg, batch int) {
	for {
		select {
		case m := <-msgs:
			p.process(context.Background(), p.collect(m, msgs, batch))
		case <-cc.Closed():
			return
		}
	}
}

// collect takes first plus whatever else is already waiting, up to max.
func (p *Partition) collect(first jetstream.Msg, msgs chan jetstream.Msg, max int) []jetstream.Msg {
	out := []jetstream.Msg{first}
	for len(out) < max {
		select {
		case m := <-msgs:
			out = append(out, m)
		default:
			return out
		}
	}
	return out
}

// cached is a checkpoint as last written by this node.
type cached struct {
	state *instance.State
	rev   uint64
	// data is the checkpoint's value as this node wrote it (nil when it
	// was read): the step changes state in place, data stays what the
	// store acknowledged (wentback.go).
	data []byte
}

// group is the work of one batch for one instance.
type group struct {
	id     string
	msgs   []jetstream.Msg
	start  *checkpoint.StartRequest
	events []instance.Event

	reports []*report
	actions []jobAction

	state *instance.State
	rev   uint64
	write jetstream.PubAckFuture
	err   error
	// data is the value of the checkpoint write (wentback.go).
	data []byte
	// fetched is the stored checkpoint read ahead of the step (prefetch).
	fetched *fetched
	// published is a revision of the checkpoint whose outbox this node has
	// published already: read again, it is not republished.
	published uint64
	// discarded are the events the step skipped (logged once, after it).
	discarded []instance.Event
	// abandoned groups are left unacknowledged (crash tests).
	abandoned bool
	// directs are the starts and recovers handed to the loop in memory
	// (direct.go): answered where messages are acknowledged.
	directs []*direct
	// quarantined: the checkpoint is damaged; the messages wait
	// (quarantine.go).
	quarantined bool
}

// process applies a batch from start to end: every instance's events in
// one step and one checkpoint write, the writes pipelined, then the effects
// published, then the events acknowledged (docs/engine.md §5–6). The loop
// overlaps these stages of consecutive batches (pipeline.go); process is
// the same work with nothing overlapping, for draining.
func (p *Partition) process(ctx context.Context, batch []jetstream.Msg) {
	p.processGroups(ctx, p.groups(batch, nil))
}

// processGroups steps, commits and settles groups, nothing overlapping.
func (p *Partition) processGroups(ctx context.Context, groups []*group) {
	p.stepAll(ctx, groups)
	p.commit(ctx, groups)
	p.settleAll(groups)
}

// stepAll reads the batch's cold checkpoints and steps every group, which
// sends its checkpoint write without waiting for it.
func (p *Partition) stepAll(ctx context.Context, groups []*group) {
	p.prefetch(ctx, groups)
	for _, g := range groups {
		p.step(ctx, g)
	}
}

// commit waits for the batch's checkpoint writes, publishes the effects of
// those that landed and waits for them. It touches neither the cache nor
// the events (settleAll does, on the loop's goroutine), so it can run while
// the loop steps the next batch.
func (p *Partition) commit(ctx context.Context, groups []*group) {
	// The writes went out together: one deadline bounds them all.
	writes, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, g := range groups {
		p.awaitWrite(writes, g)
	}
	sent := make([]*outbox.Outbox, len(groups))
	for i, g := range groups {
		if g.err == nil && g.state != nil && p.crashPoint(g.id) {
			p.abandon(g)
			continue
		}
		if g.err == nil && g.state != nil && len(g.state.Outbox) > 0 {
			sent[i], g.err = p.cfg.Pub.Start(ctx, p.n, g.state)
		}
	}
	for i, g := range groups {
		if sent[i] != nil {
			g.err = p.cfg.Pub.Await(ctx, sent[i])
		}
	}
	p.sync(ctx, groups)
	for _, g := range groups {
		if !g.abandoned && g.err == nil && g.state != nil {
			p.cfg.Metrics.countEffects(g.state.Outbox)
			p.logEffects(g)
		}
	}
}

// sync makes the batch's checkpoints and effects durable before settleAll
// sends verdicts and acknowledges events and jobs: a power cut must not
// keep an acknowledgement whose cause it lost. If it cannot, nothing is
// acknowledged: the events come again.
func (p *Partition) sync(ctx context.Context, groups []*group) {
	// A direct start is answered after a sync even if it wrote nothing: a
	// retried start of an instance whose first sync failed must not be
	// answered before what it found is durable.
	committed := false
	for _, g := range groups {
		committed = committed || !g.abandoned && g.err == nil && (g.state != nil || len(g.actions) > 0 || len(g.directs) > 0)
	}
	if !committed {
		return
	}
	if err := p.cfg.Sync.Sync(ctx); err != nil {
		for _, g := range groups {
			if !g.abandoned && g.err == nil {
				g.err = err
			}
		}
		// The checkpoints are written: a new session makes their next
		// load publish their outboxes again.
		p.cfg.Pub.NewSession()
	}
}

// settleAll acknowledges or returns each group's events and updates the
// cache, once the batch is committed.
func (p *Partition) settleAll(groups []*group) {
	for _, g := range groups {
		if g.abandoned {
			p.cache.Drop(g.id)
			p.settleDirect(g)
			continue
		}
		p.settle(g)
	}
}

// abandon drops a group as a crash would: the checkpoint is written, its
// effects are not published and its events stay unacknowledged, and this
// node forgets what it wrote (a restarted process has a new session).
// The cache entry is dropped when the batch settles.
func (p *Partition) abandon(g *group) {
	g.abandoned = true
	p.cfg.Pub.NewSession()
}

func (p *Partition) groups(batch []jetstream.Msg, directs []*direct) []*group {
	byID := map[string]*group{}
	var out []*group
	get := func(id string) *group {
		g := byID[id]
		if g == nil {
			g = &group{id: id}
			byID[id] = g
			out = append(out, g)
		}
		return g
	}
	for _, m := range batch {
		if rest, ok := strings.CutPrefix(m.Subject(), streams.ReportPrefix(p.n)); ok {
			rep, refusal := parseReport(m, rest)
			if refusal != nil {
				p.log.Warn("refusing malformed worker message", "subject", m.Subject(), "reason", refusal.verdict.Reason)
				p.refuse(m, refusal)
				continue
			}
			g := get(rep.instance)
			g.msgs = append(g.msgs, m)
			g.reports = append(g.reports, rep)
			continue
		}
		var env checkpoint.Envelope
		if err := streams.Unmarshal(m.Data(), &env); err != nil || !checkpoint.ValidID(env.Instance) || (env.Start == nil) == (env.Event == nil) {
			p.log.Warn("dropping malformed event", "subject", m.Subject(), "err", err)
			_ = m.Term()
			continue
		}
		g := get(env.Instance)
		g.msgs = append(g.msgs, m)
		if env.Start != nil && g.start == nil {
			g.start = env.Start
		} else if env.Event != nil {
			g.events = append(g.events, *env.Event)
		}
	}
	for _, d := range directs {
		g := get(d.id)
		g.directs = append(g.directs, d)
		if g.start == nil {
			g.start = d.start
		}
	}
	return out
}

// step loads the instance, applies its events and sends the checkpoint
// write. g.state is nil when nothing needs writing.
//
// A cached checkpoint is stale if another node wrote the instance while
// this one did not hold the partition. A step that writes finds out (the
// write's expected revision fails); a step that changes nothing would not,
// and would acknowledge events and refuse reports that the stored
// checkpoint still waits for. So such a step runs again on the stored
// checkpoint.
func (p *Partition) step(ctx context.Context, g *group) {
	c, cached := p.cache.Get(g.id)
	events, actions := g.events, g.actions
	p.stepOnce(ctx, g)
	if cached && g.err == nil && g.state == nil && (len(events) > 0 || len(g.reports) > 0) {
		p.cache.Drop(g.id)
		g.events, g.actions, g.published = events, actions, c.rev
		p.stepOnce(ctx, g)
	}
	p.logDiscarded(g)
}

func (p *Partition) stepOnce(ctx context.Context, g *group) {
	s, rev, err := p.load(ctx, g)
	if err != nil {
		g.err = err
		if damaged(err) {
			g.quarantined = true
			p.quarantine(ctx, g.id, err)
		}
		return
	}
	log := p.log.With("instance", g.id)
	jobEvents, changed := p.decideReports(ctx, g, s)
	g.events = append(g.events, jobEvents...)
	switch {
	case s == nil && g.start == nil:
		if len(g.events) > len(jobEvents) {
			log.Debug("events for an unknown instance dropped", "events", len(g.events))
		}
		g.err = p.orphaned(ctx, g)
		return
	case s == nil:
		if s, err = p.create(ctx, g.id, g.start); err != nil {
			log.Error("instance start failed", "process", g.start.ProcessID, "err", err)
			g.err = p.startFailed(ctx, g, err)
			return
		}
		changed = true
		log.Debug("instance started", "process", s.ProcessID, "version", s.Version)
	case s.Status.Finished() && !instance.StepsWhenFinished(g.events):
		g.err = p.orphaned(ctx, g)
		return
	}
	// A finished instance takes correlate events too: it rejects them, so
	// the message goes to another subscription (docs/messages.md §4).
	var stepErr error
	if len(g.events) > 0 && (!s.Status.Finished() || instance.StepsWhenFinished(g.events)) {
		var applied int
		applied, stepErr = p.apply(ctx, g, s)
		changed = changed || applied > 0
	}
	if unreadableDefinition(stepErr) {
		// Not the instance's fault: it is held, not failed.
		g.err, g.quarantined = stepErr, true
		p.quarantine(ctx, g.id, stepErr)
		return
	}
	if de := (*definitionError)(nil); errors.As(stepErr, &de) {
		g.err = stepErr // a read that failed: tried again, the instance not failed for it
		return
	}
	p.release(ctx, g.id)
	created := rev == 0
	if stepErr != nil {
		log.Error("step failed; failing the instance", "err", stepErr)
		p.cache.Drop(g.id)
		if created {
			// Failed as it starts: from its start, not half a step.
			s, err = p.create(ctx, g.id, g.start)
		} else {
			s, rev, err = p.load(ctx, g)
		}
		if err != nil || s == nil {
			g.err = err
			return
		}
		instance.Abort(s, p.cfg.Now(), "engine: "+stepErr.Error())
		changed = true
	}
	if !changed {
		return
	}
	p.cfg.keepHistory(s)
	s.OutboxBy = p.cfg.Pub.Session()
	msg, err := p.cfg.Store.Encode(s, rev)
	if err == nil && len(msg.Data) > p.cfg.MaxCheckpointBytes {
		s, rev, err = p.oversized(ctx, s, rev, len(msg.Data))
		if err == nil {
			msg, err = p.cfg.Store.Encode(s, rev)
		}
	}
	if err != nil {
		g.err = err
		return
	}
	g.state, g.rev, g.data = s, rev, msg.Data
	if rev == 0 && len(g.directs) > 0 {
		msg.Header.Set(checkpoint.HeaderDirect, s.OutboxBy)
	}
	if g.write, err = p.cfg.JS.PublishMsgAsync(msg); err != nil {
		g.err = err
	}
}

// load returns the instance's checkpoint (nil if it does not exist). A
// checkpoint read from the store whose outbox another session wrote may
// hold unpublished effects: they are published again before anything else.
func (p *Partition) load(ctx context.Context, g *group) (*instance.State, uint64, error) {
	id := g.id
	if c, ok := p.cache.Get(id); ok {
		return c.state, c.rev, nil
	}
	var s *instance.State
	var rev uint64
	var err error
	if f := g.fetched; f != nil {
		g.fetched = nil // a second step reads the store again
		s, rev, err = f.state, f.rev, f.err
	} else {
		s, rev, err = p.cfg.Store.Get(ctx, id)
	}
	if errors.Is(err, errdefs.ErrNotFound) {
		s, rev, err = nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if s, rev, err = p.wentBack(ctx, id, s, rev); err != nil || s == nil {
		return s, rev, err
	}
	if len(s.Outbox) > 0 && s.OutboxBy != p.cfg.Pub.Session() && rev != g.published {
		if err := p.cfg.Pub.Publish(ctx, p.n, s); err != nil {
			return nil, 0, err
		}
		p.log.Info("republished outbox after takeover", "instance", id, "effects", len(s.Outbox))
		s.Outbox = nil
		// Cached, the checkpoint is not read and republished again by the
		// next event, which would run its operations once more.
		p.cache.Put(id, cached{state: s, rev: rev})
		return s, rev, nil
	}
	s.Outbox = nil
	return s, rev, nil
}

// awaitWrite waits for g's checkpoint write until ctx ends: its deadline
// is the batch's bound on its writes.
func (p *Partition) awaitWrite(ctx context.Context, g *group) {
	if g.write == nil || g.err != nil {
		return
	}
	select {
	case ack := <-g.write.Ok():
		g.rev = ack.Sequence
		if p.cfg.Wrote != nil {
			p.cfg.Wrote(g.id, g.rev)
		}
	case err := <-g.write.Err():
		g.err = err
		if streams.IsConflict(err) {
			msg := "checkpoint write lost a race; events will be re-applied"
			if g.rev == 0 {
				msg = "instance exists already; its start is checked again"
			}
			p.log.Info(msg, "instance", g.id)
			return
		}
	case <-ctx.Done():
		g.err = ctx.Err()
		if errors.Is(g.err, context.DeadlineExceeded) {
			g.err = errors.New("checkpoint write timed out")
		}
	}
	if g.err != nil {
		// The write may have landed even so (a timeout, a dropped
		// connection): a new session makes the next load of this
		// checkpoint publish its outbox, which this node never sent.
		p.cfg.Pub.NewSession()
	}
}

// settle acknowledges a group's events once its checkpoint and effects are
// out, or returns them for redelivery.
func (p *Partition) settle(g *group) {
	defer p.settleDirect(g)
	if g.err != nil && g.quarantined {
		p.hold(g)
		return
	}
	if g.err != nil {
		if c, ok := p.cache.Get(g.id); ok && c.data != nil && streams.IsConflict(g.err) {
			p.superseded.keep(g.id, c)
		}
		p.cache.Drop(g.id)
		if len(g.msgs) > 0 {
			p.log.Warn("instance step not committed; events will be redelivered", "instance", g.id, "err", g.err)
		} else if !streams.IsConflict(g.err) {
			p.log.Warn("direct start not committed; the caller is told", "instance", g.id, "err", g.err)
		}
		for _, m := range g.msgs {
			_ = m.NakWithDelay(250 * time.Millisecond)
		}
		return
	}
	if g.state != nil {
		g.state.Outbox = nil
		if g.state.Status.Finished() {
			p.cache.Drop(g.id)
		} else {
			p.cache.Put(g.id, cached{state: g.state, rev: g.rev, data: g.data})
		}
	}
	p.sendJobActions(g)
	for _, m := range g.msgs {
		_ = m.Ack()
	}
}

// refuse answers a malformed worker message and drops it.
func (p *Partition) refuse(m jetstream.Msg, a *jobAction) {
	if a != nil && a.replyTo != "" {
		p.sendJobActions(&group{actions: []jobAction{*a}})
	}
	_ = m.Term()
}

// logEffects writes a record per queued job and per lifecycle fact.
func (p *Partition) logEffects(g *group) {
	for _, eff := range g.state.Outbox {
		switch eff.Kind {
		case instance.EnqueueJob:
			p.log.Debug("job enqueued", "instance", g.id, "job", eff.Job.ID, "topic", eff.Job.Topic, "node", eff.Job.Node)
		case instance.PublishIncidentFact:
			// Each incident is logged once, at Error, when raised:
			// here, by the node that committed the raise, never on republish.
			f := eff.IncidentFact
			if f.Kind == incidents.Raised {
				p.log.Error("incident raised", "incident", f.Incident, "instance", g.id, "process", f.ProcessID,
					"node", f.Node, "cause_class", f.CauseClass, "cause", f.Detail)
			} else {
				p.log.Info("incident "+string(f.Kind), "incident", f.Incident, "instance", g.id, "node", f.Node, "detail", f.Detail)
			}
		case instance.PublishFact:
			level := slog.LevelDebug
			if eff.Fact.Kind == instance.FactFailed {
				level = slog.LevelWarn
			}
			p.log.Log(context.Background(), level, "instance "+string(eff.Fact.Kind), "instance", g.id, "process", eff.Fact.ProcessID, "error", eff.Fact.Error)
		}
	}
}
