package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
	"github.com/jetbpm/jetbpm/workerkit"
	"github.com/jetbpm/jetbpm/workerkit/workerkittest"
)

// clusterBPMN is the cluster test's process: a script task, an external
// task a worker in the test runs, a timer and another script task.
const clusterBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="spread" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:scriptTask id="one" scriptFormat="javascript"><bpmn:script>execution.setVariable("one", n + 1)</bpmn:script></bpmn:scriptTask>
    <bpmn:serviceTask id="charge" camunda:type="external" camunda:topic="spread-charge"/>
    <bpmn:intermediateCatchEvent id="pause"><bpmn:timerEventDefinition><bpmn:timeDuration>PT0.3S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:scriptTask id="two" scriptFormat="javascript"><bpmn:script>execution.setVariable("two", one * 2)</bpmn:script></bpmn:scriptTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="one"/>
    <bpmn:sequenceFlow id="f2" sourceRef="one" targetRef="charge"/>
    <bpmn:sequenceFlow id="f3" sourceRef="charge" targetRef="pause"/>
    <bpmn:sequenceFlow id="f4" sourceRef="pause" targetRef="two"/>
    <bpmn:sequenceFlow id="f5" sourceRef="two" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// TestClusterLosesAnEngineAndANATSNode is issue 29's multi-process test:
// three nats-server processes (JetStream, R3 streams and buckets), three
// `jetbpm serve` processes sharing 8 partitions (3 + 3 + 2), and a worker,
// with instances started at a steady rate throughout. Mid-run one serve is
// SIGKILLed, then one NATS node; both come back; then another serve stops
// on SIGTERM. Asserted: the two survivors take the dead node's partitions
// (4 + 4), every partition has a holder again after the NATS node's loss,
// the restarted serve gets its share back (2 or 3 each), the SIGTERMed
// one's partitions go to the other two (4 + 4), every instance completes with the right
// variables and exactly one completed fact, and no job runs more than once
// per loss. The times are logged (docs/reliability.md, "Measured").
//
// make test runs 40 starts a second; make soak (JETBPM_SOAK) 100, longer.
func TestClusterLosesAnEngineAndANATSNode(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster and three engine nodes take a while")
	}
	rate, phase := 40, 5*time.Second
	if os.Getenv("JETBPM_SOAK") != "" {
		rate, phase = 100, 15*time.Second
	}
	c := streamstest.StartCluster(t, 3)
	dir := t.TempDir()
	// An expired lock counts as a failed attempt (docs/deviations.md), so
	// a lock shorter than a third of the longest outage would turn jobs
	// whose reports cannot land into incidents: with 5 s locks, a NATS
	// node's loss under -race (a dozen seconds without leaders) exhausted
	// two jobs' three attempts. 15 s is still four times shorter than the
	// default.
	cfg := writeFile(t, dir, "jetbpm.yaml", "jobs:\n  topics:\n    spread-charge:\n      lockDuration: 15s\n")
	args := []string{"--nats-url", c.URL(), "--replicas", "3", "--failover", "2s", "--config", cfg}
	serves := []*serveProc{startServe(t, nil, args...)}
	// The first provisions the R3 streams and buckets; the meta leader may
	// not have heard from every node yet, which serve waits out.
	serves[0].waitReadyWithin(90 * time.Second)
	for range 2 {
		p := startServe(t, nil, args...)
		p.waitReadyWithin(60 * time.Second)
		serves = append(serves, p)
	}
	nc := c.Connect()
	// Facts are replayed through node 1, which never goes down: through
	// the restarted node the replay's pulls met "no responders" for 90 s
	// and more while it caught up.
	steady, err := nats.Connect(c.NodeURL(0))
	if err != nil {
		t.Fatal(err)
	}
	defer steady.Close()
	r := &clusterRun{t: t, nc: steady, cl: api.NewClient(nc)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r.ctx = ctx
	client{t: t, env: []string{"JETBPM_NATS_URL=" + c.URL()}}.ok("deploy", writeFile(t, dir, "spread.bpmn", clusterBPMN))
	r.awaitSpread("three nodes holding 2 or 3 partitions each", serves)

	runs := workerkittest.Counting(t, ctx, c.Connect(), workerkit.Options{Name: "spread-worker", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), VerdictTimeout: 2 * time.Second},
		"spread-charge", 16, func(job *workerkit.Job) map[string]any {
			return map[string]any{"receipt": fmt.Sprintf("r-%v", job.Input["n"])}
		})

	load := r.startLoad(rate)
	time.Sleep(phase) // the load runs: nothing to wait on but time

	// An engine node dies.
	dead := serves[2]
	_ = dead.cmd.Process.Kill()
	<-dead.exited
	engineKilled := time.Now()
	r.awaitSpread("the two survivors holding 4 partitions each", serves[:2])
	engineTook := time.Since(engineKilled)
	time.Sleep(phase)

	// A NATS node dies: the engine nodes connected to it reconnect to the
	// others; the streams and buckets it led elect new leaders.
	c.Kill(1)
	natsKilled := time.Now()
	r.awaitSpread("the two survivors holding 4 partitions each after the NATS node's loss", serves[:2])
	natsTook := time.Since(natsKilled)
	time.Sleep(phase)

	// Both come back; the restarted engine node gets its share.
	c.Start(1)
	serves[2] = startServe(t, nil, args...)
	serves[2].waitReadyWithin(60 * time.Second)
	rejoined := time.Now()
	r.awaitSpread("three nodes holding 2 or 3 partitions each again", serves)
	rejoinTook := time.Since(rejoined)
	time.Sleep(phase)

	// An engine node stops on SIGTERM: it hands its partitions over.
	serves[0].stop()
	termed := time.Now()
	r.awaitSpread("the two others holding 4 partitions each after a SIGTERM", serves[1:])
	handOverTook := time.Since(termed)
	time.Sleep(phase)
	started := load.stop()
	loadStopped := time.Now()

	n := len(started)
	var done map[string]time.Time
	testwait.Until(t, 90*time.Second, fmt.Sprintf("completed facts of all %d instances", n), func() (err error) {
		if done, err = r.completions(); err != nil {
			return err
		}
		if len(done) < n {
			var missing []string
			for i := range n {
				if id := clusterInstanceID(i); done[id].IsZero() && len(missing) < 3 {
					v, err := r.cl.Instance(ctx, id)
					if err != nil {
						missing = append(missing, fmt.Sprintf("%s: %v", id, err))
					} else {
						missing = append(missing, fmt.Sprintf("%s: %s at %v, incidents %v", id, v.Status, v.ActiveNodes, v.Incidents))
					}
				}
			}
			return fmt.Errorf("%d completed; not: %s", len(done), strings.Join(missing, "; "))
		}
		return nil
	})
	drained := time.Since(loadStopped)
	for i := range n {
		id := clusterInstanceID(i)
		v, err := r.cl.Instance(ctx, id)
		if err != nil || v.Status != instance.Completed || v.Variables["two"] != float64(2*(i+1)) ||
			v.Variables["receipt"] != fmt.Sprintf("r-%d", i) {
			t.Fatalf("%s: %+v %v", id, v, err)
		}
	}
	// A replay can meet "no responders" mid-way (its ephemeral consumer
	// on a node that restarted); another replay is a fresh consumer.
	var facts []instance.Fact
	testwait.Until(t, 60*time.Second, "a replay of the completed facts", func() (err error) {
		facts, err = r.facts()
		return err
	})
	completed := map[string]int{}
	for _, f := range facts {
		completed[f.Instance]++
	}
	for id, k := range completed {
		if k != 1 {
			t.Errorf("%s completed %d times", id, k)
		}
	}
	ran := runs.Counts()
	if len(ran) != n {
		t.Errorf("%d jobs ran, want %d", len(ran), n)
	}
	for job, k := range ran {
		if k > 1+2 { // the engine node and the NATS node losses
			t.Errorf("job %s ran %d times, want at most 3", job, k)
		}
	}
	// Most starts reached a node not holding their partition (the API's
	// queue group picks a node): they were routed to the holder, across
	// the losses (engine.md §4.1). The two serves alive now count theirs.
	routed := 0.0
	for _, p := range serves[1:] {
		routed += metricValue(t, httpGet("http://"+p.httpAddr+"/metrics"), "jetbpm_starts_routed_total")
	}
	if routed == 0 {
		t.Error("no start was routed to its partition's holder")
	}
	t.Logf("starts routed by the two serves alive at the end: %.0f", routed)

	// An instance's latency is from its start's first sending to its
	// completed fact (both on this machine's clock), so a start refused
	// while the cluster recovers counts its wait; the worst per phase says
	// how long a loss held work up.
	worst := func(from, to time.Time) time.Duration {
		var d time.Duration
		for i, at := range started {
			if !at.Before(from) && at.Before(to) {
				d = max(d, done[clusterInstanceID(i)].Sub(at))
			}
		}
		return d.Round(time.Millisecond)
	}
	t.Logf("%d instances at %d starts/s; engine node SIGKILLed: survivors held its partitions after %s; NATS node SIGKILLed: all partitions held after %s; the restarted engine node had its share after %s; all completed %s after the load stopped",
		n, rate, engineTook.Round(time.Millisecond), natsTook.Round(time.Millisecond), rejoinTook.Round(time.Millisecond), drained.Round(time.Millisecond))
	fenced := 0
	for _, p := range serves[:2] {
		fenced += strings.Count(p.stderr(), `"msg":"stopping a partition`)
	}
	t.Logf("SIGTERM: the two others held the stopped node's partitions after %s", handOverTook.Round(time.Millisecond))
	t.Logf("the two serves that lived throughout stopped a partition whose lease they could not renew %d times", fenced)
	t.Logf("worst start-to-completion: before the losses %s; started in the %s after the engine node's kill %s; after the NATS node's kill %s; after the rejoin %s; after the SIGTERM %s",
		worst(started[0], engineKilled), phase, worst(engineKilled, engineKilled.Add(phase)), worst(natsKilled, natsKilled.Add(phase)),
		worst(rejoined, termed), worst(termed, loadStopped))
}

// clusterRun is what TestClusterLosesAnEngineAndANATSNode's helpers share.
type clusterRun struct {
	t   *testing.T
	nc  *nats.Conn // for the facts
	cl  *api.Client
	ctx context.Context
}

// metricValue is the value of the unlabelled metric name in a /metrics
// page.
func metricValue(t *testing.T, page, name string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(page, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics:\n%s", name, page)
	return 0
}

func httpGet(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func clusterInstanceID(i int) string { return fmt.Sprintf("sp-%05d", i) }

// awaitSpread waits until every partition is held by one of the given
// serve processes (matched by PID) and each holds its quota: ⌊P/N⌋ or
// ⌈P/N⌉ partitions.
func (r *clusterRun) awaitSpread(what string, serves []*serveProc) {
	r.t.Helper()
	alive := map[int]bool{}
	for _, p := range serves {
		alive[p.cmd.Process.Pid] = true
	}
	defer func() {
		if r.t.Failed() {
			for _, p := range serves {
				r.t.Logf("pid %d's view: %s", p.cmd.Process.Pid, httpGet("http://"+p.httpAddr+"/v1/cluster"))
			}
		}
	}()
	testwait.Until(r.t, 60*time.Second, what, func() error {
		ctx, cancel := context.WithTimeout(r.ctx, 3*time.Second)
		defer cancel()
		v, err := r.cl.ClusterStatus(ctx)
		if err != nil {
			return err
		}
		pid := map[string]int{}
		for _, n := range v.Nodes {
			pid[n.ID] = n.PID
		}
		held := map[int]int{}
		for _, p := range v.Partition {
			if !alive[pid[p.Node]] {
				return fmt.Errorf("partition %d held by %q", p.Partition, p.Node)
			}
			held[pid[p.Node]]++
		}
		if v.Partitions != 8 {
			return fmt.Errorf("%d partitions", v.Partitions)
		}
		lo := v.Partitions / len(serves)
		hi := (v.Partitions + len(serves) - 1) / len(serves)
		for p := range alive {
			if held[p] < lo || held[p] > hi {
				return fmt.Errorf("holdings by pid %v, want %d to %d each", held, lo, hi)
			}
		}
		return nil
	})
}

// load starts instances at a steady rate until stopped.
type load struct {
	stopc chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	at    []time.Time // when each instance's start was first sent, by index
}

// startLoad starts clusterInstanceID(i) for i = 0, 1, … at rate a second,
// from four goroutines, so a start that waits out a failover does not
// stop the others; a failed start is sent again under the same id.
func (r *clusterRun) startLoad(rate int) *load {
	l := &load{stopc: make(chan struct{}), done: make(chan struct{})}
	next := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				begun := time.Now()
				r.startOne(i)
				l.mu.Lock()
				for len(l.at) <= i {
					l.at = append(l.at, time.Time{})
				}
				l.at[i] = begun
				l.mu.Unlock()
			}
		}()
	}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-l.stopc:
				close(next)
				wg.Wait()
				return
			case <-tick.C:
			}
			select {
			case next <- i:
			case <-l.stopc:
				close(next)
				wg.Wait()
				return
			}
		}
	}()
	return l
}

// stop ends the load and returns when each start was first sent.
func (l *load) stop() []time.Time {
	close(l.stopc)
	<-l.done
	return l.at
}

// startOne starts instance i, sending the start again (same id, so once)
// until it is accepted; a minute of refusals fails the test.
func (r *clusterRun) startOne(i int) {
	req := api.StartRequest{ProcessID: "spread", ID: clusterInstanceID(i), Vars: json.RawMessage(`{"n": ` + strconv.Itoa(i) + `}`)}
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(r.ctx, 3*time.Second)
		_, err := r.cl.Start(ctx, req)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Errorf("start %s: refused for a minute: %v", req.ID, err)
			return
		}
		time.Sleep(50 * time.Millisecond) // a failover in progress: nothing to wait on but time
	}
}

// completions replays the completed facts: each instance's first.
func (r *clusterRun) completions() (map[string]time.Time, error) {
	facts, err := r.facts()
	out := map[string]time.Time{}
	for _, f := range facts {
		if _, ok := out[f.Instance]; !ok {
			out[f.Instance] = f.Time
		}
	}
	return out, err
}

// facts replays the process's completed facts.
func (r *clusterRun) facts() ([]instance.Fact, error) {
	js, err := jetstream.New(r.nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	return streamstest.ReadFacts[instance.Fact](ctx, js, streams.FactSubject(streams.FactInstance, "spread", string(instance.FactCompleted)))
}
