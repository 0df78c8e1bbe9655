package engine

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
)

// awaitPut reads the puts w sees, decoded as T, until settled says one
// settles the wait (returning its error, if any) or ctx ends. what names
// the key for errors ("task 3zq0….t4").
func awaitPut[T any](ctx context.Context, w jetstream.KeyWatcher, what string, settled func(*T) (bool, error)) error {
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case entry, ok := <-w.Updates():
			if !ok {
				return watchClosed(ctx, what)
			}
			if entry == nil || entry.Operation() != jetstream.KeyValuePut {
				continue
			}
			v := new(T)
			if err := streams.Unmarshal(entry.Value(), v); err != nil {
				return fmt.Errorf("%s: decode: %w", what, err)
			}
			if done, err := settled(v); done {
				return err
			}
		}
	}
}

// watchClosed is the error of a watch whose updates ended: ctx's, when it
// ended first (nats.go closes a watcher's updates when its context ends,
// and a select may see that before ctx.Done), else a closed watch.
func watchClosed(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: watch closed", what)
}
