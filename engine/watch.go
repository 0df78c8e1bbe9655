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
				return fmt.Errorf("%s: watch closed", what)
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
