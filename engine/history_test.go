package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// storedFactFamilies counts the facts stored in the facts stream by
// family (jetbpm.fact.<family>.…).
func storedFactFamilies(t *testing.T, js jetstream.JetStream) map[string]uint64 {
	t.Helper()
	ctx := bounded(t)
	stream, err := js.Stream(ctx, streams.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(streams.FactsSubjects))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for subj, n := range info.State.Subjects {
		family, _, _ := strings.Cut(strings.TrimPrefix(subj, strings.TrimSuffix(streams.FactsSubjects, ">")), ".")
		out[family] += n
	}
	return out
}

// TestHistoryLevels runs one workload at each history level — a user
// task, a message, an incident resolved by an operator, two instances
// completed — closes the engine (which publishes every outbox it
// committed), and counts the facts stored: a level writes every fact of
// the families it keeps, as full does, and none of the others.
func TestHistoryLevels(t *testing.T) {
	t.Parallel()
	full := map[string]uint64{
		history.Instance: 4, // two instances started and completed
		history.Task:     2, // created, completed
		history.Message:  1, // correlated
		history.Incident: 2, // raised, resolved
	}
	for _, lvl := range history.Levels {
		t.Run(string(lvl), func(t *testing.T) {
			t.Parallel()
			env := streamstest.Start(t)
			ops := &engine.Operations{}
			ops.Register("charge", (&flipOp{}).run) // fails until resolved
			eng := enginetest.Open(t, env.Conn, withSync(env, engine.Options{Operations: ops, History: lvl}))
			if eng.History() != lvl {
				t.Fatalf("History() = %q, want %q", eng.History(), lvl)
			}
			ctx := bounded(t)
			deployTasks(t, eng,
				build(t, model.NewBuilder("asked").StartEvent("s").UserTask("review").
					MessageCatchEvent("paid", "paid", "orderId").EndEvent("e").Sequence("s", "review", "paid", "e")),
				build(t, model.NewBuilder("charged").StartEvent("s").ServiceTask("charge", "charge").EndEvent("e").
					Sequence("s", "charge", "e")))
			startTask(t, eng, "asked", "a-1", map[string]any{"orderId": "o-1"})
			if _, err := eng.CompleteTask(ctx, taskAt(t, eng, "a-1", "review"), "ann", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := eng.PublishMessage(ctx, engine.Message{Name: "paid", Key: "o-1", TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			waitDone(t, eng, "a-1")
			b := startJob(t, eng, "charged", nil)
			_, inc := waitIncident(t, eng, b)
			if err := eng.ResolveIncident(ctx, inc.ID, nil); err != nil {
				t.Fatal(err)
			}
			waitDone(t, eng, b)
			if err := eng.Close(ctx); err != nil {
				t.Fatal(err)
			}
			got := storedFactFamilies(t, env.JS)
			for family, n := range full {
				want := n
				if !lvl.Keeps(family) {
					want = 0
				}
				if got[family] != want {
					t.Errorf("level %s: %d %s facts stored, want %d (all: %v)", lvl, got[family], family, want, got)
				}
			}
		})
	}
}
