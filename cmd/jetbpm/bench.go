package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/internal/bench"
)

const benchUsage = `usage: jetbpm bench [--scenario NAME] [--duration D] [--inflight N | --rate R] [--json]

Measures jetbpm end to end and, in the same run, the raw JetStream job
lifecycle (enqueue → fetch → report → ack → report consumed) on the same
server and storage, and prints both and their ratio. It starts an embedded
NATS server with file storage in a temporary directory unless --nats-url
is given (it then provisions that server and leaves bench streams behind).

Scenarios:
  one-task    start → external service task → end (workers via workerkit in this process)
  ten-inproc  ten sequential in-process service tasks (operations on the pool)
  ten-inline  the same, operations registered inline (run inside the step)
  fanout      parallel gateway, ten external tasks, join
  retry       every job fails twice technically, then succeeds
  timers      10,000 instances waiting on timers due at one moment
  message     start → message catch keyed by the instance → end; the loader
              publishes each instance's message (TTL 1m) right after its start

--inflight N runs closed loop (N instances in flight: maximum throughput);
--rate R runs open loop (R starts a second; latency from each scheduled
start, so stalls are not hidden). --instances N starts exactly N; with
--park-first they are all started before any worker runs.`

func runBench(ctx context.Context, args []string) error {
	fs := newFlagSet("bench")
	var cfg bench.Config
	var asJSON, noBaseline bool
	fs.StringVar(&cfg.Scenario, "scenario", "one-task", "`NAME`: "+bench.ScenarioNames)
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to load")
	fs.IntVar(&cfg.Inflight, "inflight", 64, "closed loop: `N` instances in flight")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop: `R` starts per second (overrides --inflight)")
	fs.IntVar(&cfg.Instances, "instances", 0, "start exactly `N` instances instead of loading for --duration")
	fs.BoolVar(&cfg.ParkFirst, "park-first", false, "start all --instances before any worker runs")
	fs.BoolVar(&cfg.WorkersTCP, "workers-tcp", false, "connect the workers over loopback TCP instead of in-process")
	fs.IntVar(&cfg.Workers, "workers", 4, "`N` worker connections")
	fs.StringVar(&cfg.Worker, "worker", "nats", "the workers' protocol: `nats` (workerkit), zeebe-grpc (Zeebe clients' gRPC, through the gateway) or c8rest (Camunda 8's REST API, /v2)")
	fs.IntVar(&cfg.Partitions, "partitions", 8, "`N` instance partitions of the embedded server")
	fs.IntVar(&cfg.Engines, "engines", 1, "`N` engine nodes sharing the server's partitions: the first in this process, the others `jetbpm serve` processes of this binary")
	fs.StringVar(&cfg.Durability, "durability", "sync", "`LEVEL` of the embedded server: sync (serve's default: the engine syncs the store before it answers or acknowledges), os, or always (the server syncs every write, as an external server with sync_interval: always)")
	historyLevel := fs.String("history", "full", "`LEVEL` of history of the engines: full, instances or incidents (docs/engine.md §8.2)")
	fs.BoolVar(&cfg.QueuedStarts, "queued-starts", false, "store a start event per start, as before direct starts (docs/engine.md §4.1), to compare")
	fs.StringVar(&cfg.NATSURL, "nats-url", "", "measure against this NATS server instead of an embedded one")
	fs.IntVar(&cfg.Replicas, "replicas", 1, "`N` replicas of the streams provisioned on --nats-url (3 on a 3-node cluster)")
	fs.BoolVar(&noBaseline, "no-baseline", false, "skip the raw JetStream baseline")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object instead of a table")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof)")
	logs := addLogFlags(fs)
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	switch cfg.Durability {
	case "sync", "os", "always":
	default:
		return usageErrorf("bench", "--durability %q: want sync, os or always", cfg.Durability)
	}
	var err error
	if cfg.History, err = history.Parse(*historyLevel); err != nil {
		return usageErrorf("bench", "--history: %v", err)
	}
	if cfg.Scenario == "message" && !cfg.History.Keeps(history.Message) {
		return usageErrorf("bench", "--scenario message measures publish→correlated by the message facts: it needs --history full")
	}
	if cfg.ParkFirst && cfg.Instances == 0 {
		return usageErrorf("bench", "--park-first needs --instances")
	}
	cfg.Baseline = !noBaseline
	if cfg.Engines > 1 {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cfg.EngineCommand = []string{self}
	}
	// Per-job records would swamp the run: warnings at least.
	logs.level = max(logs.level, slog.LevelWarn)
	cfg.Logger = logs.logger(os.Stderr)
	cfg.Progress = func(p bench.Progress) {
		fmt.Fprintf(os.Stderr, "\r%5.1fs  started %d  finished %d   ", p.Elapsed.Seconds(), p.Started, p.Completed)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	res, err := bench.Run(ctx, cfg)
	fmt.Fprint(os.Stderr, "\r\033[K")
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Print(res)
	return nil
}
