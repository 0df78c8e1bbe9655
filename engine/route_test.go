package engine_test

import (
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// routeNodes opens node A (node id "node-a"), which holds the only
// partition and has started one instance, and node B beside it, which
// holds none.
func routeNodes(t *testing.T, aOpts engine.Options) (env *streamstest.Env, a, b *engine.Engine) {
	t.Helper()
	env = streamstest.Start(t, streamstest.WithPartitions(1))
	aOpts.NodeID = "node-a"
	a = enginetest.Open(t, env.NewConn(t), withSync(env, aOpts))
	deployTasks(t, a, approvalProcess(t, "held"))
	startTask(t, a, "held", "a-1", nil)
	taskAt(t, a, "a-1", "review")
	b = enginetest.Open(t, env.NewConn(t), withSync(env, engine.Options{NodeID: "node-b"}))
	if held := b.Held(); len(held) != 0 {
		t.Fatalf("B holds %v, want none (A holds the only partition)", held)
	}
	return env, a, b
}

// A start on a node that does not hold the instance's partition is routed
// to the node that does, which creates the instance directly: no start
// event is stored, and when Start returns on B the instance exists.
func TestStartOnANodeNotHoldingThePartitionIsRouted(t *testing.T) {
	t.Parallel()
	env, a, b := routeNodes(t, engine.Options{})
	ctx := bounded(t)
	before := lastEventSeq(t, env.JS)
	if _, err := b.Start(ctx, "held", map[string]any{"n": 1}, engine.InstanceID("b-1")); err != nil {
		t.Fatal(err)
	}
	m := storedCheckpoint(t, env.JS, "b-1")
	if m == nil {
		t.Fatal("Start on B returned, and b-1 has no checkpoint")
	}
	if m.Header.Get(checkpoint.HeaderDirect) == "" {
		t.Fatal("b-1's checkpoint is not a direct create")
	}
	if after := lastEventSeq(t, env.JS); after != before {
		t.Fatalf("events stream moved from %d to %d: the start was stored, not routed", before, after)
	}
	taskAt(t, a, "b-1", "review")
	// Starting the id again through B changes nothing.
	if _, err := b.Start(ctx, "held", nil, engine.InstanceID("b-1")); err != nil {
		t.Fatal(err)
	}
	if again := storedCheckpoint(t, env.JS, "b-1"); again.Sequence != m.Sequence {
		t.Fatalf("a repeated start wrote b-1's checkpoint again (sequence %d, was %d)", again.Sequence, m.Sequence)
	}
}

// A holder that does not answer routed starts (a node of an older build)
// leaves the start to be stored as an event, as before routing.
func TestRoutedStartNotAnsweredIsStored(t *testing.T) {
	t.Parallel()
	var aOpts engine.Options
	engine.TakesNoRoutes(&aOpts)
	env, a, b := routeNodes(t, aOpts)
	ctx := bounded(t)
	before := lastEventSeq(t, env.JS)
	if _, err := b.Start(ctx, "held", nil, engine.InstanceID("b-1")); err != nil {
		t.Fatal(err)
	}
	if after := lastEventSeq(t, env.JS); after != before+1 {
		t.Fatalf("events stream moved from %d to %d, want the start stored", before, after)
	}
	taskAt(t, a, "b-1", "review")
	if m := storedCheckpoint(t, env.JS, "b-1"); m.Header.Get(checkpoint.HeaderDirect) != "" {
		t.Fatal("b-1 was stored as a start event, yet its checkpoint is a direct create")
	}
}

// A malformed routed start is answered as failed, naming what is wrong,
// and changes nothing.
func TestMalformedRoutedStartIsRefused(t *testing.T) {
	t.Parallel()
	env, _, _ := routeNodes(t, engine.Options{})
	nc := env.NewConn(t)
	before := lastEventSeq(t, env.JS)
	envelope := func(env checkpoint.Envelope) []byte {
		b, err := streams.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, body := range map[string][]byte{
		"not an envelope": []byte("{"),
		"empty":           nil,
		"no start":        envelope(checkpoint.Envelope{Instance: "x-1"}),
		"bad id":          envelope(checkpoint.Envelope{Instance: "a.b", Start: &checkpoint.StartRequest{ProcessID: "held", Version: 1}}),
		"unknown process": envelope(checkpoint.Envelope{Instance: "x-2", Start: &checkpoint.StartRequest{ProcessID: "nope", Version: 1}}),
	} {
		reply, err := nc.Request(streams.RouteStartSubject("node-a"), body, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := reply.Header.Get("Jetbpm-Route"); got != "failed" || len(reply.Data) == 0 {
			t.Errorf("%s: answered %q %q, want failed with a reason", name, got, reply.Data)
		}
	}
	if after := lastEventSeq(t, env.JS); after != before {
		t.Fatalf("events stream moved from %d to %d", before, after)
	}
	for _, id := range []string{"x-1", "a.b", "x-2"} {
		if m := storedCheckpoint(t, env.JS, id); m != nil {
			t.Errorf("a malformed routed start created %s", id)
		}
	}
}
