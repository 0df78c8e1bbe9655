// Package signals broadcasts BPMN signals (docs/signals.md): a broadcast
// reaches every open catch of its name, across instances and processes,
// and starts an instance of each process whose latest version has a
// signal start event of that name. Nothing is buffered.
//
// An instance's open catches are listed in KV jetbpm-signals (an entry per
// wait, written and deleted as the instance's effects: Handle); a
// broadcast — from the Go API (Broadcaster.Broadcast) or from the signals
// stream (Run: the engine's own throws and integrations' publishes) —
// reads the keys of its name and sends each instance one event, and each
// signal start one start. Every message's id derives from the broadcast's,
// so a repeated broadcast applies once.
package signals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/messages"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/streams"
)

// Signal is a broadcast: Name (required), its variables, and its id
// (generated when empty), which makes a repeated broadcast apply once.
type Signal struct {
	Name string
	Vars map[string]any
	ID   string
}

// Result is what a broadcast reached: the instances it sent the
// signal to (each applies it to its open catches of the name) and the
// instances its signal start events started.
type Result struct {
	ID        string   `json:"id"`
	Instances []string `json:"instances,omitempty"`
	Started   []string `json:"started,omitempty"`
}

// signalIndexTTL is how long the marker of a deleted index entry stays.
const signalIndexTTL = time.Minute

// Config is what a Broadcaster runs with.
type Config struct {
	JS jetstream.JetStream
	// Sync makes the writes so far durable before an acknowledgement
	// that depends on them (nil: the server's policy decides).
	Sync streams.Syncer
	Defs *deploy.Definitions // the signal start events
	// Partitions is the number of instance partitions, to address an
	// instance's events.
	Partitions int
	// CheckValue refuses a variable over the size limit.
	CheckValue func(name string, v any) error
	Log        *slog.Logger
	Metrics    Metrics
}

// A Broadcaster fans signals out to the instances that wait for them.
type Broadcaster struct{ cfg Config }

// New returns a broadcaster; Run applies the broadcasts of the signals
// stream.
func New(cfg Config) *Broadcaster { return &Broadcaster{cfg: cfg} }

// Broadcast broadcasts sig to every open catch of its name, across
// all instances and processes, and starts one instance of each process
// whose latest version has a signal start event of that name
// (docs/signals.md). Nothing is buffered: a catch that opens later does
// not get it. It returns once every event and start is stored.
func (b *Broadcaster) Broadcast(ctx context.Context, sig Signal) (Result, error) {
	if strings.TrimSpace(sig.Name) == "" {
		return Result{}, fmt.Errorf("%w: a signal needs a name", errdefs.ErrInvalid)
	}
	if err := messages.CheckString("signal name", sig.Name); err != nil {
		return Result{}, err
	}
	if err := messages.CheckString("signal id", sig.ID); err != nil {
		return Result{}, err
	}
	vars, err := b.vars(sig.Vars)
	if err != nil {
		return Result{}, err
	}
	if sig.ID == "" {
		sig.ID = nuid.Next()
	}
	return b.fanOut(ctx, instance.Broadcast{ID: sig.ID, Name: sig.Name, Vars: vars})
}

func (b *Broadcaster) vars(vars map[string]any) (map[string]any, error) {
	clean, err := instance.NormalizeVars(vars)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	for name, v := range clean {
		if err := b.cfg.CheckValue(name, v); err != nil {
			return nil, fmt.Errorf("signal variable %q: %w", name, err)
		}
	}
	if len(clean) == 0 {
		return nil, nil
	}
	return clean, nil
}

// fanOut does a broadcast: one SignalTo event per instance the index
// lists for the name, one start per signal start event. Every message
// carries an id derived from the broadcast's, so doing it again (a
// redelivered broadcast) creates nothing twice.
func (b *Broadcaster) fanOut(ctx context.Context, bc instance.Broadcast) (Result, error) {
	res := Result{ID: bc.ID}
	waits, err := b.waits(ctx, bc.Name)
	if err != nil {
		return res, err
	}
	var msgs []*nats.Msg
	for _, inst := range slices.Sorted(maps.Keys(waits)) {
		ev := &instance.Event{ID: "signal:" + bc.ID, Kind: instance.SignalTo, Vars: bc.Vars,
			Signal: &instance.Broadcast{ID: bc.ID, Name: bc.Name, Waits: waits[inst]}}
		m, err := checkpoint.EventMsg(checkpoint.Envelope{Instance: inst, Event: ev}, "signal:"+bc.ID+":"+inst, b.cfg.Partitions)
		if err != nil {
			return res, err
		}
		msgs = append(msgs, m)
		res.Instances = append(res.Instances, inst)
	}
	starts, _, err := b.cfg.Defs.StartIndex(ctx, deploy.SignalStarts, bc.Name)
	if err != nil {
		return res, err
	}
	for _, se := range starts {
		id := signalStartID(bc.ID, se.Process)
		m, err := checkpoint.EventMsg(checkpoint.Envelope{Instance: id, Start: &checkpoint.StartRequest{
			ProcessID: se.Process, Version: se.Version, Node: se.Node, Vars: bc.Vars,
		}}, "start:"+id, b.cfg.Partitions)
		if err != nil {
			return res, err
		}
		msgs = append(msgs, m)
		res.Started = append(res.Started, id)
	}
	if err := publishAll(ctx, b.cfg.JS, msgs); err != nil {
		return res, fmt.Errorf("signal %q: %w", bc.Name, err)
	}
	b.cfg.Metrics.count(len(res.Instances), len(res.Started))
	return res, nil
}

// waits lists the index entries of signal name: the waits by
// instance. The listing reads keys only, never an instance.
func (b *Broadcaster) waits(ctx context.Context, name string) (map[string][]string, error) {
	kv, err := b.cfg.JS.KeyValue(ctx, streams.SignalsBucket)
	if err != nil {
		return nil, fmt.Errorf("signal index: %w", err)
	}
	lister, err := kv.ListKeysFiltered(ctx, streams.SignalKeys(name))
	if err != nil {
		return nil, fmt.Errorf("signal index of %q: %w", name, err)
	}
	out := map[string][]string{}
	for key := range lister.Keys() {
		inst, wait, err := streams.ParseSignalKey(key)
		if err != nil {
			b.cfg.Log.Warn("signal index: skipping a malformed key", "key", key, "err", err)
			continue
		}
		out[inst] = append(out[inst], wait)
	}
	return out, nil
}

// publishAll publishes msgs without waiting between them, then waits
// until the streams have stored each.
func publishAll(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	timeout := time.After(30 * time.Second)
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			return errors.New("timed out waiting for JetStream")
		}
	}
	return nil
}

// signalStartID is the id of the instance broadcast id starts of process:
// the same for a repeated broadcast.
func signalStartID(id, process string) string {
	sum := sha256.Sum256([]byte(id + "\x00" + process))
	return "s" + hex.EncodeToString(sum[:16])
}

// Handle registers with pub the handler of the instances' signal effects.
func Handle(pub *outbox.Publisher) {
	pub.Handle(outbox.SendMsg(signalEffectMsg), instance.SignalSubscribe, instance.SignalUnsubscribe, instance.BroadcastSignal)
}

// signalEffectMsg is the message of a signal effect of instance s: an
// index entry written or deleted, or a broadcast (a signal throw).
func signalEffectMsg(s *instance.State, eff instance.Effect) (*nats.Msg, error) {
	switch eff.Kind {
	case instance.SignalSubscribe, instance.SignalUnsubscribe:
		sub := eff.Sub
		if sub == nil {
			return nil, errors.New("signal effect without a subscription")
		}
		inst := sub.Instance
		if inst == "" {
			inst = s.ID
		}
		m := nats.NewMsg(streams.KVSubject(streams.SignalsBucket, streams.SignalKey(sub.Name, inst, eff.Wait)))
		if eff.Kind == instance.SignalSubscribe {
			body, err := streams.Marshal(signalEntry{Process: s.ProcessID, Opened: sub.Opened})
			if err != nil {
				return nil, err
			}
			m.Data = body
			return m, nil
		}
		m.Header.Set("KV-Operation", "PURGE")
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		m.Header.Set(jetstream.MsgTTLHeader, signalIndexTTL.String())
		return m, nil
	case instance.BroadcastSignal:
		if eff.Signal == nil {
			return nil, errors.New("broadcast without a signal")
		}
		m := nats.NewMsg(streams.SignalSubject(eff.Signal.Name))
		if len(eff.Signal.Vars) > 0 {
			body, err := streams.Marshal(eff.Signal.Vars)
			if err != nil {
				return nil, err
			}
			m.Data = body
		}
		m.Header.Set(jetstream.MsgIDHeader, eff.ID)
		return m, nil
	}
	return nil, fmt.Errorf("not a signal effect: %q", eff.Kind)
}

// signalEntry is the value of a signal index entry.
type signalEntry struct {
	Process string    `msgpack:"process"`
	Opened  time.Time `msgpack:"opened"`
}

// DropEntries deletes the index entries the signal events among events
// name for instance id, which is finished or has no checkpoint: no step
// will.
func DropEntries(ctx context.Context, js jetstream.JetStream, id string, events []instance.Event) error {
	for _, ev := range events {
		if ev.Kind != instance.SignalTo || ev.Signal == nil {
			continue
		}
		for _, w := range ev.Signal.Waits {
			eff := instance.Effect{Kind: instance.SignalUnsubscribe, Wait: w, Sub: &instance.Subscription{Name: ev.Signal.Name, Instance: id}}
			m, err := signalEffectMsg(&instance.State{ID: id}, eff)
			if err != nil {
				return err
			}
			if _, err := js.PublishMsg(ctx, m); err != nil {
				return fmt.Errorf("instance %s: drop signal index entry %s: %w", id, w, err)
			}
		}
	}
	return nil
}

// Run takes broadcasts from the signals stream (the engine's own
// throws and integrations' publishes) and fans each out, until ctx ends.
func (b *Broadcaster) Run(ctx context.Context) {
	cons, err := b.cfg.JS.Consumer(ctx, streams.SignalsStream, streams.SignalsConsumer)
	if err != nil {
		b.cfg.Log.Error("signals: no consumer; broadcasts published on NATS are not applied", "err", err)
		return
	}
	streams.Pull(ctx, cons, 64, b.cfg.Log, "signals", func(m jetstream.Msg) { b.apply(ctx, m) })
}

// apply fans out one broadcast from the stream; a malformed one
// is logged and removed.
func (b *Broadcaster) apply(ctx context.Context, m jetstream.Msg) {
	name, err := streams.SignalName(m.Subject())
	var vars map[string]any
	if err == nil {
		vars, err = messages.DecodeVars(m.Data())
	}
	if err == nil {
		vars, err = b.vars(vars)
	}
	if err == nil {
		err = messages.CheckString("signal name", name)
	}
	if err != nil {
		b.cfg.Log.Warn("signals: refusing a malformed broadcast", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	}
	id := m.Headers().Get(jetstream.MsgIDHeader)
	if id == "" {
		meta, err := m.Metadata()
		if err != nil {
			_ = m.NakWithDelay(time.Second)
			return
		}
		id = fmt.Sprintf("seq-%d", meta.Sequence.Stream)
	}
	if _, err := b.fanOut(ctx, instance.Broadcast{ID: id, Name: name, Vars: vars}); err != nil {
		b.cfg.Log.Warn("signals: broadcast failed; it will be redelivered", "signal", name, "err", err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	// What the broadcast sent is durable before the broadcast is gone.
	if err := b.cfg.Sync.Sync(ctx); err != nil {
		b.cfg.Log.Error("signals: broadcast sent but not durable; it will be redelivered", "signal", name, "err", err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	_ = m.DoubleAck(ctx)
}
