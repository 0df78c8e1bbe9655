package messages

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
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/internal/lru"
	"github.com/jetbpm/jetbpm/streams"
)

// Partition applies the messages and commands of one message
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
type Partition struct {
	n          int
	msgs, cmds jetstream.Consumer
	// msgStream and cmdStream hold the commands, to learn whether one an
	// entry names as applied was acknowledged (a work queue removes it).
	msgStream, cmdStream jetstream.Stream
	store                *Entries
	cache                *lru.Cache[cachedEntry]
	log                  *slog.Logger

	cfg *Config
}

// cachedEntry is an entry as this node last wrote it.
type cachedEntry struct {
	entry *correlation.Entry
	rev   uint64
}

// Config is what a message partition runs with. Every field but the test
// hook is required.
type Config struct {
	JS jetstream.JetStream
	NC *nats.Conn
	// Sync makes the writes so far durable before an acknowledgement
	// that depends on them (nil: the server's policy decides).
	Sync streams.Syncer
	Defs *deploy.Definitions // the message start events
	// Pub publishes the entries' outboxes; its session fences them.
	Pub *outbox.Publisher
	// Partitions is the number of instance partitions, to address an
	// instance's events.
	Partitions int
	// BatchSize bounds a batch; CacheSize the entries a partition keeps.
	BatchSize, CacheSize int
	// MaxEntryBytes bounds an entry, like a checkpoint: a message that
	// would make it larger is refused.
	MaxEntryBytes int
	// Now is the engine's clock; CheckValue refuses a variable over the
	// size limit.
	Now        func() time.Time
	CheckValue func(name string, v any) error
	Log        *slog.Logger
	Metrics    Metrics
	// History decides whether message facts are written
	// (docs/engine.md §8.2).
	History history.Level

	// CrashAfterEntryWrite, for tests only: after each committed write
	// of entry key, true makes the partition behave as if the process
	// died right there.
	CrashAfterEntryWrite func(entryKey string) bool
}

// NewPartition returns message partition n of the messages and commands
// streams, on the entries store. Run applies it.
func NewPartition(ctx context.Context, cfg *Config, store *Entries, n int) (*Partition, error) {
	msgs, err := cfg.JS.Consumer(ctx, streams.MessagesStream, streams.MessagesConsumer(n))
	if err != nil {
		return nil, fmt.Errorf("message partition consumer %s: %w", streams.MessagesConsumer(n), err)
	}
	cmds, err := cfg.JS.Consumer(ctx, streams.MessageCommandsStream, streams.MessageCommandsConsumer(n))
	if err != nil {
		return nil, fmt.Errorf("message partition consumer %s: %w", streams.MessageCommandsConsumer(n), err)
	}
	msgStream, err := cfg.JS.Stream(ctx, streams.MessagesStream)
	if err != nil {
		return nil, fmt.Errorf("messages stream: %w", err)
	}
	cmdStream, err := cfg.JS.Stream(ctx, streams.MessageCommandsStream)
	if err != nil {
		return nil, fmt.Errorf("message commands stream: %w", err)
	}
	return &Partition{
		n: n, msgs: msgs, cmds: cmds, msgStream: msgStream, cmdStream: cmdStream, store: store,
		cache: lru.New[cachedEntry](cfg.CacheSize), log: cfg.Log.With("message_partition", n), cfg: cfg,
	}, nil
}

// Run consumes the partition's messages and commands until ctx ends, then
// applies what was already received.
func (p *Partition) Run(ctx context.Context) {
	batch := p.cfg.BatchSize
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
		closed := err != nil && p.cfg.NC.IsClosed()
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

func (p *Partition) loop(ctx context.Context, in chan jetstream.Msg, batch int, running []jetstream.ConsumeContext) error {
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

func (p *Partition) drain(cc jetstream.ConsumeContext, in chan jetstream.Msg, batch int) {
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
