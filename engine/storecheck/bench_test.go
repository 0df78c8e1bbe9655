package storecheck_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/outbox"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// BenchmarkCheck measures the start-up check of a whole store of n
// instances, each with a checkpoint, a queued job and a pending timer
// (docs/reliability.md, "A damaged store"):
//
//	go test -run '^$' -bench Check -benchtime 3x ./engine/storecheck/
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			env := streamstest.Start(b)
			fill(b, ctx, env, n)
			c := checker(b, ctx, env, "")
			b.ResetTimer()
			for b.Loop() {
				r, err := c.Check(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if r.Damaged() || r.Read.Checkpoints != n || r.Read.Jobs != n || r.Read.Timers != n {
					b.Fatalf("report %+v", r)
				}
			}
		})
	}
}

// fill stores n instances' checkpoints, jobs and timers, published
// asynchronously.
func fill(b *testing.B, ctx context.Context, env *streamstest.Env, n int) {
	b.Helper()
	state, _ := streams.Marshal(instance.State{ID: "x", ProcessID: "p", Version: 1, Status: instance.Active})
	due := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	for i := range n {
		id := fmt.Sprintf("i-%06d", i)
		cp := nats.NewMsg("$KV." + streams.InstancesBucket + "." + id)
		cp.Data = state
		job := nats.NewMsg(streams.JobSubject("charge", id+"/charge/1"))
		job.Data = []byte(`{"id":"` + id + `/charge/1","topic":"charge","instanceId":"` + id + `","processId":"p","nodeId":"charge","input":{}}`)
		job.Header.Set(outbox.HeaderInstance, id)
		timer := nats.NewMsg(streams.TimerSubject(i%8, id, "w1"))
		timer.Data = []byte("x")
		timer.Header.Set("Nats-Schedule", "@at "+due)
		timer.Header.Set("Nats-Schedule-Target", streams.EventSubject(i%8, id))
		for _, m := range []*nats.Msg{cp, job, timer} {
			if _, err := env.JS.PublishMsgAsync(m); err != nil {
				b.Fatal(err)
			}
		}
	}
	select {
	case <-env.JS.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal(ctx.Err())
	}
}
