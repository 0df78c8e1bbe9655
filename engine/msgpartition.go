package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/streams"
)

// messagePartition applies the messages and commands of one message
// partition (docs/messages.md §3–5). Like an instance partition, the server
// pins its consumers to one engine node at a time and compare-and-set on
// each entry is the fence; unlike one, it runs no process logic, only
// package correlation's rules on the entry of each name and key.
//
// A batch is applied per entry: the entry is loaded (from the cache, or
// from the bucket, publishing an outbox another session may not have
// published), every command of the batch for it applied in order, and the
// entry written once, holding the effects (its outbox) and the commands it
// applied. Then the effects are published, the commands acknowledged (and
// the acknowledgements confirmed), and an entry left with nothing in it
// deleted. A crash anywhere in between leaves a command unacknowledged: it
// is redelivered, and the entry it finds names it as applied, so it is not
// applied twice, while the outbox is published again.
type messagePartition struct {
	n          int
	msgs, cmds jetstream.Consumer
	// msgStream and cmdStream hold the commands, to learn whether one an
	// entry names as applied was acknowledged (a work queue removes it).
	msgStream, cmdStream jetstream.Stream
	store                *entries
	cache                *lru[cachedEntry]
	log                  *slog.Logger

	opts *Options
	nc   *nats.Conn
	defs *deploy.Definitions
	pub  *outbox.Publisher
	// partitions is the number of instance partitions, to address an
	// instance's events.
	partitions int
	metrics    *engineMetrics
}

// cachedEntry is an entry as this node last wrote it.
type cachedEntry struct {
	entry *correlation.Entry
	rev   uint64
}

func (e *Engine) newMessagePartition(ctx context.Context, n int) (*messagePartition, error) {
	msgs, err := e.js.Consumer(ctx, streams.MessagesStream, streams.MessagesConsumer(n))
	if err != nil {
		return nil, fmt.Errorf("engine: message partition consumer %s: %w", streams.MessagesConsumer(n), err)
	}
	cmds, err := e.js.Consumer(ctx, streams.MessageCommandsStream, streams.MessageCommandsConsumer(n))
	if err != nil {
		return nil, fmt.Errorf("engine: message partition consumer %s: %w", streams.MessageCommandsConsumer(n), err)
	}
	msgStream, err := e.js.Stream(ctx, streams.MessagesStream)
	if err != nil {
		return nil, fmt.Errorf("engine: messages stream: %w", err)
	}
	cmdStream, err := e.js.Stream(ctx, streams.MessageCommandsStream)
	if err != nil {
		return nil, fmt.Errorf("engine: message commands stream: %w", err)
	}
	return &messagePartition{
		n: n, msgs: msgs, cmds: cmds, msgStream: msgStream, cmdStream: cmdStream, store: e.entries,
		cache: newLRU[cachedEntry](e.opts.CacheSize/e.layout.Partitions + 1), log: e.log.With("message_partition", n),
		opts: &e.opts, nc: e.nc, defs: e.defs, pub: e.pub, partitions: e.layout.Partitions, metrics: e.metrics,
	}, nil
}

// run consumes the partition's messages and commands until ctx ends, then
// applies what was already received.
func (p *messagePartition) run(ctx context.Context) {
	batch := p.opts.BatchSize
	in := make(chan jetstream.Msg, 2*batch)
	for ctx.Err() == nil {
		var running []jetstream.ConsumeContext
		var err error
		for _, cons := range []jetstream.Consumer{p.msgs, p.cmds} {
			var cc jetstream.ConsumeContext
			cc, err = cons.Consume(func(m jetstream.Msg) { in <- m },
				jetstream.PullPriorityGroup(streams.PriorityGroup),
				jetstream.PullMaxMessages(batch),
				jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
					if !errors.Is(err, jetstream.ErrPinIDMismatch) {
						p.log.Debug("message partition consume", "err", err)
					}
				}))
			if err != nil {
				break
			}
			running = append(running, cc)
		}
		if err == nil {
			err = p.loop(ctx, in, batch, running)
		}
		closed := err != nil && p.nc.IsClosed()
		if err != nil && !closed {
			p.log.Warn("message partition consume failed; retrying", "err", err)
		}
		for _, cc := range running {
			cc.Stop()
		}
		for _, cc := range running {
			p.drain(cc, in, batch)
		}
		if closed {
			p.log.Error("NATS connection closed; message partition stopped (close the engine before its connection)", "err", err)
			return
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (p *messagePartition) loop(ctx context.Context, in chan jetstream.Msg, batch int, running []jetstream.ConsumeContext) error {
	msgs, cmds := running[0].Closed(), running[1].Closed()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-msgs:
			return errors.New("the messages consumer stopped")
		case <-cmds:
			return errors.New("the commands consumer stopped")
		case m := <-in:
			p.process(context.Background(), collect(m, in, batch))
		}
	}
}

func (p *messagePartition) drain(cc jetstream.ConsumeContext, in chan jetstream.Msg, batch int) {
	for {
		select {
		case m := <-in:
			p.process(context.Background(), collect(m, in, batch))
		case <-cc.Closed():
			return
		}
	}
}

// collect takes first plus whatever else is already waiting, up to max.
func collect(first jetstream.Msg, in chan jetstream.Msg, max int) []jetstream.Msg {
	out := []jetstream.Msg{first}
	for len(out) < max {
		select {
		case m := <-in:
			out = append(out, m)
		default:
			return out
		}
	}
	return out
}
