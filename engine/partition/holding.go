package partition

import (
	"context"
	"time"

	"github.com/jetbpm/jetbpm/streams"
)

// holderCheck is how often a partition asks the server which client its
// events consumer is pinned to.
const holderCheck = time.Second

// Elsewhere reports whether another node holds the partition: the server
// has pinned its events consumer to a client other than this node. A
// direct start there would make that node republish the instance's outbox
// when it first loads it, so the engine stores a start event instead
// (docs/engine.md §4.1). False while no node is pinned, and until the
// first check.
func (p *Partition) Elsewhere() bool { return p.elsewhere.Load() }

// watchHolder checks, every holderCheck until ctx ends, whether the events
// consumer is pinned to a client that is not this node. A failed check
// changes nothing.
func (p *Partition) watchHolder(ctx context.Context) {
	for {
		if info, err := p.events.Info(ctx); err == nil {
			pinned := ""
			for _, g := range info.PriorityGroups {
				if g.Group == streams.PriorityGroup {
					pinned = g.PinnedClientID
				}
			}
			mine, _ := p.eventsPin.Load().(string)
			p.elsewhere.Store(pinned != "" && pinned != mine)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(holderCheck):
		}
	}
}
