package streams

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrWatchClosed is FollowWatch's answer when the watch ends by itself
// (the server or the client closed it).
var ErrWatchClosed = errors.New("the KV watch was closed")

// FollowWatch reads w until ctx ends or the watch closes, and says which:
// each entry goes to apply, and caughtUp is called when the entries stored
// when the watch began have all been read (it may not be called at all).
// It stops w when it returns.
func FollowWatch(ctx context.Context, w jetstream.KeyWatcher, caughtUp func(), apply func(jetstream.KeyValueEntry)) error {
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return ErrWatchClosed
			case e == nil:
				caughtUp()
			default:
				apply(e)
			}
		}
	}
}
