package streams

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Pull fetches messages from cons, up to batch at a time, and hands each
// to handle, until ctx ends: the loop of a consumer one engine node
// shares with the others (timer start fires, signal broadcasts). A
// fetch waits up to a second for messages and yields each as it arrives; a
// fetch that fails is logged at debug level, prefixed with what, and tried
// again a second later. handle settles each message (ack, nak, term).
func Pull(ctx context.Context, cons jetstream.Consumer, batch int, log *slog.Logger, what string, handle func(jetstream.Msg)) {
	for ctx.Err() == nil {
		msgs, err := cons.Fetch(batch, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				log.Debug(what+": fetch", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		for m := range msgs.Messages() {
			handle(m)
		}
	}
}
