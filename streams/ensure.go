package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/nats-io/nats.go/jetstream"
)

// The ensure functions create a stream, consumer or bucket, or bring the
// settings their apply function controls to the wanted values. apply is run
// on the existing configuration, so settings it does not touch (and every
// stored message) stay as they are, and an unchanged asset is not updated.
// apply must assign fields, never modify slices or maps in place.

func ensureStream(ctx context.Context, js jetstream.JetStream, name string, apply func(*jetstream.StreamConfig), log *slog.Logger) error {
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		cfg := jetstream.StreamConfig{Name: name}
		apply(&cfg)
		if _, err = js.CreateStream(ctx, cfg); err == nil {
			log.Info("stream created", "stream", name)
			return nil
		}
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("streams: create stream %s: %w", name, err)
		}
		// Another node created it meanwhile, with other settings: update it.
		s, err = js.Stream(ctx, name)
	}
	if err != nil {
		return fmt.Errorf("streams: look up stream %s: %w", name, err)
	}
	have := s.CachedInfo().Config
	want := have
	apply(&want)
	changed := changedFields(have, want)
	if len(changed) == 0 {
		log.Debug("stream unchanged", "stream", name)
		return nil
	}
	if _, err := js.UpdateStream(ctx, want); err != nil {
		return fmt.Errorf("streams: update stream %s (%v): %w", name, changed, err)
	}
	log.Info("stream updated", "stream", name, "changed", changed)
	return nil
}

func ensureConsumer(ctx context.Context, js jetstream.JetStream, stream, name string, apply func(*jetstream.ConsumerConfig), log *slog.Logger) error {
	c, err := js.Consumer(ctx, stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cfg := jetstream.ConsumerConfig{Durable: name}
		apply(&cfg)
		if _, err = js.CreateConsumer(ctx, stream, cfg); err == nil {
			log.Info("consumer created", "stream", stream, "consumer", name)
			return nil
		}
		if !errors.Is(err, jetstream.ErrConsumerExists) {
			return fmt.Errorf("streams: create consumer %s on %s: %w", name, stream, err)
		}
		c, err = js.Consumer(ctx, stream, name)
	}
	if err != nil {
		return fmt.Errorf("streams: look up consumer %s on %s: %w", name, stream, err)
	}
	have := c.CachedInfo().Config
	want := have
	apply(&want)
	changed := changedFields(have, want)
	if len(changed) == 0 {
		log.Debug("consumer unchanged", "stream", stream, "consumer", name)
		return nil
	}
	if _, err := js.UpdateConsumer(ctx, stream, want); err != nil {
		return fmt.Errorf("streams: update consumer %s on %s (%v): %w", name, stream, changed, err)
	}
	log.Info("consumer updated", "stream", stream, "consumer", name, "changed", changed)
	return nil
}

func ensureKV(ctx context.Context, js jetstream.JetStream, bucket string, apply func(*jetstream.KeyValueConfig), log *slog.Logger) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		cfg := jetstream.KeyValueConfig{Bucket: bucket}
		apply(&cfg)
		if kv, err = js.CreateKeyValue(ctx, cfg); err == nil {
			log.Info("bucket created", "bucket", bucket)
			return kv, nil
		}
		if !errors.Is(err, jetstream.ErrBucketExists) {
			return nil, fmt.Errorf("streams: create bucket %s: %w", bucket, err)
		}
		kv, err = js.KeyValue(ctx, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("streams: look up bucket %s: %w", bucket, err)
	}
	status, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("streams: read bucket %s: %w", bucket, err)
	}
	have := status.Config()
	want := have
	apply(&want)
	changed := changedFields(have, want)
	if len(changed) == 0 {
		log.Debug("bucket unchanged", "bucket", bucket)
		return kv, nil
	}
	if kv, err = js.UpdateKeyValue(ctx, want); err != nil {
		return nil, fmt.Errorf("streams: update bucket %s (%v): %w", bucket, changed, err)
	}
	log.Info("bucket updated", "bucket", bucket, "changed", changed)
	return kv, nil
}

// changedFields names the top-level fields in which two configs of the same
// struct type differ.
func changedFields(a, b any) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := 0; i < va.NumField(); i++ {
		if !va.Type().Field(i).IsExported() {
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, va.Type().Field(i).Name)
		}
	}
	return out
}
