package streams_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

func TestProvisionLetsDeploysBeAtomic(t *testing.T) {
	env := streamstest.Start(t)
	s, err := env.JS.Stream(testContext(t), streams.KVStream(streams.DefinitionsBucket))
	if err != nil {
		t.Fatal(err)
	}
	if !s.CachedInfo().Config.AllowAtomicPublish {
		t.Fatalf("the definitions bucket's stream does not allow atomic publishing")
	}
}

func TestPublishAtomic(t *testing.T) {
	env := streamstest.Start(t)
	ctx := testContext(t)
	kv, err := env.JS.KeyValue(ctx, streams.DefinitionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, value string, rev string) *nats.Msg {
		m := nats.NewMsg(streams.KVSubject(streams.DefinitionsBucket, key))
		m.Data = []byte(value)
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, rev)
		return m
	}
	rev, err := kv.Create(ctx, "c", []byte("c0"))
	if err != nil {
		t.Fatal(err)
	}

	// The last message's expectation fails: none of the batch is stored.
	_, err = streams.PublishAtomic(ctx, env.Conn, []*nats.Msg{put("a", "a1", "0"), put("b", "b1", "0"), put("c", "c1", "999")})
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("batch with a stale expectation: %v; want a wrong-last-sequence API error", err)
	}
	for _, key := range []string{"a", "b"} {
		if e, err := kv.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("key %s after a refused batch: %v, %v; want none", key, e, err)
		}
	}

	ack, err := streams.PublishAtomic(ctx, env.Conn, []*nats.Msg{put("a", "a1", "0"), put("b", "b1", "0"), put("c", "c1", strconv.FormatUint(rev, 10))})
	if err != nil || ack.Stream != streams.KVStream(streams.DefinitionsBucket) {
		t.Fatalf("batch = %+v, %v", ack, err)
	}
	for key, want := range map[string]string{"a": "a1", "b": "b1", "c": "c1"} {
		if e, err := kv.Get(ctx, key); err != nil || string(e.Value()) != want {
			t.Errorf("key %s = %v, %v; want %s", key, e, err, want)
		}
	}

	if _, err := streams.PublishAtomic(ctx, env.Conn, nil); err == nil {
		t.Error("an empty batch was accepted")
	}
	// A stream that does not allow atomic publishing refuses the batch.
	m := nats.NewMsg(streams.FactSubject(streams.FactInstance, "p", "started"))
	if _, err := streams.PublishAtomic(ctx, env.Conn, []*nats.Msg{m}); err == nil {
		t.Error("a batch to the facts stream was accepted")
	}
}
