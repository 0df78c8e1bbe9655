package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestMessageCrashBetweenEntryAndEffects kills a message partition (in
// effect) right after it wrote the entry that applied a message and before
// it published the correlation or acknowledged the message. Two instances
// of one process wait for the message: the oldest must get it exactly once
// and the other never, whichever node applies the redelivered message
// (docs/messages.md §5).
func TestMessageCrashBetweenEntryAndEffects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ttl  string
	}{{"unbuffered", ""}, {"buffered", "1h"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var armed, crashed atomic.Bool
			crash := make(chan struct{})
			// The entry as the crashed write left it, read in the hook:
			// the partition goes on after the hook, and the message it
			// gets again after the ack wait would complete the entry.
			var (
				m          *msgEnv
				atCrash    *correlation.Entry
				atCrashErr error
			)
			opts := engine.Options{}
			engine.CrashAfterMessageEntryWrite(&opts, func(key string) bool {
				if key != streams.MessageEntryKey("paid", "k") || !armed.Load() || crashed.Load() {
					return false
				}
				e, err := m.readEntry(context.Background(), "paid", "k")
				if err == nil && e != nil && len(e.Outbox) == 0 {
					// Another write of the entry — a subscribe command
					// redelivered on a loaded machine, applied again — not
					// the message's: the crash waits for that one.
					return false
				}
				crashed.Store(true)
				atCrash, atCrashErr = e, err
				close(crash)
				return true
			})
			m = startMessages(t, opts, streamstest.WithFastFailover(time.Second))
			ctx := bounded(t)
			m.subscribe(t, "first", "order", "paid", "k")
			m.subscribe(t, "second", "order", "paid", "k")
			testwait.True(t, 10*time.Second, "both subscriptions stored", func() bool {
				e := m.entry(t, "paid", "k")
				return e != nil && len(e.Subs) == 2
			})
			armed.Store(true)
			msg := nats.NewMsg(streams.MessageSubject(streams.MessagePublish, "paid", "k"))
			msg.Data = []byte(`{"n": 1}`)
			msg.Header.Set("Nats-Msg-Id", "pay-1")
			if tc.ttl != "" {
				msg.Header.Set(streams.MessageTTLHeader, tc.ttl)
			}
			if _, err := m.JS.PublishMsg(ctx, msg); err != nil {
				t.Fatal(err)
			}
			select {
			case <-crash:
			case <-time.After(20 * time.Second):
				t.Fatal("crash point not reached")
			}
			if e := atCrash; atCrashErr != nil || e == nil || len(e.Outbox) == 0 || len(e.Applied) == 0 {
				t.Fatalf("the crashed write holds no outbox or applied message: %+v (%v)", e, atCrashErr)
			}
			if err := m.eng.Close(ctx); err != nil {
				t.Fatal(err)
			}

			// Node B takes the partition over and gets the message again.
			bOpts := engine.Options{}
			engine.MessagePartitionsOnly(&bOpts)
			enginetestOpen(t, m.Env, bOpts)
			m.waitEvents(t, 1, correlatesOf("first"))
			s, err := m.JS.Stream(ctx, streams.MessagesStream)
			if err != nil {
				t.Fatal(err)
			}
			testwait.True(t, 20*time.Second, "the redelivered message acknowledged", func() bool {
				info, err := s.Info(ctx)
				return err == nil && info.State.Msgs == 0
			})
			if e := m.entry(t, "paid", "k"); e == nil || len(e.Subs) != 1 || e.Subs[0].Instance != "second" {
				t.Errorf("subscriptions left: %+v", e)
			}
			if n := m.storedEvents(t, "first"); n != 1 {
				t.Errorf("first got %d correlations, want 1", n)
			}
			if n := m.storedEvents(t, "second"); n != 0 {
				t.Errorf("second got %d correlations of a message process order had already", n)
			}
		})
	}
}

// After such a crash, another command for the entry may come before the
// redelivered message: the entry must go on naming the message as applied
// until the message itself has come again.
func TestMessageCrashThenAnotherCommandFirst(t *testing.T) {
	t.Parallel()
	var armed, crashed atomic.Bool
	crash := make(chan struct{})
	opts := engine.Options{}
	engine.CrashAfterMessageEntryWrite(&opts, func(key string) bool {
		if armed.Load() && crashed.CompareAndSwap(false, true) {
			close(crash)
			return true
		}
		return false
	})
	// The message comes again after the 3 s ack wait; the subscription
	// published right after the crash is applied long before.
	m := startMessages(t, opts, streamstest.WithFastFailover(3*time.Second))
	ctx := bounded(t)
	m.subscribe(t, "first", "order", "paid", "k")
	m.subscribe(t, "second", "order", "paid", "k")
	testwait.True(t, 10*time.Second, "both subscriptions stored", func() bool {
		e := m.entry(t, "paid", "k")
		return e != nil && len(e.Subs) == 2
	})
	armed.Store(true)
	if _, err := m.JS.Publish(ctx, streams.MessageSubject(streams.MessagePublish, "paid", "k"), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-crash:
	case <-time.After(20 * time.Second):
		t.Fatal("crash point not reached")
	}
	m.subscribe(t, "third", "billing", "paid", "k")
	testwait.True(t, 10*time.Second, "the later subscription applied", func() bool {
		e := m.entry(t, "paid", "k")
		return e != nil && len(e.Subs) == 2 && e.Subs[1].Instance == "third"
	})
	s, err := m.JS.Stream(ctx, streams.MessagesStream)
	if err != nil {
		t.Fatal(err)
	}
	testwait.True(t, 20*time.Second, "the redelivered message acknowledged", func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	m.waitEvents(t, 1, correlatesOf("first"))
	for inst, want := range map[string]int{"first": 1, "second": 0, "third": 0} {
		if n := m.storedEvents(t, inst); n != want {
			t.Errorf("%s got %d correlations, want %d", inst, n, want)
		}
	}
}
