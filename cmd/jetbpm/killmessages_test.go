package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
)

// The messages of the kill -9 workload. Instance i waits on its "await"
// catch for message "paid" under correlation key payKey(i); its message
// carries payment(i) and is published with message id payKey(i) and a TTL
// longer than the test, in one of three ways (i % 3):
//
//	0: before the instance starts (buffered, then taken when it subscribes);
//	1: right after its start (racing its subscription to the partition);
//	2: at the end of its round, with the jetbpm message publish CLI in the
//	   background: the engine is SIGKILLed once the first is accepted, so
//	   the others are sent while it dies and while it restarts.
//
// Messages are thus stored and not yet applied, or applied and their
// correlation not yet taken, when the engine dies. A publish that fails
// (the engine is down or restarting) is sent again with the same id; a
// refusal as a duplicate then means an earlier attempt was stored, and
// counts as success. A duplicate on the first attempt fails the test.

const killMessageTTL = "10m"

// killPublishers is how many CLI publishes of deferred messages run at once.
const killPublishers = 4

func payKey(i int) string  { return fmt.Sprintf("pay-%04d", i) }
func payment(i int) string { return fmt.Sprintf("p-%04d", i) }

type killMessages struct {
	t   *testing.T
	ctx context.Context
	api *api.Client
	env []string // of the CLI

	deferred []int         // to publish after the next kill
	running  chan error    // the deferred publishes under way: their outcome
	mu       sync.Mutex    // guards the counts: the deferred publish in the background
	counts   publishCounts // messages accepted
}

type publishCounts struct {
	published  int
	retries    int // attempts that failed (the engine was down or restarting)
	duplicates int // retries refused as duplicates: an earlier attempt was stored
}

func (m *killMessages) beforeStart(i int) {
	if i%3 == 0 {
		m.publishAPI(i)
	}
}

func (m *killMessages) afterStart(i int) {
	switch i % 3 {
	case 1:
		m.publishAPI(i)
	case 2:
		m.deferred = append(m.deferred, i)
	}
}

// publishDeferred publishes the deferred messages with the CLI in the
// background and returns once the first is accepted: the engine is then
// killed while the others are under way. waitDeferred waits for the rest.
func (m *killMessages) publishDeferred() {
	m.t.Helper()
	todo := make(chan int, len(m.deferred))
	for _, i := range m.deferred {
		todo <- i
	}
	close(todo)
	m.deferred = nil
	m.running = make(chan error, 1)
	first := make(chan struct{})
	var once sync.Once
	go func() {
		var wg sync.WaitGroup
		errs := make(chan error, killPublishers)
		for range killPublishers {
			wg.Go(func() {
				for i := range todo {
					if err := m.publishCLI(i); err != nil {
						errs <- err
						return
					}
					once.Do(func() { close(first) })
				}
			})
		}
		wg.Wait()
		once.Do(func() { close(first) })
		close(errs)
		m.running <- <-errs // nil if none failed
	}()
	<-first
}

func (m *killMessages) waitDeferred() {
	m.t.Helper()
	if m.running == nil {
		return
	}
	select {
	case err := <-m.running:
		if err != nil {
			m.t.Fatal(err)
		}
	case <-m.ctx.Done():
		m.t.Fatalf("deferred message publishes: %v", m.ctx.Err())
	}
	m.running = nil
}

// publishAPI publishes message i with the API client until it is accepted.
func (m *killMessages) publishAPI(i int) {
	m.t.Helper()
	req := api.MessageRequest{
		Name: "paid", Key: json.RawMessage(fmt.Sprintf("%q", payKey(i))), ID: payKey(i), TTL: killMessageTTL,
		Vars: json.RawMessage(fmt.Sprintf(`{"paid": %q}`, payment(i))),
	}
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(m.ctx, 2*time.Second)
		_, err := m.api.PublishMessage(ctx, req)
		cancel()
		done, err := m.accepted(i, attempt, err)
		if err != nil {
			m.t.Fatal(err)
		}
		if done {
			return
		}
		time.Sleep(100 * time.Millisecond) // the engine is restarting: nothing to wait on but time
	}
}

// publishCLI publishes message i with 'jetbpm message publish' until it is
// accepted. It runs outside the test's goroutine: it returns its failure.
func (m *killMessages) publishCLI(i int) error {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
		cmd := exec.CommandContext(ctx, jetbpmBin, "message", "publish", "paid", "--key", payKey(i), "--id", payKey(i),
			"--ttl", killMessageTTL, "--vars", fmt.Sprintf(`{"paid": %q}`, payment(i)), "--timeout", "2s")
		cmd.Env = append(os.Environ(), m.env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		cancel()
		var exit *exec.ExitError
		var err error
		switch {
		case runErr == nil && strings.TrimSpace(stdout.String()) != payKey(i):
			return fmt.Errorf("message publish %s printed %q, want its id", payKey(i), stdout.String())
		case runErr == nil:
		case errors.As(runErr, &exit) && exit.ExitCode() == 1 && strings.Contains(stderr.String(), "duplicate"):
			err = engine.ErrDuplicate
		default:
			err = fmt.Errorf("%v: %s", runErr, strings.TrimSpace(stderr.String()))
		}
		done, err := m.accepted(i, attempt, err)
		if done || err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond) // the engine is restarting: nothing to wait on but time
	}
}

// accepted reports whether attempt of publishing message i got it stored;
// an error fails the test.
func (m *killMessages) accepted(i, attempt int, err error) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil:
		m.counts.published++
		return true, nil
	case errors.Is(err, engine.ErrDuplicate) && attempt > 0:
		m.counts.published++
		m.counts.duplicates++
		return true, nil
	case errors.Is(err, engine.ErrDuplicate):
		return false, fmt.Errorf("message %s: its first publish was refused as a duplicate: %v", payKey(i), err)
	case attempt > 100:
		return false, fmt.Errorf("message %s: %v", payKey(i), err)
	}
	m.counts.retries++
	return false, nil
}

func (m *killMessages) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("%d messages published (%d attempts failed and were retried; %d retries refused as duplicates of a stored attempt), each correlated once",
		m.counts.published, m.counts.retries, m.counts.duplicates)
}

// check asserts that each of the n instances took its own message exactly
// once: the failing ones (in an incident) hold it too; every message has
// exactly one stored correlated fact, naming its instance, and none was
// rejected or expired; each instance's checkpoint lists one correlation of
// "paid"; and each message's partition entry holds no open subscription
// and the message, delivered to its instance only.
func (m *killMessages) check(nc *nats.Conn, n int) {
	t, ctx := m.t, m.ctx
	t.Helper()
	if got := m.counts.published; got != n {
		t.Fatalf("%d messages published, want %d", got, n)
	}
	for i := range n {
		if !failing(i) {
			continue // checked with the instance's other variables
		}
		id := fmt.Sprintf("k-%04d", i)
		testwait.Until(t, 30*time.Second, "failing instance "+id+" to hold its message", func() error {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			v, err := m.api.Instance(rctx, id)
			if err != nil {
				return err
			}
			if v.Variables["paid"] != payment(i) {
				return fmt.Errorf("paid = %v", v.Variables["paid"])
			}
			return nil
		})
	}

	var facts []engine.MessageFact
	testwait.Until(t, 30*time.Second, fmt.Sprintf("correlated facts of %d messages", n), func() error {
		facts = storedFacts[engine.MessageFact](t, ctx, nc, streams.FactFilter(streams.FactMessage, "paid"))
		if len(facts) < n {
			return fmt.Errorf("%d message facts stored", len(facts))
		}
		return nil
	})
	perInstance, perMessage := map[string]int{}, map[string]int{}
	for _, f := range facts {
		if f.Kind != engine.FactMessageCorrelated {
			t.Errorf("message fact %+v: want correlated facts only (nothing rejected, nothing expired)", f)
			continue
		}
		if want := "k-" + strings.TrimPrefix(f.Key, "pay-"); f.Instance != want || f.MessageID != f.Key || f.ProcessID != "killme" || f.Started {
			t.Errorf("correlated fact %+v: want message %s to instance %s of killme", f, f.Key, want)
		}
		perInstance[f.Instance]++
		perMessage[f.MessageID]++
	}
	for i := range n {
		id := fmt.Sprintf("k-%04d", i)
		if perInstance[id] != 1 || perMessage[payKey(i)] != 1 {
			t.Errorf("instance %s: %d correlated facts stored, message %s: %d; want 1 each", id, perInstance[id], payKey(i), perMessage[payKey(i)])
		}
	}

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	instances, err := js.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := js.KeyValue(ctx, streams.MessagesBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("k-%04d", i)
		var s instance.State
		getDecoded(t, ctx, instances, id, &s)
		var took []string
		for _, c := range s.Correlations {
			if strings.HasPrefix(c, "paid/") {
				took = append(took, c)
			}
		}
		if len(took) != 1 || !strings.HasPrefix(took[0], "paid/"+payKey(i)+"/") {
			t.Errorf("instance %s applied correlations %v, want one of paid/%s", id, took, payKey(i))
		}
		var e correlation.Entry
		getDecoded(t, ctx, entries, streams.MessageEntryKey("paid", payKey(i)), &e)
		if len(e.Subs) != 0 || len(e.Buffered) != 1 || e.Buffered[0].ID != payKey(i) || len(e.Buffered[0].Correlated) != 1 ||
			e.Buffered[0].Correlated[0].Instance != id || e.Buffered[0].Correlated[0].Process != "killme" {
			t.Errorf("message entry %s: subscriptions %+v, buffered %s; want none, and its message delivered to %s only", payKey(i), e.Subs, describeBuffered(e.Buffered), id)
		}
	}
}

func describeBuffered(msgs []*correlation.Message) string {
	var parts []string
	for _, m := range msgs {
		parts = append(parts, fmt.Sprintf("%s→%+v", m.ID, m.Correlated))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// getDecoded reads key of kv into v (the jetbpm codec).
func getDecoded(t *testing.T, ctx context.Context, kv jetstream.KeyValue, key string, v any) {
	t.Helper()
	entry, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatalf("%s %s: %v", kv.Bucket(), key, err)
	}
	if err := streams.Unmarshal(entry.Value(), v); err != nil {
		t.Fatalf("%s %s: %v", kv.Bucket(), key, err)
	}
}
