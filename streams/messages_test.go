package streams_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
)

// A message and the commands about its name and key must be stored in the
// same message partition, whoever publishes them: the server computes the
// partition, and the stored subject parses back to what was published.
func TestMessagePartitionsMeet(t *testing.T) {
	_, _, js := startBare(t)
	ctx := testContext(t)
	if _, err := streams.Provision(ctx, js, streams.Config{Partitions: 4, Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	msgs, err := js.Stream(ctx, streams.MessagesStream)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := js.Stream(ctx, streams.MessageCommandsStream)
	if err != nil {
		t.Fatal(err)
	}
	stored := func(s jetstream.Stream, subject string) streams.StoredMessage {
		t.Helper()
		ack, err := js.Publish(ctx, subject, []byte("{}"))
		if err != nil {
			t.Fatalf("publish %s: %v", subject, err)
		}
		m, err := s.GetMsg(ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		sm, err := streams.ParseStoredMessage(m.Subject)
		if err != nil {
			t.Fatalf("%s stored as %s: %v", subject, m.Subject, err)
		}
		return sm
	}
	used := map[int]bool{}
	pairs := [][2]string{{"order-paid", "o.17"}, {"order-paid", ""}, {"a b", "*"}, {"x", "="}, {"ü", "k>"}}
	for i := range 40 {
		pairs = append(pairs, [2]string{fmt.Sprintf("msg-%d", i%3), fmt.Sprintf("key-%d", i)})
	}
	for _, pair := range pairs {
		name, key := pair[0], pair[1]
		pub := stored(msgs, streams.MessageSubject(streams.MessagePublish, name, key))
		if pub.Kind != streams.MessagePublish || pub.Name != name || pub.Key != key {
			t.Errorf("publish of %q/%q parsed back as %+v", name, key, pub)
		}
		for _, kind := range []streams.MessageKind{streams.MessageSubscribe, streams.MessageUnsubscribe, streams.MessageReject, streams.MessageEnd, streams.MessageExpire} {
			cmd := stored(cmds, streams.MessageSubject(kind, name, key))
			if cmd.Partition != pub.Partition || cmd.Kind != kind || cmd.Name != name || cmd.Key != key {
				t.Errorf("%s of %q/%q stored as %+v; the message went to partition %d", kind, name, key, cmd, pub.Partition)
			}
		}
		if pub.Partition < 0 || pub.Partition > 3 {
			t.Errorf("partition %d of 4", pub.Partition)
		}
		used[pub.Partition] = true
	}
	if len(used) != 4 {
		t.Errorf("45 name/key pairs used partitions %v of 4", used)
	}
}

// Only well-formed publishes are stored, and a publisher's headers cannot
// purge the messages stream or schedule into it.
func TestMessagesStreamRefusesWhatItMustNotTake(t *testing.T) {
	_, _, js := startBare(t)
	ctx := testContext(t)
	if _, err := streams.Provision(ctx, js, streams.Config{Partitions: 2, Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{"jetbpm.m.pub.order", "jetbpm.m.pub.order.k.extra", "jetbpm.m.other.order.k"} {
		if _, err := js.Publish(ctx, subject, []byte("{}")); err == nil {
			t.Errorf("publish to %s was stored", subject)
		}
	}
	if _, err := js.Publish(ctx, streams.MessageSubject(streams.MessagePublish, "n", "k"), nil); err != nil {
		t.Fatal(err)
	}
	for hdr, val := range map[string]string{
		"Nats-Rollup":   "all",
		"Nats-Schedule": "@at " + time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		"Nats-TTL":      "1s",
	} {
		m := nats.NewMsg(streams.MessageSubject(streams.MessagePublish, "n", "k"))
		m.Header.Set(hdr, val)
		m.Header.Set("Nats-Schedule-Target", streams.MessageSubject(streams.MessageSubscribe, "n", "k"))
		if _, err := js.PublishMsg(ctx, m); err == nil {
			t.Errorf("a publish with %s was stored", hdr)
		}
	}
	s, err := js.Stream(ctx, streams.MessagesStream)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := s.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Errorf("messages stream holds %v messages (%v), want the one plain publish", info.State.Msgs, err)
	}
}

// A buffered message's expiry schedule waits where no partition consumer
// delivers it, counts as buffered, and fires into the partition of its
// name and key.
func TestMessageExpiryFiresIntoItsPartition(t *testing.T) {
	_, _, js := startBare(t)
	ctx := testContext(t)
	if _, err := streams.Provision(ctx, js, streams.Config{Partitions: 3, Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	cmds, err := js.Stream(ctx, streams.MessageCommandsStream)
	if err != nil {
		t.Fatal(err)
	}
	name, key := "order.paid", "o-1"
	ack, err := js.Publish(ctx, streams.MessageSubject(streams.MessageSubscribe, name, key), []byte("sub"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := cmds.GetMsg(ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := streams.ParseStoredMessage(m.Subject)
	if err != nil {
		t.Fatal(err)
	}
	p := sub.Partition

	schedule := func(seq uint64, at time.Time) {
		t.Helper()
		sched := nats.NewMsg(streams.MessageExpirySubject(p, name, key, seq))
		sched.Data = []byte(fmt.Sprintf("expiry %d", seq))
		sched.Header.Set("Nats-Schedule", "@at "+at.UTC().Format(time.RFC3339Nano))
		sched.Header.Set("Nats-Schedule-Target", streams.MessageSubject(streams.MessageExpire, name, key))
		if _, err := js.PublishMsg(ctx, sched); err != nil {
			t.Fatal(err)
		}
	}
	// A schedule due in an hour cannot fire while it is counted, however
	// slow the machine; it is purged before the one that fires is written.
	schedule(6, time.Now().Add(time.Hour))
	buffer, err := js.Consumer(ctx, streams.MessageCommandsStream, streams.MessageBufferConsumer)
	if err != nil {
		t.Fatal(err)
	}
	// The consumer's pending count follows the stream a moment after the
	// publish is stored.
	testwait.Until(t, 10*time.Second, "the buffer to count the schedule", func() error {
		info, err := buffer.Info(ctx)
		if err == nil && info.NumPending != 1 {
			err = fmt.Errorf("buffer count = %d, want 1", info.NumPending)
		}
		return err
	})
	if err := cmds.Purge(ctx, jetstream.WithPurgeSubject(streams.MessageExpirySubject(p, name, key, 6))); err != nil {
		t.Fatal(err)
	}
	schedule(7, time.Now().Add(300*time.Millisecond))

	cons, err := js.Consumer(ctx, streams.MessageCommandsStream, streams.MessageCommandsConsumer(p))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []streams.MessageKind
	for len(kinds) < 2 {
		batch, err := cons.Fetch(2, jetstream.FetchMaxWait(10*time.Second), jetstream.FetchPriorityGroup(streams.PriorityGroup))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			got, err := streams.ParseStoredMessage(msg.Subject())
			if err != nil || got.Partition != p || got.Name != name || got.Key != key {
				t.Fatalf("partition %d consumer got %s: %+v %v", p, msg.Subject(), got, err)
			}
			if got.Kind == streams.MessageExpire && string(msg.Data()) != "expiry 7" {
				t.Errorf("expiry body %q", msg.Data())
			}
			kinds = append(kinds, got.Kind)
			_ = msg.Ack()
		}
		if n == 0 {
			t.Fatalf("no expiry delivered within 10s; got %v", kinds)
		}
	}
	if kinds[0] != streams.MessageSubscribe || kinds[1] != streams.MessageExpire {
		t.Errorf("partition consumer delivered %v, want the subscription then the expiry (never the schedule)", kinds)
	}
	if info, err := buffer.Info(ctx); err != nil || info.NumPending != 0 {
		t.Errorf("buffer count after the expiry fired = %v (%v), want 0", info.NumPending, err)
	}
}
