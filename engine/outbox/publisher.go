package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// AckTimeout bounds the wait for JetStream to store an outbox's publishes.
const AckTimeout = 10 * time.Second

// A Publisher carries a node's effects to JetStream: every partition of
// the node publishes its checkpoints' outboxes through it. It owns the
// node's session. Register every handler (Handle) before the first
// publish.
type Publisher struct {
	js       jetstream.JetStream
	handlers map[instance.EffectKind]Handler

	mu      sync.Mutex
	current string // changes whenever this node may have lost outbox effects
}

// New returns a publisher on js with no handlers, in a new session.
func New(js jetstream.JetStream) *Publisher {
	return &Publisher{js: js, current: nuid.Next()}
}

// JetStream is the context the publisher publishes with.
func (pub *Publisher) JetStream() jetstream.JetStream { return pub.js }

// Session names this node's current session: a checkpoint whose outbox
// another session wrote may hold effects that were never published.
func (pub *Publisher) Session() string {
	pub.mu.Lock()
	defer pub.mu.Unlock()
	if pub.current == "" {
		pub.current = nuid.Next()
	}
	return pub.current
}

// NewSession is called after a failure to publish effects: from now on
// this node treats outboxes it wrote before as possibly unpublished.
func (pub *Publisher) NewSession() {
	pub.mu.Lock()
	pub.current = nuid.Next()
	pub.mu.Unlock()
}

// A Handler carries one kind of effect of out's outbox to JetStream: a
// publish it adds to out (Outbox.Send), which the publisher waits for with
// the rest, or a request it waits for itself (a purge, a compare-and-set).
// Every handler's effect must be safe to carry twice: an outbox is
// published again after a crash or a takeover.
type Handler func(ctx context.Context, out *Outbox, eff instance.Effect) error

// Handle registers fn as the handler of kinds. A kind has one handler; a
// second registration panics (a wiring mistake, found when the engine
// opens).
func (pub *Publisher) Handle(fn Handler, kinds ...instance.EffectKind) {
	if pub.handlers == nil {
		pub.handlers = map[instance.EffectKind]Handler{}
	}
	for _, k := range kinds {
		if _, dup := pub.handlers[k]; dup {
			panic(fmt.Sprintf("outbox: effect kind %q has two handlers", k))
		}
		pub.handlers[k] = fn
	}
}

// SendMsg makes a handler of a function that turns an effect into one
// message to publish.
func SendMsg(msg func(s *instance.State, eff instance.Effect) (*nats.Msg, error)) Handler {
	return func(_ context.Context, out *Outbox, eff instance.Effect) error {
		m, err := msg(out.state, eff)
		if err != nil {
			return err
		}
		return out.Send(m, nil)
	}
}

// An Outbox is an instance's outbox on its way to JetStream: a batch
// starts every instance's publishes before it waits for any, so one
// instance's round trips do not queue behind another's. What handlers
// deferred (an operation run, say) runs once everything sent is stored.
type Outbox struct {
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

// State is the instance whose outbox this is, as of its checkpoint.
func (out *Outbox) State() *instance.State { return out.state }

// Partition is the instance's partition.
func (out *Outbox) Partition() int { return out.partition }

// Send publishes m without waiting for the stream's ack; the publisher
// waits (Await). stored, if not nil, is told the outcome and returns the
// error that stands (nil accepts an expected refusal).
func (out *Outbox) Send(m *nats.Msg, stored func(*jetstream.PubAck, error) error) error {
	f, err := out.js.PublishMsgAsync(m)
	if err != nil {
		return err
	}
	out.sent = append(out.sent, sent{future: f, stored: stored})
	return nil
}

// AfterStored defers fn until every publish of the outbox is stored.
func (out *Outbox) AfterStored(fn func(context.Context) error) {
	out.after = append(out.after, fn)
}

// Publish sends every effect of s's outbox and waits until JetStream has
// stored each.
func (pub *Publisher) Publish(ctx context.Context, partition int, s *instance.State) error {
	out, err := pub.Start(ctx, partition, s)
	if err != nil {
		return err
	}
	return pub.Await(ctx, out)
}

// Start sends s's outbox through each effect's handler without waiting
// for the stream's acks (handlers' requests are waited for). An effect of
// a kind no handler is registered for fails the outbox.
func (pub *Publisher) Start(ctx context.Context, partition int, s *instance.State) (*Outbox, error) {
	out := &Outbox{js: pub.js, partition: partition, state: s}
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

// Await waits until JetStream has stored every effect out sent, then runs
// what the handlers deferred. Any failure starts a new session.
func (pub *Publisher) Await(ctx context.Context, out *Outbox) error {
	timeout := time.After(AckTimeout)
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

func (pub *Publisher) failed(s *instance.State, eff instance.Effect, err error) error {
	pub.NewSession()
	return fmt.Errorf("instance %s: publish effect %s: %w", s.ID, eff.ID, err)
}
