package correlation

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// Entry is the state of one message name and correlation key.
type Entry struct {
	Name string `msgpack:"name"`
	Key  string `msgpack:"key"`
	// Seq numbers the entry's messages and correlations. A new entry
	// starts it at the time of its first operation in nanoseconds, so the
	// numbers of an entry that was emptied, deleted and created again do
	// not repeat those of its earlier life (instances remember the
	// correlations they applied by number, and message-started instances
	// are named after one).
	Seq uint64 `msgpack:"seq"`
	// Subs are the open subscriptions, oldest first.
	Subs []instance.Subscription `msgpack:"subs,omitempty"`
	// Buffered are the messages kept for subscriptions that open later,
	// oldest first.
	Buffered []*Message `msgpack:"buffered,omitempty"`
	// Starts maps a process to the active instance a message with this
	// (non-empty) key started; no second one starts while it runs.
	Starts map[string]string `msgpack:"starts,omitempty"`
	// Closed are subscriptions that closed before they opened here (their
	// commands arrived out of order): the late opening is ignored.
	Closed []Closed `msgpack:"closed,omitempty"`
	// Returned are the rejections of messages the entry did not keep
	// (offered without a time to live) that it took back, until the
	// offer's return deadline: a second rejection of one changes nothing.
	Returned []Returned `msgpack:"returned,omitempty"`

	// Outbox holds the effects written with the entry and not yet known
	// to be published; OutboxBy names the engine session that wrote them.
	// Applied names the commands the entry has applied whose
	// acknowledgement is not known to have reached the server, so a
	// redelivered one is recognised. The engine keeps these three.
	Outbox   []Effect `msgpack:"outbox,omitempty"`
	OutboxBy string   `msgpack:"outboxBy,omitempty"`
	Applied  []string `msgpack:"applied,omitempty"`
}

// Message is a buffered message.
type Message struct {
	// Seq is the entry's number for the message; it names its expiry.
	Seq     uint64         `msgpack:"seq"`
	ID      string         `msgpack:"id,omitempty"`
	Vars    map[string]any `msgpack:"vars,omitempty"`
	Expires time.Time      `msgpack:"expires"`
	// Correlated are the deliveries of the message, one per process.
	Correlated []Delivery `msgpack:"correlated,omitempty"`
}

// Delivery is a message gone to a process: offered to a subscription of
// instance Instance (wait Wait), or starting instance Instance (no wait),
// as correlation number Seq.
type Delivery struct {
	Process  string `msgpack:"process"`
	Instance string `msgpack:"instance"`
	Wait     string `msgpack:"wait,omitempty"`
	Seq      uint64 `msgpack:"seq"`
}

// Closed is a subscription whose closing arrived before its opening.
type Closed struct {
	Instance string    `msgpack:"instance"`
	Wait     string    `msgpack:"wait"`
	Until    time.Time `msgpack:"until"`
}

// Returned is a rejected offer of a message the entry did not keep: the
// correlation Seq, rejected before Until (the offer's ReturnBy), and where
// the message went next: correlation Next to the subscription Wait of
// Instance, or nowhere (Next 0: no other subscription of the process was
// open, or the rejection did not name the process, and the message is
// gone).
type Returned struct {
	Seq      uint64    `msgpack:"seq"`
	Until    time.Time `msgpack:"until"`
	Next     uint64    `msgpack:"next,omitempty"`
	Instance string    `msgpack:"instance,omitempty"`
	Wait     string    `msgpack:"wait,omitempty"`
}

// ReturnWindow is how long after offering a message it does not keep an
// entry takes a rejection of the offer as handing the message back for
// another subscription of the process. An instance rejects an offer when
// it applies it, which takes milliseconds, or the time its partition is
// down; a later rejection lets the message go.
const ReturnWindow = 10 * time.Minute

// ClosedRetention is how long an entry remembers a subscription that closed
// before it opened. Commands reach an entry out of order only when one is
// redelivered (a node died holding it, or its write failed), which takes
// the consumer's ack wait and a failover: seconds to a minute.
const ClosedRetention = 10 * time.Minute

// Publish is a message to publish.
type Publish struct {
	// ID, if set, refuses a second message with this id while this one is
	// buffered.
	ID   string
	Vars map[string]any
	// TTL > 0 buffers the message that long.
	TTL time.Duration
}

// StartEvent is a message start event of the latest version of a process
// (the definitions' index of message start events).
type StartEvent struct {
	Process string `msgpack:"process"`
	Version int    `msgpack:"version"`
	Node    string `msgpack:"node"`
}

// Offer is where an operation sent a message: to the subscription Wait of
// Instance, or (Started) to the new instance Instance.
type Offer struct {
	Instance    string
	Wait        string
	Process     string
	Correlation instance.Correlation
	Started     bool
}

// ErrDuplicate refuses a message whose id is buffered already.
var ErrDuplicate = errors.New("a message with this id is buffered already")

// Idle reports whether the entry holds nothing: once its outbox is
// published it can be deleted.
func (e *Entry) Idle() bool {
	return len(e.Subs) == 0 && len(e.Buffered) == 0 && len(e.Starts) == 0 && len(e.Closed) == 0 && len(e.Returned) == 0
}

// Publish offers message m to the subscriptions and message start events
// (starts, the latest versions' message start events of this name) and
// buffers it if it has a time to live. It returns the offers, or
// ErrDuplicate (changing nothing) when a buffered message has m's id.
func (e *Entry) Publish(m Publish, starts []StartEvent, now time.Time) ([]Offer, error) {
	e.prune(now)
	if m.ID != "" && slices.ContainsFunc(e.Buffered, func(b *Message) bool { return b.ID == m.ID }) {
		return nil, fmt.Errorf("message %q with key %q: id %q: %w", e.Name, e.Key, m.ID, ErrDuplicate)
	}
	msg := &Message{Seq: e.next(now), ID: m.ID, Vars: m.Vars}
	if m.TTL > 0 {
		msg.Expires = now.Add(m.TTL)
	}
	var offers []Offer
	for i := 0; i < len(e.Subs); i++ {
		s := e.Subs[i]
		if msg.reached(s.ProcessID) {
			continue
		}
		offers = append(offers, e.offer(msg, s, now))
		if !s.Repeat {
			e.Subs = slices.Delete(e.Subs, i, i+1)
			i--
		}
	}
	for _, se := range starts {
		if o, ok := e.start(msg, se, now); ok {
			offers = append(offers, o)
		}
	}
	if m.TTL > 0 {
		e.Buffered = append(e.Buffered, msg)
		e.Outbox = append(e.Outbox, Effect{Kind: ScheduleExpiry, Seq: msg.Seq, MessageID: msg.ID, Expires: msg.Expires, At: now})
	}
	return offers, nil
}

// Subscribe opens subscription s: the oldest buffered message not yet gone
// to s's process is offered to it at once, and s is stored only if no
// message was, or it repeats.
func (e *Entry) Subscribe(s instance.Subscription, now time.Time) []Offer {
	e.prune(now)
	if i := slices.IndexFunc(e.Closed, func(c Closed) bool { return c.Instance == s.Instance && c.Wait == s.Wait }); i >= 0 {
		e.Closed = slices.Delete(e.Closed, i, i+1)
		return nil
	}
	if e.sub(s.Instance, s.Wait) >= 0 {
		return nil // a redelivered opening
	}
	if e.reachedWait(s.Instance, s.Wait) {
		// A late copy of an opening whose message came already: an
		// instance's outbox published again after a crash, which the
		// stream's de-duplication no longer recognises.
		return nil
	}
	var offers []Offer
	for _, msg := range e.Buffered {
		if !msg.reached(s.ProcessID) {
			offers = append(offers, e.offer(msg, s, now))
			break
		}
	}
	if len(offers) == 0 || s.Repeat {
		e.Subs = append(e.Subs, s)
	}
	return offers
}

// Unsubscribe closes the subscription of wait in inst. One not open yet
// is remembered as closed (ClosedRetention), so its late opening is
// ignored.
func (e *Entry) Unsubscribe(inst, wait string, now time.Time) {
	e.prune(now)
	if i := e.sub(inst, wait); i >= 0 {
		e.Subs = slices.Delete(e.Subs, i, i+1)
		return
	}
	if !slices.ContainsFunc(e.Closed, func(c Closed) bool { return c.Instance == inst && c.Wait == wait }) {
		e.Closed = append(e.Closed, Closed{Instance: inst, Wait: wait, Until: now.Add(ClosedRetention)})
	}
}

// Reject takes back correlation c, which s's instance could not take (its
// wait was gone): the subscription is closed, s's process counts as not
// reached, and the message goes to the next subscription of that process.
// With none, a message still buffered stays buffered for the rest of its
// time to live; one the entry did not keep (vars are its variables, handed
// back by the instance) is gone. A message not kept is offered again only
// if the rejection comes before the offer's c.ReturnBy and names s's
// process. A rejection seen before changes nothing.
func (e *Entry) Reject(s instance.Subscription, c instance.Correlation, vars map[string]any, now time.Time) []Offer {
	e.prune(now)
	if i := e.sub(s.Instance, s.Wait); i >= 0 {
		e.Subs = slices.Delete(e.Subs, i, i+1)
	}
	for _, msg := range e.Buffered {
		i := slices.IndexFunc(msg.Correlated, func(d Delivery) bool { return d.Seq == c.Seq && d.Instance == s.Instance })
		if i < 0 {
			continue
		}
		process := msg.Correlated[i].Process
		msg.Correlated = slices.Delete(msg.Correlated, i, i+1)
		s.ProcessID = process // the instance that rejects may be gone
		e.Outbox = append(e.Outbox, Effect{Kind: Rejected, Sub: &s, Correlation: c, MessageID: msg.ID, At: now})
		for j, next := range e.Subs {
			if next.ProcessID != process {
				continue
			}
			o := e.offer(msg, next, now)
			if !next.Repeat {
				e.Subs = slices.Delete(e.Subs, j, j+1)
			}
			return []Offer{o}
		}
		return nil
	}
	return e.takeBack(s, c, vars, now)
}

// takeBack takes back correlation c of a message the entry did not keep.
func (e *Entry) takeBack(s instance.Subscription, c instance.Correlation, vars map[string]any, now time.Time) []Offer {
	if c.ReturnBy.IsZero() || slices.ContainsFunc(e.Returned, func(r Returned) bool { return r.Seq == c.Seq }) {
		return nil // a buffered message that expired since, or a repeated rejection
	}
	e.Outbox = append(e.Outbox, Effect{Kind: Rejected, Sub: &s, Correlation: c, MessageID: c.MessageID, At: now})
	if !now.Before(c.ReturnBy) {
		return nil // too late to tell from a repeated rejection: gone
	}
	// Remembered, so a repeated rejection changes nothing and whoever
	// waits for the message to be taken (CorrelateMessage) learns where
	// it went, or that it is gone.
	r := Returned{Seq: c.Seq, Until: c.ReturnBy}
	var offers []Offer
	for j, next := range e.Subs {
		if s.ProcessID == "" || next.ProcessID != s.ProcessID {
			continue // an unknown process (the instance's record is gone): the message is gone
		}
		o := e.offer(&Message{ID: c.MessageID, Vars: vars}, next, now)
		if !next.Repeat {
			e.Subs = slices.Delete(e.Subs, j, j+1)
		}
		r.Next, r.Instance, r.Wait = o.Correlation.Seq, o.Instance, o.Wait
		offers = []Offer{o}
		break
	}
	e.Returned = append(e.Returned, r)
	return offers
}

// StartEnded records that inst, which a message with this key started for
// process, has ended: the oldest buffered message not yet gone to process
// may start the next instance (starts as for Publish).
func (e *Entry) StartEnded(process, inst string, starts []StartEvent, now time.Time) []Offer {
	e.prune(now)
	if e.Starts[process] != inst {
		return nil
	}
	delete(e.Starts, process)
	if len(e.Starts) == 0 {
		e.Starts = nil
	}
	i := slices.IndexFunc(starts, func(se StartEvent) bool { return se.Process == process })
	if i < 0 {
		return nil
	}
	for _, msg := range e.Buffered {
		if o, ok := e.start(msg, starts[i], now); ok {
			return []Offer{o}
		}
	}
	return nil
}

// Expire drops buffered message seq, whose time to live ended. One gone
// already changes nothing.
func (e *Entry) Expire(seq uint64, now time.Time) {
	e.prune(now)
	if i := slices.IndexFunc(e.Buffered, func(m *Message) bool { return m.Seq == seq }); i >= 0 {
		e.expire(i, now)
	}
}

// offer sends msg to subscription s as the next correlation.
func (e *Entry) offer(msg *Message, s instance.Subscription, now time.Time) Offer {
	c := instance.Correlation{Name: e.Name, Key: e.Key, Seq: e.next(now), MessageID: msg.ID}
	if msg.Expires.IsZero() {
		// Not kept: a rejection brings the message back.
		c.ReturnBy = now.Add(ReturnWindow)
	}
	msg.Correlated = append(msg.Correlated, Delivery{Process: s.ProcessID, Instance: s.Instance, Wait: s.Wait, Seq: c.Seq})
	e.Outbox = append(e.Outbox, Effect{Kind: Correlate, Sub: &s, Correlation: c, MessageID: msg.ID, Vars: msg.Vars, At: now})
	return Offer{Instance: s.Instance, Wait: s.Wait, Process: s.ProcessID, Correlation: c}
}

// start starts an instance of se's process with msg, unless msg went to
// that process already or, for a non-empty key, a message with this key
// started an instance of it that is still active.
func (e *Entry) start(msg *Message, se StartEvent, now time.Time) (Offer, bool) {
	if msg.reached(se.Process) || e.Key != "" && e.Starts[se.Process] != "" {
		return Offer{}, false
	}
	c := instance.Correlation{Name: e.Name, Key: e.Key, Seq: e.next(now), MessageID: msg.ID}
	id := StartID(e.Name, e.Key, c.Seq, se.Process)
	if e.Key != "" {
		if e.Starts == nil {
			e.Starts = map[string]string{}
		}
		e.Starts[se.Process] = id
	}
	msg.Correlated = append(msg.Correlated, Delivery{Process: se.Process, Instance: id, Seq: c.Seq})
	req := &StartRequest{Instance: id, Event: se}
	if bk, ok := strings.CutPrefix(e.Key, instance.BusinessKeyPrefix); ok {
		req.BusinessKey = bk
	}
	e.Outbox = append(e.Outbox, Effect{Kind: Start, Start: req, Correlation: c, MessageID: msg.ID, Vars: msg.Vars, At: now})
	return Offer{Instance: id, Process: se.Process, Correlation: c, Started: true}, true
}

// prune drops what expired by now: buffered messages (their expiry
// command may still come; it finds nothing), remembered closings and
// rejections taken back.
func (e *Entry) prune(now time.Time) {
	for i := 0; i < len(e.Buffered); i++ {
		if !e.Buffered[i].Expires.After(now) {
			e.expire(i, now)
			i--
		}
	}
	e.Closed = slices.DeleteFunc(e.Closed, func(c Closed) bool { return !c.Until.After(now) })
	if len(e.Closed) == 0 {
		e.Closed = nil
	}
	e.Returned = slices.DeleteFunc(e.Returned, func(r Returned) bool { return !r.Until.After(now) })
	if len(e.Returned) == 0 {
		e.Returned = nil
	}
}

func (e *Entry) expire(i int, now time.Time) {
	m := e.Buffered[i]
	e.Buffered = slices.Delete(e.Buffered, i, i+1)
	if len(e.Buffered) == 0 {
		e.Buffered = nil
	}
	e.Outbox = append(e.Outbox, Effect{Kind: Expired, Seq: m.Seq, MessageID: m.ID, Expires: m.Expires, At: now})
}

// sub returns the index of the subscription of wait in inst, or -1.
func (e *Entry) sub(inst, wait string) int {
	return slices.IndexFunc(e.Subs, func(s instance.Subscription) bool { return s.Instance == inst && s.Wait == wait })
}

// reachedWait reports whether a buffered message went to wait of inst.
func (e *Entry) reachedWait(inst, wait string) bool {
	return slices.ContainsFunc(e.Buffered, func(m *Message) bool {
		return slices.ContainsFunc(m.Correlated, func(d Delivery) bool { return d.Instance == inst && d.Wait == wait })
	})
}

// next returns the entry's next sequence number.
func (e *Entry) next(now time.Time) uint64 {
	if e.Seq == 0 {
		e.Seq = uint64(max(now.UnixNano(), 0))
	}
	e.Seq++
	return e.Seq
}

// reached reports whether the message went to process already.
func (m *Message) reached(process string) bool {
	return slices.ContainsFunc(m.Correlated, func(d Delivery) bool { return d.Process == process })
}

// StartID names the instance that correlation seq of entry (name, key)
// starts for process: a republished start creates nothing twice.
func StartID(name, key string, seq uint64, process string) string {
	h := sha256.New()
	for _, part := range []string{name, key, strconv.FormatUint(seq, 10), process} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "m" + hex.EncodeToString(h.Sum(nil))[:32]
}
