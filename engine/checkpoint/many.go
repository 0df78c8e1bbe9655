package checkpoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// GetEach reads the checkpoints of ids, one request each; nil for one
// that no longer exists.
func (c *Store) GetEach(ctx context.Context, ids []string) ([]*instance.State, error) {
	out := make([]*instance.State, len(ids))
	for i, id := range ids {
		s, _, err := c.Get(ctx, id)
		if errors.Is(err, errdefs.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// GetAll reads the checkpoints of ids with one watch of the whole bucket,
// which streams the current checkpoint of every instance, and decodes
// those of ids; nil for one that no longer exists.
func (c *Store) GetAll(ctx context.Context, ids []string) ([]*instance.State, error) {
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	w, err := c.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("instances: watch bucket %s: %w", streams.InstancesBucket, err)
	}
	defer func() { _ = w.Stop() }()
	out := make([]*instance.State, len(ids))
	for {
		var entry jetstream.KeyValueEntry
		var open bool
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("instances: reading bucket %s: %w", streams.InstancesBucket, ctx.Err())
		case entry, open = <-w.Updates():
		}
		if !open {
			return nil, fmt.Errorf("instances: the watch of bucket %s ended early", streams.InstancesBucket)
		}
		if entry == nil {
			return out, nil // every checkpoint stored when the watch began
		}
		i, ok := at[entry.Key()]
		if !ok {
			continue
		}
		var s instance.State
		if err := streams.Unmarshal(entry.Value(), &s); err != nil {
			return nil, fmt.Errorf("instance %s: decode checkpoint: %w", entry.Key(), err)
		}
		out[i] = &s
	}
}
