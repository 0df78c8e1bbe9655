package instance

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/wirejson"
)

func sampleFacts() []Fact {
	at := time.Date(2026, 12, 2, 10, 0, 0, 987654321, time.UTC)
	return []Fact{
		{},
		{ID: "order-1:completed", Kind: FactCompleted, Instance: "order-1", ProcessID: "pay", Version: 3, Time: at},
		{ID: "f", Kind: FactFailed, Instance: "i", ProcessID: "p", Version: -1, Time: at.In(time.FixedZone("", -5*3600)),
			Error: "no <route> & \"no\" default\n", Node: "gw", Activity: "é"},
	}
}

// factsAlike checks AppendFact against json.Marshal, and the fact's
// decoding by hand (with and without the fallback) against json.Unmarshal.
func factsAlike(t *testing.T, f Fact, data []byte) {
	t.Helper()
	want, werr := json.Marshal(f)
	got, gerr := AppendFact(nil, &f)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || werr == nil && string(got) != string(want) {
		t.Fatalf("%+v: AppendFact %s (%v), json.Marshal %s (%v)", f, got, gerr, want, werr)
	}
	var fast, public, slow Fact
	ferr, perr, serr := decodeFact(data, &fast), UnmarshalFact(data, &public), json.Unmarshal(data, &slow)
	if !errors.Is(ferr, wirejson.ErrUnsupported) && ((ferr == nil) != (serr == nil) || ferr == nil && !reflect.DeepEqual(fast, slow)) {
		t.Fatalf("%q: hand %+v (%v), encoding/json %+v (%v)", data, fast, ferr, slow, serr)
	}
	if (perr == nil) != (serr == nil) || serr != nil && perr.Error() != serr.Error() || !reflect.DeepEqual(public, slow) {
		t.Fatalf("%q: UnmarshalFact %+v (%v), encoding/json %+v (%v)", data, public, perr, slow, serr)
	}
}

func TestFactJSONMatchesEncodingJSON(t *testing.T) {
	for _, f := range sampleFacts() {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		factsAlike(t, f, b)
		var back Fact
		if err := UnmarshalFact(b, &back); err != nil || back.ID != f.ID || back.Kind != f.Kind || !back.Time.Equal(f.Time) {
			t.Fatalf("round trip of %s: %+v %v", b, back, err)
		}
	}
	factsAlike(t, Fact{Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}, []byte(`{"version":1.5}`))
	factsAlike(t, Fact{}, []byte(`{"Kind":"completed","INSTANCEID":"x","version":2,"time":null,"other":{"a":[1]}}`))
}

// FuzzFactJSON: the hand-written fact codec and encoding/json agree on
// any message and any fact.
func FuzzFactJSON(f *testing.F) {
	for _, fact := range sampleFacts() {
		b, _ := json.Marshal(fact)
		f.Add(b, fact.Error, int64(fact.Version))
	}
	f.Add([]byte(`{"kind":"completed","instanceId":"i"} x`), "\xff\u2029", int64(-62135596800))
	f.Fuzz(func(t *testing.T, data []byte, s string, n int64) {
		fact := Fact{ID: s, Kind: FactKind(s), Instance: s, ProcessID: s, Version: int(n), Time: time.Unix(n, n).UTC(), Error: s, Node: s}
		factsAlike(t, fact, data)
	})
}

// BenchmarkFactJSON is the engine's encoding and a subscriber's decoding
// of a completed fact, by the hand-written codec and by encoding/json.
func BenchmarkFactJSON(b *testing.B) {
	f := sampleFacts()[1]
	data, err := json.Marshal(f)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		fn   func() error
	}{
		{"encode", func() error { _, err := AppendFact(make([]byte, 0, 256), &f); return err }},
		{"decode", func() error { var x Fact; return UnmarshalFact(data, &x) }},
		{"encode-encoding-json", func() error { _, err := json.Marshal(f); return err }},
		{"decode-encoding-json", func() error { var x Fact; return json.Unmarshal(data, &x) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
