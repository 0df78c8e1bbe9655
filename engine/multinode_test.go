package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// factLog collects lifecycle facts of one kind, per instance.
type factLog struct {
	mu    sync.Mutex
	seen  map[string]int
	count atomic.Int64
	all   chan struct{}
	want  int
}

func collectFacts(t testing.TB, nc *nats.Conn, processID string, kind instance.FactKind, want int) *factLog {
	t.Helper()
	fl := &factLog{seen: map[string]int{}, all: make(chan struct{}), want: want}
	sub, err := nc.Subscribe(streams.FactSubject(streams.FactInstance, processID, string(kind)), func(m *nats.Msg) {
		var f instance.Fact
		if err := json.Unmarshal(m.Data, &f); err != nil {
			t.Errorf("bad fact: %v", err)
			return
		}
		fl.mu.Lock()
		fl.seen[f.Instance]++
		distinct := len(fl.seen)
		fl.mu.Unlock()
		if distinct == fl.want && fl.count.Add(1) == 1 {
			close(fl.all)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return fl
}

func (fl *factLog) wait(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case <-fl.all:
	case <-time.After(d):
		fl.mu.Lock()
		defer fl.mu.Unlock()
		t.Fatalf("saw %d of %d instances finish within %v", len(fl.seen), fl.want, d)
	}
}

// TestTwoNodesThousandInstances runs 1,000 instances with parallel branches,
// timers and in-process work on two engine nodes sharing one server; half
// way through, the first node shuts down and its partitions fail over.
// Every instance completes exactly once and no branch's update is lost.
func TestTwoNodesThousandInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	var executions atomic.Int64
	ops := &engine.Operations{}
	ops.Register("work", func(ctx context.Context, in map[string]any) (map[string]any, error) {
		executions.Add(1)
		return map[string]any{"worked": true}, nil
	})
	nodeA, err := engine.Open(context.Background(), env.NewConn(t), engine.Options{Operations: ops, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	nodeB := openEngine(t, env, ops)

	p := build(t, model.NewBuilder("fan").
		StartEvent("start").ParallelGateway("fork").
		ScriptTask("a", "n * 2", "a").
		TimerCatchEvent("pause", model.Duration("PT0.2S")).
		ServiceTask("b", "work", model.Output("b", "worked")).
		ScriptTask("c", "n + 1", "c").
		ParallelGateway("join").EndEvent("end").
		Sequence("start", "fork").
		Sequence("fork", "a", "join").
		Sequence("fork", "pause", "b", "join").
		Sequence("fork", "c", "join").
		Sequence("join", "end"))
	ctx := context.Background()
	if _, err := nodeA.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	done := collectFacts(t, env.Conn, "fan", instance.FactCompleted, n)
	ids := make([]string, n)
	for i := range n {
		node := nodeA
		if i%2 == 1 || i >= n/2 {
			node = nodeB
		}
		if i == n/2 {
			if err := nodeA.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
		id, err := node.Start(ctx, "fan", map[string]any{"n": i}, engine.InstanceID(fmt.Sprintf("fan-%04d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	done.wait(t, 90*time.Second)
	for i, id := range ids {
		v, err := nodeB.Instance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != instance.Completed || v.Variables["a"] != int64(2*i) || v.Variables["b"] != true || v.Variables["c"] != int64(i+1) {
			t.Fatalf("instance %s: %+v", id, v)
		}
	}
	if got := executions.Load(); got < n {
		t.Fatalf("service task ran %d times for %d instances", got, n)
	}
	// Facts are published after the checkpoint the instance completed
	// with: the last ones may still be on their way to the stream.
	var counts map[string]int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		counts = storedFacts(t, env.JS, "fan", instance.FactCompleted)
		if len(counts) >= len(ids) || time.Now().After(deadline) {
			break
		}
	}
	for _, id := range ids {
		if counts[id] != 1 {
			t.Errorf("instance %s: %d completed facts stored, want 1", id, counts[id])
		}
	}
}

// storedFacts replays the facts stream and counts the facts of one kind per
// instance. Republished facts are de-duplicated by the stream within its
// window, so each transition is stored once.
func storedFacts(t testing.TB, js jetstream.JetStream, processID string, kind instance.FactKind) map[string]int {
	t.Helper()
	// On a cluster a stream's leader may be moving, and a node that has just
	// seen a peer restart may answer no JetStream API request for a few
	// seconds (longer on a loaded machine): count again, bounded.
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var counts map[string]int
		if counts, err = countFacts(js, processID, kind); err == nil {
			return counts
		}
	}
	t.Fatalf("counting %s facts: %v", kind, err)
	return nil
}

func countFacts(js jetstream.JetStream, processID string, kind instance.FactKind) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subject := streams.FactSubject(streams.FactInstance, processID, string(kind))
	cons, err := js.OrderedConsumer(ctx, streams.FactsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return nil, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for range info.NumPending {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return nil, err
		}
		var f instance.Fact
		if err := json.Unmarshal(m.Data(), &f); err != nil {
			return nil, err
		}
		counts[f.Instance]++
	}
	return counts, nil
}
