package engine_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/workerkit"
)

// cluster is three embedded nats-servers routed into one JetStream cluster.
type cluster struct {
	t       *testing.T
	opts    []*server.Options
	servers []*server.Server
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t}
	routes := make([]int, 3)
	for i := range routes {
		routes[i] = freePort(t)
	}
	var urls []string
	for _, p := range routes {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	for i := range 3 {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: freePort(t),
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true,
			Cluster: server.ClusterOpts{Name: "jetbpm", Host: "127.0.0.1", Port: routes[i]},
			Routes:  server.RoutesFromStr(strings.Join(urls, ",")),
		})
		c.servers = append(c.servers, nil)
		c.start(i)
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			if s != nil {
				s.Shutdown()
			}
		}
	})
	return c
}

func (c *cluster) start(i int) {
	c.t.Helper()
	s, err := server.NewServer(c.opts[i])
	if err != nil {
		c.t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		c.t.Fatalf("server %d not ready", i)
	}
	c.servers[i] = s
}

// waitMetaLeader waits (bounded) until the servers have elected
// JetStream's meta leader; the servers expose no event for it.
func (c *cluster) waitMetaLeader() {
	c.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, s := range c.servers {
			if s != nil && s.JetStreamIsLeader() {
				return
			}
		}
	}
	c.t.Fatal("no JetStream meta leader within 20s")
}

func (c *cluster) stop(i int) {
	c.servers[i].Shutdown()
	c.servers[i].WaitForShutdown()
	c.servers[i] = nil
}

func (c *cluster) url() string {
	var urls []string
	for _, o := range c.opts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(urls, ",")
}

func (c *cluster) connect() *nats.Conn {
	c.t.Helper()
	nc, err := nats.Connect(c.url(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	return nc
}

// TestClusterSurvivesNodeLosses runs instances on a 3-node NATS cluster with
// replicated streams and buckets, two engine nodes and an external worker.
// Half way, one engine node dies (its connection drops, nothing flushed) and
// one NATS node stops; both come back. Every instance completes, once, and
// no job runs more than once per loss.
func TestClusterSurvivesNodeLosses(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster takes a while")
	}
	c := startCluster(t)
	nc := c.connect()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c.waitMetaLeader()
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		actx, acancel := context.WithTimeout(ctx, 15*time.Second)
		_, err = streams.Provision(actx, js, streams.Config{Replicas: 3, Partitions: 4, Logger: quietLog,
			EventAckWait: 2 * time.Second, Failover: 2 * time.Second})
		acancel()
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("provision R3: %v", err)
	}
	ncA := c.connect()
	engA, err := engine.Open(ctx, ncA, engine.Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer engA.Close(context.Background())
	engB := enginetest.Open(t, c.connect(), engine.Options{})
	p := build(t, model.NewBuilder("clustered").StartEvent("s").
		ScriptTask("a", "n * 2", "doubled").ServiceTask("charge", "", model.WithWorker("cluster-charge")).
		TimerCatchEvent("pause", model.Duration("PT0.3S")).EndEvent("e").
		Sequence("s", "a", "charge", "pause", "e"))
	if _, err := engB.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	runs := map[string]int{} // job id → executions
	w, err := workerkit.New(c.connect(), workerkit.Options{Name: "cluster-worker", Logger: quietLog, VerdictTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("cluster-charge", func(_ context.Context, job *workerkit.Job) (map[string]any, error) {
		mu.Lock()
		runs[job.ID]++
		mu.Unlock()
		return map[string]any{"receipt": fmt.Sprintf("r-%v", job.Input["n"])}, nil
	}, workerkit.Concurrency(8))
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(wctx) }()
	defer func() {
		stopWorker()
		<-workerDone
	}()
	const n = 200
	ids := make([]string, 0, n)
	// A request that meets a leader election may go unanswered: each start
	// gets its own deadline and is retried; the same id makes that safe.
	start := func(eng *engine.Engine, i int) {
		var id string
		var err error
		for attempt := 0; attempt < 20; attempt++ {
			sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
			id, err = eng.Start(sctx, "clustered", map[string]any{"n": i}, engine.InstanceID(fmt.Sprintf("c-%03d", i)))
			scancel()
			if err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i := range n / 2 {
		start(engA, i)
	}
	// Kill engine node A as a crash would: its connection drops with its
	// events unacknowledged and nothing flushed. Stop NATS node 2 too.
	ncA.Close()
	c.stop(1)
	for i := n / 2; i < n; i++ {
		start(engB, i)
	}
	c.start(1)
	// A restarted engine node A takes its share again. Its first requests
	// may reach node 2 before its JetStream is back (no responders): a
	// real restart would retry, so does the test, boundedly.
	ncA2 := c.connect()
	var engA2 *engine.Engine
	for attempt := 0; ; attempt++ {
		if engA2, err = engine.Open(ctx, ncA2, engine.Options{Logger: quietLog}); err == nil {
			break
		}
		if attempt == 50 {
			t.Fatalf("restart engine node A: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the cluster offers no readiness event to wait on
	}
	defer engA2.Close(context.Background())
	lost := time.Now()
	for i, id := range ids {
		v, err := engB.WaitUntil(ctx, id, func(v *engine.InstanceView) bool { return v.Status.Finished() })
		if err != nil || v.Status != instance.Completed || v.Variables["doubled"] != int64(2*i) ||
			v.Variables["receipt"] != fmt.Sprintf("r-%d", i) {
			t.Fatalf("instance %s: %+v %v", id, v, err)
		}
	}
	t.Logf("all %d instances completed %s after the losses", n, time.Since(lost).Round(time.Millisecond))
	// Count through node 1, which never went down: the restarted node's
	// JetStream API answers only once it has caught up.
	steady, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", c.opts[0].Port))
	if err != nil {
		t.Fatal(err)
	}
	defer steady.Close()
	sjs, _ := jetstream.New(steady)
	var counts map[string]int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		counts = storedFacts(t, sjs, "clustered", instance.FactCompleted)
		if len(counts) >= n || time.Now().After(deadline) {
			break
		}
	}
	for _, id := range ids {
		if counts[id] != 1 {
			t.Errorf("instance %s: %d completed facts stored, want 1", id, counts[id])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != n {
		t.Errorf("%d jobs ran, want %d", len(runs), n)
	}
	for job, r := range runs {
		if r > 1+2 { // the engine node and the NATS node losses
			t.Errorf("job %s ran %d times, want at most 3", job, r)
		}
	}
}
