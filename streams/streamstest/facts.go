package streamstest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
)

// StoredFacts replays the facts stream as a late subscriber does and
// returns every fact stored now on subjects matching filter (e.g.
// streams.FactFilter(streams.FactMessage, "paid")), decoded from JSON as
// T, in stream order.
func StoredFacts[T any](t testing.TB, ctx context.Context, js jetstream.JetStream, filter string) []T {
	t.Helper()
	cons, err := js.OrderedConsumer(ctx, streams.FactsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var facts []T
	for left := info.NumPending; left > 0; left-- {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("replay of the facts on %s: %d of %d: %v", filter, len(facts), info.NumPending, err)
		}
		var f T
		if err := json.Unmarshal(msg.Data(), &f); err != nil {
			t.Fatalf("fact on %s: %v", msg.Subject(), err)
		}
		facts = append(facts, f)
	}
	return facts
}
