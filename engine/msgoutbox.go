package engine

import (
	"errors"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// messageEffectMsg is the message of an instance's effect on the message
// partitions (docs/messages.md §4): a subscription opening or closing, a
// rejected correlation, the end of a message-started instance, or a
// message the instance publishes. Each carries a Nats-Msg-Id, and the
// message partition applies each at most once besides (its entry names the
// commands it applied; a subscription is stored once per wait).
func messageEffectMsg(s *instance.State, eff instance.Effect) (*nats.Msg, error) {
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
		cmd := messageCommand{Sub: sub}
		switch eff.Kind {
		case instance.Subscribe:
			kind, id = streams.MessageSubscribe, "sub:"+sub.Wait
		case instance.Unsubscribe:
			kind, id = streams.MessageUnsubscribe, "unsub:"+sub.Wait
		default:
			if eff.Correlation == nil {
				return nil, errors.New("rejection without a correlation")
			}
			c := *eff.Correlation
			cmd.Correlation = &c
			kind, id = streams.MessageReject, "rej:"+sub.Wait+":"+strconv.FormatUint(c.Seq, 10)
		}
		name, key = sub.Name, sub.Key
		body, err = streams.Marshal(cmd)
	case instance.StartEnded:
		if eff.Correlation == nil {
			return nil, errors.New("start ended without the message that started it")
		}
		kind, name, key, id = streams.MessageEnd, eff.Correlation.Name, eff.Correlation.Key, "end:"+s.ID
		body, err = streams.Marshal(messageCommand{Process: s.ProcessID, Instance: s.ID})
	case instance.PublishMessage:
		out := eff.Message
		if out == nil {
			return nil, errors.New("publish without a message")
		}
		kind, name, key, id = streams.MessagePublish, out.Name, out.Key, out.ID
		if id == "" {
			id = "pub:" + s.ID + ":" + eff.ID
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
