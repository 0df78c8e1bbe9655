package camunda7_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/camunda7"
	"github.com/jetbpm/jetbpm/workerkit"
)

// TestLoadRESTvsNATSWorkers measures instances/s of the one-task model
// (start → external task → end) worked by 20 REST workers (maxTasks 10,
// long polling) and, on a fresh server, by NATS workers (workerkit, 20
// in flight), with 64 instances in flight in both. It runs only with
// JETBPM_LOAD=1 (docs/performance.md has the figures).
func TestLoadRESTvsNATSWorkers(t *testing.T) {
	if os.Getenv("JETBPM_LOAD") == "" {
		t.Skip("a load measurement: set JETBPM_LOAD=1 to run it")
	}
	d := 10 * time.Second
	rest := loadRun(t, "rest", d)
	nat := loadRun(t, "nats", d)
	t.Logf("one-task, 64 in flight, %s: REST workers %.0f inst/s, NATS workers %.0f inst/s, ratio %.2f", d, rest, nat, rest/nat)
}

func loadRun(t *testing.T, mode string, d time.Duration) float64 {
	f := setup(t, camunda7.Options{})
	if r := f.deploy(t, "order.bpmn", orderXML("PT30S")); r.status != 200 {
		t.Fatalf("deploy: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slots := make(chan struct{}, 64)
	var done atomic.Int64
	finish := func() {
		done.Add(1)
		select {
		case <-slots:
		default:
		}
	}
	var wg sync.WaitGroup
	switch mode {
	case "rest":
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		for i := range 20 {
			worker := fmt.Sprintf("w%d", i)
			wg.Go(func() {
				for ctx.Err() == nil {
					tasks, err := postWith[[]lockedTask](client, f, "/external-task/fetchAndLock", map[string]any{"workerId": worker, "maxTasks": 10,
						"asyncResponseTimeout": 1000, "topics": []any{map[string]any{"topicName": "charge", "lockDuration": 30000}}}, 200)
					if err != nil {
						continue
					}
					for _, task := range tasks {
						if _, err := postWith[any](client, f, "/external-task/"+task.ID+"/complete", map[string]any{"workerId": worker,
							"variables": map[string]any{"ok": map[string]any{"value": true, "type": "Boolean"}}}, 204); err == nil {
							finish()
						}
					}
				}
			})
		}
	case "nats":
		nc, err := f.env.Server.Connect()
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		w, err := workerkit.New(nc, workerkit.Options{Name: "bench"})
		if err != nil {
			t.Fatal(err)
		}
		w.Handle("charge", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			defer finish()
			return map[string]any{"ok": true}, nil
		}, workerkit.Concurrency(20))
		wg.Go(func() { _ = w.Run(ctx) })
	}
	start := time.Now()
	var loaders sync.WaitGroup
	for range 16 { // Start waits for its event to be stored: start concurrently
		loaders.Go(func() {
			for time.Since(start) < d {
				select {
				case slots <- struct{}{}:
					if _, err := f.eng.Start(ctx, "order", nil); err != nil {
						t.Errorf("start: %v", err)
						return
					}
				case <-time.After(time.Second):
				}
			}
		})
	}
	loaders.Wait()
	n := done.Load()
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	rate := float64(n) / elapsed.Seconds()
	t.Logf("%s workers: %d instances in %s: %.0f inst/s", mode, n, elapsed.Round(time.Millisecond), rate)
	return rate
}
