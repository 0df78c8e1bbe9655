package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// These tests run whole instances: the engine's instance partitions open
// and close subscriptions, the message partitions correlate.

// waitForPaid is start → catch "paid" under key orderId → end.
func waitForPaid(t *testing.T, id, key string) *model.Process {
	return build(t, model.NewBuilder(id).StartEvent("s").MessageCatchEvent("paid", "paid", key).EndEvent("e").Sequence("s", "paid", "e"))
}

// subscribed waits until the entry of name/key holds n subscriptions.
func subscribed(t *testing.T, env *streamstest.Env, name, key string, n int) {
	t.Helper()
	m := &msgEnv{Env: env}
	testwait.True(t, 10*time.Second, "subscriptions stored", func() bool {
		e := m.entry(t, name, key)
		return e != nil && len(e.Subs) == n
	})
}

func TestMessageReachesAWaitingInstance(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.Deploy(ctx, waitForPaid(t, "pay", "orderId")); err != nil {
		t.Fatal(err)
	}
	// Subscribed first, then published.
	first, err := eng.Start(ctx, "pay", map[string]any{"orderId": "o-1"})
	if err != nil {
		t.Fatal(err)
	}
	subscribed(t, env, "paid", "o-1", 1)
	if _, err := eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "o-1", Vars: map[string]any{"amount": 20}}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, first); v.Status != instance.Completed || v.Variables["amount"] != int64(20) {
		t.Fatalf("first instance: %+v", v)
	}
	// Published (buffered) first, then subscribed.
	if _, err := eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "o-2", TTL: time.Hour, Vars: map[string]any{"amount": 30}}); err != nil {
		t.Fatal(err)
	}
	second, err := eng.Start(ctx, "pay", map[string]any{"orderId": "o-2"})
	if err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, second); v.Status != instance.Completed || v.Variables["amount"] != int64(30) {
		t.Fatalf("second instance: %+v", v)
	}
}

func TestCorrelateMessageReturnsTheInstance(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.Deploy(ctx, waitForPaid(t, "pay", "orderId")); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "pay", map[string]any{"orderId": 17})
	if err != nil {
		t.Fatal(err)
	}
	subscribed(t, env, "paid", "17", 1)
	got, err := eng.CorrelateMessage(ctx, engine.Message{Name: "paid", Key: "17", Vars: map[string]any{"ok": true}})
	if err != nil || got != id {
		t.Fatalf("CorrelateMessage = %q, %v; want %s", got, err, id)
	}
	if v := waitDone(t, eng, id); v.Variables["ok"] != true {
		t.Errorf("variables: %v", v.Variables)
	}
	if _, err := eng.CorrelateMessage(ctx, engine.Message{Name: "paid", Key: "17"}); !errors.Is(err, engine.ErrNoSubscription) {
		t.Errorf("a second correlation = %v; want ErrNoSubscription", err)
	}
}

func TestMessageStartEvent(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	p := build(t, model.NewBuilder("onpaid").MessageStartEvent("s", "paid").EndEvent("e").Sequence("s", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Start(ctx, "onpaid", nil); !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "starts only by message (paid)") {
		t.Errorf("Start of a message-only process = %v", err)
	}
	id, err := eng.CorrelateMessage(ctx, engine.Message{Name: "paid", BusinessKey: "B-4", Vars: map[string]any{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, eng, id)
	if v.ProcessID != "onpaid" || v.BusinessKey != "B-4" || v.Variables["n"] != int64(1) {
		t.Errorf("started instance: %+v", v)
	}
	// It ended: the key may start another.
	testwait.True(t, 10*time.Second, "start released", func() bool {
		e := (&msgEnv{Env: env}).entry(t, "paid", instance.BusinessKeyPrefix+"B-4")
		return e == nil || len(e.Starts) == 0
	})
	again, err := eng.CorrelateMessage(ctx, engine.Message{Name: "paid", BusinessKey: "B-4"})
	if err != nil || again == id {
		t.Fatalf("second start = %q, %v", again, err)
	}
}

func TestBusinessKeyCatch(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.Deploy(ctx, waitForPaid(t, "approval", "")); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "approval", nil, engine.BusinessKey("B-4"))
	if err != nil {
		t.Fatal(err)
	}
	subscribed(t, env, "paid", instance.BusinessKeyPrefix+"B-4", 1)
	if _, err := eng.PublishMessage(ctx, engine.Message{Name: "paid", BusinessKey: "B-4"}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, eng, id)
}

func TestMessageToOneWaitingInstance(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.Deploy(ctx, waitForPaid(t, "pay", "orderId")); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "pay", map[string]any{"orderId": "o-1"})
	if err != nil {
		t.Fatal(err)
	}
	testwait.True(t, 10*time.Second, "instance waiting", func() bool {
		v, err := eng.Instance(ctx, id)
		return err == nil && len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "paid"
	})
	got, err := eng.CorrelateMessage(ctx, engine.Message{Name: "paid", Instance: id, Vars: map[string]any{"x": "y"}})
	if err != nil || got != id {
		t.Fatalf("CorrelateMessage = %q, %v", got, err)
	}
	if v := waitDone(t, eng, id); v.Variables["x"] != "y" {
		t.Errorf("variables: %v", v.Variables)
	}
	// Its subscription at the partition closed with it.
	testwait.True(t, 10*time.Second, "subscription closed", func() bool {
		e := (&msgEnv{Env: env}).entry(t, "paid", "o-1")
		return e == nil || len(e.Subs) == 0
	})
}

// A message offered to an instance that has ended (its closing had not
// reached the partition yet), or whose record is gone, goes to the next
// instance of the process.
func TestMessageOfferedToAnEndedInstanceGoesToTheNext(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"finished", "expired"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			env := streamstest.Start(t)
			eng := openEngine(t, env, nil)
			ctx := bounded(t)
			if _, err := eng.Deploy(ctx, waitForPaid(t, "pay", "orderId")); err != nil {
				t.Fatal(err)
			}
			gone, err := eng.Start(ctx, "pay", map[string]any{"orderId": "k"})
			if err != nil {
				t.Fatal(err)
			}
			subscribed(t, env, "paid", "k", 1)
			next, err := eng.Start(ctx, "pay", map[string]any{"orderId": "k"})
			if err != nil {
				t.Fatal(err)
			}
			subscribed(t, env, "paid", "k", 2)
			kv, err := env.JS.KeyValue(ctx, streams.InstancesBucket)
			if err != nil {
				t.Fatal(err)
			}
			if how == "expired" {
				if err := kv.Purge(ctx, gone); err != nil {
					t.Fatal(err)
				}
			} else {
				entry, err := kv.Get(ctx, gone)
				if err != nil {
					t.Fatal(err)
				}
				var s instance.State
				if err := streams.Unmarshal(entry.Value(), &s); err != nil {
					t.Fatal(err)
				}
				s.Status, s.Tracks, s.Waits, s.EndedAt = instance.Terminated, nil, nil, time.Now().UTC()
				data, err := streams.Marshal(&s)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := kv.Put(ctx, gone, data); err != nil {
					t.Fatal(err)
				}
			}
			// Buffered, the message goes to the oldest subscription, is
			// rejected, and goes to the next.
			if _, err := eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "k", TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
			if v := waitDone(t, eng, next); v.Status != instance.Completed {
				t.Fatalf("next instance: %+v", v)
			}
		})
	}
}

// CorrelateMessage does not wait for an instance whose record is gone: it
// rejects the message.
func TestCorrelateToAnInstanceWhoseRecordIsGone(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.Deploy(ctx, waitForPaid(t, "pay", "orderId")); err != nil {
		t.Fatal(err)
	}
	gone, err := eng.Start(ctx, "pay", map[string]any{"orderId": "k"})
	if err != nil {
		t.Fatal(err)
	}
	subscribed(t, env, "paid", "k", 1)
	kv, err := env.JS.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, gone); err != nil {
		t.Fatal(err)
	}
	got, err := eng.CorrelateMessage(ctx, engine.Message{Name: "paid", Key: "k"})
	if !errors.Is(err, engine.ErrNoSubscription) || !strings.Contains(err.Error(), gone+" left the element") {
		t.Fatalf("CorrelateMessage = %q, %v", got, err)
	}
}

// A declarative throw in one process reaches the catch of another.
func TestDeclarativeThrowReachesACatch(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	sender := build(t, model.NewBuilder("sender").StartEvent("s").
		MessageThrowEvent("tell", "paid", model.WithPublish(model.Publish{
			CorrelationKey: "orderId", TTL: time.Hour,
			Variables: []model.Mapping{{Target: "amount", Source: "total * 2"}},
		})).EndEvent("e").Sequence("s", "tell", "e"))
	if _, err := eng.DeployAll(ctx, sender, waitForPaid(t, "pay", "orderId")); err != nil {
		t.Fatal(err)
	}
	s, err := eng.Start(ctx, "sender", map[string]any{"orderId": "o-9", "total": 21})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, eng, s)
	r, err := eng.Start(ctx, "pay", map[string]any{"orderId": "o-9"})
	if err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, r); v.Variables["amount"] != int64(42) {
		t.Errorf("receiver variables: %v", v.Variables)
	}
}

// N instances wait for N messages, each for its own key; the messages are
// published while the instances start, in no particular order. Every
// instance gets exactly its message, whichever came first.
func TestConcurrentMessagesMeetTheirInstances(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithPartitions(4))
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.Deploy(ctx, waitForPaid(t, "pay", "orderId")); err != nil {
		t.Fatal(err)
	}
	const n = 40
	ids := make([]string, n)
	errs := make(chan error, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		key := fmt.Sprintf("order-%d", i)
		wg.Go(func() {
			id, err := eng.Start(ctx, "pay", map[string]any{"orderId": key})
			ids[i] = id
			errs <- err
		})
		wg.Go(func() {
			_, err := eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: key, TTL: time.Hour, Vars: map[string]any{"for": key}})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range ids {
		v := waitDone(t, eng, id)
		if want := fmt.Sprintf("order-%d", i); v.Variables["for"] != want || v.Variables["orderId"] != want {
			t.Errorf("instance %d got %v", i, v.Variables)
		}
	}
}
