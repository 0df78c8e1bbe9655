package engine

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine/checkpoint"
	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/messages"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// These tests store processes with message start events through the
// deploy's own writes, without the model's validation.

// messageStarter is a process that starts on each message name given (a
// none start event too when none is true).
func messageStarter(id string, none bool, names ...string) *model.Process {
	p := &model.Process{ID: id, Nodes: []*model.Node{{ID: "end", Kind: model.EndEvent}}}
	if none {
		p.Nodes = append(p.Nodes, &model.Node{ID: "start", Kind: model.StartEvent})
		p.Flows = append(p.Flows, &model.Flow{ID: "f-start", Source: "start", Target: "end"})
	}
	for _, name := range names {
		n := &model.Node{ID: "on-" + name, Kind: model.StartEvent, Event: model.MessageEvent, Message: &model.Message{Name: name}}
		p.Nodes = append(p.Nodes, n)
		p.Flows = append(p.Flows, &model.Flow{ID: "f-" + name, Source: n.ID, Target: "end"})
	}
	return p
}

func openMessagesOnly(t *testing.T) (*Engine, *streamstest.Env) {
	t.Helper()
	env := streamstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := Open(ctx, env.Conn, Options{Logger: slog.New(slog.DiscardHandler), messagePartitionsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.Close(ctx)
	})
	return e, env
}

func TestDeployMovesMessageStarts(t *testing.T) {
	t.Parallel()
	e, _ := openMessagesOnly(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	index := func(name string) []correlation.StartEvent {
		t.Helper()
		starts, _, err := e.defs.StartIndex(ctx, deploy.MessageStarts, name)
		if err != nil {
			t.Fatal(err)
		}
		return starts
	}
	deploy := func(procs ...*model.Process) {
		t.Helper()
		if _, err := e.defs.Deploy(ctx, procs, nil); err != nil {
			t.Fatal(err)
		}
	}
	deploy(messageStarter("order", false, "paid", "cancelled"), messageStarter("plain", true))
	if got, want := index("paid"), []correlation.StartEvent{{Process: "order", Version: 1, Node: "on-paid"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("index of paid = %+v, want %+v", got, want)
	}
	if got := index("cancelled"); len(got) != 1 || got[0].Process != "order" {
		t.Fatalf("index of cancelled = %+v", got)
	}
	// Version 2 starts on paid and settled: cancelled is gone, paid moves.
	deploy(messageStarter("order", false, "paid", "settled"))
	if got, want := index("paid"), []correlation.StartEvent{{Process: "order", Version: 2, Node: "on-paid"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("index of paid after v2 = %+v, want %+v", got, want)
	}
	if got := index("cancelled"); len(got) != 0 {
		t.Errorf("index of cancelled after v2 = %+v", got)
	}
	if got := index("settled"); len(got) != 1 || got[0].Version != 2 {
		t.Errorf("index of settled = %+v", got)
	}
	// Another process on the same name joins it; redeploying v2 unchanged
	// changes nothing.
	deploy(messageStarter("invoice", false, "paid"), messageStarter("order", false, "paid", "settled"))
	if got := index("paid"); len(got) != 2 || got[0].Process != "invoice" || got[1].Process != "order" || got[1].Version != 2 {
		t.Errorf("index of paid with two processes = %+v", got)
	}
}

func TestStartRefusesAMessageOnlyProcess(t *testing.T) {
	t.Parallel()
	e, _ := openMessagesOnly(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := e.defs.Deploy(ctx, []*model.Process{messageStarter("order", false, "paid", "cancelled")}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := e.Start(ctx, "order", nil)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "process order v1 has no none start event; it starts only by message (cancelled, paid)") {
		t.Fatalf("Start = %v", err)
	}
}

// startsOf collects the start requests the message partitions send.
func startsOf(t *testing.T, nc *nats.Conn) chan checkpoint.Envelope {
	t.Helper()
	out := make(chan checkpoint.Envelope, 16)
	sub, err := nc.Subscribe(streams.EventsSubjects, func(m *nats.Msg) {
		var env checkpoint.Envelope
		if streams.Unmarshal(m.Data, &env) == nil && env.Start != nil {
			out <- env
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return out
}

func nextStart(t *testing.T, starts chan checkpoint.Envelope) checkpoint.Envelope {
	t.Helper()
	select {
	case env := <-starts:
		return env
	case <-time.After(20 * time.Second):
		t.Fatal("no start request within 20s")
		return checkpoint.Envelope{}
	}
}

func TestMessageStartOncePerKey(t *testing.T) {
	t.Parallel()
	e, env := openMessagesOnly(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := e.defs.Deploy(ctx, []*model.Process{messageStarter("order", false, "paid")}, nil); err != nil {
		t.Fatal(err)
	}
	starts := startsOf(t, env.Conn)
	if _, err := e.PublishMessage(ctx, Message{Name: "paid", Key: "o-1", ID: "m1", TTL: time.Hour, Vars: map[string]any{"amount": 5}}); err != nil {
		t.Fatal(err)
	}
	first := nextStart(t, starts)
	req := first.Start
	if req.ProcessID != "order" || req.Version != 1 || req.Node != "on-paid" || req.Vars["amount"] != int64(5) ||
		req.Message == nil || req.Message.Name != "paid" || req.Message.Key != "o-1" || req.Message.MessageID != "m1" {
		t.Fatalf("start request: %+v", req)
	}
	if first.Instance != correlation.StartID("paid", "o-1", req.Message.Seq, "order") {
		t.Errorf("started instance %s is not named after its correlation", first.Instance)
	}
	// While it runs, a second message with this key starts nothing.
	if _, err := e.PublishMessage(ctx, Message{Name: "paid", Key: "o-1", ID: "m2", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	entry, err := storedEntry(ctx, env, "paid", "o-1")
	if err != nil || len(entry.Buffered) != 2 || len(entry.Buffered[1].Correlated) != 0 || entry.Starts["order"] != first.Instance {
		t.Fatalf("a second instance started for key o-1: %+v %v", entry, err)
	}
	// Its end lets the buffered message start the next one.
	msg, err := messages.EffectMsg(&instance.State{ID: first.Instance, ProcessID: "order", StartMessage: req.Message},
		instance.Effect{ID: "end", Kind: instance.StartEnded, Correlation: req.Message})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	second := nextStart(t, starts)
	if second.Instance == first.Instance || second.Start.Message.MessageID != "m2" {
		t.Errorf("after the end: %+v", second.Start)
	}
	// A message for a business key starts an instance with that key; an
	// empty key always starts one.
	if _, err := e.PublishMessage(ctx, Message{Name: "paid", BusinessKey: "B-4"}); err != nil {
		t.Fatal(err)
	}
	if got := nextStart(t, starts); got.Start.BusinessKey != "B-4" {
		t.Errorf("business key start: %+v", got.Start)
	}
	for range 2 {
		if _, err := e.PublishMessage(ctx, Message{Name: "paid"}); err != nil {
			t.Fatal(err)
		}
		nextStart(t, starts)
	}
}

// A message start whose instance cannot be created releases its key: the
// message partition hears that the instance ended.
func TestFailedMessageStartReleasesItsKey(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, err := Open(ctx, env.Conn, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	p, err := model.NewBuilder("pay").StartEvent("s").EndEvent("e").Sequence("s", "e").Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Deploy(ctx, p); err != nil {
		t.Fatal(err)
	}
	ends := make(chan *nats.Msg, 1)
	sub, err := env.Conn.ChanSubscribe(streams.MessageSubject(streams.MessageEnd, "paid", "k"), ends)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// "s" is no message start event: the start fails.
	c := &instance.Correlation{Name: "paid", Key: "k", Seq: 5}
	if err := e.send(ctx, checkpoint.Envelope{Instance: "m-1", Start: &checkpoint.StartRequest{ProcessID: "pay", Version: 1, Node: "s", Message: c}}, "start:m-1"); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-ends:
		var cmd struct {
			Process  string `msgpack:"process"`
			Instance string `msgpack:"instance"`
		}
		if err := streams.Unmarshal(m.Data, &cmd); err != nil || cmd.Process != "pay" || cmd.Instance != "m-1" {
			t.Errorf("end command: %+v %v", cmd, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no end command within 20s")
	}
}

// storedEntry reads the message partition entry of name and key.
func storedEntry(ctx context.Context, env *streamstest.Env, name, key string) (*correlation.Entry, error) {
	kv, err := env.JS.KeyValue(ctx, streams.MessagesBucket)
	if err != nil {
		return nil, err
	}
	kve, err := kv.Get(ctx, streams.MessageEntryKey(name, key))
	if err != nil {
		return nil, err
	}
	var entry correlation.Entry
	return &entry, streams.Unmarshal(kve.Value(), &entry)
}
