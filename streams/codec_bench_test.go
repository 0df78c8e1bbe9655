package streams

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// checkpointLike is a ~2 KB nested map shaped like an instance checkpoint.
func checkpointLike() map[string]any {
	tokens := make([]any, 0, 8)
	for i := range 8 {
		tokens = append(tokens, map[string]any{
			"id": fmt.Sprintf("tok-%d", i), "node": fmt.Sprintf("Activity_%04d", i*37),
			"scope": "sub-1", "activation": i, "state": "waiting",
		})
	}
	vars := map[string]any{}
	for i := range 20 {
		vars[fmt.Sprintf("var%02d", i)] = map[string]any{"amount": 1000 + i, "rate": 0.05 * float64(i), "label": "customer-order"}
	}
	return map[string]any{
		"id": "0190c7e2-7d1a-7c3e-9a55-1b2f3c4d5e6f", "process": "order-fulfilment", "version": 7,
		"rev": 4711, "started": time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		"tokens": tokens, "vars": vars,
		"outbox": []any{map[string]any{"subject": "jetbpm.job.ship.j-1", "msgId": "i-1/n-3/1", "published": false}},
	}
}

// marshalUnpooled is Marshal with a fresh buffer and encoder per call, the
// baseline the pool has to beat.
func marshalUnpooled(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write([]byte{codecMagic, 1}) // unchecked: the pool and the checksum are measured apart
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func BenchmarkMarshalCheckpointLike(b *testing.B) {
	v := checkpointLike()
	data, _ := Marshal(v)
	b.Logf("encoded size %d bytes", len(data))
	b.Run("pooled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unpooled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalUnpooled(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkUnmarshalCheckpointLike(b *testing.B) {
	data, _ := Marshal(checkpointLike())
	b.Run("Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v map[string]any
			if err := Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Plain msgpack, without the well-formedness check and JSON-like
	// normalization: the price of those guarantees.
	b.Run("msgpack-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v map[string]any
			dec := msgpack.NewDecoder(bytes.NewReader(data[2:]))
			dec.UseLooseInterfaceDecoding(true)
			if err := dec.Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("wellformed-check-only", func(b *testing.B) {
		for b.Loop() {
			if err := checkWellFormed(data[2:]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
