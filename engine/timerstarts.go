package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
)

// Timer start events (docs/timerstart.md) run on JetStream message
// schedules: one @at schedule per process, on streams.TimerStartSchedule,
// for the next fire of its latest version's timer start event. A fire
// lands on streams.TimerStartFireSubject; the shared consumer
// streams.TimerStartsConsumer takes it on any engine node, which starts
// the fire's instance (its id derives from process, version and due time,
// so a redelivered fire starts nothing twice) and schedules the next.

// timerFire is the body of a timer start schedule, and so of its fire.
type timerFire struct {
	Process string    `msgpack:"process"`
	Version int       `msgpack:"version"`
	Node    string    `msgpack:"node"`
	Firing  int       `msgpack:"firing"` // 0 = the first
	Due     time.Time `msgpack:"due"`
	Armed   time.Time `msgpack:"armed"` // the deploy: a cycle without a start counts from it
	// Taken is set in the record of a fire a handler took
	// (streams.TimerStartRecord); the record a deploy writes of the first
	// fire it arms has it unset.
	Taken bool `msgpack:"taken,omitempty"`
}

// timerStartID is the id of the instance fire f starts: the same however
// often the fire is delivered, and on every engine node.
func timerStartID(f timerFire) string {
	sum := sha256.Sum256([]byte(f.Process + "\x00" + strconv.Itoa(f.Version) + "\x00" + f.Due.UTC().Format(time.RFC3339Nano)))
	return "t" + hex.EncodeToString(sum[:16])
}

// scheduleTimerStarts sets, for each process a deploy moved to a new
// version, the schedule of its timer start event's first fire, replacing
// the previous version's; a version without a timer start cancels it.
func (e *Engine) scheduleTimerStarts(ctx context.Context, procs []*model.Process, deps []Deployment) error {
	now := e.opts.Now()
	for i, dep := range deps {
		if !dep.New {
			continue
		}
		p := procs[i]
		starts := p.TimerStarts()
		if len(starts) == 0 {
			stream, err := e.js.Stream(ctx, streams.TimerStartsStream)
			if err == nil {
				err = stream.Purge(ctx, jetstream.WithPurgeSubject(streams.TimerStartSchedule(p.ID)))
			}
			if err != nil {
				return fmt.Errorf("process %s v%d: cancel the previous version's timer start: %w", p.ID, dep.Version, err)
			}
			continue
		}
		n := starts[0]
		firing, due, ok := n.Timer.NextFire(now, time.Time{}, now, 0)
		if !ok {
			continue
		}
		f := timerFire{Process: p.ID, Version: dep.Version, Node: n.ID, Firing: firing, Due: due, Armed: now}
		if e.opts.dieBeforeTimerSchedule {
			return errors.New("test: the deploy died before it armed the timer start")
		}
		if err := e.publishTimerRecord(ctx, f); err != nil {
			return fmt.Errorf("process %s v%d: record timer start %q: %w", p.ID, dep.Version, n.ID, err)
		}
		if err := e.publishTimerStart(ctx, f, nil); err != nil {
			return fmt.Errorf("process %s v%d: schedule timer start %q: %w", p.ID, dep.Version, n.ID, err)
		}
		deps[i].TimerStart = &TimerStart{Node: n.ID, Type: n.Timer.Type, Timer: n.Timer.Value, Next: due}
	}
	return nil
}

// publishTimerStart writes the schedule of fire f. With ifLast the server
// takes it only if the last message on the process's schedule subject has
// that sequence (0: the subject holds nothing): a fire's handler never
// overwrites the schedule a deploy wrote meanwhile (nor the one an earlier
// delivery of the same fire wrote).
func (e *Engine) publishTimerStart(ctx context.Context, f timerFire, ifLast *uint64) error {
	body, err := streams.Marshal(f)
	if err != nil {
		return err
	}
	m := nats.NewMsg(streams.TimerStartSchedule(f.Process))
	m.Data = body
	m.Header.Set("Nats-Schedule", "@at "+f.Due.UTC().Format(time.RFC3339Nano))
	m.Header.Set("Nats-Schedule-Target", streams.TimerStartFireSubject(f.Process))
	if ifLast != nil {
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(*ifLast, 10))
	}
	_, err = e.js.PublishMsg(ctx, m)
	return err
}

// publishTimerRecord writes f as the record of its process's timer start,
// replacing the previous record.
func (e *Engine) publishTimerRecord(ctx context.Context, f timerFire) error {
	body, err := streams.Marshal(f)
	if err != nil {
		return err
	}
	m := nats.NewMsg(streams.TimerStartRecord(f.Process))
	m.Data = body
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	_, err = e.js.PublishMsg(ctx, m)
	return err
}

// runTimerStarts takes timer start fires until ctx ends.
func (e *Engine) runTimerStarts(ctx context.Context) {
	cons, err := e.js.Consumer(ctx, streams.TimerStartsStream, streams.TimerStartsConsumer)
	if err != nil {
		close(e.timerStartsReconciled)
		if ctx.Err() != nil {
			return // closed while starting
		}
		e.log.Error("timer starts: no consumer; timer start events do not fire", "err", err)
		return
	}
	if err := e.reconcileTimerStarts(ctx); err != nil && ctx.Err() == nil {
		e.log.Error("timer starts: start-up reconciliation failed; a lost schedule stays lost until the next start or deploy", "err", err)
	}
	close(e.timerStartsReconciled)
	for ctx.Err() == nil {
		batch, err := cons.Fetch(16, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				e.log.Debug("timer starts: fetch", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		for m := range batch.Messages() {
			e.applyTimerFire(ctx, m)
		}
	}
}

// applyTimerFire handles one fire: it starts the fire's instance and
// schedules the next fire, unless a redeploy replaced the fire's version.
// A malformed fire is logged and removed; a failure redelivers it.
func (e *Engine) applyTimerFire(ctx context.Context, m jetstream.Msg) {
	var f timerFire
	if err := streams.Unmarshal(m.Data(), &f); err != nil || f.Process == "" || f.Node == "" {
		e.log.Warn("timer starts: refusing a malformed fire", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	}
	err := e.timerFire(ctx, f)
	if errors.Is(err, errDied) {
		return // as if the process died: neither acknowledged nor refused
	}
	if err != nil {
		e.log.Warn("timer starts: fire failed; it will be redelivered", "process", f.Process, "version", f.Version, "due", f.Due, "err", err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	_ = m.DoubleAck(ctx)
}

func (e *Engine) timerFire(ctx context.Context, f timerFire) error {
	latest, _, err := e.defs.Latest(ctx, f.Process)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if latest.Version != f.Version {
		e.log.Debug("timer starts: dropping a fire of a replaced version", "process", f.Process, "version", f.Version, "latest", latest.Version)
		return nil
	}
	p, err := e.defs.Get(ctx, f.Process, f.Version)
	if err != nil {
		return err
	}
	n := p.Node(f.Node)
	if n == nil || n.Kind != model.StartEvent || n.Event != model.TimerEvent || n.Timer == nil || n.Scope != "" {
		e.log.Warn("timer starts: dropping a fire of a node that is no timer start event", "process", f.Process, "version", f.Version, "node", f.Node)
		return nil
	}
	id := timerStartID(f)
	start, err := checkpoint.EventMsg(checkpoint.Envelope{Instance: id, Start: &checkpoint.StartRequest{
		ProcessID: f.Process, Version: f.Version, Node: f.Node,
	}}, "start:"+id, e.layout.Partitions)
	if err != nil {
		return err
	}
	if _, err := e.js.PublishMsg(ctx, start); err != nil {
		return fmt.Errorf("start %s: %w", id, err)
	}
	if e.opts.dieAfterTimerStart != nil && e.opts.dieAfterTimerStart(id) {
		return errDied
	}
	taken := f
	taken.Taken = true
	if err := e.publishTimerRecord(ctx, taken); err != nil {
		return fmt.Errorf("record the fire: %w", err)
	}
	firing, due, ok := n.Timer.NextFire(f.Armed, f.Due, e.opts.Now(), f.Firing+1)
	if !ok {
		return nil
	}
	next := timerFire{Process: f.Process, Version: f.Version, Node: f.Node, Firing: firing, Due: due, Armed: f.Armed}
	var empty uint64
	err = e.publishTimerStart(ctx, next, &empty)
	if checkpoint.IsConflict(err) {
		return nil // a deploy, or an earlier delivery of this fire, scheduled it
	}
	if err != nil {
		return fmt.Errorf("schedule the next fire: %w", err)
	}
	return nil
}
