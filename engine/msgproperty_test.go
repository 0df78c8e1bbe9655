package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// The property: N instances wait for a message each, under a key of
// their own; the N messages are published concurrently with the starts,
// in a random order, so a message reaches its partition before, at the
// same moment as, or after its instance's subscription. Every instance
// gets exactly its message, and no message correlates twice.
//
// JETBPM_SEED=<n> repeats a run's keys, kinds, TTLs and schedule (not
// its goroutines' timing); the seed is logged.

// propertyInstances is N; -short runs fewer.
const propertyInstances = 200

// propertyWait bounds each wait of the test; every buffered message's TTL
// is longer, so none expires while the test looks.
const propertyWait = 60 * time.Second

// How a message is sent.
type sendKind int

const (
	// buffered: PublishMessage with a TTL, whenever the schedule says.
	buffered sendKind = iota
	// twice: the same message (same id) published twice at once with a
	// TTL: one is accepted, the other refused as a duplicate.
	twice
	// correlated: CorrelateMessage without a TTL, once the subscription
	// is at its partition (before, nothing would be kept); it must name
	// the instance.
	correlated
)

func (k sendKind) String() string { return [...]string{"buffered", "twice", "correlated"}[k] }

type propertyCase struct {
	id   string // the instance
	key  any    // its correlation key variable: a string or an integer
	kind sendKind
	ttl  time.Duration
}

// keyText is the key as the catch evaluates it.
func (c propertyCase) keyText() string {
	if n, ok := c.key.(int); ok {
		return strconv.Itoa(n)
	}
	return c.key.(string)
}

func (c propertyCase) messageID() string { return "msg-" + c.id }

func propertySeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("JETBPM_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("JETBPM_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (JETBPM_SEED=%d repeats this schedule)", seed, seed)
	return seed
}

func TestMessagesMeetTheirInstancesInAnyOrder(t *testing.T) {
	t.Parallel()
	n := propertyInstances
	if testing.Short() {
		n = 50
	}
	rng := rand.New(rand.NewPCG(propertySeed(t), 0x6d657373))
	cases := make([]propertyCase, n)
	for i := range cases {
		c := propertyCase{id: fmt.Sprintf("prop-%03d", i), kind: sendKind(rng.IntN(3))}
		if rng.IntN(2) == 0 {
			c.key = 10_000 + i
		} else {
			c.key = fmt.Sprintf("order.%d/%s", i, c.id) // escaped in subjects and keys
		}
		if c.kind != correlated {
			c.ttl = propertyWait*2 + time.Duration(rng.Int64N(int64(10*time.Minute)))
		}
		cases[i] = c
	}
	// The schedule: every start and every send, shuffled; workers take
	// them in this order, several at a time.
	type op struct {
		c    *propertyCase
		send bool
	}
	schedule := make([]op, 0, 2*n)
	for i := range cases {
		schedule = append(schedule, op{&cases[i], false}, op{&cases[i], true})
	}
	rng.Shuffle(len(schedule), func(i, j int) { schedule[i], schedule[j] = schedule[j], schedule[i] })
	before, kinds := 0, map[sendKind]int{}
	seen := map[string]bool{}
	for _, o := range schedule {
		if o.send && !seen[o.c.id] {
			before++
		}
		if o.send {
			kinds[o.c.kind]++
		}
		seen[o.c.id] = true
	}
	t.Logf("%d instances; sends %v; %d scheduled before their instance's start", n, kinds, before)

	env := streamstest.Start(t, streamstest.WithPartitions(4))
	eng := openEngine(t, env, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*propertyWait)
	defer cancel()
	if _, err := eng.Deploy(ctx, waitForPaid(t, "pay", "orderId")); err != nil {
		t.Fatal(err)
	}

	entries, err := env.JS.KeyValue(ctx, streams.MessagesBucket)
	if err != nil {
		t.Fatal(err)
	}
	ops := make(chan op)
	errs := make(chan error, 2*n)
	var wg, waiting sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for o := range ops {
				if o.send && o.c.kind == correlated {
					// It waits for its instance's subscription: not on
					// a worker, which the start it waits for may need.
					waiting.Go(func() {
						if err := runOp(ctx, eng, entries, o.c, o.send); err != nil {
							errs <- err
						}
					})
					continue
				}
				if err := runOp(ctx, eng, entries, o.c, o.send); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, o := range schedule {
		ops <- o
	}
	close(ops)
	wg.Wait()
	waiting.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	kv, err := env.JS.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		wctx, wcancel := context.WithTimeout(ctx, propertyWait)
		v, err := eng.Wait(wctx, c.id)
		wcancel()
		if err != nil {
			t.Fatalf("instance %s (key %v, %s): %v", c.id, c.key, c.kind, err)
		}
		if v.Status != instance.Completed || v.Variables["for"] != c.id || v.Variables["key"] != c.keyText() {
			t.Errorf("instance %s (key %v, %s): %s with %v; want completed with its own message", c.id, c.key, c.kind, v.Status, v.Variables)
		}
		entry, err := kv.Get(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		var s instance.State
		if err := streams.Unmarshal(entry.Value(), &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Correlations) != 1 || !strings.HasPrefix(s.Correlations[0], "paid/"+c.keyText()+"/") {
			t.Errorf("instance %s applied correlations %v; want one of paid/%s", c.id, s.Correlations, c.keyText())
		}
	}

	// Each message: one correlated fact, to its instance; nothing
	// rejected, nothing expired. The facts are published with the
	// correlate events, before the instances take them: all are stored.
	facts := streamstest.StoredFacts[engine.MessageFact](t, ctx, env.JS, streams.FactFilter(streams.FactMessage, "paid"))
	perMessage := map[string][]engine.MessageFact{}
	for _, f := range facts {
		if f.Kind != engine.FactMessageCorrelated {
			t.Errorf("message fact %+v: want correlated facts only", f)
			continue
		}
		perMessage[f.Instance] = append(perMessage[f.Instance], f)
	}
	m := &msgEnv{Env: env}
	for _, c := range cases {
		got := perMessage[c.id]
		if len(got) != 1 || got[0].Key != c.keyText() || got[0].ProcessID != "pay" ||
			c.kind != correlated && got[0].MessageID != c.messageID() {
			t.Errorf("instance %s (key %v, %s): correlated facts %+v; want one, of its message", c.id, c.key, c.kind, got)
		}
		// The partition holds no subscription any more, and a buffered
		// message went to its instance only.
		e := m.entry(t, "paid", c.keyText())
		if e == nil {
			if c.kind != correlated {
				t.Errorf("instance %s (%s): the entry of its buffered message is gone", c.id, c.kind)
			}
			continue
		}
		if len(e.Subs) != 0 {
			t.Errorf("instance %s (%s): subscriptions left %+v", c.id, c.kind, e.Subs)
		}
		if c.kind == correlated {
			if len(e.Buffered) != 0 {
				t.Errorf("instance %s: a correlated message was buffered: %+v", c.id, e.Buffered)
			}
			continue
		}
		if len(e.Buffered) != 1 || e.Buffered[0].ID != c.messageID() || len(e.Buffered[0].Correlated) != 1 || e.Buffered[0].Correlated[0].Instance != c.id {
			t.Errorf("instance %s (%s): buffered %+v; want its message, delivered to it once", c.id, c.kind, e.Buffered)
		}
	}
}

// subscribedAt watches the message partition's entry for c's key until it
// holds c's subscription.
func subscribedAt(ctx context.Context, entries jetstream.KeyValue, c *propertyCase) error {
	ctx, cancel := context.WithTimeout(ctx, propertyWait)
	defer cancel()
	w, err := entries.Watch(ctx, streams.MessageEntryKey("paid", c.keyText()))
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the subscription of %s never reached its message partition: %w", c.id, ctx.Err())
		case kve, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("watch of the entry of %s closed", c.id)
			}
			if kve == nil || kve.Operation() != jetstream.KeyValuePut {
				continue
			}
			var e correlation.Entry
			if err := streams.Unmarshal(kve.Value(), &e); err != nil {
				return err
			}
			if slices.ContainsFunc(e.Subs, func(s instance.Subscription) bool { return s.Instance == c.id }) {
				return nil
			}
		}
	}
}

// runOp starts c's instance or sends its message.
func runOp(ctx context.Context, eng *engine.Engine, entries jetstream.KeyValue, c *propertyCase, send bool) error {
	if !send {
		_, err := eng.Start(ctx, "pay", map[string]any{"orderId": c.key}, engine.InstanceID(c.id))
		if err != nil {
			return fmt.Errorf("start %s: %w", c.id, err)
		}
		return nil
	}
	msg := engine.Message{Name: "paid", Key: c.keyText(), ID: c.messageID(), TTL: c.ttl,
		Vars: map[string]any{"for": c.id, "key": c.keyText()}}
	switch c.kind {
	case buffered:
		if _, err := eng.PublishMessage(ctx, msg); err != nil {
			return fmt.Errorf("publish %s: %w", c.messageID(), err)
		}
	case twice:
		var wg sync.WaitGroup
		results := make([]error, 2)
		for i := range results {
			wg.Go(func() { _, results[i] = eng.PublishMessage(ctx, msg) })
		}
		wg.Wait()
		ok, dup := 0, 0
		for _, err := range results {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, engine.ErrDuplicate):
				dup++
			}
		}
		if ok != 1 || dup != 1 {
			return fmt.Errorf("message %s published twice at once: %v; want one accepted, one refused as a duplicate", c.messageID(), results)
		}
	case correlated:
		// Nothing is kept while no subscription is there: send it once
		// the partition holds the instance's.
		if err := subscribedAt(ctx, entries, c); err != nil {
			return err
		}
		msg.ID = ""
		got, err := eng.CorrelateMessage(ctx, msg)
		if err != nil {
			return fmt.Errorf("correlate the message of %s: %w", c.id, err)
		}
		if got != c.id {
			return fmt.Errorf("the message for %s (key %s) reached %s", c.id, c.keyText(), got)
		}
	}
	return nil
}
