package messages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/streams"
)

// Message facts, on streams.FactSubject(streams.FactMessage, name, kind).
const (
	// FactMessageCorrelated: a message was offered to a subscription, or
	// started an instance.
	FactMessageCorrelated = "correlated"
	// FactMessageRejected: the instance it was offered to had left the
	// element; a buffered message goes to the next subscription.
	FactMessageRejected = "rejected"
	// FactMessageExpired: a buffered message's time to live ended.
	FactMessageExpired = "expired"
)

// MessageFact is the JSON body of a message fact.
type MessageFact struct {
	// ID identifies the fact (also its Nats-Msg-Id), for de-duplication.
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Name      string    `json:"name"`
	Key       string    `json:"key"`
	MessageID string    `json:"messageId,omitempty"`
	Instance  string    `json:"instanceId,omitempty"`
	ProcessID string    `json:"processId,omitempty"`
	Started   bool      `json:"started,omitempty"`
	Time      time.Time `json:"time"`
}

// entryNumber names number seq of an entry in ids that travel in headers:
// tokens only, whatever the name and key hold.
func entryNumber(name, key string, seq uint64) string {
	return streams.MessageEntryKey(name, key) + "." + strconv.FormatUint(seq, 10)
}

// publishEntry sends the outbox of entry e of message partition n and
// waits until JetStream stored every effect. Every effect is safe to send
// again (correlation.Effect).
func (p *Partition) publishEntry(ctx context.Context, e *correlation.Entry) error {
	var futures []jetstream.PubAckFuture
	for _, eff := range e.Outbox {
		msgs, err := p.entryEffectMsgs(e, eff)
		if err != nil {
			return p.entryFailed(e, eff, err)
		}
		for _, m := range msgs {
			if m == nil {
				continue // a fact the history level does not write
			}
			f, err := p.cfg.Pub.JetStream().PublishMsgAsync(m)
			if err != nil {
				return p.entryFailed(e, eff, err)
			}
			futures = append(futures, f)
		}
	}
	timeout := time.After(outbox.AckTimeout)
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return p.entryFailed(e, correlation.Effect{}, fmt.Errorf("%s: %w", f.Msg().Subject, err))
		case <-timeout:
			return p.entryFailed(e, correlation.Effect{}, errors.New("timed out waiting for JetStream"))
		case <-ctx.Done():
			return p.entryFailed(e, correlation.Effect{}, ctx.Err())
		}
	}
	return nil
}

func (p *Partition) entryFailed(e *correlation.Entry, eff correlation.Effect, err error) error {
	p.cfg.Pub.NewSession()
	return fmt.Errorf("message %q with key %q: publish effect %s: %w", e.Name, e.Key, eff.Kind, err)
}

// entryEffectMsgs returns the messages of one effect.
func (p *Partition) entryEffectMsgs(e *correlation.Entry, eff correlation.Effect) ([]*nats.Msg, error) {
	c := eff.Correlation
	switch eff.Kind {
	case correlation.Correlate:
		id := "corr:" + entryNumber(e.Name, e.Key, c.Seq)
		ev, err := checkpoint.EventMsg(checkpoint.Envelope{Instance: eff.Sub.Instance, Event: &instance.Event{
			ID: id, Kind: instance.Correlate, Wait: eff.Sub.Wait, Correlation: &c, Vars: eff.Vars,
		}}, id, p.cfg.Partitions)
		if err != nil {
			return nil, err
		}
		fact, err := p.messageFactMsg(e, eff, FactMessageCorrelated, c.Seq, eff.Sub.Instance, eff.Sub.ProcessID)
		return []*nats.Msg{ev, fact}, err
	case correlation.Start:
		st := eff.Start
		ev, err := checkpoint.EventMsg(checkpoint.Envelope{Instance: st.Instance, Start: &checkpoint.StartRequest{
			ProcessID: st.Event.Process, Version: st.Event.Version, Vars: eff.Vars,
			Node: st.Event.Node, BusinessKey: st.BusinessKey, Message: &c,
		}}, "start:"+st.Instance, p.cfg.Partitions)
		if err != nil {
			return nil, err
		}
		fact, err := p.messageFactMsg(e, eff, FactMessageCorrelated, c.Seq, st.Instance, st.Event.Process)
		return []*nats.Msg{ev, fact}, err
	case correlation.ScheduleExpiry:
		body, err := streams.Marshal(commandBody{Seq: eff.Seq})
		if err != nil {
			return nil, err
		}
		m := nats.NewMsg(streams.MessageExpirySubject(p.n, e.Name, e.Key, eff.Seq))
		m.Data = body
		m.Header.Set("Nats-Schedule", "@at "+eff.Expires.UTC().Format(time.RFC3339Nano))
		m.Header.Set("Nats-Schedule-Target", streams.MessageSubject(streams.MessageExpire, e.Name, e.Key))
		return []*nats.Msg{m}, nil
	case correlation.Expired:
		fact, err := p.messageFactMsg(e, eff, FactMessageExpired, eff.Seq, "", "")
		return []*nats.Msg{fact}, err
	case correlation.Rejected:
		fact, err := p.messageFactMsg(e, eff, FactMessageRejected, c.Seq, eff.Sub.Instance, eff.Sub.ProcessID)
		return []*nats.Msg{fact}, err
	}
	return nil, fmt.Errorf("unknown message effect kind %q", eff.Kind)
}

// messageFactMsg is a message fact, nil if the node's history level does
// not write message facts.
func (p *Partition) messageFactMsg(e *correlation.Entry, eff correlation.Effect, kind string, seq uint64, inst, process string) (*nats.Msg, error) {
	if !p.cfg.History.Keeps(history.Message) {
		return nil, nil
	}
	f := MessageFact{
		ID: "msg." + entryNumber(e.Name, e.Key, seq) + "." + kind, Kind: kind, Name: e.Name, Key: e.Key,
		MessageID: eff.MessageID, Instance: inst, ProcessID: process, Started: eff.Kind == correlation.Start, Time: eff.At,
	}
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(streams.FactSubject(streams.FactMessage, e.Name, kind))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, f.ID)
	return m, nil
}
