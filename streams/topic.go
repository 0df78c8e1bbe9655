package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TopicMaxAckPending caps how many jobs of one topic can be locked (fetched
// and not yet acked) at once, across all its workers. The server's default
// of 1000 would silently stall a large worker fleet; 100000 is far above any
// fleet's concurrency yet bounds what the server tracks per consumer.
const TopicMaxAckPending = 100_000

// EnsureTopic creates the durable pull consumer of a job topic, or updates
// it in place. Its AckWait is the topic's lock duration: a fetched
// job is redelivered when the lock expires without an ack or +WPI.
// MaxDeliver is unlimited because the engine, not the server, decides when a
// job has used up its attempts and terminates it.
//
// replicas 0 lets the consumer follow the stream's replica count.
func EnsureTopic(ctx context.Context, js jetstream.JetStream, topic string, lockDuration time.Duration, replicas int, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	if topic == "" {
		return errors.New("streams: EnsureTopic: empty topic")
	}
	if lockDuration <= 0 {
		return fmt.Errorf("streams: EnsureTopic %q: lock duration must be positive, got %s", topic, lockDuration)
	}
	if replicas < 0 || replicas > 5 {
		return fmt.Errorf("streams: EnsureTopic %q: replicas must be 0 to 5, got %d", topic, replicas)
	}
	return ensureConsumer(ctx, js, JobsStream, TopicConsumer(topic), func(c *jetstream.ConsumerConfig) {
		c.FilterSubjects = nil
		c.FilterSubject = TopicFilter(topic)
		c.AckPolicy = jetstream.AckExplicitPolicy
		c.AckWait = lockDuration
		c.MaxDeliver = -1
		c.MaxAckPending = TopicMaxAckPending
		if replicas > 0 {
			c.Replicas = replicas
		}
	}, log)
}
