package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// benchOpenTasks is the size of the task list BenchmarkTaskList reads.
const benchOpenTasks = 100_000

// BenchmarkTaskList lists the first page (50) of 100,000 open tasks from
// a node's index: by a candidate group of about 7,500 tasks, by one every
// task has, and unfiltered. The records are written to the tasks bucket
// directly (as 100,000 instances' steps would have), then an engine opens
// and its index reads them all; the time that takes is logged.
func BenchmarkTaskList(b *testing.B) {
	env := streamstest.Start(b)
	ctx := context.Background()
	fillTasks(b, env.JS, benchOpenTasks)
	began := time.Now()
	eng := openEngine(b, env, nil)
	first, err := eng.Tasks(ctx, engine.TaskFilter{Limit: 1})
	if err != nil || len(first) != 1 {
		b.Fatalf("first list: %v, %v", first, err)
	}
	b.Logf("index of %d tasks read in %s", benchOpenTasks, time.Since(began).Round(time.Millisecond))
	for _, c := range []struct {
		name string
		f    engine.TaskFilter
	}{
		{"group-of-7500", engine.TaskFilter{CandidateGroup: "g7", Limit: 50}},
		{"group-of-100000", engine.TaskFilter{CandidateGroup: "everyone", Limit: 50}},
		{"unfiltered", engine.TaskFilter{Limit: 50}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				page, err := eng.Tasks(ctx, c.f)
				if err != nil || len(page) != 50 {
					b.Fatalf("page of %d: %v", len(page), err)
				}
			}
		})
	}
}

// fillTasks writes n open task records: each a candidate of group
// "everyone" and of one or two of 20 groups g0…g19 (g7 has about 7,500),
// priorities 0–100, created over a day.
func fillTasks(b *testing.B, js jetstream.JetStream, n int) {
	b.Helper()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var futures []jetstream.PubAckFuture
	for i := range n {
		id := instance.TaskID(fmt.Sprintf("inst-%06d", i), 2)
		groups := []string{"everyone", fmt.Sprintf("g%d", i%20)}
		if i%4 == 0 {
			groups = append(groups, fmt.Sprintf("g%d", (i/4)%20))
		}
		rec := &instance.Task{
			ID: id, Instance: fmt.Sprintf("inst-%06d", i), ProcessID: fmt.Sprintf("proc-%d", i%10), Version: 1, Node: "review",
			Name: "Review", CandidateGroups: groups, Priority: (i * 37) % 101, CreatedAt: t0.Add(time.Duration(i) * 864 * time.Millisecond),
			State: instance.TaskCreated, Variables: map[string]any{"amount": int64(i)}, Revision: 1,
		}
		body, err := streams.Marshal(rec)
		if err != nil {
			b.Fatal(err)
		}
		m := nats.NewMsg(streams.KVSubject(streams.TasksBucket, streams.TaskKey(id)))
		m.Data = body
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			b.Fatal(err)
		}
		futures = append(futures, f)
		if len(futures) == 4096 || i == n-1 {
			for _, f := range futures {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					b.Fatal(err)
				case <-time.After(30 * time.Second):
					b.Fatal("no ack for a task record within 30s")
				}
			}
			futures = futures[:0]
		}
	}
}
