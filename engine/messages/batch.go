package messages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/streams"
)

// A message partition's batch (docs/messages.md §5): decoded and grouped
// by entry, each entry loaded once, its commands applied in order, written
// once; then the effects published, the commands acknowledged and the
// acknowledgements confirmed, the publishers answered, and the entries
// left with nothing deleted.

// maxPrefetch bounds the entry reads a batch has in flight at once.
const maxPrefetch = 32

// command is one delivered message or command, decoded.
type command struct {
	msg jetstream.Msg
	sm  streams.StoredMessage
	// ref names the delivery's stream and sequence (Entry.Applied).
	ref string
	cmd *commandBody // a command's body
	in  *inbound     // a message's
	// answer is what a publisher that asked is told, once committed.
	answer *Answer
	// skipped: the entry had applied it already.
	skipped bool
	// redelivered: the server delivered it before (NumDelivered > 1).
	redelivered bool
	// gone: a redelivery of a command that was applied and acknowledged
	// while this copy was on its way; it is neither applied nor
	// acknowledged again.
	gone bool
}

// entryWork is the work of one batch for one entry.
type entryWork struct {
	key, name, mkey string
	cmds            []*command
	entry           *correlation.Entry
	rev             uint64
	write           jetstream.PubAckFuture
	err             error
	abandoned       bool
	// unconfirmed: an acknowledgement of one of its commands may not
	// have reached the server.
	unconfirmed atomic.Bool
	stats       stats
	// fetched is the stored entry, read ahead (prefetchEntries).
	fetched *fetchedEntry
}

// fetchedEntry is an entry read ahead of its batch's step.
type fetchedEntry struct {
	entry *correlation.Entry
	rev   uint64
	err   error
}

// process applies a batch: per entry, one load, the commands in order, one
// write; then the effects, the confirmed acknowledgements, the answers.
func (p *Partition) process(ctx context.Context, batch []jetstream.Msg) {
	works := p.group(batch)
	p.prefetchEntries(ctx, works)
	starts := p.startIndex(ctx, works)
	for _, w := range works {
		p.apply(ctx, w, starts)
	}
	for _, w := range works {
		p.awaitWrite(ctx, w)
	}
	for _, w := range works {
		if w.err == nil && w.write != nil && p.crashPoint(w.key) {
			w.abandoned = true
			p.cache.Drop(w.key)
			p.cfg.Pub.NewSession()
			continue
		}
		if w.err == nil && w.entry != nil && len(w.entry.Outbox) > 0 {
			w.err = p.publishEntry(ctx, w.entry)
		}
	}
	p.sync(ctx, works)
	p.settle(ctx, works)
}

// sync makes the batch's entries and effects durable before its commands
// are acknowledged (and so gone) and its publishers answered; if it
// cannot, the commands are redelivered.
func (p *Partition) sync(ctx context.Context, works []*entryWork) {
	committed := false
	for _, w := range works {
		committed = committed || !w.abandoned && w.err == nil
	}
	if !committed {
		return
	}
	if err := p.cfg.Sync.Sync(ctx); err != nil {
		for _, w := range works {
			if !w.abandoned && w.err == nil {
				w.err = err
			}
		}
	}
}

// group decodes the batch and groups it by entry; a malformed delivery is
// refused (terminated, answered if it asked) and dropped.
func (p *Partition) group(batch []jetstream.Msg) []*entryWork {
	byKey := map[string]*entryWork{}
	var out []*entryWork
	for _, m := range batch {
		c, err := p.decode(m)
		if err != nil {
			p.log.Warn("message refused", "subject", m.Subject(), "reason", err.Error())
			if c != nil && c.in != nil && c.in.ReplyTo != "" {
				p.answer(c.in.ReplyTo, &Answer{ID: c.in.ID, Error: "message refused: " + err.Error(), Refusal: "invalid"})
			}
			_ = m.Term()
			continue
		}
		key := streams.MessageEntryKey(c.sm.Name, c.sm.Key)
		w := byKey[key]
		if w == nil {
			w = &entryWork{key: key, name: c.sm.Name, mkey: c.sm.Key}
			byKey[key] = w
			out = append(out, w)
		}
		w.cmds = append(w.cmds, c)
	}
	return out
}

func (p *Partition) decode(m jetstream.Msg) (*command, error) {
	sm, err := streams.ParseStoredMessage(m.Subject())
	if err != nil {
		return nil, err
	}
	if sm.Partition != p.n {
		return nil, fmt.Errorf("delivered to message partition %d", p.n)
	}
	meta, err := m.Metadata()
	if err != nil {
		return nil, fmt.Errorf("no delivery metadata: %w", err)
	}
	c := &command{msg: m, sm: sm, redelivered: meta.NumDelivered > 1}
	if sm.Kind == streams.MessagePublish {
		c.ref = "m" + strconv.FormatUint(meta.Sequence.Stream, 10)
		c.in, err = decodeMessage(m.Headers(), m.Data(), p.cfg.CheckValue)
		return c, err
	}
	c.ref = "c" + strconv.FormatUint(meta.Sequence.Stream, 10)
	c.cmd, err = decodeCommand(sm, m.Data())
	return c, err
}

// prefetchEntries reads, concurrently, the entries of the batch that are
// not in the cache, so a batch of many names and keys costs one round trip
// to the bucket rather than one per entry. The write still compares and
// sets, so a read a moment early is as safe as one made in the step.
func (p *Partition) prefetchEntries(ctx context.Context, works []*entryWork) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxPrefetch)
	for _, w := range works {
		if _, ok := p.cache.Get(w.key); ok {
			continue
		}
		f := &fetchedEntry{}
		w.fetched = f
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f.entry, f.rev, f.err = p.store.get(ctx, w.key)
		})
	}
	wg.Wait()
}

// startIndex reads the message start events of the names the batch
// publishes messages to or ends message-started instances of.
func (p *Partition) startIndex(ctx context.Context, works []*entryWork) map[string][]correlation.StartEvent {
	out := map[string][]correlation.StartEvent{}
	for _, w := range works {
		if _, done := out[w.name]; done || !slices.ContainsFunc(w.cmds, func(c *command) bool {
			return c.sm.Kind == streams.MessagePublish || c.sm.Kind == streams.MessageEnd
		}) {
			continue
		}
		starts, _, err := p.cfg.Defs.StartIndex(ctx, deploy.MessageStarts, w.name)
		if err != nil {
			w.err = err
			continue
		}
		out[w.name] = starts
	}
	return out
}

// apply loads w's entry, applies its commands and sends the write.
func (p *Partition) apply(ctx context.Context, w *entryWork, starts map[string][]correlation.StartEvent) {
	if w.err != nil {
		return
	}
	e, rev, err := p.load(ctx, w)
	if err != nil {
		w.err = err
		return
	}
	if e == nil {
		e = &correlation.Entry{Name: w.name, Key: w.mkey}
	}
	if err := p.markGone(ctx, w, e); err != nil {
		w.err = err
		return
	}
	base, err := streams.Marshal(e)
	if err != nil {
		w.err = err
		return
	}
	applied := p.applyAll(e, w, starts[w.name])
	if applied == 0 {
		return // every command was applied before: only acknowledgements are due
	}
	e.OutboxBy = p.cfg.Pub.Session()
	msg, err := p.store.write(w.key, e, rev)
	if err == nil && len(msg.Data) > p.cfg.MaxEntryBytes {
		e, msg, err = p.oneByOne(w, base, rev, starts[w.name])
	}
	if err != nil {
		w.err = err
		return
	}
	w.entry, w.rev = e, rev
	if w.write, err = p.cfg.Pub.JetStream().PublishMsgAsync(msg); err != nil {
		w.err = err
	}
}

// markGone marks the redelivered commands of w that e does not name as
// applied and that are no longer in their stream: a copy delivered again
// (its ack wait ran out under load) while the first was being applied,
// acknowledged and pruned from e.Applied. Applying it again would apply a
// command twice. Only redeliveries are looked up, so the common batch
// costs no round trip.
func (p *Partition) markGone(ctx context.Context, w *entryWork, e *correlation.Entry) error {
	for _, c := range w.cmds {
		if !c.redelivered || slices.Contains(e.Applied, c.ref) {
			continue
		}
		still, err := p.unacknowledged(ctx, []string{c.ref})
		if err != nil {
			return err
		}
		c.gone = len(still) == 0
	}
	return nil
}

// applyAll applies w's commands to e and returns how many it applied.
func (p *Partition) applyAll(e *correlation.Entry, w *entryWork, starts []correlation.StartEvent) int {
	now := p.cfg.Now()
	applied := 0
	for _, c := range w.cmds {
		if c.gone || slices.Contains(e.Applied, c.ref) {
			c.skipped = true
			continue
		}
		p.applyOne(e, c, starts, now, &w.stats)
		e.Applied = append(e.Applied, c.ref)
		applied++
	}
	return applied
}

// applyOne applies one command to e.
func (p *Partition) applyOne(e *correlation.Entry, c *command, starts []correlation.StartEvent, now time.Time, st *stats) {
	switch c.sm.Kind {
	case streams.MessagePublish:
		in := c.in
		offers, err := e.Publish(correlation.Publish{ID: in.ID, Vars: in.Vars, TTL: in.TTL}, starts, now)
		c.answer = &Answer{ID: in.ID}
		if err != nil {
			c.answer.Error, c.answer.Refusal = err.Error(), "duplicate"
			st.refused++
			p.log.Info("message refused", "name", e.Name, "key", e.Key, "id", in.ID, "reason", err.Error())
			return
		}
		c.answer.Buffered = in.TTL > 0
		c.answer.Offers = answerOffers(offers)
		switch {
		case len(offers) > 0:
			st.correlated++
		case in.TTL > 0:
			st.buffered++
		default:
			st.dropped++
		}
	case streams.MessageSubscribe:
		e.Subscribe(*c.cmd.Sub, now)
	case streams.MessageUnsubscribe:
		e.Unsubscribe(c.cmd.Sub.Instance, c.cmd.Sub.Wait, now)
	case streams.MessageReject:
		e.Reject(*c.cmd.Sub, *c.cmd.Correlation, c.cmd.Vars, now)
	case streams.MessageEnd:
		e.StartEnded(c.cmd.Process, c.cmd.Instance, starts, now)
	case streams.MessageExpire:
		e.Expire(c.cmd.Seq, now)
	}
}

// oneByOne applies w's commands to the entry as loaded (base) one at a
// time, refusing each that would make it too large to store.
func (p *Partition) oneByOne(w *entryWork, base []byte, rev uint64, starts []correlation.StartEvent) (*correlation.Entry, *nats.Msg, error) {
	now := p.cfg.Now()
	var e correlation.Entry
	if err := streams.Unmarshal(base, &e); err != nil {
		return nil, nil, err
	}
	w.stats = stats{}
	for _, c := range w.cmds {
		if c.skipped {
			continue
		}
		var st stats
		before, err := streams.Marshal(&e)
		if err != nil {
			return nil, nil, err
		}
		p.applyOne(&e, c, starts, now, &st)
		e.Applied = append(e.Applied, c.ref)
		data, err := streams.Marshal(&e)
		if err != nil {
			return nil, nil, err
		}
		if len(data) <= p.cfg.MaxEntryBytes {
			w.stats.add(st)
			continue
		}
		e = correlation.Entry{}
		if err := streams.Unmarshal(before, &e); err != nil {
			return nil, nil, err
		}
		e.Applied = append(e.Applied, c.ref)
		reason := fmt.Sprintf("the entry of message %q with key %q would be %d bytes; the limit is %d", w.name, w.mkey, len(data), p.cfg.MaxEntryBytes)
		p.log.Error("message partition command refused", "kind", c.sm.Kind, "reason", reason)
		if c.in != nil {
			c.answer = &Answer{ID: c.in.ID, Error: "message refused: " + reason, Refusal: "tooLarge"}
			w.stats.refused++
		}
	}
	e.OutboxBy = p.cfg.Pub.Session()
	msg, err := p.store.write(w.key, &e, rev)
	return &e, msg, err
}

// load returns w's entry (nil if none) and its revision. An entry read
// from the bucket that another session wrote may hold an unpublished
// outbox and applied commands whose acknowledgement never reached the
// server: the outbox is published again before anything else, and the
// applied commands still in their stream are kept as applied.
func (p *Partition) load(ctx context.Context, w *entryWork) (*correlation.Entry, uint64, error) {
	if c, ok := p.cache.Get(w.key); ok {
		return c.entry, c.rev, nil
	}
	var e *correlation.Entry
	var rev uint64
	var err error
	if f := w.fetched; f != nil {
		e, rev, err = f.entry, f.rev, f.err
	} else {
		e, rev, err = p.store.get(ctx, w.key)
	}
	if err != nil || e == nil {
		return nil, rev, err
	}
	if e.OutboxBy == p.cfg.Pub.Session() {
		e.Outbox = nil // this session published it
	} else if len(e.Outbox) > 0 {
		if err := p.publishEntry(ctx, e); err != nil {
			return nil, 0, err
		}
		p.log.Info("republished message entry outbox after takeover", "name", e.Name, "key", e.Key, "effects", len(e.Outbox))
		e.Outbox = nil
	}
	// Whoever wrote it, the commands it names may have been acknowledged
	// since (this session's, surely; another's, maybe) or may still come
	// again.
	if e.Applied, err = p.unacknowledged(ctx, e.Applied); err != nil {
		return nil, 0, err
	}
	// Cached, the entry is not read and republished again by the next
	// batch.
	p.cache.Put(w.key, cachedEntry{entry: e, rev: rev})
	return e, rev, nil
}

// unacknowledged returns the refs whose commands are still in their stream
// (a work queue removes a command once it is acknowledged).
func (p *Partition) unacknowledged(ctx context.Context, refs []string) ([]string, error) {
	var out []string
	for _, ref := range refs {
		seq, err := strconv.ParseUint(ref[1:], 10, 64)
		if err != nil {
			continue
		}
		s := p.cmdStream
		if ref[0] == 'm' {
			s = p.msgStream
		}
		_, err = s.GetMsg(ctx, seq)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return nil, fmt.Errorf("look up command %s: %w", ref, err)
		default:
			out = append(out, ref)
		}
	}
	return out, nil
}

func (p *Partition) awaitWrite(ctx context.Context, w *entryWork) {
	if w.write == nil || w.err != nil {
		return
	}
	select {
	case ack := <-w.write.Ok():
		w.rev = ack.Sequence
	case err := <-w.write.Err():
		w.err = err
		if streams.IsConflict(err) {
			p.log.Info("message entry write lost a race; its commands will be applied again", "name", w.name, "key", w.mkey)
		}
	case <-ctx.Done():
		w.err = ctx.Err()
	case <-time.After(10 * time.Second):
		w.err = errors.New("message entry write timed out")
	}
	if w.err != nil {
		p.cfg.Pub.NewSession()
	}
}

// settle acknowledges the commands of every committed entry and confirms
// the acknowledgements, answers the publishers that asked, deletes the
// entries left with nothing, and returns the rest for redelivery.
func (p *Partition) settle(ctx context.Context, works []*entryWork) {
	var acked sync.WaitGroup
	sem := make(chan struct{}, 32)
	for _, w := range works {
		if w.abandoned {
			continue
		}
		if w.err != nil {
			p.cache.Drop(w.key)
			p.log.Warn("message entry not committed; its commands will be redelivered", "name", w.name, "key", w.mkey, "err", w.err)
			for _, c := range w.cmds {
				_ = c.msg.NakWithDelay(250 * time.Millisecond)
			}
			continue
		}
		for _, c := range w.cmds {
			if c.gone {
				continue
			}
			sem <- struct{}{}
			acked.Go(func() {
				defer func() { <-sem }()
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if err := c.msg.DoubleAck(actx); err != nil {
					p.log.Warn("acknowledgement not confirmed; the command will be recognised if redelivered", "subject", c.msg.Subject(), "err", err)
					w.unconfirmed.Store(true)
				}
			})
		}
	}
	acked.Wait()
	var deletes []idleEntry
	for _, w := range works {
		if w.abandoned || w.err != nil {
			continue
		}
		if w.entry != nil {
			p.cfg.Metrics.count(w.stats, w.entry.Outbox)
			for _, c := range w.cmds {
				if c.answer != nil && c.in.ReplyTo != "" {
					p.answer(c.in.ReplyTo, c.answer)
				}
			}
		}
		if w.unconfirmed.Load() {
			// The acknowledgements may or may not have arrived: the
			// entry in the bucket names the commands, and a new session
			// makes the next load check them.
			p.cache.Drop(w.key)
			p.cfg.Pub.NewSession()
			continue
		}
		// The commands of this batch are acknowledged for sure now; the
		// entry may still name others, applied by a node that died before
		// it acknowledged them: those are still to come again.
		acked := func(ref string) bool {
			return slices.ContainsFunc(w.cmds, func(c *command) bool { return c.ref == ref })
		}
		e, rev := w.entry, w.rev
		if e == nil {
			// Nothing written: every command was applied before.
			c, ok := p.cache.Get(w.key)
			if !ok {
				continue
			}
			e, rev = c.entry, c.rev
		}
		e.Outbox = nil
		e.Applied = slices.DeleteFunc(e.Applied, acked)
		if e.Idle() && len(e.Applied) == 0 {
			deletes = append(deletes, idleEntry{key: w.key, rev: rev})
			continue
		}
		p.cache.Put(w.key, cachedEntry{entry: e, rev: rev})
	}
	p.deleteIdle(ctx, deletes)
}

// idleEntry is an entry left with nothing in it, at revision rev.
type idleEntry struct {
	key string
	rev uint64
}

// deleteIdle deletes the entries left with nothing in them. One that
// cannot be deleted stays, holding nothing; it is written over when its
// name and key are used again.
func (p *Partition) deleteIdle(ctx context.Context, idle []idleEntry) {
	var futures []jetstream.PubAckFuture
	for _, e := range idle {
		p.cache.Drop(e.key)
		f, err := p.cfg.Pub.JetStream().PublishMsgAsync(p.store.delete(e.key, e.rev))
		if err != nil {
			p.log.Debug("idle message entry not deleted", "entry", e.key, "err", err)
			continue
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			p.log.Debug("idle message entry not deleted", "subject", f.Msg().Subject, "err", err)
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Second):
			return
		}
	}
}

// answer tells a publisher what became of its message; an answer that
// cannot be sent is not retried (the publisher's wait ends at its timeout).
func (p *Partition) answer(replyTo string, a *Answer) {
	if !streams.ValidInbox(replyTo) {
		return
	}
	if b, err := json.Marshal(a); err == nil {
		_ = p.cfg.NC.Publish(replyTo, b)
	}
}

// crashPoint reports whether to abandon the batch after the write of entry
// key, as if the process died right there (tests: Config.CrashAfterEntryWrite).
func (p *Partition) crashPoint(key string) bool {
	return p.cfg.CrashAfterEntryWrite != nil && p.cfg.CrashAfterEntryWrite(key)
}

func answerOffers(offers []correlation.Offer) []Offer {
	out := make([]Offer, 0, len(offers))
	for _, o := range offers {
		out = append(out, Offer{
			Instance: o.Instance, Process: o.Process, Wait: o.Wait, Correlation: o.Correlation.ID(), Started: o.Started,
		})
	}
	return out
}
