package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// Retention (docs/incidents.md, docs/engine.md §8): a closed incident's
// record and snapshots and a finished instance's record expire after their
// retention; the snapshots of an open incident stay as long as it is open.
// With a one-second retention, the test closes incident B after incident A
// was raised and waits until everything of B is gone: by then A's snapshot
// is older than the retention, and must still be there.
func TestRetentionExpiresClosedKeepsOpen(t *testing.T) {
	t.Parallel()
	const retention = time.Second
	env := streamstest.Start(t)
	ops := &engine.Operations{}
	ops.Register("fails", func(context.Context, map[string]any) (map[string]any, error) {
		return nil, errors.New("bank down")
	})
	eng := openWith(t, env, engine.Options{Operations: ops, IncidentRetention: retention, FinishedRetention: retention})
	deployed(t, eng, model.NewBuilder("charge").StartEvent("s").ServiceTask("charge", "fails").EndEvent("e").Sequence("s", "charge", "e"))

	raise := func() (instanceID, incidentID string) {
		id := startJob(t, eng, "charge", map[string]any{"card": "4242"})
		_, sum := waitIncident(t, eng, id)
		awaitRecord(t, env, sum.ID, anyRecord) // written after the snapshot, in one outbox
		return id, sum.ID
	}
	openInst, open := raise()
	openRaised := time.Now()
	closedInst, closed := raise()
	if err := eng.AbandonIncident(bounded(t), closed); err != nil {
		t.Fatal(err)
	}

	ctx := bounded(t)
	instKV, err := env.JS.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	incKV, err := env.JS.KeyValue(ctx, streams.IncidentsBucket)
	if err != nil {
		t.Fatal(err)
	}
	gone := func(kv jetstream.KeyValue, key string) bool {
		_, err := kv.Get(ctx, key)
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatalf("get %s: %v", key, err)
		}
		return err != nil
	}
	deadline := time.Now().Add(15 * time.Second)
	for !gone(incKV, streams.IncidentKey(closed)) || !gone(incKV, streams.SnapshotKey(closed, 1)) || !gone(instKV, closedInst) {
		if time.Now().After(deadline) {
			t.Fatalf("after 15s with a %s retention: closed record gone %t, its snapshot gone %t, finished instance gone %t",
				retention, gone(incKV, streams.IncidentKey(closed)), gone(incKV, streams.SnapshotKey(closed, 1)), gone(instKV, closedInst))
		}
		time.Sleep(50 * time.Millisecond) // polling a TTL the server enforces
	}

	if age := time.Since(openRaised); age <= retention {
		t.Fatalf("the open incident is only %s old; the check below needs it older than the retention", age)
	}
	v, err := eng.Incident(ctx, open)
	if err != nil {
		t.Fatalf("open incident %s after %s: %v", open, time.Since(openRaised), err)
	}
	if v.State != incidents.Open || len(v.Variables) != 1 || v.Variables[0].Vars["card"] != "4242" {
		t.Fatalf("open incident %s after %s (retention %s): state %s, snapshots %+v; want it open with its snapshot",
			open, time.Since(openRaised), retention, v.State, v.Variables)
	}
	if gone(instKV, openInst) {
		t.Fatalf("instance %s with an open incident expired", openInst)
	}
}

// A retention under a second cannot be a per-message TTL: Open refuses it
// rather than have every expiring write rejected later.
func TestRetentionUnderASecondRefused(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	for _, opts := range []engine.Options{{IncidentRetention: 500 * time.Millisecond}, {FinishedRetention: 999 * time.Millisecond}} {
		eng, err := engine.Open(bounded(t), env.Conn, opts)
		if err == nil {
			_ = eng.Close(bounded(t))
			t.Fatalf("Open(%+v) succeeded", opts)
		}
		if want := "neither may be under 1s"; !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v, want it to say %q", err, want)
		}
	}
}
