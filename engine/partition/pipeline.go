package partition

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// A partition's batches go through three stages: step (read the cold
// checkpoints, apply the events, send the checkpoint writes), commit (wait
// for the writes, publish the effects, wait for them) and settle (ack or
// return the events, update the cache). Commit is mostly waiting on
// JetStream, so the loop steps batch k+1 while batch k commits on its own
// goroutine, then settles k and hands k+1 to commit: at most two batches
// are in hand, and they commit in the order they were stepped.
//
// Two batches never hold the same instance: its next checkpoint write
// needs the revision its committing write gets, and its cache entry is
// only updated when that batch settles. So a new batch's groups for an
// instance of the committing batch are held back and step in the first
// batch after it settles, ahead of later messages for the instance.
// Per instance nothing changes: checkpoint, then effects, then acks, so a
// crash between them leaves what it always left (docs/engine.md §5).

// inflight is a batch that is committing.
type inflight struct {
	groups []*group
	ids    map[string]bool
	done   chan struct{}
}

// pipeline is the loop's state between batches: the committing batch, if
// any, and the groups held back until it settles.
type pipeline struct {
	committing *inflight
	held       []*group
}

// loop processes batches until ctx ends or one of the partition's consumers
// stops by itself (the client gives up on a consumer it cannot find, as
// while a cluster elects leaders): then run consumes again. Before it
// returns, the batch in hand is committed and settled, and held groups are
// processed.
func (p *Partition) loop(ctx context.Context, msgs chan jetstream.Msg, batch int, running []jetstream.ConsumeContext) error {
	events, reports := running[0].Closed(), running[1].Closed()
	var pl pipeline
	// A batch in hand is finished even if Close is called meanwhile: its
	// own waits are bounded by timeouts.
	work := context.Background()
	defer p.finish(work, &pl)
	for {
		if pl.committing == nil && len(pl.held) > 0 {
			p.advance(work, &pl, p.collectWaiting(msgs, batch), nil)
			continue
		}
		var committed chan struct{}
		if pl.committing != nil {
			committed = pl.committing.done
		}
		select {
		case <-ctx.Done():
			return nil
		case <-events:
			return errors.New("the events consumer stopped")
		case <-reports:
			return errors.New("the reports consumer stopped")
		case <-committed:
			p.settled(&pl)
		case m := <-msgs:
			p.advance(work, &pl, p.collect(m, msgs, batch), nil)
		case d := <-p.direct:
			p.advance(work, &pl, nil, p.collectDirect(d, batch))
		}
	}
}

// advance steps a batch while the previous one commits, settles the
// previous one, and starts the new one's commit.
func (p *Partition) advance(ctx context.Context, pl *pipeline, batch []jetstream.Msg, directs []*direct) {
	groups := mergeHeld(pl.held, p.groups(batch, directs))
	pl.held = nil
	ready := groups
	if pl.committing != nil {
		ready, pl.held = splitBusy(groups, pl.committing.ids)
		if hook := p.cfg.HeldBack; hook != nil {
			for _, g := range pl.held {
				hook(g.id)
			}
		}
	}
	if len(ready) == 0 {
		// Everything waits for the committing batch: the loop settles it
		// when it is done, reading more messages meanwhile.
		return
	}
	p.stepAll(ctx, ready)
	if pl.committing != nil {
		<-pl.committing.done
		p.settled(pl)
	}
	c := &inflight{groups: ready, ids: make(map[string]bool, len(ready)), done: make(chan struct{})}
	for _, g := range ready {
		c.ids[g.id] = true
	}
	pl.committing = c
	go func() {
		defer close(c.done)
		p.commit(ctx, c.groups)
	}()
}

// settled settles the committed batch; its instances are free again.
func (p *Partition) settled(pl *pipeline) {
	p.settleAll(pl.committing.groups)
	pl.committing = nil
}

// finish settles the batch in hand and processes the held groups.
func (p *Partition) finish(ctx context.Context, pl *pipeline) {
	if pl.committing != nil {
		<-pl.committing.done
		p.settled(pl)
	}
	if held := pl.held; len(held) > 0 {
		pl.held = nil
		p.processGroups(ctx, held)
	}
}

// collectWaiting takes what is already waiting, up to max, possibly
// nothing.
func (p *Partition) collectWaiting(msgs chan jetstream.Msg, max int) []jetstream.Msg {
	select {
	case m := <-msgs:
		return p.collect(m, msgs, max)
	default:
		return nil
	}
}

// mergeHeld puts held groups first and folds a newer group of the same
// instance into its held one, after the held messages: held messages
// arrived first.
func mergeHeld(held, groups []*group) []*group {
	if len(held) == 0 {
		return groups
	}
	byID := make(map[string]*group, len(held))
	for _, g := range held {
		byID[g.id] = g
	}
	out := held
	for _, g := range groups {
		h := byID[g.id]
		if h == nil {
			out = append(out, g)
			continue
		}
		h.msgs = append(h.msgs, g.msgs...)
		h.events = append(h.events, g.events...)
		h.reports = append(h.reports, g.reports...)
		h.directs = append(h.directs, g.directs...)
		if h.start == nil {
			h.start = g.start
		}
	}
	return out
}

// splitBusy separates the groups of instances in busy from the others,
// keeping each side's order.
func splitBusy(groups []*group, busy map[string]bool) (ready, held []*group) {
	for _, g := range groups {
		if busy[g.id] {
			held = append(held, g)
		} else {
			ready = append(ready, g)
		}
	}
	return ready, held
}
