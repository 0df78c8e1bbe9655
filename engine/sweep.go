package engine

import (
	"context"
	"strings"
	"time"
)

// SweepWindow is how far before the newest checkpoint in the bucket a
// node looks for direct creates that a stopped session may have left
// without their effects (docs/engine.md §4.1). A live node publishes a
// direct create's effects within its commit's bounds or queues a recover
// of it, so only a session's last moments can leave one behind.
const SweepWindow = 2 * time.Minute

// pinSweepWindow is the window of a sweep after this node took a
// partition's lease: the node that held it let it go, or stopped at least
// the lease's TTL (the failover, seconds) before.
const pinSweepWindow = 2 * SweepWindow

// closedPrefix keys, in the meta bucket, the sessions that closed cleanly:
// every outbox they wrote is published, so a sweep skips them. The value
// is when the session closed (RFC 3339, for people; a sweep reads the
// entry's server time, the clock of the checkpoints' times).
const closedPrefix = "closed."

// sweeper sweeps every partition once this node's instance index has
// caught up, then each partition this node takes (pinned),
// until ctx ends.
func (e *Engine) sweeper(ctx context.Context, pinned <-chan int) {
	if !e.awaitIndex(ctx) {
		return
	}
	// The first sweep looks at every partition held by then.
	for drained := false; !drained; {
		select {
		case <-pinned:
		default:
			drained = true
		}
	}
	e.sweep(ctx, -1, SweepWindow, true)
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-pinned:
			if e.awaitIndex(ctx) {
				e.sweep(ctx, p, pinSweepWindow, false)
			}
		}
	}
}

// awaitIndex waits until the instance index has read every checkpoint
// written before the call, retrying while the bucket cannot answer.
func (e *Engine) awaitIndex(ctx context.Context) bool {
	for ctx.Err() == nil {
		err := e.instIndex.Sync(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() == nil {
			e.log.Warn("direct start sweep: the instance index is not ready; trying again", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return false
}

// sweep recovers the instances of partition p (every partition if p < 0)
// whose newest checkpoint is a direct create written within window before
// the newest checkpoint by a session other than this node's that did not
// close cleanly: the partition loop loads each, which publishes its outbox
// again (idempotent) if another session wrote it. With forget, markers of
// sessions that closed before the window are deleted: newest only grows,
// so no later sweep can need them.
func (e *Engine) sweep(ctx context.Context, p int, window time.Duration, forget bool) {
	closed := e.closedSessions(ctx)
	session := e.pub.Session()
	ids, newest := e.instIndex.RecentDirectCreates(window, func(s string) bool {
		_, ok := closed[s]
		return s == session || ok
	})
	var recovered []string
	for _, id := range ids {
		if part := e.partitionOf(id); p < 0 || part == p {
			if held := e.held(part); held != nil {
				held.Recover(id)
				recovered = append(recovered, id)
			}
		}
	}
	if len(recovered) > 0 {
		e.log.Info("direct start sweep: recovering instances another session created directly in its last moments", "instances", len(recovered), "partition", p)
	}
	if e.opts.swept != nil {
		e.opts.swept(p, recovered)
	}
	if forget {
		for s, at := range closed {
			if at.Before(newest.Add(-window)) {
				_ = e.meta.Delete(ctx, closedPrefix+s)
			}
		}
	}
}

// closedSessions reads the sessions that closed cleanly and when. A
// bucket it cannot read means none: a sweep then republishes more than it
// must, which is safe.
func (e *Engine) closedSessions(ctx context.Context) map[string]time.Time {
	out := map[string]time.Time{}
	keys, err := e.meta.ListKeysFiltered(ctx, closedPrefix+">")
	if err != nil {
		e.log.Warn("direct start sweep: cannot read the sessions that closed cleanly", "err", err)
		return out
	}
	for k := range keys.Keys() {
		ent, err := e.meta.Get(ctx, k)
		if err != nil {
			continue
		}
		out[strings.TrimPrefix(k, closedPrefix)] = ent.Created() // the server's clock, as the checkpoints'
	}
	return out
}

// markClosed records that this node's session closed cleanly: every
// outbox it wrote is published.
func (e *Engine) markClosed(ctx context.Context) error {
	_, err := e.meta.PutString(ctx, closedPrefix+e.pub.Session(), time.Now().UTC().Format(time.RFC3339Nano))
	return err
}
