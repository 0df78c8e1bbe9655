package checkpoint

import (
	"github.com/jetbpm/jetbpm/engine/instance"
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
