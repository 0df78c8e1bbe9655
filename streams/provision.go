package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Config says how to provision jetbpm's streams, consumers and buckets.
// The zero value provisions a single-server layout.
type Config struct {
	Replicas    int           // 1 embedded, 3 on a cluster; default 1
	Partitions  int           // instance partitions; default 8; fixed at first provisioning
	FactsMaxAge time.Duration // how long facts stay replayable; default 7 days
	// EventAckWait bounds how long an event stays invisible when the node
	// applying it dies (default 30 s); Failover is how long a node may stop
	// pulling before its partitions move to another node (default 10 s).
	// Together they bound how soon a dead node's instances move again.
	EventAckWait time.Duration
	Failover     time.Duration
	Storage      jetstream.StorageType // default FileStorage
	Logger       *slog.Logger          // nil → slog.Default()
}

// Defaults and limits of Config.
const (
	DefaultPartitions  = 8
	DefaultFactsMaxAge = 7 * 24 * time.Hour
	MaxPartitions      = 1024 // one consumer each; beyond this a cluster spends more on consumers than on work
)

// Partition consumer settings. AckWait bounds how long an event stays
// invisible when the node processing it dies. PinnedTTL is how long a node
// may stop pulling before its partition moves to another node: short enough
// to fail over quickly, long enough to ride out a GC pause or a slow
// checkpoint write.
const (
	DefaultEventAckWait    = 30 * time.Second
	partitionMaxAckPending = 10000
	DefaultFailover        = 10 * time.Second
)

// ErrPartitions is Provision's refusal of a partition count other than the
// store's: it is fixed when the store is created (docs/engine.md §6.1).
var ErrPartitions = errors.New("streams: the partition count is fixed when the store is created")

// dupWindow is the Nats-Msg-Id de-duplication window of every stream; the
// engine's idempotent re-publish of effects relies on it.
const dupWindow = 2 * time.Minute

// Provision creates or updates every stream, partition consumer and bucket
// jetbpm uses. It is idempotent and meant to run on every start: an asset
// whose settings match is left alone, a changed setting (replicas, facts max
// age) is applied in place, and no message is ever deleted.
//
// The partition count is stored by the first Provision and fixed: a later
// Provision with a different cfg.Partitions is refused (ErrPartitions),
// one with none takes the stored count. The returned Layout holds it.
func Provision(ctx context.Context, js jetstream.JetStream, cfg Config) (Layout, error) {
	explicitPartitions := cfg.Partitions != 0
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Layout{}, err
	}
	log := cfg.Logger

	meta, err := ensureKV(ctx, js, MetaBucket, func(c *jetstream.KeyValueConfig) {
		c.History, c.Replicas, c.Storage = 1, cfg.Replicas, cfg.Storage
	}, log)
	if err != nil {
		return Layout{}, err
	}
	if err := settleSchema(ctx, meta); err != nil {
		return Layout{}, err
	}
	partitions, err := settlePartitions(ctx, meta, cfg.Partitions)
	if err != nil {
		return Layout{}, err
	}
	if explicitPartitions && partitions != cfg.Partitions {
		return Layout{}, fmt.Errorf("%w: %d partitions were asked for, but the store was created with %d; run every node with --partitions %d (or without it)",
			ErrPartitions, cfg.Partitions, partitions, partitions)
	}

	if err := provisionStreams(ctx, js, cfg, log); err != nil {
		return Layout{}, err
	}
	if err := provisionMessageStreams(ctx, js, cfg, partitions, log); err != nil {
		return Layout{}, err
	}
	for p := range partitions {
		if err := ensureConsumer(ctx, js, EventsStream, PartitionConsumer(p), partitionConsumer(PartitionFilter(p), cfg), log); err != nil {
			return Layout{}, err
		}
		if err := ensureConsumer(ctx, js, ReportsStream, ReportsConsumer(p), partitionConsumer(ReportsFilter(p), cfg), log); err != nil {
			return Layout{}, err
		}
		if err := ensureConsumer(ctx, js, MessagesStream, MessagesConsumer(p), partitionConsumer(MessagesFilter(p), cfg), log); err != nil {
			return Layout{}, err
		}
		if err := ensureConsumer(ctx, js, MessageCommandsStream, MessageCommandsConsumer(p), partitionConsumer(MessageCommandsFilter(p), cfg), log); err != nil {
			return Layout{}, err
		}
	}
	if err := ensureConsumer(ctx, js, MessageCommandsStream, MessageBufferConsumer, bufferConsumer, log); err != nil {
		return Layout{}, err
	}
	if err := provisionBuckets(ctx, js, cfg, log); err != nil {
		return Layout{}, err
	}
	if err := provisionSignals(ctx, js, cfg, log); err != nil {
		return Layout{}, err
	}
	if err := provisionCamunda8(ctx, js, cfg, log); err != nil {
		return Layout{}, err
	}
	return Layout{Partitions: partitions, Replicas: cfg.Replicas}, nil
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = DefaultPartitions
	}
	if cfg.EventAckWait == 0 {
		cfg.EventAckWait = DefaultEventAckWait
	}
	if cfg.Failover == 0 {
		cfg.Failover = DefaultFailover
	}
	if cfg.FactsMaxAge == 0 {
		cfg.FactsMaxAge = DefaultFactsMaxAge
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.Replicas < 1 || cfg.Replicas > 5:
		return cfg, fmt.Errorf("streams: Replicas must be 1 to 5, got %d", cfg.Replicas)
	case cfg.Partitions < 1 || cfg.Partitions > MaxPartitions:
		return cfg, fmt.Errorf("streams: Partitions must be 1 to %d, got %d", MaxPartitions, cfg.Partitions)
	case cfg.EventAckWait < time.Second || cfg.Failover < time.Second:
		return cfg, fmt.Errorf("streams: EventAckWait and Failover must be at least 1s, got %s and %s", cfg.EventAckWait, cfg.Failover)
	case cfg.FactsMaxAge < time.Second:
		return cfg, fmt.Errorf("streams: FactsMaxAge must be at least 1s, got %s", cfg.FactsMaxAge)
	}
	return cfg, nil
}

func provisionStreams(ctx context.Context, js jetstream.JetStream, cfg Config, log *slog.Logger) error {
	err := ensureStream(ctx, js, EventsStream, func(c *jetstream.StreamConfig) {
		c.Subjects = []string{EventsSubjects, TimersSubjects}
		c.Retention = jetstream.WorkQueuePolicy
		c.AllowMsgSchedules = true // durable timers
		c.AllowRollup = true       // schedules need it; set so the server's config compares equal
		c.DenyPurge = false        // cancelling a timer purges its subject
		c.AllowMsgTTL = true
		c.Duplicates = dupWindow
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	err = ensureStream(ctx, js, ReportsStream, func(c *jetstream.StreamConfig) {
		c.Subjects = []string{ReportsSubjects}
		c.Retention = jetstream.WorkQueuePolicy
		// No rollups, schedules or per-message TTL: a worker controls its
		// headers, and these would let one purge or forge messages.
		c.AllowRollup, c.AllowMsgSchedules, c.AllowMsgTTL = false, false, false
		c.DenyPurge, c.DenyDelete = true, true
		c.Duplicates = dupWindow
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	err = ensureStream(ctx, js, JobsStream, func(c *jetstream.StreamConfig) {
		c.Subjects = []string{JobsSubjects}
		c.Retention = jetstream.WorkQueuePolicy
		c.Duplicates = dupWindow
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	return ensureStream(ctx, js, FactsStream, func(c *jetstream.StreamConfig) {
		c.Subjects = []string{FactsSubjects}
		c.Retention = jetstream.LimitsPolicy
		c.MaxAge = cfg.FactsMaxAge
		c.Duplicates = min(dupWindow, cfg.FactsMaxAge) // the server refuses a window longer than MaxAge
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
}

// provisionMessageStreams creates the two streams of the message
// partitions (docs/messages.md §3). Messages from integrations and engine
// commands travel apart for the reason reports and events do: the
// commands stream allows schedules (buffered messages expire by one),
// which forces rollups on, and a rollup header on a publish would purge
// the whole stream. The messages stream allows neither.
func provisionMessageStreams(ctx context.Context, js jetstream.JetStream, cfg Config, partitions int, log *slog.Logger) error {
	err := ensureStream(ctx, js, MessagesStream, func(c *jetstream.StreamConfig) {
		src, dest := messagesTransform(partitions)
		c.Subjects = []string{MessagePublishSubjects}
		c.SubjectTransform = &jetstream.SubjectTransformConfig{Source: src, Destination: dest}
		c.Retention = jetstream.WorkQueuePolicy
		c.AllowRollup, c.AllowMsgSchedules, c.AllowMsgTTL = false, false, false
		c.DenyPurge, c.DenyDelete = true, true
		c.Duplicates = dupWindow
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	return ensureStream(ctx, js, MessageCommandsStream, func(c *jetstream.StreamConfig) {
		src, dest := commandsTransform(partitions)
		c.Subjects = messageCommandSubjects()
		c.SubjectTransform = &jetstream.SubjectTransformConfig{Source: src, Destination: dest}
		c.Retention = jetstream.WorkQueuePolicy
		c.AllowMsgSchedules = true // expiries of buffered messages
		c.AllowRollup = true       // schedules need it; set so the server's config compares equal
		c.DenyPurge = false
		c.Duplicates = dupWindow
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
}

// bufferConsumer counts the pending expiry schedules, one per buffered
// message; nobody pulls from it.
func bufferConsumer(c *jetstream.ConsumerConfig) {
	c.FilterSubjects = nil
	c.FilterSubject = MessageExpirySchedules
	c.AckPolicy = jetstream.AckExplicitPolicy
}

// partitionConsumer is a durable pull consumer of one partition (its
// events, or its reports). The pinned priority group makes the server
// deliver a partition to one engine node at a time; pinning is
// routing, not a fence, so checkpoint writes still compare-and-set.
func partitionConsumer(filter string, cfg Config) func(*jetstream.ConsumerConfig) {
	return func(c *jetstream.ConsumerConfig) {
		c.FilterSubjects = nil
		c.FilterSubject = filter
		c.AckPolicy = jetstream.AckExplicitPolicy
		c.AckWait = cfg.EventAckWait
		c.MaxDeliver = -1 // an event is never dropped; the engine decides what a poison event becomes
		c.MaxAckPending = partitionMaxAckPending
		c.PriorityPolicy = jetstream.PriorityPolicyPinned
		c.PriorityGroups = []string{PriorityGroup}
		c.PinnedTTL = cfg.Failover
	}
}

func provisionBuckets(ctx context.Context, js jetstream.JetStream, cfg Config, log *slog.Logger) error {
	// A checkpoint can be as large as a message may be; saying so in the
	// bucket makes an oversize write fail with the bucket's error.
	maxValue := int32(math.MaxInt32)
	if mp := js.Conn().MaxPayload(); mp > 0 && mp < math.MaxInt32 {
		maxValue = int32(mp)
	}
	_, err := ensureKV(ctx, js, InstancesBucket, func(c *jetstream.KeyValueConfig) {
		c.History = 1
		// LimitMarkerTTL turns on per-message TTL for the bucket, so a
		// finished instance's final record can carry a Nats-TTL header and
		// expire by itself after its retention.
		c.LimitMarkerTTL = time.Second
		c.MaxValueSize = maxValue
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	_, err = ensureKV(ctx, js, DefinitionsBucket, func(c *jetstream.KeyValueConfig) {
		c.History = 1
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	// A deploy writes every version and version pointer it changes in one
	// atomic batch, so it is all or none. A bucket's settings do not say
	// so; its stream's do (and a bucket update resets it, hence every time).
	err = ensureStream(ctx, js, KVStream(DefinitionsBucket), func(c *jetstream.StreamConfig) {
		c.AllowAtomicPublish = true
	}, log)
	if err != nil {
		return err
	}
	_, err = ensureKV(ctx, js, IncidentsBucket, func(c *jetstream.KeyValueConfig) {
		c.History = 1
		c.LimitMarkerTTL = time.Second // closed records and snapshots expire (retention)
		c.MaxValueSize = maxValue
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	_, err = ensureKV(ctx, js, MessagesBucket, func(c *jetstream.KeyValueConfig) {
		c.History = 1
		c.MaxValueSize = maxValue
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	// A bucket added to schema 3 without a new schema: a store provisioned
	// before gets it on its next Provision, and no record of the layout
	// changes meaning.
	_, err = ensureKV(ctx, js, TasksBucket, func(c *jetstream.KeyValueConfig) {
		c.History = 1
		c.LimitMarkerTTL = time.Second // finished records expire (retention); the index hears of it
		c.MaxValueSize = maxValue
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	// Added like the tasks bucket; its records stay until an operator
	// closes them.
	_, err = ensureKV(ctx, js, LostBucket, func(c *jetstream.KeyValueConfig) {
		c.History = 1
		c.MaxValueSize = maxValue
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	if err != nil {
		return err
	}
	// Leases and heartbeats live for the failover on the server's clock;
	// an expiry leaves a marker, so watchers hear of it
	// (docs/engine.md §6.1).
	_, err = ensureKV(ctx, js, OwnersBucket, func(c *jetstream.KeyValueConfig) {
		c.History = 1
		c.TTL, c.LimitMarkerTTL = cfg.Failover, cfg.Failover
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	return err
}
