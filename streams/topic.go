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
	apply, err := topicConfig(topic, lockDuration, replicas)
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.Default()
	}
	return ensureConsumer(ctx, js, JobsStream, TopicConsumer(topic), apply, log)
}

// CreateTopic is EnsureTopic for a consumer that may already exist with
// another lock: it creates a missing one and leaves an existing one as it
// is. The engine calls it as it queues a topic's first job, which is how
// a topic a topic expression gives gets its consumer.
func CreateTopic(ctx context.Context, js jetstream.JetStream, topic string, lockDuration time.Duration, replicas int, log *slog.Logger) error {
	apply, err := topicConfig(topic, lockDuration, replicas)
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.Default()
	}
	name := TopicConsumer(topic)
	_, err = js.Consumer(ctx, JobsStream, name)
	if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return err
	}
	cfg := jetstream.ConsumerConfig{Durable: name}
	apply(&cfg)
	_, err = js.CreateConsumer(ctx, JobsStream, cfg)
	switch {
	case err == nil:
		log.Info("consumer created", "stream", JobsStream, "consumer", name)
		return nil
	case errors.Is(err, jetstream.ErrConsumerExists):
		return nil // another node created it first, perhaps with another lock
	default:
		return fmt.Errorf("streams: create consumer %s on %s: %w", name, JobsStream, err)
	}
}

// topicConfig checks a topic consumer's settings and returns what sets
// them on a consumer's config.
func topicConfig(topic string, lockDuration time.Duration, replicas int) (func(*jetstream.ConsumerConfig), error) {
	if topic == "" {
		return nil, errors.New("streams: topic consumer: empty topic")
	}
	if lockDuration <= 0 {
		return nil, fmt.Errorf("streams: topic consumer %q: lock duration must be positive, got %s", topic, lockDuration)
	}
	if replicas < 0 || replicas > 5 {
		return nil, fmt.Errorf("streams: topic consumer %q: replicas must be 0 to 5, got %d", topic, replicas)
	}
	return func(c *jetstream.ConsumerConfig) {
		c.FilterSubjects = nil
		c.FilterSubject = TopicFilter(topic)
		c.AckPolicy = jetstream.AckExplicitPolicy
		c.AckWait = lockDuration
		c.MaxDeliver = -1
		c.MaxAckPending = TopicMaxAckPending
		if replicas > 0 {
			c.Replicas = replicas
		}
	}, nil
}
