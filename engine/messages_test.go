package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/metrics"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// The message partition tests play the instances' side: the engine runs
// its message partitions only, the test publishes what an instance's outbox
// would (through the engine's own encoding of those effects) and reads the
// correlate events and starts the partition sends to instances.

// msgEnv is a server, an engine running message partitions only, and a
// record of what reached the events stream.
type msgEnv struct {
	*streamstest.Env
	eng *engine.Engine

	mu     sync.Mutex
	events []engine.Envelope
	more   chan struct{}
}

func startMessages(t *testing.T, opts engine.Options, envOpts ...streamstest.Option) *msgEnv {
	t.Helper()
	env := streamstest.Start(t, envOpts...)
	m := &msgEnv{Env: env, more: make(chan struct{}, 1)}
	sub, err := env.Conn.Subscribe(streams.EventsSubjects, func(msg *nats.Msg) {
		var e engine.Envelope
		if err := streams.Unmarshal(msg.Data, &e); err != nil {
			return // a timer schedule of the events stream, not an event
		}
		m.mu.Lock()
		m.events = append(m.events, e)
		m.mu.Unlock()
		select {
		case m.more <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	engine.MessagePartitionsOnly(&opts)
	m.eng = enginetest.Open(t, env.Conn, opts)
	return m
}

// effect publishes what an instance's message effect becomes.
func (m *msgEnv) effect(t *testing.T, s *instance.State, eff instance.Effect) {
	t.Helper()
	msg, err := engine.MessageEffectMsg(s, eff)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.JS.PublishMsg(bounded(t), msg); err != nil {
		t.Fatal(err)
	}
}

// subscribe opens a subscription of inst (process) to name/key.
func (m *msgEnv) subscribe(t *testing.T, inst, process, name, key string) instance.Subscription {
	t.Helper()
	s := instance.Subscription{Name: name, Key: key, Instance: inst, ProcessID: process, Wait: inst + "/catch/1", Opened: time.Now()}
	m.effect(t, &instance.State{ID: inst, ProcessID: process}, instance.Effect{ID: "e1", Kind: instance.Subscribe, Sub: &s})
	return s
}

// waitEvents waits until n events match keep, and returns them.
func (m *msgEnv) waitEvents(t *testing.T, n int, keep func(engine.Envelope) bool) []engine.Envelope {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		var got []engine.Envelope
		m.mu.Lock()
		for _, e := range m.events {
			if keep(e) {
				got = append(got, e)
			}
		}
		m.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-m.more:
		case <-deadline:
			t.Fatalf("saw %d of %d events within 20s: %+v", len(got), n, got)
		}
	}
}

func correlates(e engine.Envelope) bool { return e.Event != nil && e.Event.Kind == instance.Correlate }

func correlatesOf(inst string) func(engine.Envelope) bool {
	return func(e engine.Envelope) bool { return correlates(e) && e.Instance == inst }
}

// entry reads the stored entry of name/key (nil if none).
func (m *msgEnv) entry(t *testing.T, name, key string) *correlation.Entry {
	t.Helper()
	e, err := m.readEntry(bounded(t), name, key)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// readEntry is entry for a goroutine that is not the test's.
func (m *msgEnv) readEntry(ctx context.Context, name, key string) (*correlation.Entry, error) {
	kv, err := m.JS.KeyValue(ctx, streams.MessagesBucket)
	if err != nil {
		return nil, err
	}
	got, err := kv.Get(ctx, streams.MessageEntryKey(name, key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var e correlation.Entry
	if err := streams.Unmarshal(got.Value(), &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// storedEvents counts the events stored for inst (the stream de-duplicates
// a republished one; a core subscription would see it twice).
func (m *msgEnv) storedEvents(t *testing.T, inst string) int {
	t.Helper()
	s, err := m.JS.Stream(bounded(t), streams.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(bounded(t), jetstream.WithSubjectFilter(streams.EventSubject(streams.PartitionOf(inst, m.Layout.Partitions), inst)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return n
}

func TestSubscribedThenPublished(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	ctx := bounded(t)
	sub := m.subscribe(t, "inst-1", "order", "order.paid", "o.17")
	// The subscription is stored before the message comes.
	testwait.True(t, 10*time.Second, "subscription stored", func() bool {
		e := m.entry(t, "order.paid", "o.17")
		return e != nil && len(e.Subs) == 1
	})
	id, err := m.eng.PublishMessage(ctx, engine.Message{Name: "order.paid", Key: "o.17", Vars: map[string]any{"amount": 20}})
	if err != nil || id == "" {
		t.Fatalf("PublishMessage = %q, %v", id, err)
	}
	got := m.waitEvents(t, 1, correlates)
	ev := got[0].Event
	if got[0].Instance != "inst-1" || ev.Wait != sub.Wait || ev.Vars["amount"] != int64(20) || ev.Correlation == nil ||
		ev.Correlation.Name != "order.paid" || ev.Correlation.Key != "o.17" || ev.Correlation.MessageID != id {
		t.Fatalf("correlate event: %+v %+v", got[0], ev)
	}
	// The entry, empty now, is gone.
	testwait.True(t, 10*time.Second, "empty entry deleted", func() bool { return m.entry(t, "order.paid", "o.17") == nil })
}

func TestBufferedThenSubscribed(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	ctx := bounded(t)
	if _, err := m.eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "k", TTL: time.Hour, ID: "pay-1", Vars: map[string]any{"n": "x"}}); err != nil {
		t.Fatal(err)
	}
	if e := m.entry(t, "paid", "k"); e == nil || len(e.Buffered) != 1 || e.Buffered[0].ID != "pay-1" {
		t.Fatalf("entry after publish: %+v", e)
	}
	m.subscribe(t, "inst-1", "order", "paid", "k")
	got := m.waitEvents(t, 1, correlates)
	if got[0].Instance != "inst-1" || got[0].Event.Vars["n"] != "x" || got[0].Event.Correlation.MessageID != "pay-1" {
		t.Fatalf("correlate event: %+v", got[0].Event)
	}
	// A second instance of the same process does not get it again; one of
	// another process does.
	m.subscribe(t, "inst-2", "order", "paid", "k")
	m.subscribe(t, "other-1", "invoice", "paid", "k")
	m.waitEvents(t, 1, correlatesOf("other-1"))
	testwait.True(t, 10*time.Second, "second subscription of order stored", func() bool {
		e := m.entry(t, "paid", "k")
		return e != nil && len(e.Subs) == 1 && e.Subs[0].Instance == "inst-2"
	})
	if n := len(m.waitEvents(t, 0, correlatesOf("inst-2"))); n != 0 {
		t.Errorf("inst-2 got the message process order already had")
	}
}

func TestOneMessageTwoSubscriptionsOfOneProcess(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	m.subscribe(t, "first", "order", "paid", "k")
	m.subscribe(t, "second", "order", "paid", "k")
	m.subscribe(t, "billing", "billing", "paid", "k")
	testwait.True(t, 10*time.Second, "three subscriptions stored", func() bool {
		e := m.entry(t, "paid", "k")
		return e != nil && len(e.Subs) == 3
	})
	if _, err := m.eng.PublishMessage(bounded(t), engine.Message{Name: "paid", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	got := m.waitEvents(t, 2, correlates)
	var to []string
	for _, e := range got {
		to = append(to, e.Instance)
	}
	if len(got) != 2 || to[0] != "first" || to[1] != "billing" {
		t.Errorf("the message went to %v; want the oldest subscription of each process: [first billing]", to)
	}
}

func TestUnbufferedMessageReachesNoLaterSubscription(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	ctx := bounded(t)
	if _, err := m.eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if e := m.entry(t, "paid", "k"); e != nil && !e.Idle() {
		t.Fatalf("an unbuffered message left %+v", e)
	}
	m.subscribe(t, "inst-1", "order", "paid", "k")
	testwait.True(t, 10*time.Second, "subscription stored", func() bool {
		e := m.entry(t, "paid", "k")
		return e != nil && len(e.Subs) == 1
	})
	if n := m.storedEvents(t, "inst-1"); n != 0 {
		t.Errorf("%d events for a subscription that opened after an unbuffered message", n)
	}
}

func TestMessageExpires(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	ctx := bounded(t)
	expired := make(chan engine.MessageFact, 1)
	sub, err := m.Conn.Subscribe(streams.FactSubject(streams.FactMessage, "paid", engine.FactMessageExpired), func(msg *nats.Msg) {
		var f engine.MessageFact
		if err := jsonUnmarshal(msg.Data, &f); err == nil {
			expired <- f
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if _, err := m.eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "k", ID: "m1", TTL: 300 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-expired:
		if f.Name != "paid" || f.Key != "k" || f.MessageID != "m1" || f.Kind != engine.FactMessageExpired {
			t.Errorf("expired fact: %+v", f)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no expired fact within 20s")
	}
	testwait.True(t, 10*time.Second, "expired entry deleted", func() bool { return m.entry(t, "paid", "k") == nil })
	m.subscribe(t, "inst-1", "order", "paid", "k")
	testwait.True(t, 10*time.Second, "subscription stored", func() bool {
		e := m.entry(t, "paid", "k")
		return e != nil && len(e.Subs) == 1
	})
	if n := m.storedEvents(t, "inst-1"); n != 0 {
		t.Errorf("an expired message was offered (%d events)", n)
	}
}

func TestDuplicateMessageID(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	ctx := bounded(t)
	// Past the stream's two minute window, the buffered message itself
	// refuses its id: shorten the window to see it. (Shortened before the
	// first publish: the server purges the ids it tracks on a timer set by
	// the window in force when it tracked the first one.)
	s, err := m.JS.Stream(ctx, streams.MessagesStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Duplicates = 100 * time.Millisecond
	if _, err := m.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	msg := engine.Message{Name: "paid", Key: "k", ID: "pay-1", TTL: time.Hour}
	if _, err := m.eng.PublishMessage(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := m.eng.PublishMessage(ctx, msg); !errors.Is(err, engine.ErrDuplicate) {
		t.Fatalf("second publish of pay-1 = %v; want ErrDuplicate", err)
	}
	testwait.Until(t, 30*time.Second, "the buffered message refuses its id", func() error {
		_, err := m.eng.PublishMessage(ctx, msg)
		if errors.Is(err, engine.ErrDuplicate) && strings.Contains(err.Error(), "buffered already") {
			return nil
		}
		if err == nil {
			t.Fatal("a second message with a buffered id was accepted")
		}
		return err
	})
	if e := m.entry(t, "paid", "k"); e == nil || len(e.Buffered) != 1 {
		t.Errorf("entry after the refusals: %+v", e)
	}
}

func TestPublishMessageRefusesBadInput(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{MaxVariableBytes: 64})
	ctx := bounded(t)
	for name, msg := range map[string]engine.Message{
		"no name":          {Key: "k"},
		"both keys":        {Name: "n", Key: "k", BusinessKey: "b"},
		"negative ttl":     {Name: "n", TTL: -time.Second},
		"instance and key": {Name: "n", Instance: "i", Key: "k"},
		"instance and ttl": {Name: "n", Instance: "i", TTL: time.Second},
		"oversized var":    {Name: "n", Vars: map[string]any{"big": strings.Repeat("x", 100)}},
		"unstorable var":   {Name: "n", Vars: map[string]any{"f": func() {}}},
		"long name":        {Name: strings.Repeat("n", 300)},
		"control in id":    {Name: "n", ID: "a\r\nb"},
		"unknown instance": {Name: "n", Instance: "nobody"},
	} {
		if _, err := m.eng.PublishMessage(ctx, msg); err == nil {
			t.Errorf("%s: published", name)
		}
		if _, err := m.eng.CorrelateMessage(ctx, msg); err == nil {
			t.Errorf("%s: correlated", name)
		}
	}
	for _, stream := range []string{streams.MessagesStream, streams.EventsStream} {
		s, err := m.JS.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if info, err := s.Info(ctx); err != nil || info.State.Msgs != 0 {
			t.Errorf("stream %s holds %d messages after refused input (%v)", stream, info.State.Msgs, err)
		}
	}
}

// The plain NATS form: any client publishes a JSON body with headers; what
// is malformed is refused (and answered, if it asked) without stopping the
// partition.
func TestPlainNATSPublish(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	ctx := bounded(t)
	inbox := nats.NewInbox()
	answers, err := m.Conn.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	subject := streams.MessageSubject(streams.MessagePublish, "order-paid", "o.17")
	if subject != "jetbpm.m.pub.order-paid.o=2E17" {
		t.Fatalf("subject %s", subject)
	}
	for _, bad := range []struct{ body, ttl, reply string }{
		{body: `[1, 2]`},
		{body: `{"a": 1} {"b": 2}`},
		{body: `{"a": 1}`, ttl: "-1s"},
		{body: `{"a": 1}`, ttl: "soon"},
		{body: "\xc1\x01\xff"},
		{body: `{}`, reply: "jetbpm.api.deploy"},
	} {
		msg := nats.NewMsg(subject)
		msg.Data = []byte(bad.body)
		if bad.ttl != "" {
			msg.Header.Set(streams.MessageTTLHeader, bad.ttl)
		}
		msg.Header.Set(streams.MessageReplyHeader, inbox)
		if bad.reply != "" {
			msg.Header.Set(streams.MessageReplyHeader, bad.reply)
		}
		if err := m.Conn.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
		if bad.reply != "" {
			continue
		}
		answer, err := answers.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("no answer to %+v: %v", bad, err)
		}
		if !strings.Contains(string(answer.Data), "message refused") {
			t.Errorf("answer to %+v: %s", bad, answer.Data)
		}
	}
	m.subscribe(t, "inst-1", "order", "order-paid", "o.17")
	msg := nats.NewMsg(subject)
	msg.Data = []byte(`{"amount": 20, "items": [1, 2.5]}`)
	msg.Header.Set("Nats-Msg-Id", "pay-991")
	msg.Header.Set(streams.MessageTTLHeader, "1h")
	if err := m.Conn.PublishMsg(msg); err != nil {
		t.Fatal(err)
	}
	got := m.waitEvents(t, 1, correlates)
	ev := got[0].Event
	if got[0].Instance != "inst-1" || ev.Vars["amount"] != int64(20) || ev.Correlation.MessageID != "pay-991" ||
		fmt.Sprint(ev.Vars["items"]) != "[1 2.5]" {
		t.Errorf("correlate event from a plain publish: %+v", ev)
	}
	if e := m.entry(t, "order-paid", "o.17"); e == nil || len(e.Buffered) != 1 {
		t.Errorf("a message with Jetbpm-TTL 1h is not buffered: %+v", e)
	}
	// Every refused message was removed from the stream.
	s, err := m.JS.Stream(ctx, streams.MessagesStream)
	if err != nil {
		t.Fatal(err)
	}
	testwait.True(t, 10*time.Second, "messages stream empty", func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func enginetestOpen(t *testing.T, env *streamstest.Env, opts engine.Options) *engine.Engine {
	t.Helper()
	return enginetest.Open(t, env.Conn, withSync(env, opts))
}

func TestStartWithBusinessKey(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	p := build(t, model.NewBuilder("bk").StartEvent("s").EndEvent("e").Sequence("s", "e"))
	if _, err := eng.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "bk", nil, engine.BusinessKey("B-4"))
	if err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.BusinessKey != "B-4" {
		t.Errorf("business key = %q", v.BusinessKey)
	}
	if _, err := eng.Start(ctx, "bk", nil, engine.BusinessKey(strings.Repeat("b", 300))); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("an oversized business key: %v", err)
	}
}

func TestMessageMetrics(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry()
	m := startMessages(t, engine.Options{Metrics: reg})
	ctx := bounded(t)
	m.subscribe(t, "inst-1", "order", "paid", "k")
	testwait.True(t, 10*time.Second, "subscription stored", func() bool {
		e := m.entry(t, "paid", "k")
		return e != nil && len(e.Subs) == 1
	})
	for _, msg := range []engine.Message{
		{Name: "paid", Key: "k"},                                       // correlated
		{Name: "paid", Key: "k", TTL: time.Hour, ID: "b"},              // buffered
		{Name: "paid", Key: "other"},                                   // dropped
		{Name: "paid", Key: "x", TTL: 200 * time.Millisecond, ID: "e"}, // buffered, then expired
	} {
		if _, err := m.eng.PublishMessage(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "k", TTL: time.Hour, ID: "b"}); !errors.Is(err, engine.ErrDuplicate) {
		t.Fatal(err)
	}
	text := func() string {
		var b strings.Builder
		if err := reg.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	testwait.Until(t, 10*time.Second, "message metrics", func() error {
		out := text()
		for _, want := range []string{
			`jetbpm_messages_total{result="correlated"} 1`,
			`jetbpm_messages_total{result="buffered"} 2`,
			`jetbpm_messages_total{result="dropped"} 1`,
			`jetbpm_message_correlations_total{kind="subscription"} 1`,
			`jetbpm_message_expiries_total 1`,
			`jetbpm_messages_buffered 1`,
		} {
			if !strings.Contains(out, want) {
				return fmt.Errorf("no %q in\n%s", want, out)
			}
		}
		return nil
	})
}
