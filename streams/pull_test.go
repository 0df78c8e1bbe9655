package streams_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
)

// Pull hands every message to the handler once, as it arrives, and
// returns when its context ends.
func TestPullHandsEachMessageOnce(t *testing.T) {
	t.Parallel()
	_, _, js := startBare(t)
	ctx := testContext(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PULL", Subjects: []string{"pull.>"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateConsumer(ctx, "PULL", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40 // more than one batch of 16
	for i := range n {
		if _, err := js.Publish(ctx, fmt.Sprintf("pull.%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	pullCtx, stop := context.WithCancel(ctx)
	seen := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		streams.Pull(pullCtx, cons, 16, quietLogger(), "test", func(m jetstream.Msg) {
			seen[m.Subject()]++
			_ = m.Ack()
			if len(seen) == n {
				stop()
			}
		})
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("Pull handled %d of %d messages and did not return", len(seen), n)
	}
	for i := range n {
		if c := seen[fmt.Sprintf("pull.%d", i)]; c != 1 {
			t.Errorf("pull.%d handled %d times, want once", i, c)
		}
	}
}
