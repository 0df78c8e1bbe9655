package instance

import (
	"strconv"
	"time"
)

// Subscription is an open message wait as the message partitions see it:
// a catch of message Name under correlation key Key, by wait Wait of an
// instance of ProcessID. Key is the correlation key's value as a string
// (numbers in their shortest decimal form); a Camunda 7 catch without a
// key subscribes under BusinessKeyPrefix + the instance's business key.
// Repeat marks a non-interrupting boundary, which stays open after each
// correlation.
type Subscription struct {
	Name      string    `msgpack:"name" json:"name"`
	Key       string    `msgpack:"key" json:"key"`
	Instance  string    `msgpack:"instance" json:"instanceId"`
	ProcessID string    `msgpack:"process" json:"processId"`
	Wait      string    `msgpack:"wait" json:"wait"`
	Repeat    bool      `msgpack:"repeat,omitempty" json:"repeat,omitempty"`
	Opened    time.Time `msgpack:"opened" json:"opened"`
}

// BusinessKeyPrefix is prepended to a business key to make the correlation
// key a Camunda 7 catch subscribes under, so "approve" published with
// business key B-4 reaches the instance started with business key B-4.
const BusinessKeyPrefix = "bk:"

// Correlation identifies one delivery of a message to an instance: the
// message partition entry it came from (name and key), the entry's
// sequence number for this correlation, and the message's id. An instance
// applies a correlation once.
type Correlation struct {
	Name      string `msgpack:"name" json:"name"`
	Key       string `msgpack:"key" json:"key"`
	Seq       uint64 `msgpack:"seq" json:"seq"`
	MessageID string `msgpack:"id,omitempty" json:"messageId,omitempty"`
}

// OutMessage is a message an instance publishes (a declarative throw).
type OutMessage struct {
	Name string         `msgpack:"name"`
	Key  string         `msgpack:"key,omitempty"`
	Vars map[string]any `msgpack:"vars,omitempty"`
	TTL  time.Duration  `msgpack:"ttl,omitempty"`
	ID   string         `msgpack:"id,omitempty"`
}

// ID names the correlation for de-duplication (State.Correlations): the
// entry and sequence number given by a message partition, or the message
// id of a message sent straight to an instance (Seq 0).
func (c *Correlation) ID() string {
	if c.Seq == 0 {
		return "msg:" + c.MessageID
	}
	return c.Name + "/" + c.Key + "/" + strconv.FormatUint(c.Seq, 10)
}
