package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
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

	if _, err := e.Start(ctx, "piped", nil, engine.InstanceID("piped-a")); err != nil {
		t.Fatal(err)
	}
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

	// The loop is free: another start is stepped while piped-a commits.
	if _, err := e.Start(ctx, "piped", nil, engine.InstanceID("piped-b")); err != nil {
		t.Fatal(err)
	}
	waiting := func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "wait" }
	if _, err := e.WaitUntil(ctx, "piped-b", waiting); err != nil {
		t.Fatalf("piped-b was not stepped while piped-a's batch committed: %v", err)
	}
	if v, err := e.Instance(ctx, "piped-a"); err != nil || v.Status != instance.Active {
		t.Fatalf("piped-a before its commit ends: %+v %v, want active", v, err)
	}

	close(release)
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
