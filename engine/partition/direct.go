package partition

import (
	"context"
	"errors"
	"time"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/streams"
)

// A direct is a start handed to the loop in memory instead of a stored
// start event (Start), or a recover (Recover): a load of the instance
// that republishes an outbox another session wrote.
type direct struct {
	id    string
	start *checkpoint.StartRequest // nil for a recover
	done  chan error               // the answer; nil when nobody waits
}

// answer tells the caller, if any, how its start ended.
func (d *direct) answer(err error) {
	if d.done != nil {
		d.done <- err
	}
}

// ErrStopped is answered to a start the partition did not take because
// it is stopping.
var ErrStopped = errors.New("the partition is stopping")

// errAbandoned answers a direct start a crash test abandoned.
var errAbandoned = errors.New("abandoned after its checkpoint write (crash test)")

// recoverDelay is how long a recover waits after a failure.
const recoverDelay = 250 * time.Millisecond

// Start creates instance id from req in the partition's next batch — the
// checkpoint, its effects published (and synced, with Config.Sync) — and
// returns when they are, with no start event stored. An instance id that
// exists already is read as a repeated start is: its outbox is published
// again if another session wrote it, and Start returns nil. An error means
// the instance may exist or not: retry with the same id.
func (p *Partition) Start(ctx context.Context, id string, req *checkpoint.StartRequest) error {
	d := &direct{id: id, start: req, done: make(chan error, 1)}
	select {
	case p.direct <- d:
	case <-p.stopped:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-d.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Recover has the loop load instance id, which publishes an outbox another
// session wrote, and cache it; it does not wait.
func (p *Partition) Recover(id string) {
	select {
	case p.direct <- &direct{id: id}:
	case <-p.stopped:
	}
}

// recoverLater queues a recover of id after recoverDelay, for a direct
// create whose effects may not be out: nothing else would wake it.
func (p *Partition) recoverLater(id string) {
	time.AfterFunc(recoverDelay, func() { p.Recover(id) })
}

// collectDirect takes first plus the directs already waiting, up to max.
func (p *Partition) collectDirect(first *direct, max int) []*direct {
	out := []*direct{first}
	for len(out) < max {
		select {
		case d := <-p.direct:
			out = append(out, d)
		default:
			return out
		}
	}
	return out
}

// settleDirect answers the callers of a group's directs once its batch
// committed. A failure after the checkpoint write was sent leaves the
// instance possibly written without its effects out: a recover publishes
// them. Called after settle dropped a failed group's cache entry.
func (p *Partition) settleDirect(g *group) {
	if len(g.directs) == 0 {
		return
	}
	switch {
	case g.abandoned:
		for _, d := range g.directs {
			d.answer(errAbandoned) // a crash: nothing recovers it but the sweep
		}
	case g.err != nil && g.write != nil && g.rev == 0 && streams.IsConflict(g.err):
		// The instance exists: each start is read as a repeated start is.
		for _, d := range g.directs {
			again := &direct{id: d.id, done: d.done}
			go func() {
				select {
				case p.direct <- again:
				case <-p.stopped:
					again.answer(ErrStopped)
				}
			}()
		}
	case g.err != nil:
		for _, d := range g.directs {
			d.answer(g.err)
		}
		p.recoverLater(g.id)
	default:
		for _, d := range g.directs {
			d.answer(nil)
		}
	}
}
