// Package engine runs BPMN processes on NATS JetStream.
//
// Open an Engine on a NATS connection to a provisioned server (see package
// streams), deploy processes, start instances and read them back:
//
//	eng, err := engine.Open(ctx, nc, engine.Options{Operations: ops})
//	defer eng.Close(ctx)
//	deps, err := eng.DeployFile(ctx, "order.bpmn")
//	id, err := eng.Start(ctx, "order", map[string]any{"amount": 1500})
//	view, err := eng.Wait(ctx, id)
//
// Every instance lives in one checkpoint in a JetStream KV bucket. Events
// for an instance (start, fired timers, cancel, in-process operation
// results) are published to the instance's partition of the events stream;
// the engine node the server pins that partition to applies them with the
// deterministic step of package instance, writes the checkpoint with
// compare-and-set, then publishes the step's effects and acknowledges the
// events. In-process operations (Operations) run beside the partition
// loops and report their results as events; those registered inline
// (Operations.RegisterInline) run inside the step instead, for code that
// returns in microseconds. Nothing
// waits in memory: a parked instance is a checkpoint plus a queued message
// or a JetStream message schedule, so any node can pick it up after a
// restart.
//
// BPMN messages (PublishMessage, CorrelateMessage) meet the subscriptions
// of waiting instances in message partitions: one writer per partition,
// chosen by the server from the message's name and correlation key, keeps
// one entry per name and key (package correlation) under the same
// compare-and-set and outbox discipline (docs/messages.md).
//
// A user task parks its token until a person acts on it (Tasks,
// ClaimTask, CompleteTask, ...): the task lives on its instance's
// checkpoint, and its record in a KV bucket, written after the checkpoint,
// which every node indexes in memory to answer task lists; every command
// is an event to the instance, answered from the record
// (docs/usertasks.md).
//
// This package is the node's front: Open wires together packages that
// each have one job (docs/architecture.md) — engine/partition runs an
// instance partition's loop around the pure step of engine/instance,
// engine/outbox carries each step's effects, engine/messages,
// engine/signals and engine/timerstarts bring messages, signals and timer
// fires in, engine/operations runs in-process operations, and
// engine/checkpoint, engine/deploy and engine/index keep the instances,
// the deployed processes and this node's indexes of them.
//
// docs/engine.md describes the design and its failure cases.
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/engine/index"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/engine/messages"
	"github.com/jetbpm/jetbpm/engine/operations"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/engine/ownership/keeper"
	"github.com/jetbpm/jetbpm/engine/partition"
	"github.com/jetbpm/jetbpm/engine/signals"
	"github.com/jetbpm/jetbpm/engine/storecheck"
	"github.com/jetbpm/jetbpm/engine/timerstarts"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/script"
	"github.com/jetbpm/jetbpm/streams"
)

// Options configure an Engine. The zero value works.
type Options struct {
	Logger *slog.Logger
	// Now is the engine's clock; nil means time.Now.
	Now func() time.Time
	// Operations resolves in-process service task operations by name.
	Operations *Operations
	// CacheSize bounds the checkpoints kept in memory per node (default
	// 10,000); a miss costs one KV read.
	CacheSize int
	// OperationTimeout bounds in-process operations that set no timeout of
	// their own (default 30 s). Operations run beside the partition loops,
	// so a slow one holds up its own instance only; at its deadline the
	// task fails with a timeout even if the operation ignores its context
	// (docs/engine.md §3.1).
	OperationTimeout time.Duration
	// ScriptTimeout and ScriptMemory bound each run of a JavaScript script
	// (defaults 1 s and 64 MiB: script.Limits). A script runs inside its
	// instance's step, so its partition waits for it: a runaway one is an
	// incident at its limit, not a stuck partition
	// (docs/scripts-listeners-connectors.md §1.4).
	ScriptTimeout time.Duration
	ScriptMemory  int
	// OperationConcurrency bounds the in-process operations this node runs
	// at once (default 256); as many more may wait in its queue.
	OperationConcurrency int
	// FinishedRetention is how long a finished instance's final record stays
	// readable, and a finished user task's record (default 7 days; at least
	// 1 s).
	FinishedRetention time.Duration
	// MaxVariableBytes bounds one variable's encoded size (default 256 KiB).
	MaxVariableBytes int
	// MaxCheckpointBytes bounds an instance's encoded checkpoint (default:
	// the server's max payload minus 16 KiB).
	MaxCheckpointBytes int
	// BatchSize bounds the events a partition applies at once (default 256).
	BatchSize int

	// Jobs are the engine-wide defaults of external service tasks: retry
	// policy, error mapper, trust, lock duration and its cap
	// (docs/jobs.md §5). A task's own options override them.
	Jobs jobs.Overrides
	// TopicJobs are per-topic defaults between Jobs and a task's own
	// options: the fields a topic's entry sets override Jobs for the jobs of
	// that topic (see jobs.Defaults).
	TopicJobs map[string]jobs.Overrides
	// ErrorMappers and RetryPolicies are custom Go policies that tasks
	// name (model.WithCustomErrorMapper, jobs.CustomRetrySpec).
	ErrorMappers  map[string]jobs.ErrorMapper
	RetryPolicies map[string]jobs.RetryPolicy

	// Metrics, when set, receives the engine's Prometheus metrics.
	Metrics *metrics.Registry

	// IncidentRetry is the engine-wide incident retry policy; the
	// zero value retries nothing automatically: every incident waits for an
	// operator. An activity's own policy overrides it.
	IncidentRetry jobs.RetrySpec
	// IncidentRetention is how long the records of closed incidents and
	// their variable snapshots (which may hold sensitive data) are kept
	// after the incident closes (default 30 days); an open incident's
	// record and snapshots stay until it closes. Both retentions become a
	// JetStream per-message TTL, which counts whole seconds: at least one,
	// and a fraction is dropped.
	IncidentRetention time.Duration

	// Sync, when set, makes the store's writes durable: the engine syncs
	// before it answers a call that changed something, and a partition
	// before it sends verdicts or acknowledges what it applied. The
	// embedded server is one (*embedded.Server: a group commit over the
	// store it owns). nil leaves durability to the server's own sync
	// policy: against an external server, its sync_interval
	// (docs/reliability.md, Durability).
	Sync Syncer

	// QueuedStarts stores a start event for every start, as starts
	// published by integrations are, instead of creating the checkpoint
	// directly in Start (docs/engine.md §4.1). Starts cost more; set it to
	// compare, or where another node must step every start.
	QueuedStarts bool

	// MarksFile, when set, is a file the node keeps the store's
	// high-water marks in besides the meta bucket, so that a store that
	// lost its tail is noticed at the next start (docs/reliability.md, "A
	// damaged store"). serve sets it beside the embedded store.
	MarksFile string

	// History is the history level: which facts this node writes at all
	// (docs/engine.md §8.2). The zero value is history.Full, every fact.
	// Set it alike on every node.
	History history.Level

	// NodeID names this node among the engine nodes sharing the store
	// (docs/engine.md §6.1): in its heartbeat and its partitions' leases.
	// The default is a random id per Open. Two running nodes must not
	// share one.
	NodeID string

	// crashAfterWrite, set by tests, is asked after every committed
	// checkpoint write; true abandons the batch as a crash would.
	// crashAfterEntryWrite is the same for message partition entries.
	crashAfterWrite      func(instanceID string) bool
	crashAfterEntryWrite func(entryKey string) bool
	// quarantineRedelivery, set by tests, is how long a quarantined
	// instance's events wait (partition.DefaultQuarantineRedelivery).
	quarantineRedelivery time.Duration
	// heldBack, set by tests, is told of each instance whose events wait
	// for its committing batch (pipeline.go).
	heldBack func(instanceID string)
	// swept, set by tests, is told the instances each sweep of direct
	// creates recovers (sweep.go).
	swept func(p int, recovered []string)
	// messagePartitionsOnly, set by tests, runs no instance partitions, so
	// a test can play the instances' side of the message partitions.
	messagePartitionsOnly bool
	// takesNoRoutes, set by tests, has the node answer no routed start,
	// as a node of a build before routing.
	takesNoRoutes bool
	// wrote, set by tests, is told of every checkpoint write of an
	// instance partition: the partition, the epoch of the lease it was
	// stepped under, the instance and the revision.
	wrote func(p int, epoch uint64, instanceID string, rev uint64)
	// dieBeforeTimerSchedule and dieAfterTimerStart, set by tests, make
	// a deploy stop after its batch, before it arms its timer starts, and
	// a timer start fire's handler stop after it started instance id.
	dieBeforeTimerSchedule bool
	dieAfterTimerStart     func(id string) bool
}

func (o *Options) setDefaults(maxPayload int64) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Operations == nil {
		o.Operations = &Operations{}
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 10_000
	}
	if o.OperationTimeout <= 0 {
		o.OperationTimeout = 30 * time.Second
	}
	if o.OperationConcurrency <= 0 {
		o.OperationConcurrency = 256
	}
	if o.FinishedRetention <= 0 {
		o.FinishedRetention = 7 * 24 * time.Hour
	}
	if o.MaxVariableBytes <= 0 {
		o.MaxVariableBytes = 256 << 10
	}
	if o.MaxCheckpointBytes <= 0 {
		o.MaxCheckpointBytes = int(maxPayload) - 16<<10
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.IncidentRetention <= 0 {
		o.IncidentRetention = 30 * 24 * time.Hour
	}
	if o.History == "" {
		o.History = history.Full
	}
}

// jobDefaults are the engine-wide levels of job configuration.
// checkValue enforces the per-variable size limit (docs/engine.md §8).
func (o *Options) checkValue(name string, v any) error {
	data, err := streams.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) > o.MaxVariableBytes {
		return fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrTooLarge, len(data), o.MaxVariableBytes)
	}
	return nil
}

func (o *Options) jobDefaults() jobs.Defaults {
	return jobs.Defaults{All: o.Jobs, Topics: o.TopicJobs}
}

// A Syncer makes a store's writes durable; *embedded.Server is one.
type Syncer interface {
	// Sync makes every write acknowledged before the call durable.
	Sync(ctx context.Context) error
	// SyncAll makes the streams and consumers created so far durable as
	// well (their configuration files), not only their messages.
	SyncAll() error
	// Failed returns what keeps the store from storing (a full or failing
	// disk), nil while it works. The engine then refuses what would write
	// at once, with that error, instead of waiting for a store that will
	// not answer.
	Failed() error
}

// Errors the engine's operations return; test with errors.Is. They are
// package errdefs' errors, which the engine's packages return.
var (
	ErrNotFound = errdefs.ErrNotFound
	ErrFinished = errdefs.ErrFinished
	ErrInvalid  = errdefs.ErrInvalid
	ErrTooLarge = errdefs.ErrTooLarge
	ErrClosed   = errdefs.ErrClosed
	// ErrDuplicate refuses a message whose id was published already:
	// within the last two minutes, or while a message with that id is
	// buffered.
	ErrDuplicate = errdefs.ErrDuplicate
	// ErrNoSubscription: CorrelateMessage found no subscription (or
	// message start event) for the message.
	ErrNoSubscription = errdefs.ErrNoSubscription
	// ErrConflict refuses a claim of a user task another user holds.
	ErrConflict = errdefs.ErrConflict
)

// In-process operations, from package operations.
type (
	// Operation is an in-process service task implementation: it gets
	// the task's input variables and returns its output variables; a
	// *BpmnError (ThrowError) throws a BPMN error, any other error is a
	// technical failure. See operations.Operation.
	Operation = operations.Operation
	// Operations is a registry of operations by name (Register,
	// RegisterInline); the zero value is empty and ready to use.
	Operations = operations.Registry
	// BpmnError is the error an operation returns to throw a BPMN error.
	BpmnError = operations.BpmnError
)

// ThrowError returns a BPMN error with the given code, for an operation to
// return.
func ThrowError(code, message string) error { return operations.ThrowError(code, message) }

// CallInfo returns the call an operation is serving: instance, node and
// activation identify one execution (an idempotency key).
func CallInfo(ctx context.Context) (instance.Call, bool) { return operations.CallInfo(ctx) }

// Engine is one engine node. It is safe for concurrent use.
type Engine struct {
	opts   Options
	log    *slog.Logger
	nc     *nats.Conn
	js     jetstream.JetStream
	layout streams.Layout
	events jetstream.Stream
	// pub publishes the effects of every partition of this node; ops runs
	// their in-process operations.
	pub       *outbox.Publisher
	queue     *outbox.JobQueue
	ops       *operations.Pool
	store     *checkpoint.Store
	incidents jetstream.KeyValue
	tasks     jetstream.KeyValue
	taskIndex *index.Tasks     // the open and recently finished tasks, for Tasks
	instIndex *index.Instances // a summary of every instance, for Instances
	// slots are the partitions, by number, and the instance partition of
	// each this node steps (holding.go); keeper keeps this node's share
	// of them, holding what stepping one needs.
	slots   []*slot
	keeper  *keeper.Keeper
	holding *holding
	// runCtx ends when the node closes.
	runCtx context.Context
	// pinned carries the partitions this node takes to the sweeper
	// (sweep.go); meta is the bucket of cluster settings, where a session
	// that closed cleanly says so.
	pinned  chan int
	meta    jetstream.KeyValue
	metrics *engineMetrics
	defs    *deploy.Definitions
	// sender publishes PublishMessage's and CorrelateMessage's messages
	// and routes the message partitions' answers (one subscription).
	sender *messages.Sender
	// durable is Options.Sync.
	durable streams.Syncer
	// checker keeps the store's marks and checks it (store.go); lostKV is
	// the bucket of damage records, damage this node's copy of it.
	checker *storecheck.Checker
	// rechecks asks for a store check now (recheck): what else a loss
	// under this node took.
	rechecks chan struct{}
	lostKV   jetstream.KeyValue
	damage   storeWatch

	mu     sync.Mutex
	cancel context.CancelFunc
	done   sync.WaitGroup
	closed bool

	// signals fans broadcasts out; timers arms the timer start events on
	// deploy and takes their fires.
	signals *signals.Broadcaster
	timers  *timerstarts.Starter
}

// Open starts an engine node on a connection to a provisioned JetStream
// server: it reads the layout, then consumes its share of the partitions
// until Close.
func Open(ctx context.Context, nc *nats.Conn, opts Options) (*Engine, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	layout, err := streams.ReadLayout(ctx, js)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	opts.setDefaults(nc.MaxPayload())
	e := &Engine{opts: opts, log: opts.Logger, nc: nc, js: js, layout: layout, pinned: make(chan int, layout.Partitions),
		damage: storeWatch{records: map[string]lost.Record{}}}
	if e.meta, err = js.KeyValue(ctx, streams.MetaBucket); err != nil {
		return nil, fmt.Errorf("engine: bucket %s: %w", streams.MetaBucket, err)
	}
	if opts.Sync != nil {
		e.durable = opts.Sync.Sync
	}
	if e.events, err = js.Stream(ctx, streams.EventsStream); err != nil {
		return nil, fmt.Errorf("engine: events stream: %w", err)
	}
	jobsStream, err := js.Stream(ctx, streams.JobsStream)
	if err != nil {
		return nil, fmt.Errorf("engine: jobs stream: %w", err)
	}
	if err := opts.jobDefaults().Validate(); err != nil {
		return nil, fmt.Errorf("engine: job defaults: %w", err)
	}
	// A per-message TTL is whole seconds, at least one.
	if opts.FinishedRetention < time.Second || opts.IncidentRetention < time.Second {
		return nil, fmt.Errorf("engine: retention %s of finished instances, %s of closed incidents: neither may be under 1s",
			opts.FinishedRetention, opts.IncidentRetention)
	}
	if opts.IncidentRetry.Kind != "" {
		if err := opts.IncidentRetry.Validate(); err != nil {
			return nil, fmt.Errorf("engine: incident retry policy: %w", err)
		}
	}
	if e.incidents, err = js.KeyValue(ctx, streams.IncidentsBucket); err != nil {
		return nil, fmt.Errorf("engine: incidents bucket: %w", err)
	}
	if e.tasks, err = js.KeyValue(ctx, streams.TasksBucket); err != nil {
		return nil, fmt.Errorf("engine: tasks bucket %s (a store provisioned by an older jetbpm gets it on its next provisioning): %w", streams.TasksBucket, err)
	}
	buffer, err := js.Consumer(ctx, streams.MessageCommandsStream, streams.MessageBufferConsumer)
	if err != nil {
		return nil, fmt.Errorf("engine: message buffer consumer: %w", err)
	}
	e.taskIndex = index.NewTasks(e.tasks, e.log)
	e.metrics = newEngineMetrics(opts.Metrics, jobsStream, buffer, e.taskIndex, &e.damage, opts.Now)
	if e.store, err = checkpoint.Open(ctx, js, opts.FinishedRetention); err != nil {
		return nil, err
	}
	e.instIndex = index.NewInstances(js, e.store, e.log)
	if e.defs, err = deploy.Open(ctx, js); err != nil {
		return nil, err
	}
	e.timers = timerstarts.New(timerstarts.Config{
		JS: js, Sync: e.durable, Defs: e.defs, Partitions: layout.Partitions, Now: e.opts.Now, Log: e.log,
		DieBeforeSchedule: e.opts.dieBeforeTimerSchedule, DieAfterStart: e.opts.dieAfterTimerStart,
	})
	entries, err := messages.OpenEntries(ctx, js)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.sender = messages.NewSender(nc, js, e.opts.MaxCheckpointBytes)
	e.signals = signals.New(signals.Config{
		JS: js, Sync: e.durable, Defs: e.defs, Partitions: layout.Partitions, CheckValue: e.opts.checkValue, Log: e.log, Metrics: e.metrics.signals,
	})
	e.ops = operations.NewPool(operations.PoolConfig{
		Exec: e.opts.Operations, JS: js, Partitions: layout.Partitions, MaxEvent: e.opts.MaxCheckpointBytes,
		Concurrency: e.opts.OperationConcurrency, Now: e.opts.Now, Log: e.opts.Logger, Metrics: e.metrics.ops,
	})
	e.pub = outbox.New(js)
	e.queue = outbox.NewJobQueue(js, jobsStream, layout.Replicas, e.log)
	// Every effect kind's handler: the outbox itself knows none by name.
	outbox.HandleTimers(e.pub, e.events)
	outbox.HandleCalls(e.pub, layout.Partitions)
	outbox.HandleFacts(e.pub)
	outbox.HandleIncidents(e.pub, e.incidents, e.opts.IncidentRetention)
	outbox.HandleJobs(e.pub, e.queue)
	outbox.HandleTasks(e.pub, e.tasks, e.opts.FinishedRetention)
	messages.Handle(e.pub)
	signals.Handle(e.pub)
	e.ops.Handle(e.pub)
	runCtx, cancel := context.WithCancel(context.Background())
	e.cancel, e.runCtx = cancel, runCtx
	e.done.Go(func() { e.taskIndex.Run(runCtx) })
	e.done.Go(func() { e.instIndex.Run(runCtx) })
	e.done.Go(func() { e.defs.Follow(runCtx, e.log) })
	fail := func(err error) (*Engine, error) {
		cancel()
		e.done.Wait()
		e.ops.Close(ctx)
		return nil, err
	}
	// Before any of this node's partitions writes: a write after a loss
	// would raise a stream's last sequence over its mark.
	if err := e.checkStore(ctx, runCtx); err != nil {
		return fail(err)
	}
	msgCfg := &messages.Config{
		JS: js, Sync: e.durable, NC: nc, Defs: e.defs, Pub: e.pub, Partitions: layout.Partitions,
		BatchSize: e.opts.BatchSize, CacheSize: e.opts.CacheSize/layout.Partitions + 1, MaxEntryBytes: e.opts.MaxCheckpointBytes,
		Now: e.opts.Now, CheckValue: e.opts.checkValue, Log: e.log, Metrics: e.metrics.messages, History: e.opts.History,
		CrashAfterEntryWrite: e.opts.crashAfterEntryWrite,
	}
	partCfg := &partition.Config{
		NC: nc, JS: js, Sync: e.durable, Store: e.store, Defs: e.defs, Pub: e.pub, Queue: e.queue, Partitions: layout.Partitions,
		BatchSize: e.opts.BatchSize, CacheSize: e.opts.CacheSize/layout.Partitions + 1, MaxCheckpointBytes: e.opts.MaxCheckpointBytes,
		Now: e.opts.Now, CheckValue: e.opts.checkValue,
		Operations: e.opts.Operations, OperationTimeout: e.opts.OperationTimeout, OperationMetrics: e.metrics.ops,
		Scripts: script.Limits{Timeout: e.opts.ScriptTimeout, Memory: uint64(max(e.opts.ScriptMemory, 0))},
		Jobs:    e.opts.jobDefaults(), IncidentRetry: e.opts.IncidentRetry, ErrorMappers: e.opts.ErrorMappers, RetryPolicies: e.opts.RetryPolicies,
		Log: e.log, Metrics: e.metrics.partition, History: e.opts.History,
		// The features whose events can reach an instance that will not
		// step them, or ask for a start that fails.
		Orphans: []func(context.Context, string, []instance.Event) error{
			func(ctx context.Context, id string, events []instance.Event) error {
				return messages.RejectOrphans(ctx, js, e.log, id, events)
			},
			func(ctx context.Context, id string, events []instance.Event) error {
				return signals.DropEntries(ctx, js, id, events)
			},
		},
		StartFailed: []func(context.Context, string, *checkpoint.StartRequest, error) error{
			func(ctx context.Context, id string, req *checkpoint.StartRequest, cause error) error {
				return outbox.ChildStartFailed(ctx, js, layout.Partitions, id, req, cause)
			},
			func(ctx context.Context, id string, req *checkpoint.StartRequest, _ error) error {
				return messages.StartFailed(ctx, js, id, req)
			},
		},
		Damaged: func(ctx context.Context, id string, cause error) {
			if _, err := e.checker.Damaged(ctx, id, cause); err != nil {
				e.log.Error("the record of a damaged checkpoint could not be written; the instance stays quarantined", "instance", id, "err", err)
			}
		},
		LostJob: func(ctx context.Context, id string, seq uint64) bool {
			held, err := e.checker.LostJob(ctx, id, seq)
			if err != nil {
				e.log.Warn("a job of an instance that is not there could not be checked; it is dropped as unknown", "instance", id, "err", err)
			}
			return held
		},
		WentBack: func(ctx context.Context, id string, wrote, found uint64) {
			if err := e.checker.WentBack(ctx, id, wrote, found); err != nil {
				e.log.Error("the record of a checkpoint that went back could not be written", "instance", id, "err", err)
			}
			e.recheck()
		},
		Restored: func(ctx context.Context, id string) {
			if err := e.checker.Restored(ctx, id); err != nil {
				e.log.Warn("the record of a restored checkpoint could not be closed; jetbpm store check closes it", "instance", id, "err", err)
			}
		},
		CrashAfterWrite: e.opts.crashAfterWrite, HeldBack: e.opts.heldBack, QuarantineRedelivery: e.opts.quarantineRedelivery,
	}
	if err := e.openHolding(ctx, partCfg, msgCfg, entries); err != nil {
		return fail(err)
	}
	if !opts.messagePartitionsOnly {
		e.done.Go(func() { e.signals.Run(runCtx) })
		e.done.Go(func() { e.timers.Run(runCtx) })
	}
	// The partitions this node takes start now.
	if err := e.startKeeper(ctx, runCtx); err != nil {
		return fail(err)
	}
	// Until this node answers, starts routed to it are stored.
	if err := e.serveRoutedStarts(runCtx); err != nil {
		return fail(err)
	}
	if !opts.messagePartitionsOnly {
		e.done.Go(func() { e.sweeper(runCtx, e.pinned) })
	}
	e.registerClusterMetrics(opts.Metrics)
	e.log.Info("engine started", "partitions", layout.Partitions, "session", e.pub.Session())
	return e, nil
}

// Close stops consuming events, finishes the batches in flight and the
// in-process operations running or queued, and returns when they are
// written and published, or when ctx ends. Operations still running then
// are cancelled and report nothing: their durable timeouts decide (see
// docs/engine.md §3.1).
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	done := make(chan struct{})
	go func() { e.done.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		e.ops.Close(ctx)
		e.sender.Close()
		return fmt.Errorf("engine: close: %w", ctx.Err())
	}
	e.ops.Close(ctx)
	e.sender.Close()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("engine: close: %w", err)
	}
	// The marks cover this session's last writes.
	if err := e.checker.Mark(ctx); err != nil {
		e.log.Warn("engine: close: store marks not written; the next start compares with the last ones", "err", err)
	}
	// Every outbox this session wrote is published: a sweep need not
	// look at its direct creates.
	if !e.opts.messagePartitionsOnly {
		if err := e.markClosed(ctx); err != nil {
			e.log.Warn("engine: close: could not record the clean close; the next node to open republishes this node's last direct starts' effects (harmless)", "err", err)
		}
	}
	return nil
}

func (e *Engine) partitionOf(id string) int { return streams.PartitionOf(id, e.layout.Partitions) }

// Partitions returns how many partitions the engine's instances are
// spread over, and PartitionOf the one (0..Partitions()-1) instance id
// is on: fixed when the streams are first provisioned.
func (e *Engine) Partitions() int { return e.layout.Partitions }

// History is this node's history level (Options.History): which facts it
// writes.
func (e *Engine) History() history.Level { return e.opts.History }

// Sync makes every write acknowledged so far durable, with Options.Sync;
// without it, it returns nil at once. The engine's own calls sync before
// they answer; a door that writes to the store itself (Camunda 8's keys)
// calls Sync before it hands out what it wrote.
func (e *Engine) Sync(ctx context.Context) error { return e.durable.Sync(ctx) }

// writable returns the store's failure (Syncer.Failed), nil while it
// works or when no Syncer watches it.
func (e *Engine) writable() error {
	if e.opts.Sync == nil {
		return nil
	}
	return streams.NotDurable(e.opts.Sync.Failed())
}

// PartitionOf returns the partition instance id is on.
func (e *Engine) PartitionOf(id string) int { return e.partitionOf(id) }
