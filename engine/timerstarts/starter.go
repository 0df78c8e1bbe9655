package timerstarts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
)

// fire is the body of a timer start schedule, and so of its fire.
type fire struct {
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

// InstanceID is the id of the instance the fire of process's version due
// at due starts: the same however often the fire is delivered, and on
// every engine node.
func InstanceID(process string, version int, due time.Time) string {
	return fire{Process: process, Version: version, Due: due}.instanceID()
}

func (f fire) instanceID() string {
	sum := sha256.Sum256([]byte(f.Process + "\x00" + strconv.Itoa(f.Version) + "\x00" + f.Due.UTC().Format(time.RFC3339Nano)))
	return "t" + hex.EncodeToString(sum[:16])
}

// Config is what a Starter runs with.
type Config struct {
	JS jetstream.JetStream
	// Sync makes the writes so far durable before an acknowledgement
	// that depends on them (nil: the server's policy decides).
	Sync streams.Syncer
	Defs *deploy.Definitions
	// Partitions is the number of instance partitions, to address a start.
	Partitions int
	// Now is the engine's clock; a schedule's times are on it.
	Now func() time.Time
	Log *slog.Logger

	// DieBeforeSchedule and DieAfterStart, for tests only, make a deploy
	// or a fire's handler stop as if the process died at that point.
	DieBeforeSchedule bool
	DieAfterStart     func(instanceID string) bool
}

// A Starter arms the timer start events of deployed processes (Schedule)
// and takes their fires on any engine node (Run).
type Starter struct {
	cfg        Config
	reconciled chan struct{}
}

// New returns a starter; Run takes the fires.
func New(cfg Config) *Starter { return &Starter{cfg: cfg, reconciled: make(chan struct{})} }

// Reconciled is closed once Run's start-up reconciliation is done (or
// cannot run).
func (t *Starter) Reconciled() <-chan struct{} { return t.reconciled }

// Schedule sets, for each process a deploy moved to a new
// version, the schedule of its timer start event's first fire, replacing
// the previous version's; a version without a timer start cancels it.
func (t *Starter) Schedule(ctx context.Context, procs []*model.Process, deps []deploy.Deployment) error {
	now := t.cfg.Now()
	for i, dep := range deps {
		if !dep.New {
			continue
		}
		p := procs[i]
		starts := p.TimerStarts()
		if len(starts) == 0 {
			stream, err := t.cfg.JS.Stream(ctx, streams.TimerStartsStream)
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
		f := fire{Process: p.ID, Version: dep.Version, Node: n.ID, Firing: firing, Due: due, Armed: now}
		if t.cfg.DieBeforeSchedule {
			return errors.New("test: the deploy died before it armed the timer start")
		}
		if err := t.publishTimerRecord(ctx, f); err != nil {
			return fmt.Errorf("process %s v%d: record timer start %q: %w", p.ID, dep.Version, n.ID, err)
		}
		if err := t.publishTimerStart(ctx, f, nil); err != nil {
			return fmt.Errorf("process %s v%d: schedule timer start %q: %w", p.ID, dep.Version, n.ID, err)
		}
		deps[i].TimerStart = &deploy.TimerStart{Node: n.ID, Type: n.Timer.Type, Timer: n.Timer.Value, Next: due}
	}
	return nil
}

// publishTimerStart writes the schedule of fire f. With ifLast the server
// takes it only if the last message on the process's schedule subject has
// that sequence (0: the subject holds nothing): a fire's handler never
// overwrites the schedule a deploy wrote meanwhile (nor the one an earlier
// delivery of the same fire wrote).
func (t *Starter) publishTimerStart(ctx context.Context, f fire, ifLast *uint64) error {
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
	_, err = t.cfg.JS.PublishMsg(ctx, m)
	return err
}

// publishTimerRecord writes f as the record of its process's timer start,
// replacing the previous record.
func (t *Starter) publishTimerRecord(ctx context.Context, f fire) error {
	body, err := streams.Marshal(f)
	if err != nil {
		return err
	}
	m := nats.NewMsg(streams.TimerStartRecord(f.Process))
	m.Data = body
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	_, err = t.cfg.JS.PublishMsg(ctx, m)
	return err
}

// Run takes timer start fires until ctx ends, after reconciling the
// schedules (Reconciled).
func (t *Starter) Run(ctx context.Context) {
	cons, err := t.cfg.JS.Consumer(ctx, streams.TimerStartsStream, streams.TimerStartsConsumer)
	if err != nil {
		close(t.reconciled)
		if ctx.Err() != nil {
			return // closed while starting
		}
		t.cfg.Log.Error("timer starts: no consumer; timer start events do not fire", "err", err)
		return
	}
	if err := t.reconcile(ctx); err != nil && ctx.Err() == nil {
		t.cfg.Log.Error("timer starts: start-up reconciliation failed; a lost schedule stays lost until the next start or deploy", "err", err)
	}
	close(t.reconciled)
	streams.Pull(ctx, cons, 16, t.cfg.Log, "timer starts", func(m jetstream.Msg) { t.applyFire(ctx, m) })
}

// applyFire handles one fire: it starts the fire's instance and
// schedules the next fire, unless a redeploy replaced the fire's version.
// A malformed fire is logged and removed; a failure redelivers it.
func (t *Starter) applyFire(ctx context.Context, m jetstream.Msg) {
	var f fire
	if err := streams.Unmarshal(m.Data(), &f); err != nil || f.Process == "" || f.Node == "" {
		t.cfg.Log.Warn("timer starts: refusing a malformed fire", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	}
	err := t.fire(ctx, f)
	if errors.Is(err, errDied) {
		return // as if the process died: neither acknowledged nor refused
	}
	if err == nil {
		// The start and the next schedule are durable before the fire is gone.
		err = t.cfg.Sync.Sync(ctx)
	}
	if err != nil {
		t.cfg.Log.Warn("timer starts: fire failed; it will be redelivered", "process", f.Process, "version", f.Version, "due", f.Due, "err", err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	_ = m.DoubleAck(ctx)
}

func (t *Starter) fire(ctx context.Context, f fire) error {
	latest, _, err := t.cfg.Defs.Latest(ctx, f.Process)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if latest.Version != f.Version {
		t.cfg.Log.Debug("timer starts: dropping a fire of a replaced version", "process", f.Process, "version", f.Version, "latest", latest.Version)
		return nil
	}
	p, err := t.cfg.Defs.Get(ctx, f.Process, f.Version)
	if err != nil {
		return err
	}
	n := p.Node(f.Node)
	if n == nil || n.Kind != model.StartEvent || n.Event != model.TimerEvent || n.Timer == nil || n.Scope != "" {
		t.cfg.Log.Warn("timer starts: dropping a fire of a node that is no timer start event", "process", f.Process, "version", f.Version, "node", f.Node)
		return nil
	}
	id := f.instanceID()
	start, err := checkpoint.EventMsg(checkpoint.Envelope{Instance: id, Start: &checkpoint.StartRequest{
		ProcessID: f.Process, Version: f.Version, Node: f.Node,
	}}, "start:"+id, t.cfg.Partitions)
	if err != nil {
		return err
	}
	if _, err := t.cfg.JS.PublishMsg(ctx, start); err != nil {
		return fmt.Errorf("start %s: %w", id, err)
	}
	if t.cfg.DieAfterStart != nil && t.cfg.DieAfterStart(id) {
		return errDied
	}
	taken := f
	taken.Taken = true
	if err := t.publishTimerRecord(ctx, taken); err != nil {
		return fmt.Errorf("record the fire: %w", err)
	}
	firing, due, ok := n.Timer.NextFire(f.Armed, f.Due, t.cfg.Now(), f.Firing+1)
	if !ok {
		return nil
	}
	next := fire{Process: f.Process, Version: f.Version, Node: f.Node, Firing: firing, Due: due, Armed: f.Armed}
	var empty uint64
	err = t.publishTimerStart(ctx, next, &empty)
	if streams.IsConflict(err) {
		return nil // a deploy, or an earlier delivery of this fire, scheduled it
	}
	if err != nil {
		return fmt.Errorf("schedule the next fire: %w", err)
	}
	return nil
}
