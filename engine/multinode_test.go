package engine_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/jetbpm/jetbpm/internal/testwait"
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
	counts := factsOfEach(t, env.JS, "fan", instance.FactCompleted, len(ids))
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
	// On a cluster a stream's leader may be moving: count again, bounded.
	var counts map[string]int
	testwait.Until(t, 30*time.Second, "the facts stream to answer", func() (err error) {
		counts, err = countFacts(js, processID, kind)
		return err
	})
	return counts
}

// factsOfEach waits until n instances of processID have a fact of kind
// stored (facts are published just after the checkpoint a test saw) and
// returns the count per instance.
func factsOfEach(t testing.TB, js jetstream.JetStream, processID string, kind instance.FactKind, n int) map[string]int {
	t.Helper()
	var counts map[string]int
	testwait.Until(t, 10*time.Second, fmt.Sprintf("%s facts of %d instances", kind, n), func() error {
		if counts = storedFacts(t, js, processID, kind); len(counts) < n {
			return fmt.Errorf("%d instances have one", len(counts))
		}
		return nil
	})
	return counts
}

// countFacts reads the facts of processID and kind one by one from the
// stream leader (message get by subject), which answers as soon as the
// stream has one; a consumer on a cluster that just lost a node may not.
func countFacts(js jetstream.JetStream, processID string, kind instance.FactKind) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, streams.FactsStream)
	if err != nil {
		return nil, err
	}
	subject := streams.FactSubject(streams.FactInstance, processID, string(kind))
	counts := map[string]int{}
	for seq := uint64(1); ; {
		m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return counts, nil
		}
		if err != nil {
			return nil, err
		}
		var f instance.Fact
		if err := json.Unmarshal(m.Data, &f); err != nil {
			return nil, err
		}
		counts[f.Instance]++
		seq = m.Sequence + 1
	}
}
