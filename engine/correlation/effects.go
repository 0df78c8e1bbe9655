package correlation

import (
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// EffectKind names something the engine must do after writing an entry.
type EffectKind string

// Effect kinds. Publishing any of them again is harmless: a correlation or
// a start carries its number, which the instance applies once; a schedule
// replaces itself; a fact carries its id.
const (
	// Correlate sends the message (Vars) to subscription Sub as
	// correlation Correlation: a correlate event for the subscribed
	// instance.
	Correlate EffectKind = "correlate"
	// Start starts instance Start.Instance with the message (Vars) as
	// correlation Correlation.
	Start EffectKind = "start"
	// ScheduleExpiry schedules the expiry of buffered message Seq at
	// Expires.
	ScheduleExpiry EffectKind = "schedule"
	// Expired says buffered message Seq expired; Rejected says Sub's
	// instance rejected Correlation. Both are facts only.
	Expired  EffectKind = "expired"
	Rejected EffectKind = "rejected"
)

// Effect is one entry of an entry's outbox.
type Effect struct {
	Kind        EffectKind             `msgpack:"kind"`
	Sub         *instance.Subscription `msgpack:"sub,omitempty"`
	Start       *StartRequest          `msgpack:"start,omitempty"`
	Correlation instance.Correlation   `msgpack:"correlation"`
	// MessageID is the message's id; Seq the entry's number for a
	// buffered message (ScheduleExpiry, Expired).
	MessageID string         `msgpack:"id,omitempty"`
	Seq       uint64         `msgpack:"seq,omitempty"`
	Vars      map[string]any `msgpack:"vars,omitempty"`
	Expires   time.Time      `msgpack:"expires,omitempty"`
	// At is when the operation that made the effect ran.
	At time.Time `msgpack:"at"`
}

// StartRequest is an instance a message starts at a message start event.
type StartRequest struct {
	Instance string     `msgpack:"instance"`
	Event    StartEvent `msgpack:"event"`
	// BusinessKey is set when the message was published for a business
	// key (a key with instance.BusinessKeyPrefix).
	BusinessKey string `msgpack:"businessKey,omitempty"`
}
