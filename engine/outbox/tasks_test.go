package outbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// taskWriterOn is a task writer that writes task records on env.
func taskWriterOn(t *testing.T, env *streamstest.Env) (*taskWriter, jetstream.KeyValue) {
	t.Helper()
	kv, err := env.JS.KeyValue(context.Background(), streams.TasksBucket)
	if err != nil {
		t.Fatal(err)
	}
	return &taskWriter{js: env.JS, kv: kv, retention: time.Hour}, kv
}

func taskRec(id string, rev uint64, state instance.TaskState) *instance.Task {
	return &instance.Task{ID: id, Instance: "i-1", ProcessID: "p", Node: "review", State: state, Revision: rev, Priority: 50}
}

// stored reads the record under id's key and the key's stream sequence.
func stored(t *testing.T, kv jetstream.KeyValue, id string) (*instance.Task, uint64) {
	t.Helper()
	entry, err := kv.Get(context.Background(), streams.TaskKey(id))
	if err != nil {
		t.Fatalf("task %s: %v", id, err)
	}
	var rec instance.Task
	if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
		t.Fatal(err)
	}
	return &rec, entry.Revision()
}

// A put never replaces a record by an older one (a late republish of an
// old outbox), nor writes the same revision twice; a finished record gets
// the retention as its TTL.
func TestPutTaskSkipsStaleRecords(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	w, kv := taskWriterOn(t, env)
	ctx := context.Background()
	const id = "i-1.t3"
	if err := w.put(ctx, taskRec(id, 2, instance.TaskAssigned)); err != nil {
		t.Fatal(err)
	}
	_, seq := stored(t, kv, id)
	for _, rev := range []uint64{1, 2} {
		if err := w.put(ctx, taskRec(id, rev, instance.TaskCreated)); err != nil {
			t.Fatal(err)
		}
		if rec, now := stored(t, kv, id); rec.Revision != 2 || rec.State != instance.TaskAssigned || now != seq {
			t.Fatalf("after a put of revision %d: stored revision %d (%s) at sequence %d, was %d", rev, rec.Revision, rec.State, now, seq)
		}
	}
	if err := w.put(ctx, taskRec(id, 3, instance.TaskCompleted)); err != nil {
		t.Fatal(err)
	}
	if rec, _ := stored(t, kv, id); rec.Revision != 3 || rec.State != instance.TaskCompleted {
		t.Fatalf("stored %+v, want the completed revision 3", rec)
	}
	stream, err := env.JS.Stream(ctx, streams.KVStream(streams.TasksBucket))
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.GetLastMsgForSubject(ctx, streams.KVSubject(streams.TasksBucket, streams.TaskKey(id)))
	if err != nil || m.Header.Get(jetstream.MsgTTLHeader) != "1h0m0s" {
		t.Fatalf("finished record's TTL: %v, %v; want the retention, 1h0m0s", m, err)
	}
}

// Writers racing on one task (a node that lost its partition still
// publishing, the new holder republishing) leave the newest record.
func TestPutTaskRaceKeepsNewest(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	w, kv := taskWriterOn(t, env)
	const id = "i-1.t9"
	for round := range 5 {
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		base := uint64(round * 10)
		for _, rev := range []uint64{base + 3, base + 6, base + 1, base + 5, base + 2, base + 4} {
			wg.Go(func() { errs <- w.put(context.Background(), taskRec(id, rev, instance.TaskCreated)) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if rec, _ := stored(t, kv, id); rec.Revision != base+6 {
			t.Fatalf("round %d: stored revision %d, want %d", round, rec.Revision, base+6)
		}
	}
}

// A record that is gone but left a marker (it expired, or was deleted) is
// not written again by an older put: that would bring an ended task back.
func TestPutTaskDoesNotResurrect(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	w, kv := taskWriterOn(t, env)
	ctx := context.Background()
	const id = "i-1.t4"
	if err := w.put(ctx, taskRec(id, 3, instance.TaskCompleted)); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, streams.TaskKey(id)); err != nil {
		t.Fatal(err)
	}
	if err := w.put(ctx, taskRec(id, 1, instance.TaskCreated)); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, streams.TaskKey(id)); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("after an old put on a deleted record: %v, want it still gone", err)
	}
}

// A task fact republished is stored once: its id is the Nats-Msg-Id.
func TestTaskFactStoredOnce(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	ctx := context.Background()
	f := &instance.TaskFact{ID: "i-1.t2.1.created", Kind: instance.TaskFactCreated, Task: "i-1.t2", Instance: "i-1", ProcessID: "p.x", Node: "review"}
	for range 2 {
		m, err := taskFactMsg(f)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != "jetbpm.fact.task.p=2Ex.created" {
			t.Fatalf("subject %q", m.Subject)
		}
		if _, err := env.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := env.JS.Stream(ctx, streams.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(streams.FactSubject(streams.FactTask, "p.x", "created")))
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("facts stored: %+v, %v; want 1", info.State, err)
	}
}
