package messages

import (
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// replies receives the message partitions' answers to this engine's
// publishes on one subscription, <inbox>.*, and hands each to the call
// waiting for it, as nats.go's Request does: a subscription per publish
// would cost an interest in the server and a channel of the connection's
// SubChanLen slots each time (docs/performance.md, Messages). The zero
// value is ready: the subscription opens with the first publish.
type replies struct {
	mu      sync.Mutex
	sub     *nats.Subscription
	prefix  string
	waiting map[string]chan *nats.Msg
}

// expect returns a new reply subject under the engine's inbox and the
// channel its answer arrives on. done forgets the subject; the caller calls
// it however its wait ends, and an answer that comes later is dropped.
func (r *replies) expect(nc *nats.Conn) (subject string, answer <-chan *nats.Msg, done func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sub == nil || !r.sub.IsValid() {
		prefix := nc.NewInbox()
		sub, err := nc.Subscribe(prefix+".*", r.route)
		if err != nil {
			return "", nil, nil, err
		}
		r.sub, r.prefix, r.waiting = sub, prefix, map[string]chan *nats.Msg{}
	}
	id := nuid.Next()
	ch := make(chan *nats.Msg, 1)
	r.waiting[id] = ch
	return r.prefix + "." + id, ch, func() { r.forget(id) }, nil
}

// route hands an answer to the call waiting for it, if any still does.
func (r *replies) route(m *nats.Msg) {
	id := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	r.mu.Lock()
	ch, ok := r.waiting[id]
	delete(r.waiting, id)
	r.mu.Unlock()
	if ok {
		ch <- m // buffered, and only one answer is routed per id
	}
}

func (r *replies) forget(id string) {
	r.mu.Lock()
	delete(r.waiting, id)
	r.mu.Unlock()
}

// pending returns how many calls wait for an answer.
func (r *replies) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiting)
}

// close removes the subscription; a call still waiting sees no answer.
func (r *replies) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sub != nil {
		_ = r.sub.Unsubscribe()
		r.sub = nil
	}
}
