package partition

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/operations"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/script"
	"github.com/jetbpm/jetbpm/streams"
)

// Config is what a node's partitions run with; the engine fills it once
// and shares it. Every field but the handlers and the test hooks is
// required.
type Config struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// Sync makes the writes so far durable before an acknowledgement
	// that depends on them (nil: the server's policy decides).
	Sync  streams.Syncer
	Store *checkpoint.Store   // the checkpoints
	Defs  *deploy.Definitions // the models the steps run
	Pub   *outbox.Publisher   // carries the outboxes; its session fences them
	Queue *outbox.JobQueue    // checks a report's delivery against its job
	// Partitions is how many partitions there are, to address another
	// instance's events.
	Partitions int
	// BatchSize bounds a batch; CacheSize the checkpoints a partition
	// keeps; MaxCheckpointBytes a checkpoint (an instance that would
	// outgrow it fails).
	BatchSize, CacheSize, MaxCheckpointBytes int
	// Now is the engine's clock.
	Now func() time.Time
	// CheckValue refuses a variable over the size limit.
	CheckValue func(name string, v any) error

	// What a step needs of the engine's options (instance.Env).
	Operations       *operations.Registry
	OperationTimeout time.Duration
	// Scripts bound each JavaScript run of a step.
	Scripts          script.Limits
	OperationMetrics operations.Metrics
	Jobs             jobs.Defaults
	IncidentRetry    jobs.RetrySpec
	ErrorMappers     map[string]jobs.ErrorMapper
	RetryPolicies    map[string]jobs.RetryPolicy

	Log     *slog.Logger
	Metrics Metrics
	// History decides which facts a step's outbox keeps (the others are
	// not written at all: docs/engine.md §8.2).
	History history.Level

	// Orphans are told the events of an instance the partition will not
	// step: it has no checkpoint (it never existed, or its record
	// expired), or it is finished. A feature whose events can reach such
	// an instance hands them back or cleans up after them (a correlation
	// goes to the next subscription, a signal wait's index entry is
	// dropped). An error leaves the events unacknowledged.
	Orphans []func(ctx context.Context, id string, events []instance.Event) error
	// StartFailed are told of a start request whose instance could not be
	// created (the process is not deployed, say), so that whoever asked
	// hears of it: the calling instance, or the message partition that
	// holds the key for it. Each acts on the requests that are its own.
	StartFailed []func(ctx context.Context, id string, req *checkpoint.StartRequest, cause error) error

	// Damaged is told, once, of an instance whose checkpoint is damaged
	// (its checksum does not match): the partition quarantines it —
	// holds its events, steps every other instance (quarantine.go).
	// Restored is told when such an instance's checkpoint reads whole
	// again and it steps.
	Damaged  func(ctx context.Context, id string, cause error)
	Restored func(ctx context.Context, id string)
	// LostJob is asked about a job (its message's sequence in the jobs
	// stream) whose instance has no checkpoint at all: true means the
	// store lost the instance and an open damage record names it, so the
	// job is kept back (KeepBack) rather than dropped; false lets it go
	// as the job of an unknown instance.
	LostJob func(ctx context.Context, id string, seq uint64) bool
	// WentBack is told of an instance whose checkpoint the store took
	// back below what this node wrote (revision wrote; found is what the
	// store held, 0 for nothing): the partition has written its own copy
	// back (wentback.go).
	WentBack func(ctx context.Context, id string, wrote, found uint64)
	// QuarantineRedelivery is how long a quarantined instance's events
	// wait before they come again (default DefaultQuarantineRedelivery).
	QuarantineRedelivery time.Duration

	// CrashAfterWrite, for tests only, is asked after every committed
	// checkpoint write; true abandons the batch as a crash would.
	CrashAfterWrite func(instanceID string) bool
	// Wrote, for tests only, is told of every checkpoint write the store
	// acknowledged: the instance and the revision it got.
	Wrote func(instanceID string, rev uint64)

	// HeldBack, for tests only, is told of each instance whose events
	// wait for its committing batch (pipeline.go).
	HeldBack func(instanceID string)
}

func (c *Config) mapper(name string) (jobs.ErrorMapper, bool) {
	m, ok := c.ErrorMappers[name]
	return m, ok
}

func (c *Config) retryPolicy(name string) (jobs.RetryPolicy, bool) {
	r, ok := c.RetryPolicies[name]
	return r, ok
}

// orphaned hands g's events to every orphan handler.
func (p *Partition) orphaned(ctx context.Context, g *group) error {
	for _, h := range p.cfg.Orphans {
		if err := h(ctx, g.id, g.events); err != nil {
			return err
		}
	}
	return nil
}

// startFailed tells every start-failure handler that g's start failed.
func (p *Partition) startFailed(ctx context.Context, g *group, cause error) error {
	for _, h := range p.cfg.StartFailed {
		if err := h(ctx, g.id, g.start, cause); err != nil {
			return err
		}
	}
	return nil
}

// factFamily is the family of facts an effect publishes, "" for an effect
// that is not a fact.
var factFamily = map[instance.EffectKind]string{
	instance.PublishFact:         history.Instance,
	instance.PublishIncidentFact: history.Incident,
	instance.PublishTaskFact:     history.Task,
}

// keepHistory removes from s's outbox the facts the node's history level
// does not write, before the checkpoint that would carry them is encoded.
func (c *Config) keepHistory(s *instance.State) {
	if c.History.Keeps(history.Instance) && c.History.Keeps(history.Task) {
		return // every fact a step makes is kept
	}
	s.Outbox = slices.DeleteFunc(s.Outbox, func(eff instance.Effect) bool {
		f := factFamily[eff.Kind]
		return f != "" && !c.History.Keeps(f)
	})
}
