package streamstest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
)

// StoredFacts replays the facts stream as a late subscriber does and
// returns every fact stored now on subjects matching filter (e.g.
// streams.FactFilter(streams.FactMessage, "paid")), decoded from JSON as
// T, in stream order. A replay that fails fails the test.
func StoredFacts[T any](t testing.TB, ctx context.Context, js jetstream.JetStream, filter string) []T {
	t.Helper()
	facts, err := ReadFacts[T](ctx, js, filter)
	if err != nil {
		t.Fatal(err)
	}
	return facts
}

// ReadFacts is StoredFacts returning its error, for a caller that replays
// again while a cluster recovers.
func ReadFacts[T any](ctx context.Context, js jetstream.JetStream, filter string) ([]T, error) {
	cons, err := js.OrderedConsumer(ctx, streams.FactsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return nil, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	var facts []T
	for uint64(len(facts)) < info.NumPending {
		batch, err := cons.Fetch(int(min(info.NumPending-uint64(len(facts)), 256)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("replay of the facts on %s: %d of %d: %w", filter, len(facts), info.NumPending, err)
		}
		got := 0
		for msg := range batch.Messages() {
			var f T
			if err := json.Unmarshal(msg.Data(), &f); err != nil {
				return nil, fmt.Errorf("fact on %s: %w", msg.Subject(), err)
			}
			facts = append(facts, f)
			got++
		}
		if err := batch.Error(); err != nil || got == 0 {
			return nil, fmt.Errorf("replay of the facts on %s: %d of %d: %v", filter, len(facts), info.NumPending, err)
		}
	}
	return facts, nil
}
