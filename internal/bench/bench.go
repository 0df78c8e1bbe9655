// Package bench measures jetbpm end to end: it runs a scenario (a process,
// its workers, a load) against an engine on a real JetStream server, and
// the raw JetStream job lifecycle on the same server in the same run, so
// the ratio between them means something on a noisy machine.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/embedded"
)

// Config says what to run. The zero value of each field has a default.
type Config struct {
	Scenario string        // one-task, one-script, ten-inproc, ten-inline, fanout, retry, timers, message
	Duration time.Duration // how long to load (default 10 s)
	Inflight int           // closed loop: instances in flight (default 64)
	Rate     float64       // open loop: starts per second; 0 = closed loop
	// Instances, when set, starts exactly this many instances (closed loop)
	// instead of loading for Duration.
	Instances int
	// ParkFirst starts all Instances before any worker runs, then starts
	// the workers: the "100,000 parked instances" run.
	ParkFirst  bool
	WorkersTCP bool // workers connect over loopback TCP
	Workers    int  // worker connections (default 4)
	// Worker is the workers' protocol: "nats" (workerkit, the default),
	// "zeebe-grpc" (the Zeebe gateway protocol over loopback TCP, against
	// the gateway serve --grpc runs) or "c8rest" (Camunda 8's REST API over
	// loopback TCP, against the /v2 serve --http runs).
	Worker     string
	Baseline   bool // also measure the raw JetStream lifecycle
	Partitions int  // default 8
	// Engines is how many engine nodes share the server (default 1), each
	// on its own connection; they share the partitions by lease
	// (docs/engine.md §6.1). The first runs in the bench's process; with
	// EngineCommand the others are processes of their own, else the
	// loader spreads its starts over them all in this process.
	Engines int
	// EngineCommand, when set, runs engine nodes 2..Engines as
	// `EngineCommand serve --nats-url ...` processes (the jetbpm binary):
	// the loader starts every instance through the first node, and each
	// node's completions are read from its /metrics. Scenarios with
	// in-process operations cannot use it (a serve has none of them); the
	// processes sync nothing themselves (the server's policy applies to
	// their writes).
	EngineCommand []string
	NATSURL       string
	// Durability is the embedded server's level (not with NATSURL): "sync"
	// as serve's default (the engine syncs the store before it answers or
	// acknowledges: a group commit), "always" (the server syncs every write
	// before it acknowledges it, as an external server with sync_interval:
	// always), or "" / "os" (the server's default, a sync every two minutes).
	Durability string
	// History is the engines' history level (default full). Below full
	// the bench hears of finished instances from the checkpoints' summary
	// headers, since no instance fact is written.
	History history.Level
	// QueuedStarts stores a start event per start instead of the direct
	// start (engine.Options.QueuedStarts), to compare the two.
	QueuedStarts bool
	// Replicas is the replication factor of the streams the bench
	// provisions (default 1; 3 against a 3-node cluster at NATSURL).
	Replicas int
	Logger   *slog.Logger
	// Progress is called about once a second while the load runs.
	Progress func(Progress)
}

// Progress is a running count.
type Progress struct {
	Elapsed   time.Duration
	Started   int64
	Completed int64
}

// Result is what a run measured; its JSON form is jetbpm bench --json.
type Result struct {
	Scenario        string  `json:"scenario"`
	Mode            string  `json:"mode"`
	Worker          string  `json:"worker"`
	Durability      string  `json:"durability,omitempty"`   // the embedded server's: sync or os
	History         string  `json:"history"`                // the engines' history level
	QueuedStarts    bool    `json:"queuedStarts,omitempty"` // a start event stored per start
	Instances       int64   `json:"instances"`
	Jobs            int64   `json:"jobs"`
	Seconds         float64 `json:"seconds"`
	InstancesPerSec float64 `json:"instancesPerSec"`
	JobsPerSec      float64 `json:"jobsPerSec"`
	// Messages is how many messages the loader published (message
	// scenario).
	Messages  int64 `json:"messages,omitempty"`
	LatencyMs struct {
		StartToComplete Percentiles `json:"startToComplete"`
		EnqueueToPickup Percentiles `json:"enqueueToPickup"`
		// PublishToCorrelated runs from the publish call to the message's
		// correlated fact (message scenario).
		PublishToCorrelated Percentiles `json:"publishToCorrelated,omitzero"`
	} `json:"latencyMs"`
	CPUSecondsPer1000 float64 `json:"cpuSecondsPer1000"`
	// SyncRoundsPer1000 counts the group commit's rounds (durability sync).
	SyncRoundsPer1000 float64   `json:"syncRoundsPer1000,omitempty"`
	PeakRSSBytes      int64     `json:"peakRssBytes"`
	Baseline          *Baseline `json:"baseline,omitempty"`
	// Ratio is instancesPerSec / baseline.jobsPerSec.
	Ratio float64 `json:"ratio,omitempty"`
	// EngineCompleted is, with more than one engine node, how many
	// instances each node completed (the node the instance's partition was
	// pinned to commits its completion).
	EngineCompleted []int64  `json:"engineCompleted,omitempty"`
	Notes           []string `json:"notes,omitempty"`
}

// ScenarioNames lists the scenarios, for usage and error messages.
const ScenarioNames = "one-task, one-script, ten-inproc, ten-inline, fanout, retry, timers or message"

// Baseline is the raw JetStream job lifecycle measured in the same run.
type Baseline struct {
	JobsPerSec float64 `json:"jobsPerSec"`
	Seconds    float64 `json:"seconds"`
}

func (c *Config) defaults() error {
	if c.Scenario == "" {
		c.Scenario = "one-task"
	}
	if _, ok := scenarios[c.Scenario]; !ok {
		return fmt.Errorf("unknown scenario %q (want %s)", c.Scenario, ScenarioNames)
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.Inflight <= 0 {
		c.Inflight = 64
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	switch c.Worker {
	case "":
		c.Worker = "nats"
	case "nats", "zeebe-grpc", "c8rest":
	default:
		return fmt.Errorf("unknown worker %q (want nats, zeebe-grpc or c8rest)", c.Worker)
	}
	if c.Engines <= 0 {
		c.Engines = 1
	}
	if c.Engines > 1 && len(c.EngineCommand) > 0 && len(scenarios[c.Scenario].ops) > 0 {
		return fmt.Errorf("scenario %s runs in-process operations, which engine node processes do not have: run it with one engine node", c.Scenario)
	}
	if c.Partitions <= 0 {
		c.Partitions = streams.DefaultPartitions
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if c.Scenario == "timers" && c.Instances == 0 {
		c.Instances = 10_000
	}
	return nil
}

// env is a running server, engine and the connections of one run.
type env struct {
	cfg     Config
	server  *embedded.Server
	url     string // for TCP clients
	engNC   *nats.Conn
	eng     *engine.Engine   // the first of engines
	engines []*engine.Engine // Config.Engines nodes
	// completed reads, per node, the instances it completed.
	completed []func() int64
	cleanup   []func()
}

func (e *env) close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
}

// connect returns a new client connection: in-process to an embedded
// server unless TCP is asked for.
func (e *env) connect(tcp bool) (*nats.Conn, error) {
	var nc *nats.Conn
	var err error
	switch {
	case e.server != nil && !tcp:
		nc, err = e.server.Connect()
	default:
		nc, err = nats.Connect(e.url)
	}
	if err == nil {
		e.cleanup = append(e.cleanup, nc.Close)
	}
	return nc, err
}

// syncRounds is how many rounds the embedded server's group commit ran.
func (e *env) syncRounds() uint64 {
	if e.server == nil {
		return 0
	}
	return e.server.SyncRounds()
}

func setup(ctx context.Context, cfg Config, sc *scenario) (*env, error) {
	e := &env{cfg: cfg}
	if cfg.NATSURL == "" {
		dir, err := os.MkdirTemp("", "jetbpm-bench-*")
		if err != nil {
			return nil, err
		}
		e.cleanup = append(e.cleanup, func() { os.RemoveAll(dir) })
		port := -1
		srv, err := embedded.Start(embedded.Config{StoreDir: dir, Port: port, NoListen: !cfg.WorkersTCP && len(cfg.EngineCommand) == 0, SyncAlways: cfg.Durability == "always", Logger: cfg.Logger})
		if err != nil {
			e.close()
			return nil, err
		}
		e.server, e.url = srv, srv.ClientURL()
		e.cleanup = append(e.cleanup, srv.Shutdown)
	} else {
		e.url = cfg.NATSURL
	}
	nc, err := e.connect(false)
	if err != nil {
		e.close()
		return nil, err
	}
	e.engNC = nc
	js, err := jetstreamOf(nc)
	if err != nil {
		e.close()
		return nil, err
	}
	if _, err := streams.Provision(ctx, js, streams.Config{Partitions: cfg.Partitions, Replicas: cfg.Replicas, Logger: cfg.Logger}); err != nil {
		e.close()
		return nil, err
	}
	var syncer engine.Syncer
	if e.server != nil && cfg.Durability == "sync" {
		if err := e.server.SyncAll(); err != nil {
			e.close()
			return nil, err
		}
		syncer = e.server
	}
	for i := range cfg.Engines {
		if i > 0 {
			if nc, err = e.connect(false); err != nil {
				e.close()
				return nil, err
			}
		}
		reg := metrics.NewRegistry()
		eng, err := engine.Open(ctx, nc, engine.Options{Logger: cfg.Logger, Operations: sc.operations(), Metrics: reg, Sync: syncer, History: cfg.History, QueuedStarts: cfg.QueuedStarts})
		if err != nil {
			e.close()
			return nil, err
		}
		e.engines = append(e.engines, eng)
		e.completed = append(e.completed, func() int64 { return completedFacts(reg) })
		e.cleanup = append(e.cleanup, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = eng.Close(ctx)
		})
		if len(cfg.EngineCommand) > 0 {
			break // the other nodes are processes
		}
	}
	e.eng = e.engines[0]
	for i := 1; i < cfg.Engines && len(cfg.EngineCommand) > 0; i++ {
		n, err := startNode(ctx, cfg.EngineCommand, e.url, cfg, i)
		if err != nil {
			e.close()
			return nil, err
		}
		e.cleanup = append(e.cleanup, n.stop)
		e.completed = append(e.completed, n.completed)
	}
	return e, nil
}

// completedCounts reads each node's count of the instances it completed.
// A node counts an instance once it has published its completed fact, so
// the counts may trail the facts the run has seen: they are read again
// until they add up to want, for a few seconds at most.
func (e *env) completedCounts(want int64) []int64 {
	deadline := time.Now().Add(5 * time.Second)
	for {
		counts := make([]int64, len(e.completed))
		var sum int64
		for i, n := range e.completed {
			counts[i] = n()
			sum += counts[i]
		}
		if sum >= want || time.Now().After(deadline) {
			return counts
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// completedFacts reads a node's count of completed instances from its
// metrics.
func completedFacts(reg *metrics.Registry) int64 {
	var b strings.Builder
	_ = reg.WriteText(&b)
	return completedIn(b.String())
}

// completedIn reads the count of completed instances from a node's
// metrics text.
func completedIn(text string) int64 {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, `jetbpm_instance_facts_total{kind="completed"} `); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(n)
		}
	}
	return 0
}

// tracker maps started instances to their start times and wakes whoever
// waits for one when its completed fact arrives.
type tracker struct {
	pending   sync.Map // id -> *start
	completed atomic.Int64
	failed    atomic.Int64
	latency   sample
}

type start struct {
	at   time.Time
	done chan struct{}
}

func (t *tracker) begin(id string, at time.Time) *start {
	s := &start{at: at, done: make(chan struct{})}
	t.pending.Store(id, s)
	return s
}

func (t *tracker) finish(id string, ok bool, now time.Time) {
	v, loaded := t.pending.LoadAndDelete(id)
	if !loaded {
		return // a duplicate fact (facts are at-least-once)
	}
	s := v.(*start)
	t.latency.add(now.Sub(s.at))
	if ok {
		t.completed.Add(1)
	} else {
		t.failed.Add(1)
	}
	close(s.done)
}
