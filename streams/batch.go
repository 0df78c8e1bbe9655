package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// MaxAtomicBatch is the most messages PublishAtomic sends at once: the
// server's default limit on an atomic batch.
const MaxAtomicBatch = 1000

// Atomic batch headers (nats-server 2.12).
const (
	batchIDHeader     = "Nats-Batch-Id"
	batchSeqHeader    = "Nats-Batch-Sequence"
	batchCommitHeader = "Nats-Batch-Commit"
)

// PublishAtomic stores msgs in one stream all or none: the server stages
// them and commits them together with the last, or stores none of them.
// Each message's own expectations (Nats-Expected-Last-Subject-Sequence, say)
// are checked at the commit; one that does not hold refuses the batch with
// its *jetstream.APIError. A batch that never reaches its commit — the
// connection lost, a message refused on the way — is dropped by the server
// after its batch timeout. The stream must allow atomic publishing
// (Provision sets it where jetbpm uses it).
//
// Every message is a request, so a refusal names the message it is about;
// the messages keep the batch headers PublishAtomic sets.
func PublishAtomic(ctx context.Context, nc *nats.Conn, msgs []*nats.Msg) (*jetstream.PubAck, error) {
	switch {
	case len(msgs) == 0:
		return nil, errors.New("streams: atomic publish of no messages")
	case len(msgs) > MaxAtomicBatch:
		return nil, fmt.Errorf("streams: atomic publish of %d messages; at most %d go in one batch", len(msgs), MaxAtomicBatch)
	}
	id := nuid.Next()
	for i, m := range msgs {
		if m.Header == nil {
			m.Header = nats.Header{}
		}
		m.Header.Set(batchIDHeader, id)
		m.Header.Set(batchSeqHeader, strconv.Itoa(i+1))
		last := i == len(msgs)-1
		if last {
			m.Header.Set(batchCommitHeader, "1")
		}
		resp, err := nc.RequestMsgWithContext(ctx, m)
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("streams: atomic publish to %s: no stream takes the subject", m.Subject)
		}
		if err != nil {
			return nil, fmt.Errorf("streams: atomic publish to %s: %w", m.Subject, err)
		}
		if !last && len(resp.Data) == 0 {
			continue // staged
		}
		var ack struct {
			*jetstream.PubAck
			Error *jetstream.APIError `json:"error,omitempty"`
		}
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return nil, fmt.Errorf("streams: atomic publish to %s: malformed reply %q", m.Subject, resp.Data)
		}
		if ack.Error != nil {
			return nil, fmt.Errorf("streams: atomic publish to %s: %w", m.Subject, ack.Error)
		}
		if !last || ack.PubAck == nil || ack.Stream == "" {
			return nil, fmt.Errorf("streams: atomic publish to %s: unexpected reply %q", m.Subject, resp.Data)
		}
		return ack.PubAck, nil
	}
	panic("unreachable")
}

// KVStream is the name of the stream that holds a KV bucket.
func KVStream(bucket string) string { return "KV_" + bucket }

// KVSubject is the subject a write of key to bucket is published on.
func KVSubject(bucket, key string) string { return "$KV." + bucket + "." + key }
