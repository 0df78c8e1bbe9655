package streams

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
)

// C8KeysBucket holds what the Camunda 8 doors need to map jetbpm's ids
// onto Camunda 8's int64 keys and back (engine/camunda8): the key
// allocator's counter and one entry each way per keyed object. Entries
// are never rewritten (create-only), so a history of one suffices.
const C8KeysBucket = "jetbpm-c8keys"

func provisionCamunda8(ctx context.Context, js jetstream.JetStream, cfg Config, log *slog.Logger) error {
	_, err := ensureKV(ctx, js, C8KeysBucket, func(c *jetstream.KeyValueConfig) {
		c.History = 1
		c.Storage, c.Replicas = cfg.Storage, cfg.Replicas
	}, log)
	return err
}
