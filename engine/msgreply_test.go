package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/streams"
)

// Many publishes in flight at once share the engine's reply subscription,
// and each gets its own message partition's answer.
func TestConcurrentPublishesGetTheirOwnAnswers(t *testing.T) {
	t.Parallel()
	m := startMessages(t, engine.Options{})
	ctx := bounded(t)
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("msg-%d", i)
			got, err := engine.PublishAnswer(ctx, m.eng, engine.Message{Name: "paid", Key: fmt.Sprintf("k%d", i%17), ID: id})
			switch {
			case err != nil:
				errs <- fmt.Errorf("%s: %w", id, err)
			case got != id:
				errs <- fmt.Errorf("the publish of %s got the answer for %s", id, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if p := engine.PendingReplies(m.eng); p != 0 {
		t.Errorf("%d publishes still registered as waiting after all returned", p)
	}
}

// A publish whose wait for the answer ends (its context) leaves nothing
// registered, and the answer that comes later is dropped.
func TestCancelledPublishForgetsItsAnswer(t *testing.T) {
	t.Parallel()
	var once sync.Once
	crashed := make(chan struct{})
	opts := engine.Options{}
	// The partition abandons the first batch for the entry after writing
	// it, as if it died there: no answer until the message is redelivered.
	engine.CrashAfterMessageEntryWrite(&opts, func(key string) bool {
		hit := false
		if key == streams.MessageEntryKey("paid", "slow") {
			once.Do(func() { hit = true; close(crashed) })
		}
		return hit
	})
	m := startMessages(t, opts)
	ctx, cancel := context.WithCancel(bounded(t))
	go func() {
		select {
		case <-crashed:
		case <-time.After(20 * time.Second):
		}
		cancel()
	}()
	_, err := m.eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "slow", ID: "slow-1"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("PublishMessage = %v, want it cancelled while waiting for the answer", err)
	}
	select {
	case <-crashed:
	default:
		t.Fatal("the publish was cancelled before its partition took the message")
	}
	if p := engine.PendingReplies(m.eng); p != 0 {
		t.Errorf("a cancelled publish left %d answers registered", p)
	}
	// The engine still answers the next publish.
	if _, err := m.eng.PublishMessage(bounded(t), engine.Message{Name: "paid", Key: "other", ID: "next-1"}); err != nil {
		t.Fatal(err)
	}
}
