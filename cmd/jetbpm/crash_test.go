package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestServeKilledBetweenCheckpointAndEffects runs jetbpm serve with a
// failpoint that SIGKILLs the process right after a checkpoint write,
// before that step's effects are published and its event acknowledged.
// After a restart on the same data directory every started instance
// completes, and completes once: one completed fact per instance.
func TestServeKilledBetweenCheckpointAndEffects(t *testing.T) {
	serve := startCrashingServe(t, 6)
	url := serve.url

	xml, err := os.ReadFile(orderBPMN)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nc := natsConn(t, url)
	if _, err := api.NewClient(nc).Deploy(ctx, api.File{Name: "order.bpmn", XML: string(xml)}); err != nil {
		t.Fatal(err)
	}

	// Start instances until the failpoint kills the server. Big orders wait
	// on a timer (two checkpoints), small ones finish in their first step.
	var started []string
	start := func(c *api.Client, i int) error {
		vars := fmt.Sprintf(`{"amount": %d, "quantity": 2}`, 10+1000*(i%2))
		id := fmt.Sprintf("order-%02d", i)
		// A request in flight when the server dies gets no answer: bound it.
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := c.Start(rctx, api.StartRequest{ProcessID: "order", ID: id, Vars: json.RawMessage(vars)})
		if err == nil {
			started = append(started, id)
		}
		return err
	}
	const total = 20
	i := 0
	for ; i < total; i++ {
		if start(api.NewClient(nc), i) != nil {
			break
		}
	}
	serve.restartAfterKill()
	nc2 := natsConn(t, url)
	client := api.NewClient(nc2)
	for ; i < total; i++ {
		if err := start(client, i); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range started {
		waitCompleted(t, ctx, client, id)
	}
	// Facts are published after the checkpoint waitCompleted saw.
	counts := completedFactsOfEach(t, ctx, nc2, "order", len(started))
	for _, id := range started {
		if counts[id] != 1 {
			t.Errorf("instance %s: %d completed facts in the stream, want 1", id, counts[id])
		}
	}
	if len(started) < total-1 {
		t.Fatalf("only %d of %d starts were accepted", len(started), total)
	}
}

func natsConn(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// waitCompleted polls the instance (there is no event to wait on through
// the API) until it has finished, with a bounded deadline.
func waitCompleted(t *testing.T, ctx context.Context, c *api.Client, id string) {
	t.Helper()
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		v, err := c.Instance(ctx, id)
		if err == nil && v.Status.Finished() {
			if v.Status != instance.Completed {
				t.Fatalf("instance %s ended %s: %+v", id, v.Status, v.Failure)
			}
			return
		}
		if err != nil && !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("instance %s: %v", id, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("instance %s did not complete: %+v %v", id, v, err)
		case <-time.After(wait):
		}
	}
}

// completedFactsOfEach waits until n instances of processID have a
// completed fact stored and returns the count per instance.
func completedFactsOfEach(t *testing.T, ctx context.Context, nc *nats.Conn, processID string, n int) map[string]int {
	t.Helper()
	var counts map[string]int
	testwait.Until(t, 10*time.Second, fmt.Sprintf("completed facts of %d instances", n), func() error {
		if counts = completedFacts(t, ctx, nc, processID); len(counts) < n {
			return fmt.Errorf("%d instances have one", len(counts))
		}
		return nil
	})
	return counts
}

// completedFacts replays the facts stream and counts completed facts per
// instance.
func completedFacts(t *testing.T, ctx context.Context, nc *nats.Conn, processID string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	subject := streams.FactSubject(streams.FactInstance, processID, string(instance.FactCompleted))
	for _, f := range storedFacts[instance.Fact](t, ctx, nc, subject) {
		counts[f.Instance]++
	}
	return counts
}

// storedFacts returns the facts stored on subjects matching filter.
func storedFacts[T any](t *testing.T, ctx context.Context, nc *nats.Conn, filter string) []T {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return streamstest.StoredFacts[T](t, ctx, js, filter)
}

// TestShippedBinaryHasNoFailpoint: the self-SIGKILL is compiled only into
// builds with the failpoint tag, never into the binary users run.
func TestShippedBinaryHasNoFailpoint(t *testing.T) {
	for _, tc := range []struct {
		bin  string
		want bool
	}{{jetbpmBin, false}, {failpointBin, true}} {
		data, err := os.ReadFile(tc.bin)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(data, []byte("crash-after-checkpoint:")); got != tc.want {
			t.Errorf("%s holds the failpoint: %v, want %v", tc.bin, got, tc.want)
		}
	}
}

// crashingServe is jetbpm serve built with the failpoint tag on a data
// directory of its own, set to SIGKILL itself after its n-th checkpoint
// write.
type crashingServe struct {
	t     *testing.T
	args  []string
	first *serveProc
	url   string
}

func startCrashingServe(t *testing.T, n int) *crashingServe {
	t.Helper()
	c := &crashingServe{t: t, args: []string{"--data", t.TempDir(), "--listen", freeAddr(t), "--failover", "1s"}}
	c.first = startServeBin(t, failpointBin, []string{fmt.Sprintf("JETBPM_FAILPOINT=crash-after-checkpoint:%d", n)}, c.args...)
	c.url = c.first.waitReady()["nats_url"].(string)
	return c
}

// restartAfterKill waits until the failpoint has killed serve (SIGKILL,
// checked) and starts serve again, without the failpoint, on the same data.
func (c *crashingServe) restartAfterKill() {
	c.t.Helper()
	select {
	case <-c.first.exited:
	case <-time.After(30 * time.Second):
		c.t.Fatal("the failpoint never killed serve")
	}
	if ws, ok := c.first.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		c.t.Fatalf("serve ended with %v, want SIGKILL from the failpoint", c.first.cmd.ProcessState)
	}
	startServe(c.t, nil, c.args...).waitReady()
}
