package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// checkpoints reads and writes instance checkpoints in the instances KV
// bucket. Writes are raw publishes to the bucket's subject with an expected
// last sequence, so they pipeline (PublishMsgAsync) and still
// compare-and-set: a write from a stale revision is refused.
type checkpoints struct {
	js        jetstream.JetStream
	kv        jetstream.KeyValue
	retention time.Duration
}

func openCheckpoints(ctx context.Context, js jetstream.JetStream, retention time.Duration) (*checkpoints, error) {
	kv, err := js.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		return nil, fmt.Errorf("engine: instances bucket: %w", err)
	}
	return &checkpoints{js: js, kv: kv, retention: retention}, nil
}

// get returns the checkpoint of id and its revision, ErrNotFound if none.
func (c *checkpoints) get(ctx context.Context, id string) (*instance.State, uint64, error) {
	if !validInstanceID(id) {
		return nil, 0, fmt.Errorf("instance %q: %w", id, ErrNotFound)
	}
	entry, err := c.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, fmt.Errorf("instance %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("instance %s: read checkpoint: %w", id, err)
	}
	var s instance.State
	if err := streams.Unmarshal(entry.Value(), &s); err != nil {
		return nil, 0, fmt.Errorf("instance %s: decode checkpoint: %w", id, err)
	}
	return &s, entry.Revision(), nil
}

// encode returns the checkpoint message for s written over revision rev
// (0 = create). A finished instance's record expires after the retention.
func (c *checkpoints) encode(s *instance.State, rev uint64) (*nats.Msg, error) {
	// By value: msgpack's omitempty check boxes each field it looks at,
	// which allocates a copy for the fields of an addressable struct.
	data, err := streams.Marshal(*s)
	if err != nil {
		return nil, fmt.Errorf("instance %s: encode checkpoint: %w", s.ID, err)
	}
	m := nats.NewMsg("$KV." + streams.InstancesBucket + "." + s.ID)
	m.Data = data
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	summarize(m, s)
	if s.Status.Finished() {
		m.Header.Set("Nats-TTL", c.retention.String())
	}
	return m, nil
}

// isConflict reports whether a write failed because another writer moved
// the checkpoint on (a lost compare-and-set).
func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// validInstanceID reports whether id can be an instance id: it is a KV key
// and a subject token as it stands.
func validInstanceID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	return streams.Token(id) == id
}
