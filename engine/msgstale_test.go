package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// staleSubscription deploys process pay, which waits for message paid
// with key k, lets an instance take a message without a time to live, and
// then sends the late copy of that instance's opening (an instance's
// outbox published again after a crash, under an id the restarted server's
// de-duplication no longer knows): the subscription is stored again,
// though its instance has moved on. It returns the stale instance.
func staleSubscription(t *testing.T, env *streamstest.Env, eng *engine.Engine) string {
	t.Helper()
	ctx := bounded(t)
	if _, err := eng.Deploy(ctx, waitForPaid(t, "pay", "orderId")); err != nil {
		t.Fatal(err)
	}
	first, err := eng.Start(ctx, "pay", map[string]any{"orderId": "k"})
	if err != nil {
		t.Fatal(err)
	}
	subscribed(t, env, "paid", "k", 1)
	m := &msgEnv{Env: env}
	stale := m.entry(t, "paid", "k").Subs[0]
	if _, err := eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "k", ID: "first", Vars: map[string]any{"n": int64(1)}}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, first); v.Status != instance.Completed || v.Variables["n"] != int64(1) {
		t.Fatalf("first instance: %+v", v)
	}
	msg, err := engine.MessageEffectMsg(&instance.State{ID: first, ProcessID: "pay"}, instance.Effect{ID: "e", Kind: instance.Subscribe, Sub: &stale})
	if err != nil {
		t.Fatal(err)
	}
	msg.Header.Set(jetstream.MsgIDHeader, "forgotten")
	if _, err := env.JS.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	subscribed(t, env, "paid", "k", 1)
	return first
}

// waitingBehind starts a second instance of pay, whose subscription is
// stored behind the stale one of first, and returns it.
func waitingBehind(t *testing.T, env *streamstest.Env, eng *engine.Engine, first string) string {
	t.Helper()
	second, err := eng.Start(bounded(t), "pay", map[string]any{"orderId": "k"})
	if err != nil {
		t.Fatal(err)
	}
	subscribed(t, env, "paid", "k", 2)
	if e := (&msgEnv{Env: env}).entry(t, "paid", "k"); e.Subs[0].Instance != first {
		t.Fatalf("subscriptions: %+v, want the stale one first", e.Subs)
	}
	return second
}

// The next unbuffered message for the key is offered to the stale
// subscription first; the instance, which has moved on, rejects it and
// hands the message back, and the partition offers it to the instance of
// the process that really waits.
func TestUnbufferedMessageRejectedByAStaleSubscriptionReachesTheNext(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	second := waitingBehind(t, env, eng, staleSubscription(t, env, eng))
	if _, err := eng.PublishMessage(bounded(t), engine.Message{Name: "paid", Key: "k", ID: "second", Vars: map[string]any{"n": int64(2)}}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, second); v.Status != instance.Completed || v.Variables["n"] != int64(2) {
		t.Fatalf("second instance: %+v", v)
	}
}

// CorrelateMessage follows the message the stale subscription's instance
// rejects to the instance that takes it, and returns that one.
func TestCorrelateMessageRejectedByAStaleSubscriptionReturnsTheNext(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	second := waitingBehind(t, env, eng, staleSubscription(t, env, eng))
	got, err := eng.CorrelateMessage(bounded(t), engine.Message{Name: "paid", Key: "k", Vars: map[string]any{"n": int64(2)}})
	if err != nil || got != second {
		t.Fatalf("CorrelateMessage = %q, %v; want %s, which took the message", got, err, second)
	}
	if v := waitDone(t, eng, second); v.Status != instance.Completed || v.Variables["n"] != int64(2) {
		t.Fatalf("second instance: %+v", v)
	}
}

// With no other subscription of the process, the message the stale
// subscription's instance rejects is gone: CorrelateMessage says so at
// once, naming that instance, rather than waiting out its context.
func TestCorrelateMessageRejectedByAStaleSubscriptionAlone(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	first := staleSubscription(t, env, eng)
	got, err := eng.CorrelateMessage(bounded(t), engine.Message{Name: "paid", Key: "k"})
	if !errors.Is(err, engine.ErrNoSubscription) || !strings.Contains(err.Error(), first+" left the element") || got != "" {
		t.Fatalf("CorrelateMessage = %q, %v; want ErrNoSubscription naming %s", got, err, first)
	}
	e := (&msgEnv{Env: env}).entry(t, "paid", "k")
	if e == nil || len(e.Subs) != 0 || len(e.Returned) != 1 || e.Returned[0].Next != 0 {
		t.Fatalf("entry: %+v, want no subscription and the rejection remembered as going nowhere", e)
	}
}
