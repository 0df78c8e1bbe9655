package correlation_test

import (
	"errors"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/instance"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func sub(inst, process string) instance.Subscription {
	return instance.Subscription{Name: "paid", Key: "k", Instance: inst, ProcessID: process, Wait: inst + "/catch/1", Opened: t0}
}

func newEntry() *correlation.Entry { return &correlation.Entry{Name: "paid", Key: "k"} }

// effects returns the outbox's effects of kind and clears the outbox.
func effects(e *correlation.Entry, kind correlation.EffectKind) []correlation.Effect {
	var out []correlation.Effect
	for _, eff := range e.Outbox {
		if eff.Kind == kind {
			out = append(out, eff)
		}
	}
	return out
}

func instances(offers []correlation.Offer) []string {
	var out []string
	for _, o := range offers {
		out = append(out, o.Instance)
	}
	return out
}

func mustPublish(t *testing.T, e *correlation.Entry, m correlation.Publish, starts []correlation.StartEvent, now time.Time) []correlation.Offer {
	t.Helper()
	offers, err := e.Publish(m, starts, now)
	if err != nil {
		t.Fatal(err)
	}
	return offers
}

func TestBufferedThenSubscribed(t *testing.T) {
	e := newEntry()
	vars := map[string]any{"amount": int64(20)}
	if offers := mustPublish(t, e, correlation.Publish{ID: "m1", Vars: vars, TTL: time.Hour}, nil, t0); len(offers) != 0 {
		t.Fatalf("offers with no subscription: %v", offers)
	}
	if len(e.Buffered) != 1 || !e.Buffered[0].Expires.Equal(t0.Add(time.Hour)) {
		t.Fatalf("buffered: %+v", e.Buffered)
	}
	sched := effects(e, correlation.ScheduleExpiry)
	if len(sched) != 1 || !sched[0].Expires.Equal(t0.Add(time.Hour)) || sched[0].Seq != e.Buffered[0].Seq {
		t.Fatalf("expiry schedule: %+v", sched)
	}
	e.Outbox = nil

	offers := e.Subscribe(sub("i1", "p"), t0.Add(time.Minute))
	if got := instances(offers); !reflect.DeepEqual(got, []string{"i1"}) {
		t.Fatalf("offers = %v", got)
	}
	corr := effects(e, correlation.Correlate)
	if len(corr) != 1 || corr[0].Sub.Instance != "i1" || corr[0].Sub.Wait != "i1/catch/1" || !reflect.DeepEqual(corr[0].Vars, vars) ||
		corr[0].Correlation.Name != "paid" || corr[0].Correlation.Key != "k" || corr[0].Correlation.MessageID != "m1" || corr[0].Correlation.Seq == 0 {
		t.Fatalf("correlate effect: %+v", corr)
	}
	if len(e.Subs) != 0 {
		t.Errorf("a subscription that got its message at once is stored: %+v", e.Subs)
	}
	if len(e.Buffered) != 1 {
		t.Errorf("the message left the buffer; it stays until its time to live ends (other processes may want it)")
	}
}

func TestSubscribedThenPublished(t *testing.T) {
	e := newEntry()
	if offers := e.Subscribe(sub("i1", "p"), t0); offers != nil {
		t.Fatalf("offers with nothing buffered: %v", offers)
	}
	if len(e.Subs) != 1 {
		t.Fatalf("subscription not stored: %+v", e)
	}
	offers := mustPublish(t, e, correlation.Publish{ID: "m1"}, nil, t0)
	if got := instances(offers); !reflect.DeepEqual(got, []string{"i1"}) {
		t.Fatalf("offers = %v", got)
	}
	if len(e.Subs) != 0 || len(e.Buffered) != 0 {
		t.Errorf("after the correlation: subs %+v buffered %+v", e.Subs, e.Buffered)
	}
	if !e.Idle() {
		t.Error("entry not idle")
	}
}

func TestUnbufferedMessageWithoutSubscriptionIsDropped(t *testing.T) {
	e := newEntry()
	if offers := mustPublish(t, e, correlation.Publish{ID: "m1"}, nil, t0); len(offers) != 0 {
		t.Fatal(offers)
	}
	if len(e.Buffered) != 0 || len(e.Outbox) != 0 || !e.Idle() {
		t.Fatalf("a message with no time to live left something: %+v", e)
	}
	if offers := e.Subscribe(sub("i1", "p"), t0); offers != nil {
		t.Fatalf("a later subscription got an unbuffered message: %v", offers)
	}
}

func TestTTLExpiry(t *testing.T) {
	e := newEntry()
	mustPublish(t, e, correlation.Publish{ID: "m1", TTL: time.Minute}, nil, t0)
	seq := e.Buffered[0].Seq
	e.Outbox = nil
	e.Expire(seq, t0.Add(time.Minute))
	exp := effects(e, correlation.Expired)
	if len(e.Buffered) != 0 || len(exp) != 1 || exp[0].Seq != seq || exp[0].MessageID != "m1" {
		t.Fatalf("after expiry: buffered %+v effects %+v", e.Buffered, e.Outbox)
	}
	e.Outbox = nil
	e.Expire(seq, t0.Add(time.Minute))
	if len(e.Outbox) != 0 {
		t.Errorf("a second expiry published again: %+v", e.Outbox)
	}
	if offers := e.Subscribe(sub("i1", "p"), t0.Add(2*time.Minute)); offers != nil {
		t.Errorf("an expired message was offered: %v", offers)
	}
}

// A message past its time to live is gone for every operation even before
// its expiry command arrives; the expiry then changes nothing.
func TestExpiredMessageIsGoneBeforeItsExpiryArrives(t *testing.T) {
	e := newEntry()
	mustPublish(t, e, correlation.Publish{ID: "m1", TTL: time.Minute}, nil, t0)
	seq := e.Buffered[0].Seq
	e.Outbox = nil
	if offers := e.Subscribe(sub("i1", "p"), t0.Add(time.Minute)); offers != nil {
		t.Fatalf("an expired message was offered: %v", offers)
	}
	if exp := effects(e, correlation.Expired); len(exp) != 1 {
		t.Fatalf("expired facts: %+v", e.Outbox)
	}
	e.Outbox = nil
	e.Expire(seq, t0.Add(time.Minute+time.Second))
	if len(e.Outbox) != 0 {
		t.Errorf("the late expiry published again: %+v", e.Outbox)
	}
}

func TestDuplicateIDRefusedWhileBuffered(t *testing.T) {
	e := newEntry()
	mustPublish(t, e, correlation.Publish{ID: "m1", TTL: time.Minute}, nil, t0)
	e.Subscribe(sub("i1", "p"), t0) // takes m1
	before := *e
	outbox := len(e.Outbox)
	offers, err := e.Publish(correlation.Publish{ID: "m1", TTL: time.Minute}, nil, t0.Add(time.Second))
	if !errors.Is(err, correlation.ErrDuplicate) || offers != nil {
		t.Fatalf("second publish of m1 = %v, %v; want ErrDuplicate", offers, err)
	}
	if e.Seq != before.Seq || len(e.Buffered) != 1 || len(e.Outbox) != outbox {
		t.Errorf("a refused publish changed the entry")
	}
	// Another id, and the same id once the first expired, are fine.
	mustPublish(t, e, correlation.Publish{ID: "m2"}, nil, t0.Add(time.Second))
	mustPublish(t, e, correlation.Publish{ID: "m1"}, nil, t0.Add(2*time.Minute))
	// Messages without an id are never duplicates.
	mustPublish(t, e, correlation.Publish{TTL: time.Minute}, nil, t0.Add(3*time.Minute))
	mustPublish(t, e, correlation.Publish{TTL: time.Minute}, nil, t0.Add(3*time.Minute))
}

func TestOneMessageTwoSubscriptionsOfOneProcess(t *testing.T) {
	e := newEntry()
	e.Subscribe(sub("old", "p"), t0)
	e.Subscribe(sub("new", "p"), t0)
	offers := mustPublish(t, e, correlation.Publish{ID: "m1", TTL: time.Hour}, nil, t0)
	if got := instances(offers); !reflect.DeepEqual(got, []string{"old"}) {
		t.Fatalf("offers = %v, want the oldest subscription only", got)
	}
	if len(e.Subs) != 1 || e.Subs[0].Instance != "new" {
		t.Fatalf("subs = %+v", e.Subs)
	}
	// The buffered message went to p already: a later subscription of p
	// does not get it.
	if offers := e.Subscribe(sub("third", "p"), t0); offers != nil {
		t.Errorf("a message went to one process twice: %v", offers)
	}
	// The next message goes to the next subscription.
	offers = mustPublish(t, e, correlation.Publish{ID: "m2"}, nil, t0)
	if got := instances(offers); !reflect.DeepEqual(got, []string{"new"}) {
		t.Errorf("second message offers = %v", got)
	}
}

func TestOneMessageTwoProcesses(t *testing.T) {
	e := newEntry()
	e.Subscribe(sub("a1", "a"), t0)
	e.Subscribe(sub("b1", "b"), t0)
	e.Subscribe(sub("a2", "a"), t0)
	offers := mustPublish(t, e, correlation.Publish{ID: "m1", TTL: time.Hour}, nil, t0)
	if got := instances(offers); !reflect.DeepEqual(got, []string{"a1", "b1"}) {
		t.Fatalf("offers = %v, want one per process, oldest first", got)
	}
	if offers := e.Subscribe(sub("c1", "c"), t0); !reflect.DeepEqual(instances(offers), []string{"c1"}) {
		t.Errorf("a third process subscribing later did not get the buffered message: %v", offers)
	}
	seqs := map[uint64]bool{}
	for _, eff := range effects(e, correlation.Correlate) {
		if seqs[eff.Correlation.Seq] {
			t.Errorf("correlation number %d used twice", eff.Correlation.Seq)
		}
		seqs[eff.Correlation.Seq] = true
	}
}

func TestRejectOffersAgain(t *testing.T) {
	e := newEntry()
	e.Subscribe(sub("gone", "p"), t0)
	e.Subscribe(sub("next", "p"), t0)
	offers := mustPublish(t, e, correlation.Publish{ID: "m1", TTL: time.Hour}, nil, t0)
	c := offers[0].Correlation
	e.Outbox = nil

	offers = e.Reject(sub("gone", "p"), c, nil, t0)
	if got := instances(offers); !reflect.DeepEqual(got, []string{"next"}) {
		t.Fatalf("after the rejection the message went to %v, want the next subscription of p", got)
	}
	if rej := effects(e, correlation.Rejected); len(rej) != 1 || rej[0].Sub.Instance != "gone" || rej[0].Correlation != c {
		t.Errorf("rejected fact: %+v", e.Outbox)
	}
	if d := e.Buffered[0].Correlated; len(d) != 1 || d[0].Instance != "next" {
		t.Errorf("deliveries: %+v", d)
	}
	// The same rejection again changes nothing.
	e.Outbox = nil
	if offers := e.Reject(sub("gone", "p"), c, nil, t0); offers != nil || len(e.Outbox) != 0 {
		t.Errorf("a repeated rejection: %v %+v", offers, e.Outbox)
	}
	// Rejected with no other subscription of p: it stays buffered for the next one.
	second := e.Buffered[0].Correlated[0]
	e.Reject(sub("next", "p"), instance.Correlation{Name: "paid", Key: "k", Seq: second.Seq, MessageID: "m1"}, nil, t0)
	if len(e.Buffered) != 1 || len(e.Buffered[0].Correlated) != 0 {
		t.Fatalf("after the second rejection: %+v", e.Buffered[0])
	}
	if offers := e.Subscribe(sub("later", "p"), t0); !reflect.DeepEqual(instances(offers), []string{"later"}) {
		t.Errorf("a later subscription of p did not get the rejected message: %v", offers)
	}
}

func TestRejectClosesARepeatingSubscription(t *testing.T) {
	e := newEntry()
	s := sub("i1", "p")
	s.Repeat = true
	e.Subscribe(s, t0)
	offers := mustPublish(t, e, correlation.Publish{ID: "m1"}, nil, t0)
	e.Reject(s, offers[0].Correlation, nil, t0)
	if len(e.Subs) != 0 {
		t.Errorf("the rejecting instance's subscription stays open: %+v", e.Subs)
	}
}

func TestRepeatingSubscription(t *testing.T) {
	e := newEntry()
	mustPublish(t, e, correlation.Publish{ID: "m1", TTL: time.Hour}, nil, t0)
	mustPublish(t, e, correlation.Publish{ID: "m2", TTL: time.Hour}, nil, t0)
	s := sub("i1", "p")
	s.Repeat = true
	offers := e.Subscribe(s, t0)
	if len(offers) != 1 || offers[0].Correlation.MessageID != "m1" {
		t.Fatalf("opening offers = %+v, want the oldest buffered message only", offers)
	}
	if len(e.Subs) != 1 {
		t.Fatal("a repeating subscription is not kept after its first message")
	}
	for i, id := range []string{"m3", "m4"} {
		offers = mustPublish(t, e, correlation.Publish{ID: id}, nil, t0)
		if len(offers) != 1 || offers[0].Instance != "i1" {
			t.Fatalf("message %d: offers = %v", i, offers)
		}
	}
	if len(e.Subs) != 1 {
		t.Errorf("the repeating subscription closed")
	}
	e.Unsubscribe("i1", s.Wait, t0)
	if len(e.Subs) != 0 {
		t.Error("unsubscribe left it open")
	}
}

func TestSubscribeTwiceStoresOnce(t *testing.T) {
	e := newEntry()
	e.Subscribe(sub("i1", "p"), t0)
	e.Subscribe(sub("i1", "p"), t0)
	if len(e.Subs) != 1 {
		t.Errorf("a redelivered subscription is stored twice: %+v", e.Subs)
	}
}

// An opening sent again after a buffered message took its subscription
// (the instance's outbox republished after a crash, its first copy
// acknowledged and forgotten by the stream's de-duplication) is not stored
// again: the wait it names has its message already.
func TestSubscriptionReopenedAfterItsMessageIsNotStored(t *testing.T) {
	for _, order := range []string{"subscribed first", "buffered first"} {
		t.Run(order, func(t *testing.T) {
			e := newEntry()
			if order == "subscribed first" {
				e.Subscribe(sub("i1", "p"), t0)
			}
			mustPublish(t, e, correlation.Publish{ID: "m1", TTL: time.Hour}, nil, t0.Add(time.Second))
			if order == "buffered first" {
				e.Subscribe(sub("i1", "p"), t0.Add(2*time.Second))
			}
			if got := len(effects(e, correlation.Correlate)); got != 1 {
				t.Fatalf("%d correlations, want 1", got)
			}
			e.Outbox = nil
			if offers := e.Subscribe(sub("i1", "p"), t0.Add(3*time.Second)); offers != nil || len(e.Subs) != 0 || len(e.Outbox) != 0 {
				t.Fatalf("the reopened subscription of a wait that has its message: offers %v, stored %+v, outbox %+v", offers, e.Subs, e.Outbox)
			}
			// A new wait of the same instance is a new subscription.
			next := sub("i1", "p")
			next.Wait = "i1/catch/2"
			if e.Subscribe(next, t0.Add(4*time.Second)); len(e.Subs) != 1 {
				t.Errorf("a new wait of the instance is not stored: %+v", e.Subs)
			}
		})
	}
}

func TestUnsubscribeBeforeSubscribe(t *testing.T) {
	e := newEntry()
	e.Unsubscribe("i1", "i1/catch/1", t0)
	if len(e.Closed) != 1 || e.Idle() {
		t.Fatalf("an early closing is not remembered: %+v", e)
	}
	if offers := e.Subscribe(sub("i1", "p"), t0.Add(time.Second)); offers != nil || len(e.Subs) != 0 {
		t.Fatalf("the late opening of a closed subscription was kept: %+v", e)
	}
	if len(e.Closed) != 0 || !e.Idle() {
		t.Errorf("the closing is still remembered: %+v", e.Closed)
	}
	// Forgotten after ClosedRetention.
	e.Unsubscribe("i2", "i2/catch/1", t0)
	e.Subscribe(sub("i3", "p"), t0.Add(correlation.ClosedRetention))
	if len(e.Closed) != 0 {
		t.Errorf("closing kept past its retention: %+v", e.Closed)
	}
}

var starts = []correlation.StartEvent{{Process: "order", Version: 3, Node: "paid-start"}}

func TestMessageStartOncePerKey(t *testing.T) {
	e := newEntry()
	offers := mustPublish(t, e, correlation.Publish{ID: "m1", Vars: map[string]any{"a": int64(1)}}, starts, t0)
	if len(offers) != 1 || !offers[0].Started || offers[0].Process != "order" {
		t.Fatalf("offers = %+v", offers)
	}
	st := effects(e, correlation.Start)
	if len(st) != 1 || st[0].Start.Instance != offers[0].Instance || st[0].Start.Event != starts[0] ||
		st[0].Vars["a"] != int64(1) || st[0].Correlation.MessageID != "m1" {
		t.Fatalf("start effect: %+v", st)
	}
	first := offers[0].Instance
	if e.Starts["order"] != first {
		t.Fatalf("starts = %v", e.Starts)
	}
	// While it runs, another message with this key starts nothing and stays buffered.
	e.Outbox = nil
	if offers := mustPublish(t, e, correlation.Publish{ID: "m2", TTL: time.Hour}, starts, t0); len(offers) != 0 {
		t.Fatalf("a second instance started for the same key: %+v", offers)
	}
	if offers := mustPublish(t, e, correlation.Publish{ID: "m3", TTL: time.Hour}, starts, t0); len(offers) != 0 {
		t.Fatal("a third instance started")
	}
	// Another instance's end changes nothing; the started one's end lets
	// the oldest buffered message start the next.
	if offers := e.StartEnded("order", "someone-else", starts, t0); offers != nil {
		t.Fatalf("a foreign end: %v", offers)
	}
	offers = e.StartEnded("order", first, starts, t0)
	if len(offers) != 1 || offers[0].Correlation.MessageID != "m2" || !offers[0].Started || offers[0].Instance == first {
		t.Fatalf("after the end: %+v", offers)
	}
	if e.Starts["order"] != offers[0].Instance {
		t.Errorf("starts = %v", e.Starts)
	}
	// A subscription of that process does not get m2 again.
	if offers := e.Subscribe(sub("i9", "order"), t0); len(offers) != 1 || offers[0].Correlation.MessageID != "m3" {
		t.Errorf("subscription of the started process got %+v, want m3", offers)
	}
}

func TestMessageStartWithEmptyKeyAlwaysStarts(t *testing.T) {
	e := &correlation.Entry{Name: "paid"}
	a := mustPublish(t, e, correlation.Publish{ID: "m1"}, starts, t0)
	b := mustPublish(t, e, correlation.Publish{ID: "m2"}, starts, t0)
	if len(a) != 1 || len(b) != 1 || a[0].Instance == b[0].Instance {
		t.Fatalf("offers %+v %+v", a, b)
	}
	if len(e.Starts) != 0 || !e.Idle() {
		t.Errorf("an empty key keeps started instances: %+v", e.Starts)
	}
}

func TestMessageStartAndSubscriptionOfOneProcess(t *testing.T) {
	e := newEntry()
	e.Subscribe(sub("i1", "order"), t0)
	offers := mustPublish(t, e, correlation.Publish{ID: "m1"}, starts, t0)
	if len(offers) != 1 || offers[0].Started {
		t.Errorf("a message went to one process twice (a subscription and a start): %+v", offers)
	}
}

func TestBusinessKeyOfAStartedInstance(t *testing.T) {
	e := &correlation.Entry{Name: "paid", Key: instance.BusinessKeyPrefix + "B-4"}
	mustPublish(t, e, correlation.Publish{}, starts, t0)
	if st := effects(e, correlation.Start); len(st) != 1 || st[0].Start.BusinessKey != "B-4" {
		t.Errorf("start effect: %+v", st)
	}
}

var instanceID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func TestStartIDIsDeterministicAndAnInstanceID(t *testing.T) {
	a := correlation.StartID("paid", "k", 7, "order")
	if a != correlation.StartID("paid", "k", 7, "order") || !instanceID.MatchString(a) {
		t.Fatalf("StartID = %q", a)
	}
	for _, other := range []string{
		correlation.StartID("paid", "k", 8, "order"), correlation.StartID("paid", "k7", 0, "order"),
		correlation.StartID("paidk", "", 7, "order"), correlation.StartID("paid", "k", 7, "orde"),
	} {
		if other == a {
			t.Errorf("distinct starts share id %q", a)
		}
	}
}

// An entry deleted when idle and created again later numbers on above its
// earlier life.
func TestSequenceDoesNotRepeatAcrossLives(t *testing.T) {
	first := newEntry()
	first.Subscribe(sub("i1", "p"), t0)
	o1 := mustPublish(t, first, correlation.Publish{}, nil, t0)
	again := newEntry()
	again.Subscribe(sub("i1", "p"), t0.Add(time.Millisecond))
	o2 := mustPublish(t, again, correlation.Publish{}, nil, t0.Add(time.Millisecond))
	if o2[0].Correlation.Seq <= o1[0].Correlation.Seq {
		t.Errorf("second life numbered %d, first %d", o2[0].Correlation.Seq, o1[0].Correlation.Seq)
	}
}

// A message without a time to live is not kept, so its offer carries a
// return deadline and the rejection hands it back with its variables: it
// goes to the next subscription of the process, once.
func TestRejectedUnbufferedMessageGoesToTheNext(t *testing.T) {
	e := newEntry()
	e.Subscribe(sub("stale", "p"), t0)
	e.Subscribe(sub("other", "q"), t0)
	e.Subscribe(sub("next", "p"), t0)
	e.Subscribe(sub("last", "p"), t0)
	vars := map[string]any{"amount": int64(20)}
	offers := mustPublish(t, e, correlation.Publish{ID: "m1", Vars: vars}, nil, t0)
	if got := instances(offers); !reflect.DeepEqual(got, []string{"stale", "other"}) {
		t.Fatalf("offers: %v", got)
	}
	c := offers[0].Correlation
	if !c.ReturnBy.Equal(t0.Add(correlation.ReturnWindow)) || !offers[1].Correlation.ReturnBy.Equal(c.ReturnBy) {
		t.Fatalf("offers of an unbuffered message without a return deadline: %+v", offers)
	}
	e.Outbox = nil

	now := t0.Add(time.Second)
	offers = e.Reject(sub("stale", "p"), c, vars, now)
	if got := instances(offers); !reflect.DeepEqual(got, []string{"next"}) {
		t.Fatalf("after the rejection the message went to %v, want the next subscription of p", got)
	}
	again := offers[0].Correlation
	if again.Seq <= c.Seq || again.MessageID != "m1" || !again.ReturnBy.Equal(now.Add(correlation.ReturnWindow)) {
		t.Errorf("the new offer's correlation: %+v", again)
	}
	corr := effects(e, correlation.Correlate)
	if len(corr) != 1 || corr[0].Sub.Instance != "next" || !reflect.DeepEqual(corr[0].Vars, vars) || corr[0].MessageID != "m1" {
		t.Errorf("correlate effect: %+v", corr)
	}
	if rej := effects(e, correlation.Rejected); len(rej) != 1 || rej[0].Sub.Instance != "stale" || rej[0].Correlation != c {
		t.Errorf("rejected fact: %+v", e.Outbox)
	}
	if len(e.Subs) != 1 || e.Subs[0].Instance != "last" {
		t.Errorf("subscriptions left: %+v", e.Subs)
	}
	want := []correlation.Returned{{Seq: c.Seq, Until: c.ReturnBy, Next: again.Seq, Instance: "next", Wait: "next/catch/1"}}
	if !reflect.DeepEqual(e.Returned, want) {
		t.Errorf("returned: %+v, want %+v", e.Returned, want)
	}
	// The same rejection again (the rejecting instance's outbox published
	// again) changes nothing: the message reached p once.
	e.Outbox = nil
	if offers := e.Reject(sub("stale", "p"), c, vars, now.Add(time.Minute)); offers != nil || len(e.Outbox) != 0 || len(e.Subs) != 1 {
		t.Errorf("a repeated rejection: %v %+v %+v", offers, e.Outbox, e.Subs)
	}
	if e.Idle() {
		t.Error("an entry remembering a rejection is idle: deleted, it would take the rejection again")
	}
	// Rejected by the next one too: it goes to the last; rejected by the
	// last, with no subscription of p open, it is gone.
	if offers := e.Reject(sub("next", "p"), again, vars, now); len(offers) != 1 || offers[0].Instance != "last" {
		t.Fatalf("offers after the second rejection: %v", offers)
	}
	e.Outbox = nil
	last := e.Subs
	third := instance.Correlation{Name: "paid", Key: "k", Seq: e.Seq, MessageID: "m1", ReturnBy: now.Add(correlation.ReturnWindow)}
	if offers := e.Reject(sub("last", "p"), third, vars, now); offers != nil {
		t.Errorf("no subscription of p left, yet the message went to %v", offers)
	}
	if rej := effects(e, correlation.Rejected); len(rej) != 1 || len(e.Outbox) != 1 || !reflect.DeepEqual(e.Subs, last) {
		t.Errorf("a message gone: outbox %+v, subscriptions %+v", e.Outbox, e.Subs)
	}
	// After the return window the entry forgets the rejections.
	e.Expire(1, third.ReturnBy)
	if !e.Idle() {
		t.Errorf("after the return window: %+v", e)
	}
}

// A rejection that comes after the return deadline, or from an instance
// whose process is unknown (its record is gone), lets the message go. The
// orphan's rejection, within the deadline, is remembered as going nowhere:
// a repeat changes nothing, and CorrelateMessage learns the message is
// gone.
func TestLateOrOrphanRejectionLetsTheMessageGo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		process  string
		at       time.Duration
		returned bool
	}{
		{"late", "p", correlation.ReturnWindow, false},
		{"orphan", "", time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEntry()
			e.Subscribe(sub("stale", "p"), t0)
			offers := mustPublish(t, e, correlation.Publish{ID: "m1"}, nil, t0)
			e.Subscribe(sub("next", "p"), t0)
			e.Outbox = nil
			c := offers[0].Correlation
			if offers := e.Reject(sub("stale", tc.process), c, nil, t0.Add(tc.at)); offers != nil {
				t.Fatalf("the message went to %v", offers)
			}
			if rej := effects(e, correlation.Rejected); len(rej) != 1 || len(e.Outbox) != 1 || len(e.Subs) != 1 {
				t.Errorf("outbox %+v, subscriptions %+v", e.Outbox, e.Subs)
			}
			var want []correlation.Returned
			if tc.returned {
				want = []correlation.Returned{{Seq: c.Seq, Until: c.ReturnBy}}
			}
			if !reflect.DeepEqual(e.Returned, want) {
				t.Errorf("returned: %+v, want %+v", e.Returned, want)
			}
			e.Outbox = nil
			if offers := e.Reject(sub("stale", tc.process), c, nil, t0.Add(tc.at)); offers != nil || tc.returned && len(e.Outbox) != 0 {
				t.Errorf("a repeated rejection: %v, outbox %+v", offers, e.Outbox)
			}
		})
	}
}

// A buffered message's offer carries no return deadline: the entry keeps
// the message, and one that expired before its rejection came is gone.
func TestRejectedBufferedMessageThatExpiredIsGone(t *testing.T) {
	e := newEntry()
	e.Subscribe(sub("stale", "p"), t0)
	offers := mustPublish(t, e, correlation.Publish{ID: "m1", TTL: time.Minute}, nil, t0)
	if !offers[0].Correlation.ReturnBy.IsZero() {
		t.Fatalf("a buffered message's offer has a return deadline: %+v", offers[0].Correlation)
	}
	e.Subscribe(sub("next", "p"), t0)
	e.Outbox = nil
	if offers := e.Reject(sub("stale", "p"), offers[0].Correlation, map[string]any{"x": int64(1)}, t0.Add(2*time.Minute)); offers != nil {
		t.Errorf("an expired message went to %v", offers)
	}
	if len(effects(e, correlation.Rejected)) != 0 || len(e.Subs) != 1 {
		t.Errorf("outbox %+v, subscriptions %+v", e.Outbox, e.Subs)
	}
}
