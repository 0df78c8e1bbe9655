package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// Store reads and writes instance checkpoints in the instances bucket.
type Store struct {
	kv        jetstream.KeyValue
	retention time.Duration
}

// Open returns the store of the instances bucket; a finished instance's
// checkpoint expires after retention.
func Open(ctx context.Context, js jetstream.JetStream, retention time.Duration) (*Store, error) {
	kv, err := js.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		return nil, fmt.Errorf("engine: instances bucket: %w", err)
	}
	return New(kv, retention), nil
}

// New returns the store of bucket kv; a finished instance's checkpoint
// expires after retention.
func New(kv jetstream.KeyValue, retention time.Duration) *Store {
	return &Store{kv: kv, retention: retention}
}

// KV returns the instances bucket.
func (c *Store) KV() jetstream.KeyValue { return c.kv }

// Get returns the checkpoint of id and its revision, errdefs.ErrNotFound
// if none.
func (c *Store) Get(ctx context.Context, id string) (*instance.State, uint64, error) {
	if !ValidID(id) {
		return nil, 0, fmt.Errorf("instance %q: %w", id, errdefs.ErrNotFound)
	}
	entry, err := c.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, fmt.Errorf("instance %q: %w", id, errdefs.ErrNotFound)
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

// Encode returns the checkpoint message for s written over revision rev
// (0 = create), with s's summary in its headers. A finished instance's
// record expires after the retention.
func (c *Store) Encode(s *instance.State, rev uint64) (*nats.Msg, error) {
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

// ValidID reports whether id can be an instance id: it is a KV key and a
// subject token as it stands.
func ValidID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	return streams.Token(id) == id
}
