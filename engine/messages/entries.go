package messages

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/streams"
)

// Entries reads and writes the message partitions' entries in the messages
// bucket. Writes are raw publishes to the bucket's subject with an expected
// last sequence, so they pipeline and still compare-and-set; reads go to
// the bucket's stream, which also gives the sequence of a deleted entry's
// marker to write over.
type Entries struct {
	stream jetstream.Stream
}

// OpenEntries opens the entries of the messages bucket.
func OpenEntries(ctx context.Context, js jetstream.JetStream) (*Entries, error) {
	s, err := js.Stream(ctx, streams.KVStream(streams.MessagesBucket))
	if err != nil {
		return nil, fmt.Errorf("messages bucket: %w", err)
	}
	return &Entries{stream: s}, nil
}

// get returns the entry of key and its revision. A missing or deleted
// entry is a new one (nil) with the revision a write must expect.
func (s *Entries) get(ctx context.Context, key string) (*correlation.Entry, uint64, error) {
	m, err := s.stream.GetLastMsgForSubject(ctx, streams.KVSubject(streams.MessagesBucket, key))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("message entry %s: read: %w", key, err)
	}
	if op := m.Header.Get("KV-Operation"); op != "" {
		return nil, m.Sequence, nil // deleted or purged
	}
	var e correlation.Entry
	if err := streams.Unmarshal(m.Data, &e); err != nil {
		return nil, 0, fmt.Errorf("message entry %s: decode: %w", key, err)
	}
	return &e, m.Sequence, nil
}

// write is the message that stores e under key over revision rev.
func (s *Entries) write(key string, e *correlation.Entry, rev uint64) (*nats.Msg, error) {
	data, err := streams.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("message entry %s: encode: %w", key, err)
	}
	m := nats.NewMsg(streams.KVSubject(streams.MessagesBucket, key))
	m.Data = data
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	return m, nil
}

// delete is the message that deletes the entry of key at revision rev.
func (s *Entries) delete(key string, rev uint64) *nats.Msg {
	m := nats.NewMsg(streams.KVSubject(streams.MessagesBucket, key))
	m.Header.Set("KV-Operation", "DEL")
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	return m
}
