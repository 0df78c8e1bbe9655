package instance

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
)

// correlation is the Correlate event a message partition sends wait w for
// its seq-th correlation, with the message's variables.
func correlation(w *Wait, seq uint64, vars map[string]any) Event {
	return Event{
		ID: fmt.Sprintf("corr:%s:%d", w.ID, seq), Kind: Correlate, Wait: w.ID, Vars: vars,
		Correlation: &Correlation{Name: w.Sub.Name, Key: w.Sub.Key, Seq: seq},
	}
}

// correlate applies the seq-th correlation of the message wait at node,
// expecting it to be applied, and returns the wait as it was.
func correlate(t testing.TB, s *State, env *testEnv, node string, seq uint64, vars map[string]any) Wait {
	t.Helper()
	w := msgWait(t, s, node)
	if n := apply(t, s, env, correlation(&w, seq, vars)); n != 1 {
		t.Fatalf("Correlate(%s) applied = %d, want 1", w.ID, n)
	}
	return w
}

// msgWait returns a copy of the only wait at node, which must be a
// message wait.
func msgWait(t testing.TB, s *State, node string) Wait {
	t.Helper()
	w := waitAt(t, s, node)
	if w.Kind != MessageWait || w.Sub == nil {
		t.Fatalf("wait at %s = %+v, want a message wait", node, w)
	}
	c := *w
	sub := *w.Sub
	c.Sub = &sub
	return c
}

// subs returns the subscriptions of the outbox entries of one kind, by
// wait id.
func subs(s *State, kind EffectKind) []string {
	var out []string
	for _, e := range effects(s, kind) {
		if e.Sub == nil || e.Wait != e.Sub.Wait {
			out = append(out, "malformed:"+e.ID)
			continue
		}
		out = append(out, e.Sub.Wait)
	}
	slices.Sort(out)
	return out
}

// startWith starts instance "i1" as b says.
func startWith(t testing.TB, env *testEnv, vars map[string]any, b Begin) *State {
	t.Helper()
	s, err := StartFrom("i1", env.Env, vars, b)
	if err != nil {
		t.Fatalf("StartFrom: %v", err)
	}
	env.runOps(t, s)
	return s
}

func catchProcess(key string, opts ...model.NodeOption) *model.Builder {
	return model.NewBuilder("pay").StartEvent("start").MessageCatchEvent("paid", "order-paid", key, opts...).
		ScriptTask("after", "'done'", "state").EndEvent("end").Sequence("start", "paid", "after", "end")
}

func TestMessageCatchSubscribes(t *testing.T) {
	s, env := run(t, catchProcess("orderId"), map[string]any{"orderId": "o-17"})
	assertStatus(t, s, Active)
	tr := s.Tracks[0]
	id := fmt.Sprintf("i1/paid/%d", tr.Activation)
	sub := Subscription{Name: "order-paid", Key: "o-17", Instance: "i1", ProcessID: "pay", Wait: id, Opened: t0}
	w := msgWait(t, s, "paid")
	if want := (Wait{ID: id, Kind: MessageWait, Track: tr.ID, Node: "paid", Armed: t0, Sub: &sub}); !reflect.DeepEqual(w, want) {
		t.Errorf("wait = %+v %+v\nwant %+v %+v", w, *w.Sub, want, sub)
	}
	if tr.Node != "paid" || tr.State != Waiting {
		t.Errorf("track = %+v", tr)
	}
	want := []Effect{{ID: "sub:" + id, Kind: Subscribe, Wait: id, Sub: &sub}}
	if got := effects(s, Subscribe); !reflect.DeepEqual(got, want) {
		t.Errorf("Subscribe effects = %+v, want %+v", got, want)
	}
	flush(s)

	env.Now = t0.Add(time.Minute)
	correlate(t, s, env, "paid", 7, map[string]any{"amount": 20, "orderId": "o-17"})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"amount": int64(20), "state": "done"})
	if want := []string{"order-paid/o-17/7"}; !slices.Equal(s.Correlations, want) {
		t.Errorf("Correlations = %v, want %v", s.Correlations, want)
	}
	// The partition closed the subscription when it offered the message.
	if got := effects(s, Unsubscribe); len(got) != 0 {
		t.Errorf("Unsubscribe effects %+v, want none", got)
	}
}

// A catch with output mappings keeps what they map, not every message
// variable.
func TestMessageCatchOutputs(t *testing.T) {
	s, env := run(t, catchProcess("'k'", model.Output("paidAmount", "amount * 2")), nil)
	correlate(t, s, env, "paid", 1, map[string]any{"amount": 20, "note": "x"})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"paidAmount": int64(40)})
	assertNoVar(t, s.Variables(), "amount", "note")
}

func TestCorrelationKeyValues(t *testing.T) {
	tests := []struct {
		value any
		key   string
	}{
		{"o-17", "o-17"},
		{int64(17), "17"},
		{17.0, "17"},
		{-4, "-4"},
		{2.5, "2.5"},
		{0.1, "0.1"},
		{1e21, "1000000000000000000000"},
		{math.Copysign(0, -1), "0"},
		{" spaced ", " spaced "},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.value), func(t *testing.T) {
			s, _ := run(t, catchProcess("k"), map[string]any{"k": tt.value})
			if w := msgWait(t, s, "paid"); w.Sub.Key != tt.key {
				t.Errorf("key of %T %v = %q, want %q", tt.value, tt.value, w.Sub.Key, tt.key)
			}
		})
	}
}

func TestCorrelationKeyFaults(t *testing.T) {
	tests := []struct {
		name string
		b    *model.Builder
		vars map[string]any
		want []string
	}{
		{"bool", catchProcess("k"), map[string]any{"k": true}, []string{`correlation key "k"`, "bool true", "want a string or a number"}},
		{"null", catchProcess("k"), nil, []string{"is null"}},
		{"object", catchProcess("k"), map[string]any{"k": map[string]any{"a": 1}}, []string{"is an object"}},
		{"list", catchProcess("k"), map[string]any{"k": []any{1}}, []string{"is a list"}},
		{"empty string", catchProcess("k"), map[string]any{"k": ""}, []string{"is an empty string"}},
		{"evaluation error", catchProcess("k + 1"), map[string]any{"k": "a"}, []string{"correlation key"}},
		{"name not a string", catchProcess("'k'", model.MessageNameExpr("n")), map[string]any{"n": 5}, []string{"message name", "want a non-empty string"}},
		{"receive task key", model.NewBuilder("r").StartEvent("start").ReceiveTask("paid", "m", "k").EndEvent("end").
			Sequence("start", "paid", "end"), map[string]any{"k": false}, []string{"bool false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := run(t, tt.b, tt.vars)
			inc := assertIncident(t, s, "paid", tt.want...)
			if inc.CauseClass != incidents.CauseExpression {
				t.Errorf("cause class %q, want %q", inc.CauseClass, incidents.CauseExpression)
			}
			if len(s.Waits) != 0 || len(effects(s, Subscribe)) != 0 {
				t.Errorf("waits %s, Subscribe %+v: want none", dumpWaits(s), effects(s, Subscribe))
			}
		})
	}
}

// A key that is not there yet raises an incident; once a parallel branch
// has set it, a retry evaluates it again and subscribes.
func TestCorrelationKeyRetryAfterFix(t *testing.T) {
	b := model.NewBuilder("fix").StartEvent("start").ParallelGateway("fork").
		MessageCatchEvent("paid", "order-paid", "orderId").EndEvent("end").
		TimerCatchEvent("later", model.Duration("PT1M")).ScriptTask("set", "'o-9'", "orderId").EndEvent("end2").
		Flow("start", "fork").Flow("fork", "paid").Flow("fork", "later").Sequence("paid", "end").Sequence("later", "set", "end2")
	s, env := run(t, b, nil)
	inc := assertIncident(t, s, "paid", "is null")
	fire(t, s, env, "later")
	flush(s)
	apply(t, s, env, command(IncidentRetry, inc, "c1"))
	w := msgWait(t, s, "paid")
	if w.Sub.Key != "o-9" || len(effects(s, Subscribe)) != 1 {
		t.Fatalf("after the retry: wait %+v, Subscribe %+v", w.Sub, effects(s, Subscribe))
	}
	correlate(t, s, env, "paid", 1, nil)
	assertStatus(t, s, Completed)
}

func TestMessageNameExpression(t *testing.T) {
	s, _ := run(t, catchProcess("'k'", model.MessageNameExpr(`"paid-" + region`)), map[string]any{"region": "eu"})
	if w := msgWait(t, s, "paid"); w.Sub.Name != "paid-eu" {
		t.Errorf("name = %q, want paid-eu", w.Sub.Name)
	}
}

// A catch without a correlation key subscribes under the business key;
// without one it is reachable by MessageTo only.
func TestBusinessKeySubscription(t *testing.T) {
	t.Run("with a business key", func(t *testing.T) {
		env := newEnv(build(t, catchProcess("")), nil)
		s := startWith(t, env, nil, Begin{BusinessKey: "B-4"})
		if s.BusinessKey != "B-4" {
			t.Errorf("BusinessKey = %q", s.BusinessKey)
		}
		w := msgWait(t, s, "paid")
		if w.Sub.Key != BusinessKeyPrefix+"B-4" || !slices.Equal(subs(s, Subscribe), []string{w.ID}) {
			t.Fatalf("sub %+v, Subscribe %v", w.Sub, subs(s, Subscribe))
		}
		flush(s)
		apply(t, s, env, Event{ID: "x", Kind: Cancel})
		if !slices.Equal(subs(s, Unsubscribe), []string{w.ID}) {
			t.Errorf("Unsubscribe %v, want %s", subs(s, Unsubscribe), w.ID)
		}
	})
	t.Run("without", func(t *testing.T) {
		s, env := run(t, catchProcess(""), nil)
		w := msgWait(t, s, "paid")
		if w.Sub.Key != "" || len(effects(s, Subscribe)) != 0 {
			t.Fatalf("sub %+v, Subscribe %+v: want no key and no Subscribe", w.Sub, effects(s, Subscribe))
		}
		flush(s)
		if n := apply(t, s, env, Event{ID: "m1", Kind: MessageTo, Message: "order-paid", Vars: map[string]any{"a": 1}}); n != 1 {
			t.Fatalf("MessageTo applied = %d", n)
		}
		assertStatus(t, s, Completed)
		assertVars(t, s.Variables(), map[string]any{"a": int64(1)})
		if got := effects(s, Unsubscribe); len(got) != 0 {
			t.Errorf("Unsubscribe %+v for a wait never subscribed", got)
		}
	})
}

func TestCorrelateRedeliveredAppliesOnce(t *testing.T) {
	b := model.NewBuilder("twice").StartEvent("start").ParallelGateway("fork").
		MessageCatchEvent("paid", "order-paid", "'k'").ScriptTask("count", "(n ?? 0) + 1", "n").EndEvent("end").
		TimerCatchEvent("t", model.Duration("PT1H")).EndEvent("end2").
		Flow("start", "fork").Flow("fork", "paid").Flow("fork", "t").Sequence("paid", "count", "end").Sequence("t", "end2")
	s, env := run(t, b, nil)
	w := msgWait(t, s, "paid")
	ev := correlation(&w, 3, map[string]any{"v": 1})
	if n := apply(t, s, env, ev, ev); n != 1 {
		t.Fatalf("batch with a duplicate applied = %d, want 1", n)
	}
	var discarded []Event
	env.Discarded = func(e Event) { discarded = append(discarded, e) }
	flush(s)
	before := snapshot(t, s)
	if n := apply(t, s, env, ev); n != 0 {
		t.Errorf("redelivery applied = %d, want 0", n)
	}
	if snapshot(t, s) != before {
		t.Error("a redelivered correlation changed the state")
	}
	if len(discarded) != 1 || len(effects(s, RejectMessage)) != 0 {
		t.Errorf("discarded %v, RejectMessage %+v: want the redelivery discarded, not rejected", discarded, effects(s, RejectMessage))
	}
	assertVars(t, s.Variables(), map[string]any{"n": int64(1)})
}

// A correlation for a wait that is gone is handed back, with the
// subscription the partition stored, so the message can go elsewhere.
func TestCorrelateGoneWaitRejects(t *testing.T) {
	b := model.NewBuilder("gone").StartEvent("start").ReceiveTask("recv", "order-paid", "'k'").EndEvent("end").
		TimerBoundary("late", "recv", model.Duration("PT1H"), true).TimerCatchEvent("more", model.Duration("PT1H")).EndEvent("end2").
		Sequence("start", "recv", "end").Sequence("late", "more", "end2")
	s, env := run(t, b, nil)
	w := msgWait(t, s, "recv")
	flush(s)
	fire(t, s, env, "late")
	if !slices.Equal(subs(s, Unsubscribe), []string{w.ID}) {
		t.Fatalf("Unsubscribe %v, want the receive task's", subs(s, Unsubscribe))
	}
	flush(s)
	ev := correlation(&w, 5, map[string]any{"v": 1})
	if n := apply(t, s, env, ev, ev); n != 2 {
		t.Fatalf("a rejection applied = %d, want 2 (it changes the outbox)", n)
	}
	want := []Effect{{
		ID: "rej:" + w.ID + ":order-paid/k/5", Kind: RejectMessage, Wait: w.ID,
		Correlation: &Correlation{Name: "order-paid", Key: "k", Seq: 5},
		Sub:         &Subscription{Name: "order-paid", Key: "k", Instance: "i1", ProcessID: "gone", Wait: w.ID},
	}}
	if got := effects(s, RejectMessage); !reflect.DeepEqual(got, want) {
		t.Errorf("RejectMessage = %+v\nwant %+v", got, want)
	}
	assertNoVar(t, s.Variables(), "v")
	if len(s.Correlations) != 0 {
		t.Errorf("Correlations %v: a rejected correlation is not applied", s.Correlations)
	}

	// A correlation naming a live wait under another name or key is not
	// that wait's: rejected too, the wait untouched.
	s, env = run(t, catchProcess("'k'"), nil)
	w = msgWait(t, s, "paid")
	other := correlation(&w, 1, nil)
	other.Correlation.Key = "other"
	apply(t, s, env, other)
	if len(effects(s, RejectMessage)) != 1 || msgWait(t, s, "paid").ID != w.ID {
		t.Errorf("mismatched correlation: RejectMessage %+v, waits %s", effects(s, RejectMessage), dumpWaits(s))
	}
}

// An instance that has ended rejects a correlation it never applied, and
// skips one it did.
func TestCorrelateFinishedInstance(t *testing.T) {
	s, env := run(t, catchProcess("'k'"), nil)
	w := msgWait(t, s, "paid")
	applied := correlation(&w, 1, nil)
	apply(t, s, env, applied)
	assertStatus(t, s, Completed)
	flush(s)
	if n := apply(t, s, env, applied); n != 0 || len(s.Outbox) != 0 {
		t.Errorf("redelivery to a finished instance: applied %d, outbox %+v", n, s.Outbox)
	}
	late := correlation(&w, 2, nil)
	if n := apply(t, s, env, late); n != 1 {
		t.Errorf("late correlation applied = %d, want 1 (rejected)", n)
	}
	if got := effects(s, RejectMessage); len(got) != 1 || got[0].Correlation.Seq != 2 {
		t.Errorf("RejectMessage = %+v, want the late correlation's", got)
	}
	assertStatus(t, s, Completed)
	// Other events still leave a finished instance alone.
	if n := apply(t, s, env, Event{Kind: MessageTo, Message: "order-paid"}); n != 0 {
		t.Errorf("MessageTo to a finished instance applied = %d", n)
	}
}

func TestCorrelationsKeepTheLast64(t *testing.T) {
	b := model.NewBuilder("many").StartEvent("start").ServiceTask("work", "", model.WithWorker("w")).EndEvent("end").
		MessageBoundary("ping", "work", "ping", "'k'", false).EndEvent("pinged").
		Sequence("start", "work", "end").Sequence("ping", "pinged")
	s, env := run(t, b, nil)
	w := msgWait(t, s, "ping")
	for seq := uint64(1); seq <= 70; seq++ {
		apply(t, s, env, correlation(&w, seq, nil))
	}
	if len(s.Correlations) != maxCorrelations || s.Correlations[0] != "ping/k/7" || s.Correlations[63] != "ping/k/70" {
		t.Fatalf("Correlations = %d entries %v ... %v, want ping/k/7 ... ping/k/70", len(s.Correlations), s.Correlations[0], s.Correlations[len(s.Correlations)-1])
	}
	if n := apply(t, s, env, correlation(&w, 70, nil)); n != 0 {
		t.Error("the newest correlation was applied again")
	}
}

// MessageTo goes to the oldest open wait of its name, whatever its key,
// and closes that wait's subscription; a message id makes it apply once.
func TestMessageToOldestWait(t *testing.T) {
	b := model.NewBuilder("direct").StartEvent("start").ParallelGateway("fork").
		MessageCatchEvent("first", "approve", "'a'", model.Output("by1", "by")).EndEvent("e1").
		TimerCatchEvent("pause", model.Duration("PT1M")).MessageCatchEvent("second", "approve", "'b'", model.Output("by2", "by")).EndEvent("e2").
		Flow("start", "fork").Flow("fork", "first").Flow("fork", "pause").
		Sequence("first", "e1").Sequence("pause", "second", "e2")
	s, env := run(t, b, nil)
	fire(t, s, env, "pause")
	first, second := msgWait(t, s, "first"), msgWait(t, s, "second")
	if !second.Sub.Opened.After(first.Sub.Opened) {
		t.Fatalf("opened %v and %v", first.Sub.Opened, second.Sub.Opened)
	}
	flush(s)
	var discarded []Event
	env.Discarded = func(e Event) { discarded = append(discarded, e) }
	m1 := Event{ID: "m1", Kind: MessageTo, Message: "approve", Vars: map[string]any{"by": "ann"}, Correlation: &Correlation{Name: "approve", MessageID: "m1"}}
	if n := apply(t, s, env, m1, m1); n != 1 {
		t.Fatalf("MessageTo with a duplicate applied = %d, want 1", n)
	}
	assertVars(t, s.Variables(), map[string]any{"by1": "ann"})
	assertNoVar(t, s.Variables(), "by2")
	if !slices.Equal(subs(s, Unsubscribe), []string{first.ID}) || !slices.Equal(s.Correlations, []string{"msg:m1"}) {
		t.Errorf("Unsubscribe %v, Correlations %v", subs(s, Unsubscribe), s.Correlations)
	}
	apply(t, s, env, Event{ID: "m2", Kind: MessageTo, Message: "approve", Vars: map[string]any{"by": "bob"}})
	assertVars(t, s.Variables(), map[string]any{"by2": "bob"})
	assertStatus(t, s, Completed)
	if len(discarded) != 1 || discarded[0].ID != "m1" {
		t.Errorf("discarded %v, want the duplicate m1", discarded)
	}

	s, env = run(t, catchProcess("'k'"), nil)
	for _, ev := range []Event{{Kind: MessageTo, Message: "other"}, {Kind: MessageTo}} {
		if n := apply(t, s, env, ev); n != 0 {
			t.Errorf("MessageTo %q with no wait of that name applied = %d", ev.Message, n)
		}
	}
}

// A receive task evaluates its key over its input mappings, and its
// outputs see its locals and the message.
func TestReceiveTask(t *testing.T) {
	b := model.NewBuilder("recv").StartEvent("start").
		ReceiveTask("recv", "shipped", "ref", model.Input("ref", `"order-" + string(id)`), model.Output("shipment", `ref + "/" + carrier`)).
		EndEvent("end").Sequence("start", "recv", "end")
	s, env := run(t, b, map[string]any{"id": 7})
	w := msgWait(t, s, "recv")
	if w.Sub.Key != "order-7" {
		t.Fatalf("key %q, want order-7", w.Sub.Key)
	}
	correlate(t, s, env, "recv", 1, map[string]any{"carrier": "ups"})
	assertStatus(t, s, Completed)
	assertVars(t, s.Variables(), map[string]any{"shipment": "order-7/ups"})
	assertNoVar(t, s.Variables(), "ref", "carrier")
}

// A fault completing the catch (a variable the engine refuses) raises an
// incident on it; the message is consumed.
func TestMessageVariablesRefused(t *testing.T) {
	s, env := run(t, catchProcess("'k'"), nil)
	env.CheckValue = func(name string, v any) error {
		if name == "big" {
			return fmt.Errorf("too big")
		}
		return nil
	}
	correlate(t, s, env, "paid", 1, map[string]any{"big": strings.Repeat("x", 10)})
	inc := assertIncident(t, s, "paid", `variable "big": too big`)
	if inc.CauseClass != incidents.CauseDataFlow {
		t.Errorf("cause class %q", inc.CauseClass)
	}
}

// A rejected offer of a message its partition does not keep (ReturnBy set)
// hands the message back: its variables and id go with the rejection.
func TestCorrelateRejectionHandsBackAnUnkeptMessage(t *testing.T) {
	s, env := run(t, catchProcess("'k'"), nil)
	w := msgWait(t, s, "paid")
	apply(t, s, env, correlation(&w, 1, nil))
	assertStatus(t, s, Completed)
	flush(s)
	late := correlation(&w, 2, map[string]any{"v": int64(7)})
	late.Correlation.MessageID, late.Correlation.ReturnBy = "m-2", time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC)
	apply(t, s, env, late)
	got := effects(s, RejectMessage)
	want := &OutMessage{Name: "order-paid", Key: "k", Vars: map[string]any{"v": int64(7)}, ID: "m-2"}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Message, want) || !got[0].Correlation.ReturnBy.Equal(late.Correlation.ReturnBy) {
		t.Errorf("RejectMessage = %+v, want the message handed back: %+v", got, want)
	}
}
