package messages

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/streams"
)

// Handle registers with pub the handler of the instances' message
// effects.
func Handle(pub *outbox.Publisher) {
	pub.Handle(outbox.SendMsg(EffectMsg),
		instance.Subscribe, instance.Unsubscribe, instance.RejectMessage, instance.StartEnded, instance.PublishMessage)
}

// EffectMsg is the message of an instance's effect on the message
// partitions (docs/messages.md §4): a subscription opening or closing, a
// rejected correlation, the end of a message-started instance, or a
// message the instance publishes. Each carries a Nats-Msg-Id, and the
// message partition applies each at most once besides (its entry names the
// commands it applied; a subscription is stored once per wait).
func EffectMsg(s *instance.State, eff instance.Effect) (*nats.Msg, error) {
	var kind streams.MessageKind
	var name, key, id string
	var body []byte
	var err error
	switch eff.Kind {
	case instance.Subscribe, instance.Unsubscribe, instance.RejectMessage:
		sub := subscriptionOf(s, eff)
		if sub == nil {
			return nil, errors.New("message effect without a subscription")
		}
		cmd := commandBody{Sub: sub}
		switch eff.Kind {
		case instance.Subscribe:
			kind, id = streams.MessageSubscribe, "sub:"+sub.Wait
		case instance.Unsubscribe:
			kind, id = streams.MessageUnsubscribe, "unsub:"+sub.Wait
		default:
			if eff.Correlation == nil {
				return nil, errors.New("rejection without a correlation")
			}
			var vars map[string]any
			if eff.Message != nil {
				vars = eff.Message.Vars
			}
			return rejectMsg(*sub, *eff.Correlation, vars)
		}
		name, key = sub.Name, sub.Key
		body, err = streams.Marshal(cmd)
	case instance.StartEnded:
		if eff.Correlation == nil {
			return nil, errors.New("start ended without the message that started it")
		}
		kind, name, key, id = streams.MessageEnd, eff.Correlation.Name, eff.Correlation.Key, "end:"+s.ID
		body, err = streams.Marshal(commandBody{Process: s.ProcessID, Instance: s.ID})
	case instance.PublishMessage:
		out := eff.Message
		if out == nil {
			return nil, errors.New("publish without a message")
		}
		kind, name, key, id = streams.MessagePublish, out.Name, out.Key, out.ID
		if id == "" {
			id = eff.ID // unique per activation of the throw
		}
		if len(out.Vars) > 0 {
			body, err = streams.Marshal(out.Vars)
		}
	}
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(streams.MessageSubject(kind, name, key))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, id)
	if eff.Kind == instance.PublishMessage && eff.Message.TTL > 0 {
		m.Header.Set(streams.MessageTTLHeader, eff.Message.TTL.String())
	}
	return m, nil
}

// rejectMsg is the command that hands correlation c, offered to sub, back
// to its message partition, with the message's variables when the
// partition does not keep the message (c.ReturnBy set).
func rejectMsg(sub instance.Subscription, c instance.Correlation, vars map[string]any) (*nats.Msg, error) {
	cmd := commandBody{Sub: &sub, Correlation: &c}
	if !c.ReturnBy.IsZero() {
		cmd.Vars = vars
	}
	body, err := streams.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(streams.MessageSubject(streams.MessageReject, c.Name, c.Key))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, "rej:"+sub.Wait+":"+strconv.FormatUint(c.Seq, 10))
	return m, nil
}

// RejectOrphans hands back the correlations among events offered to
// instance id, which has no checkpoint (it ended and its record expired,
// or it never existed), so the messages go to other subscriptions. (A
// finished instance with a checkpoint steps its correlations and rejects
// them itself: instance.StepsWhenFinished.)
func RejectOrphans(ctx context.Context, js jetstream.JetStream, log *slog.Logger, id string, events []instance.Event) error {
	for _, ev := range events {
		if ev.Kind != instance.Correlate || ev.Correlation == nil {
			continue
		}
		c := *ev.Correlation
		m, err := rejectMsg(instance.Subscription{Name: c.Name, Key: c.Key, Instance: id, Wait: ev.Wait}, c, ev.Vars)
		if err != nil {
			return err
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			return fmt.Errorf("instance %s: reject correlation %s: %w", id, c.ID(), err)
		}
		log.Info("correlation rejected: no such instance", "instance", id, "message", c.Name, "key", c.Key)
	}
	return nil
}

// StartFailed tells the message partition that the instance a
// message meant to start (for a non-empty key) will never run, so that
// the key does not stay blocked for its process.
func StartFailed(ctx context.Context, js jetstream.JetStream, id string, req *checkpoint.StartRequest) error {
	if req.Message == nil || req.Message.Key == "" {
		return nil
	}
	s := &instance.State{ID: id, ProcessID: req.ProcessID}
	m, err := EffectMsg(s, instance.Effect{Kind: instance.StartEnded, Correlation: req.Message})
	if err != nil {
		return err
	}
	if _, err := js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("instance %s: tell the message partition its start failed: %w", id, err)
	}
	return nil
}

// subscriptionOf returns the subscription an effect is about, completed
// from the instance where the effect leaves a field out (a rejection names
// the correlation and the wait it was offered to).
func subscriptionOf(s *instance.State, eff instance.Effect) *instance.Subscription {
	var sub instance.Subscription
	switch {
	case eff.Sub != nil:
		sub = *eff.Sub
	case eff.Correlation != nil && eff.Wait != "":
		sub = instance.Subscription{Name: eff.Correlation.Name, Key: eff.Correlation.Key, Wait: eff.Wait}
	default:
		return nil
	}
	if sub.Instance == "" {
		sub.Instance = s.ID
	}
	if sub.ProcessID == "" {
		sub.ProcessID = s.ProcessID
	}
	if sub.Wait == "" {
		sub.Wait = eff.Wait
	}
	return &sub
}
