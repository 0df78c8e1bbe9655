package streamstest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
)

// Cluster is a JetStream cluster of nats-server processes on loopback, for
// tests that kill a node the way a machine dies: SIGKILL, no flush, no
// goodbye to its routes. The processes are the test binary itself, started
// again as a node (see ServeNodeIfAsked, which the test package's TestMain
// must call).
type Cluster struct {
	t     testing.TB
	nodes []*clusterNode
}

// nodeConfig is what a node process is started with.
type nodeConfig struct {
	Name     string   `json:"name"`
	Port     int      `json:"port"`
	Cluster  int      `json:"cluster"`
	Routes   []string `json:"routes"`
	StoreDir string   `json:"storeDir"`
}

type clusterNode struct {
	cfg    nodeConfig
	cmd    *exec.Cmd
	stdin  io.Closer
	exited chan struct{}
}

// nodeStartTimeout bounds a node's start (a -race binary on a busy
// machine is slow) and the cluster's first meta leader election.
const nodeStartTimeout = 60 * time.Second

// nodeEnv carries a node's configuration to the re-executed test binary.
const nodeEnv = "JETBPM_STREAMSTEST_NODE"

// ServeNodeIfAsked runs a cluster node and never returns when this process
// was started as one by StartCluster; otherwise it returns at once. Call
// it first thing in TestMain. A node exits when its parent test process
// closes its stdin (or dies), so no node outlives its test run.
func ServeNodeIfAsked() {
	raw := os.Getenv(nodeEnv)
	if raw == "" {
		return
	}
	var cfg nodeConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "streamstest node: %s: %v\n", nodeEnv, err)
		os.Exit(2)
	}
	s, err := server.NewServer(&server.Options{
		ServerName: cfg.Name, Host: "127.0.0.1", Port: cfg.Port,
		JetStream: true, StoreDir: cfg.StoreDir, NoSigs: true,
		Cluster: server.ClusterOpts{Name: "streamstest", Host: "127.0.0.1", Port: cfg.Cluster},
		Routes:  server.RoutesFromStr(strings.Join(cfg.Routes, ",")),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "streamstest node %s: %v\n", cfg.Name, err)
		os.Exit(2)
	}
	s.Start()
	if !s.ReadyForConnections(nodeStartTimeout) {
		fmt.Fprintf(os.Stderr, "streamstest node %s: not ready within %s\n", cfg.Name, nodeStartTimeout)
		os.Exit(2)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes stdin or dies
	s.Shutdown()
	s.WaitForShutdown()
	os.Exit(0)
}

// StartCluster starts n node processes routed into one cluster, each with
// its own store in t.TempDir(), and waits until JetStream answers. Nodes
// still running when the test ends are killed.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	clusterPorts := make([]int, n)
	routes := make([]string, n)
	for i := range n {
		clusterPorts[i] = FreePort(t)
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", clusterPorts[i])
	}
	for i := range n {
		c.nodes = append(c.nodes, &clusterNode{cfg: nodeConfig{
			Name: fmt.Sprintf("n%d", i+1), Port: FreePort(t), Cluster: clusterPorts[i], Routes: routes, StoreDir: t.TempDir(),
		}})
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.Kill(i)
		}
	})
	var all []launched
	for i := range n {
		all = append(all, c.launch(i))
	}
	for _, l := range all {
		c.await(l)
	}
	c.WaitJetStream(nodeStartTimeout)
	return c
}

// Start starts node i (again, on its store) and waits until it takes
// connections.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	c.await(c.launch(i))
}

// launched is a node process started and the channel that says whether it
// became ready.
type launched struct {
	node  *clusterNode
	ready chan bool
}

// launch starts node i's process without waiting for it: a fresh cluster's
// nodes come up together.
func (c *Cluster) launch(i int) launched {
	c.t.Helper()
	nd := c.nodes[i]
	exe, err := os.Executable()
	if err != nil {
		c.t.Fatalf("streamstest: %v", err)
	}
	cfg, _ := json.Marshal(nd.cfg)
	nd.cmd = exec.Command(exe)
	nd.cmd.Env = append(os.Environ(), nodeEnv+"="+string(cfg))
	nd.cmd.Stderr = os.Stderr
	stdin, err := nd.cmd.StdinPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	stdout, err := nd.cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := nd.cmd.Start(); err != nil {
		c.t.Fatalf("streamstest: start node %s: %v", nd.cfg.Name, err)
	}
	nd.stdin, nd.exited = stdin, make(chan struct{})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ready <- sc.Scan() && sc.Text() == "ready"
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(nd.cmd, nd.exited)
	return launched{node: nd, ready: ready}
}

func (c *Cluster) await(l launched) {
	c.t.Helper()
	select {
	case ok := <-l.ready:
		if !ok {
			c.t.Fatalf("streamstest: node %s did not start (see its stderr above); did TestMain call ServeNodeIfAsked?", l.node.cfg.Name)
		}
	case <-time.After(nodeStartTimeout):
		c.t.Fatalf("streamstest: node %s not ready within %s", l.node.cfg.Name, nodeStartTimeout)
	}
}

// Kill SIGKILLs node i and waits until it is gone; a node not running is
// left alone.
func (c *Cluster) Kill(i int) {
	nd := c.nodes[i]
	if nd.cmd == nil {
		return
	}
	_ = nd.cmd.Process.Kill()
	<-nd.exited
	_ = nd.stdin.Close()
	nd.cmd = nil
}

// Stop shuts node i down cleanly (it closes its routes and clients, as an
// operator's restart would) and waits until it is gone.
func (c *Cluster) Stop(i int) {
	nd := c.nodes[i]
	if nd.cmd == nil {
		return
	}
	_ = nd.stdin.Close()
	select {
	case <-nd.exited:
	case <-time.After(nodeStartTimeout):
		c.t.Errorf("streamstest: node %s did not stop within %s; killing it", nd.cfg.Name, nodeStartTimeout)
		_ = nd.cmd.Process.Kill()
		<-nd.exited
	}
	nd.cmd = nil
}

// URL lists every node's client URL, for a client that fails over.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.nodes))
	for i := range c.nodes {
		urls[i] = c.NodeURL(i)
	}
	return strings.Join(urls, ",")
}

// NodeURL is node i's client URL.
func (c *Cluster) NodeURL(i int) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", c.nodes[i].cfg.Port)
}

// Connect opens a connection to the cluster that reconnects forever,
// closed when the test ends.
func (c *Cluster) Connect() *nats.Conn {
	c.t.Helper()
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		c.t.Fatalf("streamstest: connect to the cluster: %v", err)
	}
	c.t.Cleanup(nc.Close)
	return nc
}

// Place runs create — what makes replicated streams or buckets — until it
// succeeds, again while the cluster cannot place replicas yet: a node the
// meta leader has not heard from since it started fails placement at once
// ("peer offline"; streams.Unavailable). Another error fails the test, as
// does a cluster still unable after nodeStartTimeout.
func (c *Cluster) Place(what string, create func(ctx context.Context) error) {
	c.t.Helper()
	testwait.Until(c.t, nodeStartTimeout, what, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		err := create(ctx)
		if err != nil && !streams.Unavailable(err) {
			c.t.Fatalf("%s: %v", what, err)
		}
		return err
	})
}

// WaitJetStream waits, at most d, until the cluster's JetStream answers an
// account info request (it has a meta leader). The servers offer no event
// for it, so it asks again and again.
func (c *Cluster) WaitJetStream(d time.Duration) {
	c.t.Helper()
	nc := c.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	defer nc.Close()
	testwait.Until(c.t, d, "the cluster's JetStream to answer", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err
	})
}
