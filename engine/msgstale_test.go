package engine_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// A late copy of a subscription's opening (an instance's outbox published
// again after a crash, under an id the restarted server's de-duplication
// no longer knows) arrives after a message without a time to live took the
// subscription, and is stored again. The next unbuffered message for the
// key is offered to it first; the instance, which has moved on, rejects it
// and hands the message back, and the partition offers it to the instance
// of the process that really waits.
func TestUnbufferedMessageRejectedByAStaleSubscriptionReachesTheNext(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := testCtx(t)
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
	// The late copy of the first instance's opening.
	msg, err := engine.MessageEffectMsg(&instance.State{ID: first, ProcessID: "pay"}, instance.Effect{ID: "e", Kind: instance.Subscribe, Sub: &stale})
	if err != nil {
		t.Fatal(err)
	}
	msg.Header.Set(jetstream.MsgIDHeader, "forgotten")
	if _, err := env.JS.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	subscribed(t, env, "paid", "k", 1)
	second, err := eng.Start(ctx, "pay", map[string]any{"orderId": "k"})
	if err != nil {
		t.Fatal(err)
	}
	subscribed(t, env, "paid", "k", 2)
	if e := m.entry(t, "paid", "k"); e.Subs[0].Instance != first {
		t.Fatalf("subscriptions: %+v, want the stale one first", e.Subs)
	}
	if _, err := eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "k", ID: "second", Vars: map[string]any{"n": int64(2)}}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, second); v.Status != instance.Completed || v.Variables["n"] != int64(2) {
		t.Fatalf("second instance: %+v", v)
	}
}
