package partition

import (
	"context"
	"sync"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
)

// fetched is a checkpoint read ahead of its step.
type fetched struct {
	state *instance.State
	rev   uint64
	err   error
}

// maxPrefetch bounds the reads a batch has in flight at once.
const maxPrefetch = 32

// prefetch reads, concurrently, the checkpoints of the batch's instances
// that are not in the cache, so a batch of new or cold instances costs one
// round trip to the bucket instead of one per instance. The step still
// writes with compare-and-set, so a read a moment early is as safe as one
// made in the step.
func (p *Partition) prefetch(ctx context.Context, groups []*group) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxPrefetch)
	for _, g := range groups {
		if _, ok := p.cache.Get(g.id); ok {
			continue
		}
		if g.freshStart() {
			// No read: the step creates the checkpoint with expected
			// revision 0, which fails if the instance exists after all
			// (a start repeated outside the de-duplication window); the
			// start then comes back, delivered again, and is read.
			g.fetched = &fetched{err: errdefs.ErrNotFound}
			continue
		}
		f := &fetched{}
		g.fetched = f
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f.state, f.rev, f.err = p.cfg.Store.Get(ctx, g.id)
		})
	}
	wg.Wait()
}

// freshStart reports whether g is a start alone, delivered for the first
// time: almost always an instance that does not exist yet.
func (g *group) freshStart() bool {
	if g.start == nil || len(g.events) > 0 || len(g.reports) > 0 {
		return false
	}
	for _, m := range g.msgs {
		md, err := m.Metadata()
		if err != nil || md.NumDelivered != 1 {
			return false
		}
	}
	return true
}
