package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
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

// TestPipelineOverlapsBatchesAndHoldsBusyInstances holds the commit of a
// batch (between its checkpoint write and its effects) and checks, on one
// partition, that the loop meanwhile steps another instance's start, and
// that a cancel for the held instance waits for that commit and is applied
// after it, exactly once.
func TestPipelineOverlapsBatchesAndHoldsBusyInstances(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithPartitions(1))
	terminated := collectFacts(t, env.Conn, "piped", instance.FactTerminated, 1)

	blocked, release := make(chan struct{}), make(chan struct{})
	var block sync.Once
	held := make(chan string, 8)
	opts := engine.Options{Logger: quietLog}
	engine.CrashAfterWrite(&opts, func(id string) bool {
		if id == "piped-a" {
			block.Do(func() {
				close(blocked)
				<-release
			})
		}
		return false
	})
	engine.HeldBack(&opts, func(id string) { held <- id })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := engine.Open(ctx, env.NewConn(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	defer func() {
		select {
		case <-release:
		default:
			close(release) // never leave the partition blocked
		}
	}()
	p := build(t, model.NewBuilder("piped").StartEvent("s").
		TimerCatchEvent("wait", model.Duration("PT1H")).EndEvent("e").
		Sequence("s", "wait", "e"))
	if _, err := e.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}

	// A direct start is answered when its batch has committed: here,
	// after the release.
	startA := make(chan error, 1)
	go func() {
		_, err := e.Start(ctx, "piped", nil, engine.InstanceID("piped-a"))
		startA <- err
	}()
	select {
	case <-blocked:
	case <-time.After(20 * time.Second):
		t.Fatal("the commit of piped-a's start was not reached")
	}

	cancelled := make(chan error, 1)
	go func() { cancelled <- e.Cancel(ctx, "piped-a", "test") }()
	select {
	case id := <-held:
		if id != "piped-a" {
			t.Fatalf("held back %s, want piped-a", id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the cancel of piped-a was not held back")
	}

	// The loop is free: another start is stepped while piped-a commits
	// (its own commit, and so its answer, comes after piped-a's).
	startB := make(chan error, 1)
	go func() {
		_, err := e.Start(ctx, "piped", nil, engine.InstanceID("piped-b"))
		startB <- err
	}()
	waiting := func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "wait" }
	if _, err := e.WaitUntil(ctx, "piped-b", waiting); err != nil {
		t.Fatalf("piped-b was not stepped while piped-a's batch committed: %v", err)
	}
	if v, err := e.Instance(ctx, "piped-a"); err != nil || v.Status != instance.Active {
		t.Fatalf("piped-a before its commit ends: %+v %v, want active", v, err)
	}

	close(release)
	for _, started := range []chan error{startA, startB} {
		if err := <-started; err != nil {
			t.Fatalf("start: %v", err)
		}
	}
	if err := <-cancelled; err != nil {
		t.Fatalf("cancel: %v", err)
	}
	terminated.wait(t, 20*time.Second)
	v, err := e.Instance(ctx, "piped-a")
	if err != nil || v.Status != instance.Terminated {
		t.Fatalf("piped-a: %+v %v, want terminated", v, err)
	}
	if v, err := e.Instance(ctx, "piped-b"); err != nil || !waiting(v) {
		t.Fatalf("piped-b: %+v %v, want waiting at its timer", v, err)
	}
	terminated.mu.Lock()
	defer terminated.mu.Unlock()
	if n := terminated.seen["piped-a"]; n != 1 {
		t.Fatalf("terminated fact of piped-a published %d times, want 1", n)
	}
}

// TestRepeatedStartOfAnExistingInstance: a start's first delivery is not
// read ahead (the instance almost never exists), so a start repeated
// outside the de-duplication window meets an existing instance at its
// write. The create fails, the start comes back, is read, and is dropped:
// the instance is left as it was.
func TestRepeatedStartOfAnExistingInstance(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithPartitions(1), streamstest.WithFastFailover(time.Second))
	ctx := bounded(t)
	first, err := engine.Open(ctx, env.NewConn(t), engine.Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Deploy(ctx, build(t, model.NewBuilder("again").StartEvent("s").
		UserTask("review").EndEvent("e").Sequence("s", "review", "e"))); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Start(ctx, "again", map[string]any{"x": 1}, engine.InstanceID("again-1")); err != nil {
		t.Fatal(err)
	}
	atReview := func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "review" }
	if _, err := first.WaitUntil(ctx, "again-1", atReview); err != nil {
		t.Fatal(err)
	}
	// A node that has not cached the instance takes over.
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	logs := &logBook{}
	eng := openWith(t, env, engine.Options{Logger: slog.New(&logHandler{book: logs})})

	// The same start under another message id: not de-duplicated.
	body, err := streams.Marshal(engine.StartEnvelope("again-1", "again", 1, map[string]any{"x": 2}))
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(streams.EventSubject(0, "again-1"))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, "start-again:again-1")
	if _, err := env.JS.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	awaitLog(t, logs, "the repeated start to meet the existing instance", func(r logRecord) bool {
		return r.msg == "instance exists already; its start is checked again" && r.attrs["instance"] == "again-1"
	})
	cons, err := env.JS.Consumer(ctx, streams.EventsStream, streams.PartitionConsumer(0))
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 20*time.Second, "the repeated start to be acknowledged", func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending+uint64(info.NumAckPending) > 0 {
			return fmt.Errorf("%d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	v, err := eng.Instance(ctx, "again-1")
	if err != nil || !atReview(v) || v.Variables["x"] != int64(1) {
		t.Fatalf("again-1 after the repeated start: %+v %v; want it at review with x = 1", v, err)
	}
}
