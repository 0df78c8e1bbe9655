package streams_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

func TestEnsureTopicCreatesAndUpdatesInPlace(t *testing.T) {
	env := streamstest.Start(t)
	ctx := testContext(t)
	const topic = "payment.charge"

	if err := streams.EnsureTopic(ctx, env.JS, topic, 5*time.Second, 0, nil); err != nil {
		t.Fatal(err)
	}
	cons, err := env.JS.Consumer(ctx, streams.JobsStream, streams.TopicConsumer(topic))
	if err != nil {
		t.Fatal(err)
	}
	created := cons.CachedInfo()
	cfg := created.Config
	if cfg.FilterSubject != streams.TopicFilter(topic) || cfg.AckPolicy != jetstream.AckExplicitPolicy ||
		cfg.AckWait != 5*time.Second || cfg.MaxDeliver != -1 || cfg.MaxAckPending != streams.TopicMaxAckPending {
		t.Fatalf("topic consumer config: %+v", cfg)
	}

	// A queued job must survive the update.
	if _, err := env.JS.Publish(ctx, streams.JobSubject(topic, "job-1"), []byte("job")); err != nil {
		t.Fatal(err)
	}
	if err := streams.EnsureTopic(ctx, env.JS, topic, 5*time.Second, 0, nil); err != nil {
		t.Fatalf("EnsureTopic again: %v", err)
	}
	if err := streams.EnsureTopic(ctx, env.JS, topic, 90*time.Second, 0, nil); err != nil {
		t.Fatalf("EnsureTopic with a new lock duration: %v", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.AckWait != 90*time.Second {
		t.Errorf("AckWait after update = %s, want 90s", info.Config.AckWait)
	}
	if !info.Created.Equal(created.Created) {
		t.Errorf("consumer was recreated (created %s, now %s), want an in-place update", created.Created, info.Created)
	}
	if info.NumPending != 1 {
		t.Errorf("pending jobs after update = %d, want 1", info.NumPending)
	}
}

func TestEnsureTopicNamesDoNotCollide(t *testing.T) {
	env := streamstest.Start(t)
	ctx := testContext(t)
	// A work-queue stream refuses consumers with overlapping filters, so
	// topics whose raw names nest or look escaped must still map apart.
	for _, topic := range []string{"a", "a.b", "a=2Eb", "a.*", "a.>"} {
		if err := streams.EnsureTopic(ctx, env.JS, topic, time.Minute, 0, nil); err != nil {
			t.Errorf("EnsureTopic(%q): %v", topic, err)
		}
	}
	for _, bad := range []struct {
		topic string
		lock  time.Duration
	}{{"", time.Minute}, {"t", 0}, {"t", -time.Second}} {
		if err := streams.EnsureTopic(ctx, env.JS, bad.topic, bad.lock, 0, nil); err == nil {
			t.Errorf("EnsureTopic(%q, %s) accepted", bad.topic, bad.lock)
		}
	}
}
