package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRunScenarios runs each scenario briefly end to end: instances finish,
// the numbers are filled in, the JSON has the keys the bench issue names.
func TestRunScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs servers for a few seconds")
	}
	for _, tc := range []struct {
		cfg  Config
		jobs bool
	}{
		{Config{Scenario: "one-task", Duration: time.Second, Baseline: true}, true},
		{Config{Scenario: "one-script", Instances: 200}, true},
		{Config{Scenario: "ten-inproc", Duration: time.Second}, false},
		{Config{Scenario: "ten-inline", Duration: time.Second}, false},
		{Config{Scenario: "retry", Duration: time.Second}, true},
		{Config{Scenario: "one-task", Instances: 200, ParkFirst: true}, true},
		{Config{Scenario: "timers", Instances: 200, Duration: time.Second}, false},
		{Config{Scenario: "one-task", Rate: 200, Duration: time.Second}, true},
		{Config{Scenario: "message", Duration: time.Second}, false},
		{Config{Scenario: "one-task", Duration: time.Second, Engines: 2}, true},
		{Config{Scenario: "one-task", Instances: 300, Worker: "zeebe-grpc"}, true},
		{Config{Scenario: "retry", Instances: 100, Worker: "zeebe-grpc"}, true},
		{Config{Scenario: "one-task", Instances: 300, Worker: "c8rest"}, true},
		{Config{Scenario: "retry", Instances: 100, Worker: "c8rest"}, true},
	} {
		t.Run(tc.cfg.Scenario, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Logger = slog.New(slog.DiscardHandler)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Instances == 0 || res.InstancesPerSec <= 0 || res.LatencyMs.StartToComplete.N != int(res.Instances) {
				t.Fatalf("%+v", res)
			}
			if tc.jobs && (res.Jobs != res.Instances || cfg.Worker == "" && res.LatencyMs.EnqueueToPickup.N == 0) {
				t.Errorf("jobs not measured, one per instance: %+v", res)
			}
			if res.Worker != cmp.Or(cfg.Worker, "nats") {
				t.Errorf("worker %q, want %q", res.Worker, cfg.Worker)
			}
			if cfg.Instances > 0 && res.Instances != int64(cfg.Instances) {
				t.Errorf("%d instances finished, want %d", res.Instances, cfg.Instances)
			}
			if cfg.Scenario == "message" && (res.Messages != res.Instances || res.LatencyMs.PublishToCorrelated.N != int(res.Instances)) {
				t.Errorf("%d messages published, %d timed to their correlation; want one each for the %d instances", res.Messages, res.LatencyMs.PublishToCorrelated.N, res.Instances)
			}
			if cfg.Scenario != "message" && (res.Messages != 0 || res.LatencyMs.PublishToCorrelated.N != 0) {
				t.Errorf("messages measured in scenario %s: %+v", cfg.Scenario, res)
			}
			if cfg.Baseline && (res.Baseline == nil || res.Baseline.JobsPerSec <= 0 || res.Ratio <= 0) {
				t.Errorf("no baseline: %+v", res.Baseline)
			}
			var sum int64
			for _, n := range res.EngineCompleted {
				sum += n
			}
			if cfg.Engines > 1 && (len(res.EngineCompleted) != cfg.Engines || sum != res.Instances) {
				t.Errorf("completed per engine %v, want %d nodes' counts summing to %d", res.EngineCompleted, cfg.Engines, res.Instances)
			}
			if cfg.Engines <= 1 && res.EngineCompleted != nil {
				t.Errorf("completed per engine %v with one engine", res.EngineCompleted)
			}
			b, _ := json.Marshal(res)
			var keys map[string]any
			_ = json.Unmarshal(b, &keys)
			for _, k := range []string{"scenario", "instancesPerSec", "jobsPerSec", "latencyMs", "cpuSecondsPer1000", "peakRssBytes"} {
				if _, ok := keys[k]; !ok {
					t.Errorf("JSON lacks %q", k)
				}
			}
		})
	}
}

func TestUnknownScenario(t *testing.T) {
	_, err := Run(context.Background(), Config{Scenario: "nope"})
	if err == nil {
		t.Fatal("an unknown scenario ran")
	}
	for name := range scenarios {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%q does not name scenario %s", err, name)
		}
	}
}

func TestPercentiles(t *testing.T) {
	var s sample
	for i := 1; i <= 100; i++ {
		s.add(time.Duration(i) * time.Millisecond)
	}
	p := s.summary()
	if p.P50 != 50 || p.P99 != 99 || p.Max != 100 || p.N != 100 {
		t.Fatalf("%+v", p)
	}
}
