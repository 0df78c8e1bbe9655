// Package workerkittest runs workers in tests that count what they ran:
// the fault tests assert that no job ran more often than its losses
// explain.
//
//	runs := workerkittest.Counting(t, ctx, nc, workerkit.Options{Name: "w"}, "charge", 8,
//		func(job *workerkit.Job) map[string]any { return map[string]any{"ok": true} })
//	...
//	for job, n := range runs.Counts() { ... }
package workerkittest

import (
	"context"
	"maps"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/workerkit"
)

// Runs counts the executions of each job a Counting worker ran.
type Runs struct {
	mu sync.Mutex
	n  map[string]int // job id → executions
}

// Counts returns the executions so far, by job id.
func (r *Runs) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}

// Counting runs a worker on nc that completes the jobs of topic with
// what complete returns, up to concurrency at once, counting each job's
// executions, until ctx ends or the test does.
func Counting(t testing.TB, ctx context.Context, nc *nats.Conn, opts workerkit.Options, topic string, concurrency int,
	complete func(*workerkit.Job) map[string]any) *Runs {
	t.Helper()
	w, err := workerkit.New(nc, opts)
	if err != nil {
		t.Fatal(err)
	}
	runs := &Runs{n: map[string]int{}}
	w.Handle(topic, func(_ context.Context, job *workerkit.Job) (map[string]any, error) {
		runs.mu.Lock()
		runs.n[job.ID]++
		runs.mu.Unlock()
		return complete(job), nil
	}, workerkit.Concurrency(concurrency))
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t.Cleanup(func() {
		stop()
		<-done
	})
	return runs
}
