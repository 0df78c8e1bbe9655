package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// The wire of the message partitions (docs/messages.md §3). A message
// (jetbpm.m.pub.<name>.<key>) is published by anyone: its body is a JSON
// object of variables (or the jetbpm codec of one, as the engine sends),
// its Nats-Msg-Id the message id, its Jetbpm-TTL header how long it stays
// buffered, its Jetbpm-Reply header an inbox for the partition's answer.
// A command (sub, unsub, rej, end, exp) is published by the engine only,
// its body a commandBody in the jetbpm codec.

// MaxString bounds a message's name, correlation key, business key
// and id (and a signal's name and id), in bytes.
const MaxString = 256

// checkMessageString refuses a name, key or id that is too long or holds
// control characters (an id travels in a header).
func CheckString(what, s string) error {
	if len(s) > MaxString {
		return fmt.Errorf("%w: %s is %d bytes; at most %d", errdefs.ErrInvalid, what, len(s), MaxString)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %s %q holds a control character", errdefs.ErrInvalid, what, s)
		}
	}
	return nil
}

// commandBody is the body of an engine command to a message partition.
// Which fields a kind needs: sub and unsub Sub; rej Sub and Correlation;
// end Process and Instance; exp Seq. A rej of a message the partition
// does not keep (Correlation.ReturnBy set) carries its Vars back.
type commandBody struct {
	Sub         *instance.Subscription `msgpack:"sub,omitempty"`
	Correlation *instance.Correlation  `msgpack:"correlation,omitempty"`
	Vars        map[string]any         `msgpack:"vars,omitempty"`
	Process     string                 `msgpack:"process,omitempty"`
	Instance    string                 `msgpack:"instance,omitempty"`
	Seq         uint64                 `msgpack:"seq,omitempty"`
}

// decodeCommand decodes and checks a command about sm's name and key.
func decodeCommand(sm streams.StoredMessage, data []byte) (*commandBody, error) {
	var c commandBody
	if err := streams.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	switch sm.Kind {
	case streams.MessageSubscribe, streams.MessageUnsubscribe, streams.MessageReject:
		s := c.Sub
		switch {
		case s == nil:
			return nil, errors.New("no subscription")
		case s.Name != sm.Name || s.Key != sm.Key:
			return nil, fmt.Errorf("subscription to %q/%q on the subject of %q/%q", s.Name, s.Key, sm.Name, sm.Key)
		case !checkpoint.ValidID(s.Instance) || s.Wait == "":
			return nil, errors.New("subscription without instance or wait")
		case s.ProcessID == "" && sm.Kind != streams.MessageReject:
			// A rejection may come from an instance whose record is gone.
			return nil, errors.New("subscription without a process")
		case sm.Kind == streams.MessageReject && (c.Correlation == nil || c.Correlation.Seq == 0):
			return nil, errors.New("rejection without a correlation")
		}
	case streams.MessageEnd:
		if c.Process == "" || !checkpoint.ValidID(c.Instance) {
			return nil, errors.New("end without process or instance")
		}
	case streams.MessageExpire:
		if c.Seq == 0 {
			return nil, errors.New("expiry without a message number")
		}
	}
	return &c, nil
}

// inbound is a message as a partition applies it.
type inbound struct {
	ID      string
	Vars    map[string]any
	TTL     time.Duration
	ReplyTo string
}

// decodeMessage decodes a published message. Publishers are untrusted:
// anything malformed is an error naming the problem, never a panic.
func decodeMessage(h nats.Header, data []byte, checkValue func(string, any) error) (*inbound, error) {
	m := &inbound{ID: h.Get(jetstream.MsgIDHeader), ReplyTo: h.Get(streams.MessageReplyHeader)}
	if m.ReplyTo != "" && !streams.ValidInbox(m.ReplyTo) {
		m.ReplyTo = ""
		return m, fmt.Errorf("header %s: %q is not an inbox (a subject under _INBOX)", streams.MessageReplyHeader, h.Get(streams.MessageReplyHeader))
	}
	if len(m.ID) > MaxString {
		return m, fmt.Errorf("message id is %d bytes; at most %d", len(m.ID), MaxString)
	}
	if ttl := h.Get(streams.MessageTTLHeader); ttl != "" {
		d, err := time.ParseDuration(ttl)
		if err != nil || d < 0 {
			return m, fmt.Errorf("header %s: %q is not a duration of 0 or more (e.g. 90s, 1h)", streams.MessageTTLHeader, ttl)
		}
		m.TTL = d
	}
	vars, err := DecodeVars(data)
	if err != nil {
		return m, err
	}
	if m.Vars, err = instance.NormalizeVars(vars); err != nil {
		return m, fmt.Errorf("variables: %w", err)
	}
	for name, v := range m.Vars {
		if err := checkValue(name, v); err != nil {
			return m, fmt.Errorf("variable %q: %w", name, err)
		}
	}
	return m, nil
}

// decodeVars reads a message body: empty or JSON null (no variables), a
// JSON object, or a map in the jetbpm codec.
func DecodeVars(data []byte) (map[string]any, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil
	}
	var vars map[string]any
	if streams.Enveloped(data) {
		if err := streams.Unmarshal(data, &vars); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		return vars, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber() // an integer stays an integer
	if err := dec.Decode(&vars); err != nil {
		return nil, fmt.Errorf("body is not a JSON object of variables: %w", err)
	}
	if dec.More() {
		return nil, errors.New("body holds more than one JSON value")
	}
	return vars, nil
}

// An Answer is a message partition's answer to a publish that asked
// for one (streams.MessageReplyHeader), JSON.
type Answer struct {
	ID       string  `json:"id,omitempty"`
	Error    string  `json:"error,omitempty"`
	Refusal  string  `json:"refusal,omitempty"` // "duplicate", "invalid", "tooLarge"
	Buffered bool    `json:"buffered,omitempty"`
	Offers   []Offer `json:"offers,omitempty"`
}

// An Offer is where a message went: the subscription Wait of instance
// Instance, or (Started) the instance it started.
type Offer struct {
	Instance    string `json:"instanceId"`
	Process     string `json:"processId"`
	Wait        string `json:"wait,omitempty"`
	Correlation string `json:"correlation"`
	Started     bool   `json:"started,omitempty"`
}
