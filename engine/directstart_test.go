package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// lastEventSeq is the events stream's last sequence: every event ever
// stored moved it, whether or not it is still queued.
func lastEventSeq(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	s, err := js.Stream(bounded(t), streams.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// storedCheckpoint is the newest checkpoint message of instance id, or
// nil if there is none.
func storedCheckpoint(t *testing.T, js jetstream.JetStream, id string) *jetstream.RawStreamMsg {
	t.Helper()
	s, err := js.Stream(bounded(t), "KV_"+streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(bounded(t), "$KV."+streams.InstancesBucket+"."+id)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// hasFact reports whether a lifecycle fact of kind is stored for process.
func hasFact(t *testing.T, js jetstream.JetStream, process string, kind instance.FactKind) bool {
	t.Helper()
	s, err := js.Stream(bounded(t), streams.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.GetLastMsgForSubject(bounded(t), streams.FactSubject(streams.FactInstance, process, string(kind)))
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// approveToTheEnd completes the review task of approval instance id and
// waits until the instance has completed.
func approveToTheEnd(t *testing.T, eng *engine.Engine, id string) {
	t.Helper()
	if _, err := eng.CompleteTask(bounded(t), taskAt(t, eng, id, "review"), "ann", nil); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed {
		t.Fatalf("%s: %+v", id, v)
	}
}

// TestDirectStartStoresNoStartEvent: when Start returns, the checkpoint is
// written (marked as a direct create) and the first step's effects are
// stored — the started fact, the user task — and no start event was ever
// stored. Starting the id again changes nothing. With QueuedStarts a
// start event is stored, as before.
func TestDirectStartStoresNoStartEvent(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployTasks(t, eng, approvalProcess(t, "direct"))
	ctx := bounded(t)
	if _, err := eng.Start(ctx, "direct", map[string]any{"n": 1}, engine.InstanceID("d-1")); err != nil {
		t.Fatal(err)
	}
	m := storedCheckpoint(t, env.JS, "d-1")
	if m == nil || m.Header.Get(checkpoint.HeaderDirect) == "" {
		t.Fatalf("checkpoint after Start: %+v", m)
	}
	if !hasFact(t, env.JS, "direct", instance.FactStarted) {
		t.Fatal("no started fact stored when Start returned")
	}
	if seq := lastEventSeq(t, env.JS); seq != 0 {
		t.Fatalf("events stream's last sequence %d: a start event was stored", seq)
	}
	task := taskAt(t, eng, "d-1", "review")
	// Again: the instance exists, nothing changes.
	if id, err := eng.Start(ctx, "direct", map[string]any{"n": 2}, engine.InstanceID("d-1")); err != nil || id != "d-1" {
		t.Fatalf("start again: %q, %v", id, err)
	}
	if again := storedCheckpoint(t, env.JS, "d-1"); again.Sequence != m.Sequence {
		t.Fatalf("start again wrote the checkpoint: sequence %d, was %d", again.Sequence, m.Sequence)
	}
	if _, err := eng.CompleteTask(ctx, task, "ann", nil); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "d-1"); v.Status != instance.Completed || v.Variables["n"] != int64(1) {
		t.Fatalf("%+v", v)
	}
	// A second write has no direct mark.
	if m := storedCheckpoint(t, env.JS, "d-1"); m.Header.Get(checkpoint.HeaderDirect) != "" {
		t.Fatalf("the completed checkpoint is marked direct: %v", m.Header)
	}

	queued := streamstest.Start(t)
	qeng := enginetest.Open(t, queued.Conn, withSync(queued, engine.Options{QueuedStarts: true}))
	deployTasks(t, qeng, approvalProcess(t, "direct"))
	if _, err := qeng.Start(ctx, "direct", nil, engine.InstanceID("q-1")); err != nil {
		t.Fatal(err)
	}
	if seq := lastEventSeq(t, queued.JS); seq != 1 {
		t.Fatalf("QueuedStarts: events stream's last sequence %d, want the start event", seq)
	}
	taskAt(t, qeng, "q-1", "review")
	if m := storedCheckpoint(t, queued.JS, "q-1"); m.Header.Get(checkpoint.HeaderDirect) != "" {
		t.Fatalf("a queued start's checkpoint is marked direct: %v", m.Header)
	}
}

// TestDirectStartCrashAfterWrite crashes a node (in effect) between a
// direct start's checkpoint write and its effects: the caller gets an
// error, the checkpoint exists with its effects unpublished. Either the
// caller's retry with the same id on the node (a new session after the
// crash) finishes it, or a node that opens later sweeps it; either way the
// instance runs once.
func TestDirectStartCrashAfterWrite(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	crash := map[string]bool{"c-retried": true, "c-swept": true}
	var crashes atomic.Int64
	opts := withSync(env, engine.Options{Logger: quietLog})
	engine.CrashAfterWrite(&opts, func(id string) bool {
		if crash[id] {
			crash[id] = false // the loop's goroutine only
			crashes.Add(1)
			return true
		}
		return false
	})
	ctx := bounded(t)
	nodeA, err := engine.Open(ctx, env.NewConn(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	deployTasks(t, nodeA, approvalProcess(t, "crashy"))
	for _, id := range []string{"c-retried", "c-swept"} {
		if _, err := nodeA.Start(ctx, "crashy", nil, engine.InstanceID(id)); err == nil {
			t.Fatalf("%s: Start answered nil though its node crashed after the write", id)
		}
		if storedCheckpoint(t, env.JS, id) == nil {
			t.Fatalf("%s: no checkpoint", id)
		}
	}
	if crashes.Load() != 2 || hasFact(t, env.JS, "crashy", instance.FactStarted) {
		t.Fatalf("crashes %d; a started fact is stored before any effect was published", crashes.Load())
	}
	// The caller retries; the node runs on in a new session.
	if _, err := nodeA.Start(ctx, "crashy", nil, engine.InstanceID("c-retried")); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if !hasFact(t, env.JS, "crashy", instance.FactStarted) {
		t.Fatal("the retried start's effects are not stored when it returns")
	}
	taskAt(t, nodeA, "c-retried", "review")
	if err := nodeA.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Nobody retries c-swept: the next node to open finds it.
	nodeB := openEngine(t, env, nil)
	for _, id := range []string{"c-retried", "c-swept"} {
		approveToTheEnd(t, nodeB, id)
	}
}

// flakySync is the embedded server's group commit, failing while fail is
// set.
type flakySync struct {
	engine.Syncer
	fail atomic.Bool
}

func (f *flakySync) Sync(ctx context.Context) error {
	if f.fail.Load() {
		return errors.New("sync: input/output error (test)")
	}
	return f.Syncer.Sync(ctx)
}

// TestDirectStartSyncFails: a direct start whose sync fails is answered
// with the error, and nothing is answered before it is durable — not
// even a retry that finds the instance. Once the disk works, the retry
// succeeds and the instance runs.
func TestDirectStartSyncFails(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	sync := &flakySync{Syncer: env.Server}
	eng := enginetest.Open(t, env.Conn, engine.Options{Sync: sync})
	deployTasks(t, eng, approvalProcess(t, "synced"))
	ctx := bounded(t)
	sync.fail.Store(true)
	for range 2 {
		if _, err := eng.Start(ctx, "synced", nil, engine.InstanceID("s-1")); err == nil {
			t.Fatalf("Start answered %v while the store cannot sync", err)
		}
	}
	sync.fail.Store(false)
	testwait.Until(t, 10*time.Second, "the retried start", func() error {
		_, err := eng.Start(ctx, "synced", nil, engine.InstanceID("s-1"))
		return err
	})
	approveToTheEnd(t, eng, "s-1")
}

// TestSweepSkipsCleanlyClosedSessions: a node that closes cleanly says
// so, and the next node's sweep leaves its direct creates alone (their
// effects are out); a direct create whose node crashed after the write is
// recovered, and only it.
func TestSweepSkipsCleanlyClosedSessions(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ctx := bounded(t)
	open := func(opts engine.Options) *engine.Engine {
		t.Helper()
		opts.Logger = quietLog
		eng, err := engine.Open(ctx, env.NewConn(t), withSync(env, opts))
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	sweptOnOpen := func(t *testing.T) (engine.Options, <-chan []string) {
		var opts engine.Options
		got := make(chan []string, 1)
		engine.Swept(&opts, func(p int, recovered []string) {
			if p < 0 {
				got <- recovered
			}
		})
		return opts, got
	}
	awaitSweep := func(t *testing.T, got <-chan []string) []string {
		t.Helper()
		select {
		case ids := <-got:
			return ids
		case <-time.After(20 * time.Second):
			t.Fatal("no sweep when the node opened")
			return nil
		}
	}

	a := open(engine.Options{})
	deployTasks(t, a, approvalProcess(t, "swept"))
	startTask(t, a, "swept", "clean-1", nil)
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	opts, got := sweptOnOpen(t)
	b := open(opts)
	if ids := awaitSweep(t, got); len(ids) != 0 {
		t.Fatalf("the sweep after a clean close recovered %v", ids)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var crashOpts engine.Options
	engine.CrashAfterWrite(&crashOpts, func(id string) bool { return id == "crashed-1" })
	c := open(crashOpts)
	if _, err := c.Start(ctx, "swept", nil, engine.InstanceID("crashed-1")); err == nil {
		t.Fatal("Start answered nil though its node crashed after the write")
	}
	if err := c.Close(ctx); err != nil { // a new session after the crash: it closes cleanly
		t.Fatal(err)
	}
	opts, got = sweptOnOpen(t)
	d := open(opts)
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	if ids := awaitSweep(t, got); len(ids) != 1 || ids[0] != "crashed-1" {
		t.Fatalf("the sweep recovered %v, want crashed-1 only", ids)
	}
	taskAt(t, d, "crashed-1", "review")
}

// TestStartOfTheLatestVersionFollowsDeploys: a start of the latest
// version reads this node's copy of the version pointers: its own deploy
// shows at once, another node's once the watch has brought it.
func TestStartOfTheLatestVersionFollowsDeploys(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	a := openEngine(t, env, nil)
	b := enginetest.Open(t, env.NewConn(t), withSync(env, engine.Options{}))
	ctx := bounded(t)
	version := func(eng *engine.Engine, id string) int {
		t.Helper()
		if _, err := eng.Start(ctx, "latest", nil, engine.InstanceID(id)); err != nil {
			t.Fatal(err)
		}
		v, err := eng.Instance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return v.Version
	}
	deployV := func(eng *engine.Engine, node string) {
		t.Helper()
		deployTasks(t, eng, build(t, model.NewBuilder("latest").StartEvent("s").UserTask(node).EndEvent("e").Sequence("s", node, "e")))
	}
	deployV(a, "one")
	if v := version(a, "l-1"); v != 1 {
		t.Fatalf("after the first deploy: version %d", v)
	}
	deployV(a, "two")
	if v := version(a, "l-2"); v != 2 {
		t.Fatalf("right after this node's deploy: version %d, want 2", v)
	}
	deployV(b, "three")
	n := 0
	testwait.Until(t, 10*time.Second, "node A starts version 3", func() error {
		n++
		if v := version(a, fmt.Sprintf("l-3-%d", n)); v != 3 {
			return fmt.Errorf("version %d", v)
		}
		return nil
	})
	if _, err := a.Start(ctx, "nope", nil); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("start of a process never deployed: %v", err)
	}
}

// TestPinSweepRecoversAStoppedNodesDirectCreates: node A crashes after a
// direct create's write and stops, handing its partitions over; node B,
// running all along, takes the partition and sweeps it: the instance
// runs. (B's own sweep at open finds nothing, unless it runs late, after
// the take; either sweep may be the one that recovers.)
func TestPinSweepRecoversAStoppedNodesDirectCreates(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	ctx := bounded(t)
	var crashOpts engine.Options
	engine.CrashAfterWrite(&crashOpts, func(id string) bool { return id == "pinned-1" })
	crashOpts.Logger = quietLog
	a, err := engine.Open(ctx, env.NewConn(t), withSync(env, crashOpts))
	if err != nil {
		t.Fatal(err)
	}
	deployTasks(t, a, approvalProcess(t, "pinned"))
	swept := make(chan []string, 16)
	bOpts := engine.Options{Logger: quietLog, QueuedStarts: true} // B's start below is an event on the partition
	engine.Swept(&bOpts, func(_ int, recovered []string) {
		if len(recovered) > 0 {
			swept <- recovered
		}
	})
	b := enginetest.Open(t, env.NewConn(t), withSync(env, bOpts))
	if _, err := a.Start(ctx, "pinned", nil, engine.InstanceID("pinned-1")); err == nil {
		t.Fatal("Start answered nil though its node crashed after the write")
	}
	if err := a.Close(ctx); err != nil { // its session after the crash closes cleanly
		t.Fatal(err)
	}
	// An instance of the same partition, stepped by B.
	other := ""
	for i := 0; other == ""; i++ {
		if id := fmt.Sprintf("pinner-%d", i); b.PartitionOf(id) == b.PartitionOf("pinned-1") {
			other = id
		}
	}
	startTask(t, b, "pinned", other, nil)
	select {
	case ids := <-swept:
		if len(ids) != 1 || ids[0] != "pinned-1" {
			t.Fatalf("the pin sweep recovered %v, want pinned-1", ids)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no sweep recovered pinned-1 once B held its partition")
	}
	approveToTheEnd(t, b, "pinned-1")
}

// TestStartOnANodeNotHoldingThePartitionIsQueued: where another node holds
// the partition, a start is stored as an event for that node, which takes
// the first step; it creates nothing directly.
func TestStartOnANodeNotHoldingThePartitionIsQueued(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithPartitions(1))
	ctx := bounded(t)
	a := enginetest.Open(t, env.NewConn(t), withSync(env, engine.Options{QueuedStarts: true}))
	deployTasks(t, a, approvalProcess(t, "held"))
	startTask(t, a, "held", "a-1", nil) // its event pins A on the partition
	taskAt(t, a, "a-1", "review")
	b := enginetest.Open(t, env.NewConn(t), withSync(env, engine.Options{}))
	n := 0
	testwait.Until(t, 10*time.Second, "a start on B stored as an event", func() error {
		n++
		id := fmt.Sprintf("b-%d", n)
		before := lastEventSeq(t, env.JS)
		if _, err := b.Start(ctx, "held", nil, engine.InstanceID(id)); err != nil {
			t.Fatal(err)
		}
		if lastEventSeq(t, env.JS) == before {
			return fmt.Errorf("%s was created directly on B", id)
		}
		taskAt(t, a, id, "review")
		if m := storedCheckpoint(t, env.JS, id); m.Header.Get(checkpoint.HeaderDirect) != "" {
			t.Fatalf("%s queued, yet its checkpoint is a direct create", id)
		}
		return nil
	})
}
