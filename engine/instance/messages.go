package instance

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
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
	// ReturnBy is set on the offer of a message its partition does not
	// keep (published without a time to live): an instance that rejects
	// the correlation hands the message's variables back with the
	// rejection, and a rejection that reaches the partition before
	// ReturnBy has the message offered again (docs/messages.md §4).
	ReturnBy time.Time `msgpack:"returnBy,omitempty" json:"returnBy,omitzero"`
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

// A message catch — an intermediate catch event, a receive task, a message
// boundary event, a branch of an event-based gateway — parks on a message
// wait. Its subscription (the message name and correlation key, evaluated
// when the wait opens) goes to the message partitions as a Subscribe
// effect; the partition answers with a Correlate event naming the wait, or
// a MessageTo event reaches the instance straight (docs/messages.md §4).
// Every way the wait can close without its message — the element
// completes, a boundary interrupts it, the instance is cancelled, an
// incident is abandoned, another branch of an event-based gateway wins —
// sends Unsubscribe (unschedule in timers.go).

// subscription evaluates the message n catches over vars: its name (a
// name expression must give a non-empty string) and its correlation key.
// The key must be a non-empty string or a number; a catch without one
// subscribes under the instance's business key, and with no business key
// either it has no key ("") and no partition ever hears of it: it is
// reachable by MessageTo only.
func (r *runner) subscription(n *model.Node, vars map[string]any) (*Subscription, error) {
	m := n.Message
	if m == nil {
		r.bug("node %q catches no message", n.ID)
	}
	name, err := r.messageName(m, vars)
	if err != nil {
		return nil, err
	}
	sub := &Subscription{Name: name, Instance: r.s.ID, ProcessID: r.s.ProcessID}
	switch e := m.KeyCompiled(); {
	case e != nil:
		v, err := e.Eval(vars)
		if err != nil {
			return nil, fmt.Errorf("message %q: correlation key: %w", name, err)
		}
		if sub.Key, err = correlationKey(v); err != nil {
			return nil, fmt.Errorf("message %q: correlation key %q: %w", name, m.CorrelationKey, err)
		}
		if sub.Key == "" {
			return nil, fmt.Errorf("message %q: correlation key %q is an empty string", name, m.CorrelationKey)
		}
	case r.s.BusinessKey != "":
		sub.Key = BusinessKeyPrefix + r.s.BusinessKey
	}
	return sub, nil
}

// messageName returns the message's literal name or evaluates its name
// expression.
func (r *runner) messageName(m *model.Message, vars map[string]any) (string, error) {
	e := m.NameCompiled()
	if e == nil {
		return m.Name, nil
	}
	v, err := e.Eval(vars)
	if err != nil {
		return "", fmt.Errorf("message name: %w", err)
	}
	name, ok := v.(string)
	if !ok || name == "" {
		return "", fmt.Errorf("message name %q is %s, want a non-empty string", m.NameExpr, describe(v))
	}
	return name, nil
}

// correlationKey turns a correlation key's value into the key a message
// is published and subscribed under: a string as it is, a number in its
// shortest decimal form (an integer without ".0", so 17 and 17.0 are both
// "17"). Anything else is an error.
func correlationKey(v any) (string, error) {
	n, err := Normalize(v)
	if err != nil {
		return "", err
	}
	switch x := n.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		if x == 0 {
			return "0", nil // not "-0"
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("is %s, want a string or a number", describe(n))
}

// describe names a value and its type for an error message.
func describe(v any) string {
	if n, err := Normalize(v); err == nil {
		v = n // int, not int64, is an expression detail
	}
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T %v", v, v)
}

// subscribe parks on a message wait for sub: wait id is node's wait of
// this activation, owned by track t. A subscription with a key is
// announced to its message partition (Subscribe); one without is
// reachable by MessageTo only.
func (r *runner) subscribe(t *Track, node string, activation uint64, sub *Subscription) *Wait {
	w := &Wait{ID: r.waitID(node, activation), Kind: MessageWait, Track: t.ID, Node: node, Armed: r.env.Now, Sub: sub}
	sub.Wait, sub.Opened = w.ID, r.env.Now
	r.s.Waits = append(r.s.Waits, w)
	if sub.Key != "" {
		c := *sub
		r.s.Outbox = append(r.s.Outbox, Effect{ID: "sub:" + w.ID, Kind: Subscribe, Wait: w.ID, Sub: &c})
	}
	return w
}

// unsubscribe closes message wait w's subscription at its partition: a
// Subscribe of this same step is taken back from the outbox instead,
// and a wait without a key was never subscribed.
func (r *runner) unsubscribe(w *Wait) {
	if w.Sub == nil || w.Sub.Key == "" {
		return
	}
	mine := r.s.Outbox[r.outboxBase:]
	n := len(mine)
	mine = slices.DeleteFunc(mine, func(e Effect) bool { return e.Kind == Subscribe && e.Wait == w.ID })
	r.s.Outbox = r.s.Outbox[:r.outboxBase+len(mine)]
	if len(mine) < n {
		return
	}
	c := *w.Sub
	r.s.Outbox = append(r.s.Outbox, Effect{ID: "unsub:" + w.ID, Kind: Unsubscribe, Wait: w.ID, Sub: &c})
}

// catchMessage parks t on a message catch event's subscription.
func (r *runner) catchMessage(t *Track, n *model.Node) {
	sub, err := r.subscription(n, r.visible(t))
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	t.State = Waiting
	r.subscribe(t, n.ID, t.Activation, sub)
}

// receive parks t on a receive task: its input mappings, then its
// subscription (evaluated over them), then its boundary events.
func (r *runner) receive(t *Track, n *model.Node) {
	locals := t.Locals // its inputs, evaluated as it was entered
	sub, err := r.subscription(n, r.visibleWith(t, locals))
	if err != nil {
		r.fault(t, n, incidents.CauseExpression, err.Error())
		return
	}
	t.State, t.Locals = Waiting, locals
	r.subscribe(t, n.ID, t.Activation, sub)
	r.armBoundaries(t, n)
}
