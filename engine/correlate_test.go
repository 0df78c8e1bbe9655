package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
)

// checkpoint writes the checkpoint of a waiting instance as the instances'
// side would, with waits for subs and the correlations it applied.
func (m *msgEnv) checkpoint(t *testing.T, inst string, subs []instance.Subscription, correlations ...string) {
	t.Helper()
	s := &instance.State{ID: inst, ProcessID: "order", Version: 1, Status: instance.Active, StartedAt: time.Now().UTC(),
		Scopes: []*instance.Scope{{ID: instance.RootScope}}, Correlations: correlations}
	for _, sub := range subs {
		s.Waits = append(s.Waits, &instance.Wait{ID: sub.Wait, Kind: instance.MessageWait, Node: "catch", Sub: &sub})
	}
	data, err := streams.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := m.JS.KeyValue(bounded(t), streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(bounded(t), inst, data); err != nil {
		t.Fatal(err)
	}
}

type correlateResult struct {
	inst string
	err  error
}

func (m *msgEnv) correlate(t *testing.T, msg engine.Message) chan correlateResult {
	done := make(chan correlateResult, 1)
	go func() {
		inst, err := m.eng.CorrelateMessage(bounded(t), msg)
		done <- correlateResult{inst, err}
	}()
	return done
}

func result(t *testing.T, done chan correlateResult) correlateResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("CorrelateMessage did not return within 20s")
		return correlateResult{}
	}
}

func TestCorrelateWaitsForTheInstance(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	sub := m.subscribe(t, "inst-1", "order", "paid", "k")
	m.checkpoint(t, "inst-1", []instance.Subscription{sub})
	testwait.True(t, 10*time.Second, "subscription stored", func() bool {
		e := m.entry(t, "paid", "k")
		return e != nil && len(e.Subs) == 1
	})
	done := m.correlate(t, engine.Message{Name: "paid", Key: "k", Vars: map[string]any{"a": 1}})
	ev := m.waitEvents(t, 1, correlates)[0].Event
	select {
	case r := <-done:
		t.Fatalf("CorrelateMessage returned %+v before the instance took the message", r)
	default:
	}
	// The instance takes it: its checkpoint lists the correlation.
	m.checkpoint(t, "inst-1", nil, ev.Correlation.ID())
	if r := result(t, done); r.err != nil || r.inst != "inst-1" {
		t.Fatalf("CorrelateMessage = %+v", r)
	}
}

func TestCorrelateWithoutSubscription(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	_, err := m.eng.CorrelateMessage(bounded(t), engine.Message{Name: "paid", Key: "k"})
	if !errors.Is(err, engine.ErrNoSubscription) || !strings.Contains(err.Error(), `no subscription for message "paid" with key "k"`) {
		t.Fatalf("CorrelateMessage = %v", err)
	}
	if e := m.entry(t, "paid", "k"); e != nil && !e.Idle() {
		t.Errorf("correlate left %+v", e)
	}
	if _, err := m.eng.CorrelateMessage(bounded(t), engine.Message{Name: "paid", Key: "k", TTL: time.Minute}); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("correlate with a TTL = %v", err)
	}
}

// reject publishes what instance inst of process order sends when it
// rejects the correlate event ev: the message handed back.
func (m *msgEnv) reject(t *testing.T, inst string, ev *instance.Event) {
	t.Helper()
	c := *ev.Correlation
	m.effect(t, &instance.State{ID: inst, ProcessID: "order"}, instance.Effect{
		ID: "rej:" + ev.Wait + ":" + c.ID(), Kind: instance.RejectMessage, Wait: ev.Wait, Correlation: &c,
		Sub:     &instance.Subscription{Name: c.Name, Key: c.Key, Instance: inst, ProcessID: "order", Wait: ev.Wait},
		Message: &instance.OutMessage{Name: c.Name, Key: c.Key, Vars: ev.Vars, ID: c.MessageID},
	})
}

// An instance that left the element before the message came rejects it;
// with no other subscription of its process, the message is gone and
// CorrelateMessage says so.
func TestCorrelateToAnInstanceThatLeft(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	m.subscribe(t, "inst-1", "order", "paid", "k")
	testwait.True(t, 10*time.Second, "subscription stored", func() bool {
		e := m.entry(t, "paid", "k")
		return e != nil && len(e.Subs) == 1
	})
	m.checkpoint(t, "inst-1", nil) // the wait is gone already
	done := m.correlate(t, engine.Message{Name: "paid", Key: "k"})
	m.reject(t, "inst-1", m.waitEvents(t, 1, correlates)[0].Event)
	r := result(t, done)
	if !errors.Is(r.err, engine.ErrNoSubscription) || !strings.Contains(r.err.Error(), "inst-1 left the element") {
		t.Fatalf("CorrelateMessage = %+v", r)
	}
}

// An instance that left the element rejects the message and the partition
// offers it to the next subscription of the process: CorrelateMessage
// follows it, through a second rejection, to the instance that takes it.
func TestCorrelateFollowsARejectedMessage(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	m.subscribe(t, "inst-1", "order", "paid", "k")
	m.subscribe(t, "inst-2", "order", "paid", "k")
	sub3 := m.subscribe(t, "inst-3", "order", "paid", "k")
	testwait.True(t, 10*time.Second, "subscriptions stored", func() bool {
		e := m.entry(t, "paid", "k")
		return e != nil && len(e.Subs) == 3
	})
	m.checkpoint(t, "inst-1", nil) // the waits of the first two are gone
	m.checkpoint(t, "inst-2", nil)
	m.checkpoint(t, "inst-3", []instance.Subscription{sub3})
	done := m.correlate(t, engine.Message{Name: "paid", Key: "k", Vars: map[string]any{"n": int64(7)}})
	m.reject(t, "inst-1", m.waitEvents(t, 1, correlatesOf("inst-1"))[0].Event)
	m.reject(t, "inst-2", m.waitEvents(t, 1, correlatesOf("inst-2"))[0].Event)
	ev := m.waitEvents(t, 1, correlatesOf("inst-3"))[0].Event
	if ev.Vars["n"] != int64(7) {
		t.Errorf("the message reached inst-3 with %v", ev.Vars)
	}
	m.checkpoint(t, "inst-3", nil, ev.Correlation.ID())
	if r := result(t, done); r.err != nil || r.inst != "inst-3" {
		t.Fatalf("CorrelateMessage = %+v, want inst-3", r)
	}
}

func TestCorrelateByBusinessKey(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	sub := m.subscribe(t, "inst-1", "order", "approve", instance.BusinessKeyPrefix+"B-4")
	m.checkpoint(t, "inst-1", []instance.Subscription{sub})
	testwait.True(t, 10*time.Second, "subscription stored", func() bool {
		e := m.entry(t, "approve", instance.BusinessKeyPrefix+"B-4")
		return e != nil && len(e.Subs) == 1
	})
	done := m.correlate(t, engine.Message{Name: "approve", BusinessKey: "B-4"})
	ev := m.waitEvents(t, 1, correlates)[0].Event
	m.checkpoint(t, "inst-1", nil, ev.Correlation.ID())
	if r := result(t, done); r.err != nil || r.inst != "inst-1" {
		t.Fatalf("CorrelateMessage = %+v", r)
	}
}

func TestMessageToOneInstance(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	sub := instance.Subscription{Name: "approve", Instance: "inst-1", ProcessID: "order", Wait: "inst-1/catch/1"}
	m.checkpoint(t, "inst-1", []instance.Subscription{sub})

	if _, err := m.eng.CorrelateMessage(bounded(t), engine.Message{Name: "other", Instance: "inst-1"}); !errors.Is(err, engine.ErrNoSubscription) {
		t.Errorf("correlate a message the instance does not wait for = %v", err)
	}
	if _, err := m.eng.PublishMessage(bounded(t), engine.Message{Name: "approve", Instance: "nobody-1"}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("publish to an unknown instance = %v", err)
	}

	done := m.correlate(t, engine.Message{Name: "approve", Instance: "inst-1", ID: "ok-1", Vars: map[string]any{"ok": true}})
	got := m.waitEvents(t, 1, func(e engine.Envelope) bool { return e.Event != nil && e.Event.Kind == instance.MessageTo })[0]
	ev := got.Event
	if got.Instance != "inst-1" || ev.Message != "approve" || ev.Vars["ok"] != true || ev.Correlation == nil ||
		ev.Correlation.Name != "approve" || ev.Correlation.MessageID != "ok-1" || ev.Correlation.Seq != 0 {
		t.Fatalf("message event: %+v", ev)
	}
	m.checkpoint(t, "inst-1", nil, ev.Correlation.ID())
	if r := result(t, done); r.err != nil || r.inst != "inst-1" {
		t.Fatalf("CorrelateMessage = %+v", r)
	}
	// Nothing went through the message partitions.
	if e := m.entry(t, "approve", ""); e != nil {
		t.Errorf("a direct message left an entry: %+v", e)
	}
}
