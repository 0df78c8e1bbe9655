package jobs

import (
	"encoding/json"
	"testing"
	"time"
)

func unmarshalVerdictJSON(data []byte, v *Verdict) error { return json.Unmarshal(data, v) }

func sampleVerdicts() []Verdict {
	until := time.Date(2026, 12, 2, 10, 0, 30, 5, time.UTC)
	return []Verdict{
		{},
		{JobID: "order-1/charge/2", Kind: Complete, Accepted: true},
		{JobID: "j", Kind: Fail, Reason: `retry 2 of 3 in 500ms <"quoted">`},
		{JobID: "j", Kind: Extend, Accepted: true, LockExpiresAt: &until},
	}
}

func TestVerdictJSONMatchesEncodingJSON(t *testing.T) {
	for _, v := range sampleVerdicts() {
		b, err := AppendVerdict(nil, &v)
		marshalsAlike(t, v, b, err)
		back, ok := decodesAlike(t, b, decodeVerdict, UnmarshalVerdict, unmarshalVerdictJSON)
		if !ok || back.Accepted != v.Accepted || back.Reason != v.Reason || (back.LockExpiresAt == nil) != (v.LockExpiresAt == nil) {
			t.Fatalf("round trip of %s: %+v", b, back)
		}
	}
	late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	v := Verdict{LockExpiresAt: &late}
	b, err := AppendVerdict(nil, &v)
	marshalsAlike(t, v, b, err)
}

// FuzzVerdictJSON: the hand-written verdict codec and encoding/json agree
// on any message, and on any verdict's bytes.
func FuzzVerdictJSON(f *testing.F) {
	for _, v := range sampleVerdicts() {
		b, _ := json.Marshal(v)
		f.Add(b, v.Reason, int64(0))
	}
	f.Add([]byte(`{"Accepted":true,"accepted":null,"lockExpiresAt":"2026-12-02T10:00:00Z","lockExpiresAt":null,"extra":1}`), "\x7f\xc3", int64(-1))
	f.Fuzz(func(t *testing.T, data []byte, s string, n int64) {
		v, ok := decodesAlike(t, data, decodeVerdict, UnmarshalVerdict, unmarshalVerdictJSON)
		if ok {
			b, err := AppendVerdict(nil, &v)
			marshalsAlike(t, v, b, err)
		}
		at := time.Unix(n, n).In(time.FixedZone("", int(n%100000)))
		v = Verdict{JobID: s, Kind: ReportKind(s), Accepted: n > 0, Reason: s, LockExpiresAt: &at}
		b, err := AppendVerdict(nil, &v)
		marshalsAlike(t, v, b, err)
	})
}

// BenchmarkVerdictJSON is the engine's encoding and a worker's decoding of
// a verdict, by the hand-written codec and by encoding/json.
func BenchmarkVerdictJSON(b *testing.B) {
	v := sampleVerdicts()[1]
	data, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	benchCodec(b, data, func() error { _, err := AppendVerdict(make([]byte, 0, 128), &v); return err },
		func() error { var x Verdict; return UnmarshalVerdict(data, &x) },
		func() error { _, err := json.Marshal(v); return err },
		func() error { var x Verdict; return json.Unmarshal(data, &x) })
}
