package wirejson

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// sameBytes checks AppendValue writes what json.Marshal writes, or fails
// as it does.
func sameBytes(t *testing.T, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, gerr := AppendValue([]byte("prefix"), v)
	switch {
	case (werr == nil) != (gerr == nil):
		t.Fatalf("%#v: AppendValue error %v, json.Marshal error %v", v, gerr, werr)
	case werr != nil && werr.Error() != gerr.Error():
		t.Fatalf("%#v: AppendValue error %q, json.Marshal error %q", v, gerr, werr)
	case werr == nil && string(got) != "prefix"+string(want):
		t.Fatalf("%#v:\nAppendValue  %s\njson.Marshal prefix%s", v, got, want)
	}
}

type custom struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

func TestAppendValueMatchesMarshal(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	for _, v := range []any{
		nil, "", "plain", "<a href=\"x\">&amp;</a>", "\x00\x1f\b\f\n\r\t\\\x7f", "\u2028\u2029é😀", "\xff\xfe\xed\xa0\x80",
		true, false, 0.0, math.Copysign(0, -1), 1.0, -1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64,
		math.SmallestNonzeroFloat64, float32(1e-7), float32(3.4e38), float32(0.1),
		int(-7), int8(-8), int16(16), int32(-32), int64(math.MinInt64), uint(7), uint8(8), uint16(16), uint32(32), uint64(math.MaxUint64),
		json.Number(""), json.Number("-1.5e+3"), json.Number("01"),
		map[string]any{"z": 1, "a": []any{nil, "x", map[string]any{}}, "<": "&", "é": map[string]any{"b": 2, "a": 1}},
		map[string]any(nil), []any(nil), []any{}, map[string]string{"b": "2", "a": "1"}, map[string]string(nil), []string{"x", "<"}, []string(nil),
		custom{A: 1}, &custom{B: "b"}, time.Date(2026, 12, 2, 10, 0, 0, 1, time.UTC), []byte("bytes"), json.RawMessage(`{ "raw" : "<" }`),
		map[string]int{"b": 2, "a": 1}, math.NaN(), math.Inf(-1), float32(math.Inf(1)), map[string]any{"bad": math.NaN()},
		make(chan int), map[string]any{"f": func() {}}, cyclic,
	} {
		sameBytes(t, v)
	}
}

func TestAppendTimeMatchesMarshal(t *testing.T) {
	for _, tm := range []time.Time{
		{}, time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 10, 0, 0, 123456789, time.FixedZone("x", 5*3600+30*60)),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("y", -(23*3600+59*60))), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("z", 24*3600)),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("s", 30)),
	} {
		want, werr := json.Marshal(tm)
		got, gerr := AppendTime([]byte("x"), tm)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() || werr == nil && string(got) != "x"+string(want) {
			t.Errorf("%v: AppendTime %s (%v), json.Marshal %s (%v)", tm, got, gerr, want, werr)
		}
		if gerr != nil && string(got) != "x" {
			t.Errorf("%v: a failed AppendTime left %q", tm, got)
		}
	}
}

// FuzzAppendString: AppendString writes the bytes json.Marshal writes for
// any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "x", "<&>", "\u2028", "\xff", "a\"b\\c\x00\x7f", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: AppendString %s, json.Marshal %s", s, got, want)
		}
	})
}

// FuzzAppendValue: whatever JSON value encoding/json decodes (numbers as
// float64 or as json.Number), AppendValue writes it back as json.Marshal
// does; so do AppendFloat for any float and AppendTime for any time.
func FuzzAppendValue(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s), 1.5, int64(1764669600), int32(3600))
	}
	f.Add([]byte(`[1e21,1e-7,-0,0.000001,123456789012345678901234567890]`), math.Copysign(0, -1), int64(-62135596801), int32(-86400))
	f.Fuzz(func(t *testing.T, data []byte, fl float64, sec int64, offset int32) {
		var v any
		if json.Unmarshal(data, &v) == nil {
			sameBytes(t, v)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if dec.Decode(&v) == nil {
			sameBytes(t, v)
		}
		sameBytes(t, fl)
		sameBytes(t, float32(fl))
		tm := time.Unix(sec, int64(offset)).In(time.FixedZone("f", int(offset)))
		want, werr := json.Marshal(tm)
		got, gerr := AppendTime(nil, tm)
		if (werr == nil) != (gerr == nil) || werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("%v: AppendTime %s (%v), json.Marshal %s (%v)", tm, got, gerr, want, werr)
		}
	})
}
