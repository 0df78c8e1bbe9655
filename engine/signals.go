package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/deploy"
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

// SignalResult is what a broadcast reached: the instances it sent the
// signal to (each applies it to its open catches of the name) and the
// instances its signal start events started.
type SignalResult struct {
	ID        string   `json:"id"`
	Instances []string `json:"instances,omitempty"`
	Started   []string `json:"started,omitempty"`
}

// signalIndexTTL is how long the marker of a deleted index entry stays.
const signalIndexTTL = time.Minute

// BroadcastSignal broadcasts sig to every open catch of its name, across
// all instances and processes, and starts one instance of each process
// whose latest version has a signal start event of that name
// (docs/signals.md). Nothing is buffered: a catch that opens later does
// not get it. It returns once every event and start is stored.
func (e *Engine) BroadcastSignal(ctx context.Context, sig Signal) (SignalResult, error) {
	if strings.TrimSpace(sig.Name) == "" {
		return SignalResult{}, fmt.Errorf("%w: a signal needs a name", ErrInvalid)
	}
	if err := messages.CheckString("signal name", sig.Name); err != nil {
		return SignalResult{}, err
	}
	if err := messages.CheckString("signal id", sig.ID); err != nil {
		return SignalResult{}, err
	}
	vars, err := e.signalVars(sig.Vars)
	if err != nil {
		return SignalResult{}, err
	}
	if sig.ID == "" {
		sig.ID = nuid.Next()
	}
	return e.fanOut(ctx, instance.Broadcast{ID: sig.ID, Name: sig.Name, Vars: vars})
}

func (e *Engine) signalVars(vars map[string]any) (map[string]any, error) {
	clean, err := instance.NormalizeVars(vars)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for name, v := range clean {
		if err := e.opts.checkValue(name, v); err != nil {
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
func (e *Engine) fanOut(ctx context.Context, b instance.Broadcast) (SignalResult, error) {
	res := SignalResult{ID: b.ID}
	waits, err := e.signalWaits(ctx, b.Name)
	if err != nil {
		return res, err
	}
	var msgs []*nats.Msg
	for _, inst := range slices.Sorted(maps.Keys(waits)) {
		ev := &instance.Event{ID: "signal:" + b.ID, Kind: instance.SignalTo, Vars: b.Vars,
			Signal: &instance.Broadcast{ID: b.ID, Name: b.Name, Waits: waits[inst]}}
		m, err := checkpoint.EventMsg(checkpoint.Envelope{Instance: inst, Event: ev}, "signal:"+b.ID+":"+inst, e.layout.Partitions)
		if err != nil {
			return res, err
		}
		msgs = append(msgs, m)
		res.Instances = append(res.Instances, inst)
	}
	starts, _, err := e.defs.StartIndex(ctx, deploy.SignalStarts, b.Name)
	if err != nil {
		return res, err
	}
	for _, se := range starts {
		id := signalStartID(b.ID, se.Process)
		m, err := checkpoint.EventMsg(checkpoint.Envelope{Instance: id, Start: &checkpoint.StartRequest{
			ProcessID: se.Process, Version: se.Version, Node: se.Node, Vars: b.Vars,
		}}, "start:"+id, e.layout.Partitions)
		if err != nil {
			return res, err
		}
		msgs = append(msgs, m)
		res.Started = append(res.Started, id)
	}
	if err := publishAll(ctx, e.js, msgs); err != nil {
		return res, fmt.Errorf("signal %q: %w", b.Name, err)
	}
	e.metrics.countSignal(len(res.Instances), len(res.Started))
	return res, nil
}

// signalWaits lists the index entries of signal name: the waits by
// instance. The listing reads keys only, never an instance.
func (e *Engine) signalWaits(ctx context.Context, name string) (map[string][]string, error) {
	kv, err := e.js.KeyValue(ctx, streams.SignalsBucket)
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
			e.log.Warn("signal index: skipping a malformed key", "key", key, "err", err)
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

// handleSignals registers the handler of signal effects.
func handleSignals(pub *outbox.Publisher) {
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

// dropSignalEntries deletes the index entries the signal events of g name
// for an instance that is finished or has no checkpoint: no step will.
func (p *partition) dropSignalEntries(ctx context.Context, g *group) error {
	for _, ev := range g.events {
		if ev.Kind != instance.SignalTo || ev.Signal == nil {
			continue
		}
		for _, w := range ev.Signal.Waits {
			eff := instance.Effect{Kind: instance.SignalUnsubscribe, Wait: w, Sub: &instance.Subscription{Name: ev.Signal.Name, Instance: g.id}}
			m, err := signalEffectMsg(&instance.State{ID: g.id}, eff)
			if err != nil {
				return err
			}
			if _, err := p.js.PublishMsg(ctx, m); err != nil {
				return fmt.Errorf("instance %s: drop signal index entry %s: %w", g.id, w, err)
			}
		}
	}
	return nil
}

// runSignals takes broadcasts from the signals stream (the engine's own
// throws and integrations' publishes) and fans each out, until ctx ends.
func (e *Engine) runSignals(ctx context.Context) {
	cons, err := e.js.Consumer(ctx, streams.SignalsStream, streams.SignalsConsumer)
	if err != nil {
		e.log.Error("signals: no consumer; broadcasts published on NATS are not applied", "err", err)
		return
	}
	for ctx.Err() == nil {
		batch, err := cons.FetchNoWait(64)
		if err == nil {
			batch, err = cons.Fetch(64, jetstream.FetchMaxWait(time.Second))
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				e.log.Debug("signals: fetch", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		for m := range batch.Messages() {
			e.applyBroadcast(ctx, m)
		}
	}
}

// applyBroadcast fans out one broadcast from the stream; a malformed one
// is logged and removed.
func (e *Engine) applyBroadcast(ctx context.Context, m jetstream.Msg) {
	name, err := streams.SignalName(m.Subject())
	var vars map[string]any
	if err == nil {
		vars, err = messages.DecodeVars(m.Data())
	}
	if err == nil {
		vars, err = e.signalVars(vars)
	}
	if err == nil {
		err = messages.CheckString("signal name", name)
	}
	if err != nil {
		e.log.Warn("signals: refusing a malformed broadcast", "subject", m.Subject(), "err", err)
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
	if _, err := e.fanOut(ctx, instance.Broadcast{ID: id, Name: name, Vars: vars}); err != nil {
		e.log.Warn("signals: broadcast failed; it will be redelivered", "signal", name, "err", err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	_ = m.DoubleAck(ctx)
}

// countSignal records a broadcast fanned out to instances and starts.
func (m *engineMetrics) countSignal(instances, starts int) {
	m.signals.Inc()
	m.signalDeliveries.With("instance").Add(float64(instances))
	m.signalDeliveries.With("start").Add(float64(starts))
}
