package checkpoint

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// Envelope is the body of every message on the events stream: a start
// request or an event, addressed to one instance.
type Envelope struct {
	Instance string          `msgpack:"instance"`
	Start    *StartRequest   `msgpack:"start,omitempty"`
	Event    *instance.Event `msgpack:"event,omitempty"`
}

// StartRequest asks the partition owner to create an instance.
type StartRequest struct {
	ProcessID string         `msgpack:"process"`
	Version   int            `msgpack:"version"`
	Vars      map[string]any `msgpack:"vars,omitempty"`
	// Parent is set when a call activity starts the instance.
	Parent *instance.ParentRef `msgpack:"parent,omitempty"`
	// Node is the start event to start at: a message start event when a
	// message starts the instance (Message), else "" (the none start event).
	Node        string                `msgpack:"node,omitempty"`
	BusinessKey string                `msgpack:"businessKey,omitempty"`
	Message     *instance.Correlation `msgpack:"message,omitempty"`
}

// EventMsg is env as an event for its instance on the instance's own
// partition of partitions: effects that reach another instance (a child, a
// parent, a correlated message) travel as its events, idempotent by msgID
// (the stream's de-duplication) and by the receiver's waits.
func EventMsg(env Envelope, msgID string, partitions int) (*nats.Msg, error) {
	body, err := streams.Marshal(env)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(streams.EventSubject(streams.PartitionOf(env.Instance, partitions), env.Instance))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, msgID)
	return m, nil
}

// DecodeStart decodes a start envelope received from another engine node
// (a routed start): a start request for one valid instance id, and no
// event.
func DecodeStart(data []byte) (Envelope, error) {
	var env Envelope
	if err := streams.Unmarshal(data, &env); err != nil {
		return Envelope{}, fmt.Errorf("start envelope: %w", err)
	}
	switch {
	case env.Start == nil:
		return Envelope{}, errors.New("start envelope: no start request")
	case env.Event != nil:
		return Envelope{}, errors.New("start envelope: holds an event as well as a start")
	case !ValidID(env.Instance):
		return Envelope{}, fmt.Errorf("start envelope: instance id %q: use 1-128 letters, digits, '-' or '_'", env.Instance)
	case env.Start.ProcessID == "" || env.Start.Version < 1:
		return Envelope{}, fmt.Errorf("start envelope: process %q version %d: want a process id and a version from 1", env.Start.ProcessID, env.Start.Version)
	}
	return env, nil
}
