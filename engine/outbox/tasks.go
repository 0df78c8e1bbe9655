package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// A user task's record reaches the tasks bucket as a PutTask effect: the
// whole record as of the step that changed it (docs/usertasks.md §2).
// Effects are published at least once, and a node that lost its partition
// may still publish an old outbox after the new holder published a newer
// one, so a put must never replace a record by an older one: each record
// carries its Revision (counted by the step), and the write is a
// compare-and-set on the key's last stream sequence, read just before.

// taskWriter writes user task records to the tasks bucket (kv); a
// finished record lives for retention.
type taskWriter struct {
	js        jetstream.JetStream
	kv        jetstream.KeyValue
	retention time.Duration
}

// HandleTasks registers the handlers of user task effects: the record's
// compare-and-set put to the tasks bucket kv (a request, waited for in the
// handler), a finished record living for retention, and the task facts.
func HandleTasks(pub *Publisher, kv jetstream.KeyValue, retention time.Duration) {
	w := &taskWriter{js: pub.js, kv: kv, retention: retention}
	pub.Handle(func(ctx context.Context, _ *Outbox, eff instance.Effect) error {
		return w.put(ctx, eff.Task)
	}, instance.PutTask)
	pub.Handle(SendMsg(func(_ *instance.State, eff instance.Effect) (*nats.Msg, error) {
		return taskFactMsg(eff.TaskFact)
	}), instance.PublishTaskFact)
}

// maxTaskPutAttempts bounds the compare-and-set loop of one put; each lost
// race means another writer stored a record of the task in between.
const maxTaskPutAttempts = 8

// put writes rec to the tasks bucket unless the stored record is as
// new or newer (the same revision is the same record: a republish). A
// finished record lives for the finished-instance retention.
func (w *taskWriter) put(ctx context.Context, rec *instance.Task) error {
	body, err := streams.Marshal(rec)
	if err != nil {
		return err
	}
	key := streams.TaskKey(rec.ID)
	absent := false // a write on an absent key has lost a race once
	for range maxTaskPutAttempts {
		stored, last, err := w.storedRevision(ctx, key)
		if err != nil {
			return fmt.Errorf("task %s: read the stored record: %w", rec.ID, err)
		}
		if last != 0 && stored >= rec.Revision {
			return nil // stale or already stored
		}
		if last == 0 && absent {
			// Twice no record, yet the key's subject is not empty: it holds
			// the marker of a record that expired or was deleted. A task
			// whose record expired ended long ago; writing an older record
			// would bring an ended task back to the open list.
			return nil
		}
		m := nats.NewMsg(streams.KVSubject(streams.TasksBucket, key))
		m.Data = body
		if rec.State.Finished() {
			m.Header.Set(jetstream.MsgTTLHeader, w.retention.String())
		}
		_, err = w.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(last))
		if err == nil {
			return nil
		}
		if !streams.IsConflict(err) {
			return fmt.Errorf("task %s: write the record: %w", rec.ID, err)
		}
		absent = last == 0
	}
	return fmt.Errorf("task %s: the record changed under every one of %d writes", rec.ID, maxTaskPutAttempts)
}

// storedRevision reads the task revision of the record stored under
// key and the key's stream sequence (last); last is 0 when there is none.
func (w *taskWriter) storedRevision(ctx context.Context, key string) (revision, last uint64, err error) {
	entry, err := w.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	var stored struct {
		Revision uint64 `msgpack:"rev"`
	}
	if err := streams.Unmarshal(entry.Value(), &stored); err != nil {
		// An undecodable record is replaced: the checkpoint is the truth.
		return 0, entry.Revision(), nil
	}
	return stored.Revision, entry.Revision(), nil
}

// taskFactMsg is a task fact: JSON on jetbpm.fact.task.<process>.<kind>,
// its id the Nats-Msg-Id, so the facts stream stores a republished fact
// once (within its de-duplication window) and consumers can de-duplicate
// by id after that.
func taskFactMsg(f *instance.TaskFact) (*nats.Msg, error) {
	if f == nil {
		return nil, errors.New("task fact effect without a fact")
	}
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(streams.FactSubject(streams.FactTask, f.ProcessID, string(f.Kind)))
	m.Data = body
	m.Header.Set(jetstream.MsgIDHeader, f.ID)
	return m, nil
}
