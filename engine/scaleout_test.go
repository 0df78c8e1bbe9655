package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/engine/ownership"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// write is one checkpoint write a node's partition made.
type write struct {
	node   string
	epoch  uint64
	id     string
	rev    uint64
	partNo int
}

// writeLog collects the checkpoint writes of several nodes.
type writeLog struct {
	mu     sync.Mutex
	writes []write
}

func (l *writeLog) options(node string) engine.Options {
	opts := engine.Options{NodeID: node, Logger: quietLog}
	engine.Wrote(&opts, func(p int, epoch uint64, id string, rev uint64) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.writes = append(l.writes, write{node: node, epoch: epoch, id: id, rev: rev, partNo: p})
	})
	return opts
}

// shared waits until nodes hold every partition, each its quota.
func shared(t *testing.T, p int, nodes map[string]*engine.Engine) {
	t.Helper()
	var ids []string
	for id := range nodes {
		ids = append(ids, id)
	}
	testwait.Until(t, 20*time.Second, fmt.Sprintf("%v to share the partitions", ids), func() error {
		total := 0
		for id, eng := range nodes {
			held := eng.Held()
			if q := ownership.Quota(id, ids, p); len(held) != q {
				return fmt.Errorf("%s holds %v, quota %d", id, held, q)
			}
			total += len(held)
		}
		if total != p {
			return fmt.Errorf("%d of %d partitions held", total, p)
		}
		return nil
	})
}

// Engine nodes that join share the partitions by quota and a node that
// closes hands its partitions over, all while instances run; every
// instance completes once, both nodes step instances, and within each
// partition, in the order the store gave revisions, the lease epochs
// the writes were made under never go down: once a new holder wrote, no
// write of an older holder follows (docs/engine.md §6.1).
func TestPartitionsMoveBetweenNodesUnderLoad(t *testing.T) {
	const parts = 8
	env := streamstest.Start(t, streamstest.WithPartitions(parts))
	log := &writeLog{}
	a := enginetest.Open(t, env.NewConn(t), withSync(env, log.options("a")))
	p := build(t, model.NewBuilder("moving").StartEvent("s").
		ScriptTask("inc", "n + 1", "inc").
		TimerCatchEvent("pause", model.Duration("PT0.1S")).
		ScriptTask("dbl", "inc * 2", "dbl").EndEvent("e").
		Sequence("s", "inc", "pause", "dbl", "e"))
	ctx := context.Background()
	if _, err := a.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	const n = 600
	done := collectFacts(t, env.Conn, "moving", instance.FactCompleted, n)
	var b, c *engine.Engine
	for i := range n {
		switch i {
		case 100:
			b = enginetest.Open(t, env.NewConn(t), withSync(env, log.options("b")))
			shared(t, parts, map[string]*engine.Engine{"a": a, "b": b})
		case 300:
			c = enginetest.Open(t, env.NewConn(t), withSync(env, log.options("c")))
			shared(t, parts, map[string]*engine.Engine{"a": a, "b": b, "c": c})
		case 400:
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}
			shared(t, parts, map[string]*engine.Engine{"b": b, "c": c})
		}
		via := a
		if i >= 400 {
			via = []*engine.Engine{b, c}[i%2]
		}
		if _, err := via.Start(ctx, "moving", map[string]any{"n": i}, engine.InstanceID(fmt.Sprintf("mv-%04d", i))); err != nil {
			t.Fatal(err)
		}
	}
	done.wait(t, 60*time.Second)
	for i := range n {
		v, err := b.Instance(ctx, fmt.Sprintf("mv-%04d", i))
		if err != nil || v.Status != instance.Completed || v.Variables["dbl"] != int64(2*(i+1)) {
			t.Fatalf("mv-%04d: %+v %v", i, v, err)
		}
	}
	counts := factsOfEach(t, env.JS, "moving", instance.FactCompleted, n)
	for id, k := range counts {
		if k != 1 {
			t.Errorf("%s completed %d times", id, k)
		}
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	byNode := map[string]int{}
	byPart := map[int][]write{}
	for _, w := range log.writes {
		byNode[w.node]++
		byPart[w.partNo] = append(byPart[w.partNo], w)
	}
	for node, k := range byNode {
		t.Logf("node %s wrote %d checkpoints", node, k)
	}
	if byNode["a"] == 0 || byNode["b"] == 0 || byNode["c"] == 0 {
		t.Errorf("writes by node %v: every node should have stepped instances", byNode)
	}
	moves := 0
	for part, ws := range byPart {
		slices.SortFunc(ws, func(x, y write) int { return int(x.rev) - int(y.rev) })
		for i := 1; i < len(ws); i++ {
			if ws[i].epoch < ws[i-1].epoch {
				t.Errorf("partition %d: revision %d (%s) was written by %s under epoch %d after revision %d (%s) by %s under epoch %d",
					part, ws[i].rev, ws[i].id, ws[i].node, ws[i].epoch, ws[i-1].rev, ws[i-1].id, ws[i-1].node, ws[i-1].epoch)
			}
			if ws[i].epoch != ws[i-1].epoch {
				moves++
			}
		}
	}
	if moves == 0 {
		t.Error("no partition changed holders while it was written")
	}
	t.Logf("%d holder changes seen in the writes", moves)
}

// Cluster shows the nodes, each partition's holder and its backlog: with
// no instance partition stepped, stored starts wait, counted, with the
// age of the oldest.
func TestClusterShowsHoldersAndBacklog(t *testing.T) {
	env := streamstest.Start(t, streamstest.WithPartitions(2))
	opts := engine.Options{NodeID: "only", Logger: quietLog, QueuedStarts: true}
	engine.MessagePartitionsOnly(&opts)
	clock := time.Now().Add(time.Hour)
	opts.Now = func() time.Time { return clock }
	eng := enginetest.Open(t, env.NewConn(t), withSync(env, opts))
	if _, err := eng.Deploy(bounded(t), build(t, model.NewBuilder("waits").StartEvent("s").EndEvent("e").Sequence("s", "e"))); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := eng.Start(bounded(t), "waits", nil, engine.InstanceID(fmt.Sprintf("w-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	v, err := eng.Cluster(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	if v.Node != "only" || v.Partitions != 2 || len(v.Nodes) != 1 || v.Nodes[0].ID != "only" || len(v.Partition) != 2 {
		t.Fatalf("cluster %+v", v)
	}
	var pending uint64
	for _, p := range v.Partition {
		if p.Node != "only" || p.Since.IsZero() {
			t.Errorf("partition %d: %+v, want held by only", p.Partition, p)
		}
		if p.Pending > 0 && (p.OldestSeconds < 3500 || p.OldestSeconds > 3700) {
			t.Errorf("partition %d: oldest %.0f s old by a clock an hour ahead", p.Partition, p.OldestSeconds)
		}
		pending += p.Pending
	}
	if pending != 5 {
		t.Errorf("pending %d, want the 5 stored starts: %+v", pending, v.Partition)
	}
}

// /metrics shows which partitions the node holds and their backlog.
func TestClusterMetrics(t *testing.T) {
	env := streamstest.Start(t, streamstest.WithPartitions(2))
	reg := metrics.NewRegistry()
	enginetest.Open(t, env.NewConn(t), withSync(env, engine.Options{Logger: quietLog, Metrics: reg}))
	var b strings.Builder
	if err := reg.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`jetbpm_partition_held{partition="0"} 1`, `jetbpm_partition_held{partition="1"} 1`,
		`jetbpm_partition_pending{partition="0"} 0`, `jetbpm_partition_oldest_seconds{partition="1"} 0`,
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("metrics lack %s:\n%s", want, b.String())
		}
	}
}
