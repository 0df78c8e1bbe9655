package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
)

// Layout is what every engine node must agree on, as stored on the server.
type Layout struct {
	Partitions int
	Replicas   int
}

// LayoutSchema is the version of the layout this build provisions and reads.
// Schema 2 put the job's topic into report subjects (so a worker credential
// can be limited to its topics); jobs queued under schema 1 would have their
// reports refused, so a schema 1 store is refused as a whole instead.
// Schema 3 added the message partitions (two streams whose subject
// transforms hold the partition count, their consumers, a bucket, and an
// index of message start events in the definitions bucket); a schema 2
// store has processes deployed without that index, so it is refused too.
const LayoutSchema = "3"

// ErrNotProvisioned is returned by ReadLayout when Provision never ran
// against the server.
var ErrNotProvisioned = errors.New("jetbpm streams are not provisioned")

// ReadLayout reads the layout a provisioning node stored, for nodes that do
// not provision (their credentials may not allow it). It fails with
// ErrNotProvisioned when there is nothing to read.
func ReadLayout(ctx context.Context, js jetstream.JetStream) (Layout, error) {
	meta, err := js.KeyValue(ctx, MetaBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return Layout{}, fmt.Errorf("%w: bucket %s does not exist; start one node with provisioning first", ErrNotProvisioned, MetaBucket)
	}
	if err != nil {
		return Layout{}, fmt.Errorf("streams: open bucket %s: %w", MetaBucket, err)
	}
	if err := checkSchema(ctx, meta); err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return Layout{}, fmt.Errorf("%w: bucket %s holds no layout schema", ErrNotProvisioned, MetaBucket)
		}
		return Layout{}, err
	}
	partitions, err := storedPartitions(ctx, meta)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Layout{}, fmt.Errorf("%w: bucket %s holds no partition count", ErrNotProvisioned, MetaBucket)
	}
	if err != nil {
		return Layout{}, err
	}
	events, err := js.Stream(ctx, EventsStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return Layout{}, fmt.Errorf("%w: stream %s does not exist", ErrNotProvisioned, EventsStream)
	}
	if err != nil {
		return Layout{}, fmt.Errorf("streams: look up stream %s: %w", EventsStream, err)
	}
	return Layout{Partitions: partitions, Replicas: events.CachedInfo().Config.Replicas}, nil
}

// settleSchema records LayoutSchema, or refuses a layout of another schema.
func settleSchema(ctx context.Context, meta jetstream.KeyValue) error {
	_, err := meta.Create(ctx, MetaSchemaKey, []byte(LayoutSchema))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrKeyExists):
		return checkSchema(ctx, meta)
	default:
		return fmt.Errorf("streams: store layout schema: %w", err)
	}
}

func checkSchema(ctx context.Context, meta jetstream.KeyValue) error {
	e, err := meta.Get(ctx, MetaSchemaKey)
	if err != nil {
		return fmt.Errorf("streams: read layout schema: %w", err)
	}
	if got := string(e.Value()); got != LayoutSchema {
		return fmt.Errorf("streams: the server holds jetbpm layout schema %q; this build reads schema %q only", got, LayoutSchema)
	}
	return nil
}

// settlePartitions stores n unless a count is stored already, and returns
// the stored count. Create makes the first provisioner win a race.
func settlePartitions(ctx context.Context, meta jetstream.KeyValue, n int) (int, error) {
	_, err := meta.Create(ctx, MetaPartitionsKey, []byte(strconv.Itoa(n)))
	if err == nil {
		return n, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("streams: store partition count: %w", err)
	}
	return storedPartitions(ctx, meta)
}

func storedPartitions(ctx context.Context, meta jetstream.KeyValue) (int, error) {
	e, err := meta.Get(ctx, MetaPartitionsKey)
	if err != nil {
		return 0, fmt.Errorf("streams: read partition count: %w", err)
	}
	n, err := strconv.Atoi(string(e.Value()))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("streams: stored partition count %q in bucket %s is not a positive number", e.Value(), MetaBucket)
	}
	return n, nil
}
