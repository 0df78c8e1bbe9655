package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/messages"
	"github.com/jetbpm/jetbpm/engine/signals"
	"github.com/jetbpm/jetbpm/streams"
)

// Message is a BPMN message for the instances that wait for it; see
// messages.Message.
type Message = messages.Message

// Message facts, on streams.FactSubject(streams.FactMessage, name, kind).
const (
	FactMessageCorrelated = messages.FactMessageCorrelated
	FactMessageRejected   = messages.FactMessageRejected
	FactMessageExpired    = messages.FactMessageExpired
)

// MessageFact is the JSON body of a message fact.
type MessageFact = messages.MessageFact

// check refuses a message that cannot be published, and returns its
// variables as stored.
func (e *Engine) checkMessage(m *Message) (map[string]any, error) {
	switch {
	case m.Name == "":
		return nil, fmt.Errorf("%w: a message needs a name", ErrInvalid)
	case m.Key != "" && m.BusinessKey != "":
		return nil, fmt.Errorf("%w: message %q: give a correlation key or a business key, not both", ErrInvalid, m.Name)
	case m.Instance != "" && (m.Key != "" || m.BusinessKey != ""):
		return nil, fmt.Errorf("%w: message %q: a message to one instance takes no correlation or business key", ErrInvalid, m.Name)
	case m.Instance != "" && m.TTL != 0:
		return nil, fmt.Errorf("%w: message %q: a message to one instance is never buffered; its TTL must be 0", ErrInvalid, m.Name)
	case m.TTL < 0:
		return nil, fmt.Errorf("%w: message %q: TTL %s is negative", ErrInvalid, m.Name, m.TTL)
	case m.Instance != "" && !checkpoint.ValidID(m.Instance):
		return nil, fmt.Errorf("instance %q: %w", m.Instance, ErrNotFound)
	}
	for what, s := range map[string]string{"message name": m.Name, "correlation key": m.Key, "business key": m.BusinessKey, "message id": m.ID} {
		if err := messages.CheckString(what, s); err != nil {
			return nil, err
		}
	}
	vars, err := instance.NormalizeVars(m.Vars)
	if err != nil {
		return nil, fmt.Errorf("%w: message %q: %w", ErrInvalid, m.Name, err)
	}
	for name, v := range vars {
		if err := e.opts.checkValue(name, v); err != nil {
			return nil, fmt.Errorf("message %q: variable %q: %w", m.Name, name, err)
		}
	}
	return vars, nil
}

// PublishMessage publishes m and returns its id (m.ID, or a new one). It
// returns once the message partition has applied the message: offered it to
// the subscriptions waiting for it, started the instances its message start
// events start, and buffered it if it has a TTL. A message that reached no
// one and has no TTL is dropped, and that is not an error (use
// CorrelateMessage to know). A message to one instance (m.Instance) returns
// once it is stored for that instance.
//
// The plain NATS form, for clients without this package: publish the
// variables as a JSON object to jetbpm.m.pub.<name>.<key> (names escaped
// as streams.Token does) with headers Nats-Msg-Id (the id) and Jetbpm-TTL
// (a Go duration).
func (e *Engine) PublishMessage(ctx context.Context, m Message) (string, error) {
	vars, err := e.checkMessage(&m)
	if err != nil {
		return "", err
	}
	if m.ID == "" {
		m.ID = nuid.Next()
	}
	if m.Instance != "" {
		return m.ID, e.messageTo(ctx, m, vars)
	}
	if err := e.writable(); err != nil {
		return "", fmt.Errorf("message %q: %w", m.Name, err)
	}
	if _, err := e.sender.Publish(ctx, m, vars); err != nil {
		return "", err
	}
	if err := e.durable.Sync(ctx); err != nil {
		return "", fmt.Errorf("message %q: %w", m.Name, err)
	}
	return m.ID, nil
}

// CorrelateMessage delivers m to the subscription waiting for it and
// returns the instance it reached, once that instance has taken it (its
// checkpoint lists the correlation), or the instance it started. Nothing is
// buffered: with no subscription and no message start event for it, the
// error wraps ErrNoSubscription. An instance that left the element rejects
// the message, and the partition offers it to the next subscription of the
// process: CorrelateMessage follows it there, and wraps ErrNoSubscription
// only when none was left. A message that reaches several processes
// returns the first instance that took it. m.TTL must be 0.
func (e *Engine) CorrelateMessage(ctx context.Context, m Message) (string, error) {
	inst, err := e.correlate(ctx, m)
	if err != nil {
		return "", err
	}
	// The checkpoint that took it is durable before the answer.
	if err := e.durable.Sync(ctx); err != nil {
		return "", fmt.Errorf("message %q: %w", m.Name, err)
	}
	return inst, nil
}

func (e *Engine) correlate(ctx context.Context, m Message) (string, error) {
	if m.TTL != 0 {
		return "", fmt.Errorf("%w: message %q: correlate buffers nothing; its TTL must be 0", ErrInvalid, m.Name)
	}
	vars, err := e.checkMessage(&m)
	if err != nil {
		return "", err
	}
	if m.ID == "" {
		m.ID = nuid.Next()
	}
	if m.Instance != "" {
		return e.correlateTo(ctx, m, vars)
	}
	if err := e.writable(); err != nil {
		return "", fmt.Errorf("message %q: %w", m.Name, err)
	}
	answer, err := e.sender.Publish(ctx, m, vars)
	if err != nil {
		return "", err
	}
	if len(answer.Offers) == 0 {
		return "", fmt.Errorf("%w for message %q with key %q", ErrNoSubscription, m.Name, m.CorrelationKey())
	}
	var left []string
	for _, o := range answer.Offers {
		inst, took, err := e.awaitOffer(ctx, m, o)
		if err != nil {
			return "", err
		}
		if took {
			return inst, nil
		}
		left = append(left, inst)
	}
	return "", fmt.Errorf("%w for message %q with key %q: %s left the element before the message arrived",
		ErrNoSubscription, m.Name, m.CorrelationKey(), strings.Join(left, ", "))
}

// messageTo sends m straight to instance m.Instance.
func (e *Engine) messageTo(ctx context.Context, m Message, vars map[string]any) error {
	s, _, err := e.current(ctx, m.Instance)
	switch {
	case err != nil:
		return err
	case s != nil && s.Status.Finished():
		return fmt.Errorf("instance %s is %s: %w", m.Instance, s.Status, ErrFinished)
	}
	c := instance.Correlation{Name: m.Name, MessageID: m.ID}
	ev := &instance.Event{ID: c.ID(), Kind: instance.MessageTo, Message: m.Name, Vars: vars, Correlation: &c}
	return e.send(ctx, checkpoint.Envelope{Instance: m.Instance, Event: ev}, "msg:"+m.Instance+":"+m.ID)
}

// correlateTo sends m straight to instance m.Instance and waits until it
// took it.
func (e *Engine) correlateTo(ctx context.Context, m Message, vars map[string]any) (string, error) {
	s, _, err := e.store.Get(ctx, m.Instance)
	if err != nil {
		return "", err
	}
	if s.Status.Finished() {
		return "", fmt.Errorf("instance %s is %s: %w", m.Instance, s.Status, ErrFinished)
	}
	if !waitsFor(s, m.Name) {
		return "", fmt.Errorf("%w for message %q in instance %s", ErrNoSubscription, m.Name, m.Instance)
	}
	if err := e.messageTo(ctx, m, vars); err != nil {
		return "", err
	}
	id := (&instance.Correlation{Name: m.Name, MessageID: m.ID}).ID()
	took, err := e.awaitState(ctx, m.Instance, func(s *instance.State) (bool, bool) {
		if s == nil {
			return true, false
		}
		if slices.Contains(s.Correlations, id) {
			return true, true
		}
		return !waitsFor(s, m.Name) || s.Status.Finished(), false
	})
	if err != nil {
		return "", err
	}
	if !took {
		return "", fmt.Errorf("%w for message %q in instance %s: it left the element before the message arrived", ErrNoSubscription, m.Name, m.Instance)
	}
	return m.Instance, nil
}

// waitsFor reports whether s has an open catch of message name.
func waitsFor(s *instance.State, name string) bool {
	return slices.ContainsFunc(s.Waits, func(w *instance.Wait) bool {
		return w.Kind == instance.MessageWait && w.Sub != nil && w.Sub.Name == name
	})
}

// awaitOffer waits until the instance a message partition offered message
// m to has taken it, and returns that instance and true. An instance
// that left the element (or ended, or has no record) rejects the offer,
// and the partition offers the message to the next subscription of the
// process: awaitOffer follows it there. It returns false, with the last
// instance offered, when no subscription was left and the message is gone.
func (e *Engine) awaitOffer(ctx context.Context, m Message, o messages.Offer) (string, bool, error) {
	for {
		took, err := e.awaitTaken(ctx, o)
		if err != nil || took || o.Started {
			return o.Instance, took, err
		}
		next, ok, err := e.awaitReturn(ctx, m, o)
		if err != nil || !ok {
			return o.Instance, false, err
		}
		o = next
	}
}

// awaitTaken waits until the instance of offer o has taken its message
// (true) or left the element (false).
func (e *Engine) awaitTaken(ctx context.Context, o messages.Offer) (bool, error) {
	return e.awaitState(ctx, o.Instance, func(s *instance.State) (bool, bool) {
		switch {
		case o.Started && s == nil:
			return false, false // not started yet
		case o.Started:
			return s.StartMessage != nil && s.StartMessage.ID() == o.Correlation, true
		case s == nil:
			return true, false // its record is gone: it rejects the message
		}
		if slices.Contains(s.Correlations, o.Correlation) {
			return true, true
		}
		gone := !slices.ContainsFunc(s.Waits, func(w *instance.Wait) bool { return w.ID == o.Wait })
		return gone || s.Status.Finished(), false
	})
}

// awaitReturn waits until the partition of message m took back offer o,
// which its instance rejects, and returns the offer it made next (ok), or
// ok false when the message is gone. The entry remembers a rejection it
// took back within the offer's return deadline (correlation.Returned),
// until the deadline: the watch finds it however late it starts.
func (e *Engine) awaitReturn(ctx context.Context, m Message, o messages.Offer) (next messages.Offer, ok bool, err error) {
	kv, err := e.js.KeyValue(ctx, streams.MessagesBucket)
	if err != nil {
		return messages.Offer{}, false, fmt.Errorf("message %q: messages bucket: %w", m.Name, err)
	}
	key := streams.MessageEntryKey(m.Name, m.CorrelationKey())
	w, err := kv.Watch(ctx, key)
	if err != nil {
		return messages.Offer{}, false, fmt.Errorf("message %q with key %q: watch: %w", m.Name, m.CorrelationKey(), err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return messages.Offer{}, false, fmt.Errorf("message %q with key %q: instance %s rejected it; waiting for where it went next: %w", m.Name, m.CorrelationKey(), o.Instance, ctx.Err())
		case u, open := <-w.Updates():
			if !open {
				return messages.Offer{}, false, watchClosed(ctx, fmt.Sprintf("message %q with key %q", m.Name, m.CorrelationKey()))
			}
			if u == nil || u.Operation() != jetstream.KeyValuePut {
				continue // the end of the initial values, or an entry deleted before the rejection came
			}
			var ent correlation.Entry
			if err := streams.Unmarshal(u.Value(), &ent); err != nil {
				return messages.Offer{}, false, fmt.Errorf("message entry %s: decode: %w", key, err)
			}
			for _, r := range ent.Returned {
				c := instance.Correlation{Name: ent.Name, Key: ent.Key, Seq: r.Seq}
				if c.ID() != o.Correlation {
					continue
				}
				if r.Next == 0 {
					return messages.Offer{}, false, nil
				}
				c.Seq = r.Next
				return messages.Offer{Instance: r.Instance, Process: o.Process, Wait: r.Wait, Correlation: c.ID()}, true, nil
			}
		}
	}
}

// awaitState watches the checkpoint of instance id until decide says done,
// and returns decide's verdict. decide gets nil while there is no
// checkpoint (none yet, or deleted).
func (e *Engine) awaitState(ctx context.Context, id string, decide func(*instance.State) (done, verdict bool)) (bool, error) {
	w, err := e.store.KV().Watch(ctx, id)
	if err != nil {
		return false, fmt.Errorf("instance %s: watch: %w", id, err)
	}
	defer func() { _ = w.Stop() }()
	seen := false // a value, or the marker that there is none
	for {
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("instance %s: waiting for the message to be taken: %w", id, ctx.Err())
		case entry, ok := <-w.Updates():
			if !ok {
				return false, watchClosed(ctx, "instance "+id)
			}
			var s *instance.State
			switch {
			case entry == nil && seen:
				continue // the end of the initial values
			case entry != nil && entry.Operation() == jetstream.KeyValuePut:
				s = &instance.State{}
				if err := streams.Unmarshal(entry.Value(), s); err != nil {
					return false, fmt.Errorf("instance %s: decode: %w", id, err)
				}
			}
			seen = true
			if done, verdict := decide(s); done {
				return verdict, nil
			}
		}
	}
}

// Signal is a broadcast: Name (required), its variables, and its id
// (generated when empty), which makes a repeated broadcast apply once.
type Signal = signals.Signal

// SignalResult is what a broadcast reached: the instances it sent the
// signal to (each applies it to its open catches of the name) and the
// instances its signal start events started.
type SignalResult = signals.Result

// BroadcastSignal broadcasts sig to every open catch of its name, across
// all instances and processes, and starts one instance of each process
// whose latest version has a signal start event of that name
// (docs/signals.md). Nothing is buffered: a catch that opens later does
// not get it. It returns once every event and start is stored.
func (e *Engine) BroadcastSignal(ctx context.Context, sig Signal) (SignalResult, error) {
	if err := e.writable(); err != nil {
		return SignalResult{}, fmt.Errorf("signal %q: %w", sig.Name, err)
	}
	res, err := e.signals.Broadcast(ctx, sig)
	if err != nil {
		return res, err
	}
	if err := e.durable.Sync(ctx); err != nil {
		return SignalResult{}, fmt.Errorf("signal %q: %w", sig.Name, err)
	}
	return res, nil
}
