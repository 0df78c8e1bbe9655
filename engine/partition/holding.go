package partition

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
)

// holderCheck is how often a partition asks the server which clients
// its consumers are pinned to.
const holderCheck = time.Second

// Elsewhere reports whether another node holds the partition: the server
// has pinned its events or its reports consumer to a client other than
// this node. A direct start there would make that node republish the
// instance's outbox when it first loads it, so the engine stores a start
// event instead (docs/engine.md §4.1). False while neither is pinned, and
// until the first check.
func (p *Partition) Elsewhere() bool { return p.elsewhere.Load() }

// consumerIndex numbers the partition's consumers for pins.
func (p *Partition) consumerIndex(cons jetstream.Consumer) int {
	if cons == p.events {
		return 0
	}
	return 1
}

// watchHolder checks, every holderCheck until ctx ends, whether a
// consumer of the partition is pinned to a client that is not this node.
// A failed check changes nothing.
func (p *Partition) watchHolder(ctx context.Context) {
	for {
		elsewhere, checked := false, true
		for i, cons := range []jetstream.Consumer{p.events, p.reports} {
			info, err := cons.Info(ctx)
			if err != nil {
				checked = false
				break
			}
			mine, _ := p.pins[i].Load().(string)
			for _, g := range info.PriorityGroups {
				if g.Group == streams.PriorityGroup && g.PinnedClientID != "" && g.PinnedClientID != mine {
					elsewhere = true
				}
			}
		}
		if checked {
			p.elsewhere.Store(elsewhere)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(holderCheck):
		}
	}
}
