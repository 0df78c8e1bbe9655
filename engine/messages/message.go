package messages

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// Message is a BPMN message for the instances that wait for it
// (docs/messages.md). Name is required. It is addressed by at most one of:
//
//   - Key, the correlation key the catches subscribed under (a string;
//     a number is written in its shortest decimal form);
//   - BusinessKey, the business key of the instances to reach (Camunda 7:
//     their catches without a correlation key subscribe under it);
//   - Instance, one instance, skipping the message partitions: the oldest
//     open catch of that name in the instance takes it, and nothing is
//     buffered.
//
// With none of them the key is empty. TTL > 0 buffers the message that long
// for subscriptions that open later (not with Instance); ID, if set, names
// the message: a second publish with that id is refused while the first is
// buffered (and within two minutes, whatever its TTL).
type Message struct {
	Name        string
	Key         string
	BusinessKey string
	Instance    string
	Vars        map[string]any
	TTL         time.Duration
	ID          string
}

// CorrelationKey returns the correlation key m is published under: the
// business key's (instance.BusinessKeyPrefix) or Key.
func (m *Message) CorrelationKey() string {
	if m.BusinessKey != "" {
		return instance.BusinessKeyPrefix + m.BusinessKey
	}
	return m.Key
}

// A Sender publishes messages to the message partitions and waits for
// their answers, which arrive on one subscription of its connection
// (<inbox>.*) and are routed to the call waiting for each, as nats.go's
// Request does: a subscription per publish would cost an interest in the
// server and a channel of the connection's slots each time
// (docs/performance.md, Messages).
type Sender struct {
	js jetstream.JetStream
	nc *nats.Conn
	// maxBody bounds a message's encoded variables, like a checkpoint.
	maxBody int
	replies replies
}

// NewSender returns a sender on nc and js of messages whose variables
// encode to at most maxBody bytes.
func NewSender(nc *nats.Conn, js jetstream.JetStream, maxBody int) *Sender {
	return &Sender{js: js, nc: nc, maxBody: maxBody}
}

// Pending returns how many publishes wait for their partition's answer.
func (s *Sender) Pending() int { return s.replies.pending() }

// Close stops routing answers; a publish still waiting sees none.
func (s *Sender) Close() { s.replies.close() }

// Publish publishes m, with its variables vars as checked and normalized,
// to its message partition and returns the partition's answer. A refusal
// wraps errdefs.errdefs.ErrDuplicate, errdefs.ErrTooLarge or errdefs.ErrInvalid.
func (s *Sender) Publish(ctx context.Context, m Message, vars map[string]any) (*Answer, error) {
	var body []byte
	if len(vars) > 0 {
		var err error
		if body, err = streams.Marshal(vars); err != nil {
			return nil, err
		}
		if len(body) > s.maxBody {
			return nil, fmt.Errorf("%w: message %q: its variables are %d bytes, the limit is %d", errdefs.ErrTooLarge, m.Name, len(body), s.maxBody)
		}
	}
	inbox, answers, done, err := s.replies.expect(s.nc)
	if err != nil {
		return nil, fmt.Errorf("message %q: subscribe to the answers: %w", m.Name, err)
	}
	defer done()
	if !streams.ValidInbox(inbox) {
		return nil, fmt.Errorf("message %q: the message partition answers inboxes under _INBOX. only; this connection's are %s", m.Name, inbox)
	}
	msg := nats.NewMsg(streams.MessageSubject(streams.MessagePublish, m.Name, m.CorrelationKey()))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, m.ID)
	msg.Header.Set(streams.MessageReplyHeader, inbox)
	if m.TTL > 0 {
		msg.Header.Set(streams.MessageTTLHeader, m.TTL.String())
	}
	ack, err := s.js.PublishMsg(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("message %q: publish: %w", m.Name, err)
	}
	if ack.Duplicate {
		return nil, fmt.Errorf("%w: message %q with key %q: id %q was published in the last two minutes", errdefs.ErrDuplicate, m.Name, m.CorrelationKey(), m.ID)
	}
	var reply *nats.Msg
	select {
	case reply = <-answers:
	case <-ctx.Done():
		return nil, fmt.Errorf("message %q: stored, but its message partition did not answer: %w", m.Name, ctx.Err())
	}
	var a Answer
	if err := json.Unmarshal(reply.Data, &a); err != nil {
		return nil, fmt.Errorf("message %q: malformed answer %q", m.Name, reply.Data)
	}
	switch a.Refusal {
	case "":
	case "duplicate":
		return nil, fmt.Errorf("%w: %s", errdefs.ErrDuplicate, a.Error)
	case "tooLarge":
		return nil, fmt.Errorf("%w: %s", errdefs.ErrTooLarge, a.Error)
	default:
		return nil, fmt.Errorf("%w: %s", errdefs.ErrInvalid, a.Error)
	}
	return &a, nil
}
