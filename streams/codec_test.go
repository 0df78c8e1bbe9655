package streams_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/jetbpm/jetbpm/streams"
)

type checkpoint struct {
	ID        string            `msgpack:"id"`
	Version   int               `msgpack:"v"`
	Seq       uint64            `msgpack:"seq,omitempty"`
	Started   time.Time         `msgpack:"started"`
	Deadline  *time.Time        `msgpack:"deadline,omitempty"`
	Vars      map[string]any    `msgpack:"vars,omitempty"`
	Tokens    []token           `msgpack:"tokens,omitempty"`
	Labels    map[string]string `msgpack:"labels,omitempty"`
	Anything  any               `msgpack:"any,omitempty"`
	List      []any             `msgpack:"list,omitempty"`
	Untouched string            `msgpack:"-"`
}

type token struct {
	Node  string `msgpack:"node"`
	Count int64  `msgpack:"n,omitempty"`
}

func TestCodecStructRoundTrip(t *testing.T) {
	started := time.Date(2026, 3, 1, 12, 30, 0, 123456789, time.FixedZone("CET", 3600))
	deadline := started.Add(time.Hour)
	in := checkpoint{
		ID: "i-1", Version: 3, Seq: 1 << 40, Started: started, Deadline: &deadline,
		Vars: map[string]any{
			"amount": 1250, "rate": 0.07, "whole": 3.0, "name": "Ada", "ok": true, "none": nil,
			"big": uint64(math.MaxUint64), "neg": -40000,
			"nested": map[string]any{"n": 200, "at": started, "list": []any{1, "two", 3.5, map[string]any{"k": 70000}}},
		},
		Tokens:   []token{{Node: "task", Count: 2}, {Node: "end"}},
		Labels:   map[string]string{"b": "2", "a": "1"},
		Anything: 300,
		List:     []any{200, -1, "x"},
	}
	data, err := streams.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out checkpoint
	if err := streams.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}

	want := in
	want.Started = started.UTC()
	d := deadline.UTC()
	want.Deadline = &d
	want.Vars = map[string]any{
		"amount": int64(1250), "rate": 0.07, "whole": 3.0, "name": "Ada", "ok": true, "none": nil,
		"big": uint64(math.MaxUint64), "neg": int64(-40000),
		"nested": map[string]any{"n": int64(200), "at": started.UTC(), "list": []any{int64(1), "two", 3.5, map[string]any{"k": int64(70000)}}},
	}
	want.Anything = int64(300)
	want.List = []any{int64(200), int64(-1), "x"}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("round trip:\n got %#v\nwant %#v", out, want)
	}
	if out.Started.Location() != time.UTC {
		t.Errorf("decoded time in %s, want UTC", out.Started.Location())
	}
}

func TestCodecDecodesJSONLikeValues(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	in := map[string]any{
		"small": 5, "byte": 200, "int32": int32(-70000), "u16": uint16(60000), "max": int64(math.MaxInt64),
		"huge": uint64(math.MaxInt64) + 1, "f32": float32(1.5), "f64": 2.25, "s": "x", "b": false,
		"arr": []int{1, 300}, "strs": []string{"a"}, "at": at, "m": map[string]int{"k": 1000},
	}
	data, err := streams.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"small": int64(5), "byte": int64(200), "int32": int64(-70000), "u16": int64(60000), "max": int64(math.MaxInt64),
		"huge": uint64(math.MaxInt64) + 1, "f32": 1.5, "f64": 2.25, "s": "x", "b": false,
		"arr": []any{int64(1), int64(300)}, "strs": []any{"a"}, "at": at, "m": map[string]any{"k": int64(1000)},
	}
	var asMap map[string]any
	if err := streams.Unmarshal(data, &asMap); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(asMap, want) {
		t.Errorf("into map[string]any:\n got %#v\nwant %#v", asMap, want)
	}
	var asAny any
	if err := streams.Unmarshal(data, &asAny); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(asAny, any(want)) {
		t.Errorf("into any:\n got %#v\nwant %#v", asAny, want)
	}
}

// A worker in another language writes plain msgpack: positive integers with
// unsigned codes, integer map keys, binary strings.
func TestCodecDecodesForeignMsgpack(t *testing.T) {
	body := []byte{
		0x83,                        // map of 3
		0xA1, 'n', 0xCD, 0x01, 0x2C, // "n": uint16 300
		0x01, 0xC4, 0x02, 'h', 'i', // 1: bin "hi"
		0xA1, 'l', 0x92, 0xCC, 0xC8, 0xCE, 0x00, 0x01, 0x00, 0x00, // "l": [uint8 200, uint32 65536]
	}
	data := append([]byte{0xC1, 1}, body...) // version 1: no checksum, as other languages write
	var got map[string]any
	if err := streams.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": int64(300), "1": "hi", "l": []any{int64(200), int64(65536)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}

	// Into a struct (string keys only there): the any fields are fixed too.
	structBody := []byte{
		0x83,
		0xA1, 'n', 0xCD, 0x01, 0x2C,
		0xA1, 'l', 0x92, 0xCC, 0xC8, 0xCE, 0x00, 0x01, 0x00, 0x00,
		0xA1, 'm', 0x81, 0xA1, 'k', 0xCC, 0xFF, // "m": {"k": uint8 255}
	}
	var s struct {
		L []any          `msgpack:"l"`
		N any            `msgpack:"n"`
		M map[string]any `msgpack:"m"`
	}
	if err := streams.Unmarshal(append([]byte{0xC1, 1}, structBody...), &s); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.L, want["l"]) || s.N != int64(300) || s.M["k"] != int64(255) {
		t.Errorf("struct fields: %#v", s)
	}
}

func TestCodecIsDeterministic(t *testing.T) {
	a := map[string]any{}
	b := map[string]any{}
	keys := strings.Fields("q w e r t y u i o p a s d f g h j k l z x c v b n m")
	for i, k := range keys {
		a[k] = map[string]any{"i": i, "s": k}
		b[keys[len(keys)-1-i]] = map[string]any{"s": keys[len(keys)-1-i], "i": len(keys) - 1 - i}
	}
	first, err := streams.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, _ := streams.Marshal(a)
		other, _ := streams.Marshal(b)
		if !bytes.Equal(first, again) || !bytes.Equal(first, other) {
			t.Fatal("equal maps encoded to different bytes")
		}
	}
}

func TestCodecEnvelope(t *testing.T) {
	data, err := streams.Marshal("hello")
	if err != nil {
		t.Fatal(err)
	}
	if data[0] != 0xC1 || data[1] != 2 || streams.CodecVersion != 2 {
		t.Fatalf("envelope = % X, want C1 02", data[:2])
	}
	bare, _ := msgpack.Marshal("hello")
	if sum := crc32.Checksum(bare, crc32.MakeTable(crc32.Castagnoli)); binary.BigEndian.Uint32(data[2:]) != sum || !bytes.Equal(data[6:], bare) {
		t.Fatalf("envelope = % X, want C1 02, CRC-32C %08x, then % X", data, sum, bare)
	}
	future := append([]byte{0xC1, 9}, data[2:]...)
	trailing := append([]byte{0xC1, 1}, append(append([]byte{}, data[6:]...), 0x00)...)
	damaged := append([]byte{}, data...)
	damaged[len(damaged)-1] ^= 0x10
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"nil", nil, "empty input"},
		{"magic only", []byte{0xC1}, "truncated"},
		{"no body", []byte{0xC1, 1}, "no body"},
		{"no checksum", []byte{0xC1, 2, 0, 0}, "truncated in its checksum"},
		{"checksum, no body", data[:6], "no body"},
		{"damaged body", damaged, "damaged: checksum mismatch"},
		{"truncated checked body", data[:len(data)-2], "damaged: checksum mismatch"},
		{"bare msgpack", bare, "not a jetbpm envelope"},
		{"json", []byte(`{"a":1}`), "not a jetbpm envelope"},
		{"future version", future, "codec version 9 is unknown; this build reads version(s) [1 2]"},
		{"trailing garbage", trailing, "1 unexpected bytes"},
		{"truncated body", append([]byte{0xC1, 1}, data[6:len(data)-2]...), "decode"},
		{"lying map length", []byte{0xC1, 1, 0xDF, 0xFF, 0xFF, 0xFF, 0xFF}, "remaining bytes"},
		{"lying array length", []byte{0xC1, 1, 0xDD, 0xFF, 0xFF, 0xFF, 0xFF}, "remaining bytes"},
		{"reserved code", []byte{0xC1, 1, 0xC1}, "decode"},
		{"too deep", append([]byte{0xC1, 1}, bytes.Repeat([]byte{0x91}, 20000)...), "nested deeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			err := streams.Unmarshal(tc.in, &v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Unmarshal = %v, want an error containing %q", err, tc.want)
			}
		})
	}

	var s string
	if err := streams.Unmarshal(data, s); err == nil {
		t.Error("decoding into a non-pointer succeeded")
	}
	if err := streams.Unmarshal(data, (*string)(nil)); err == nil {
		t.Error("decoding into a nil pointer succeeded")
	}
	var n int
	if err := streams.Unmarshal(data, &n); err == nil {
		t.Error("decoding a string into an int succeeded")
	}
}

// Every single flipped bit and every truncation of a checked record is
// refused; a flip or cut in the body is named as damage.
func TestCodecRefusesEveryFlippedBitAndTruncation(t *testing.T) {
	data, err := streams.Marshal(checkpoint{
		ID: "i-1", Version: 3, Started: time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC),
		Vars:   map[string]any{"amount": 42, "items": []any{"a", 2.5, true}},
		Labels: map[string]string{"k": "v"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for bit := range len(data) * 8 {
		flipped := bytes.Clone(data)
		flipped[bit/8] ^= 1 << (bit % 8)
		var c checkpoint
		err := streams.Unmarshal(flipped, &c)
		if err == nil {
			t.Fatalf("bit %d flipped: decoded %+v without an error", bit, c)
		}
		if bit/8 >= 2 && !errors.Is(err, streams.ErrDamaged) {
			t.Errorf("bit %d flipped: %v, want ErrDamaged", bit, err)
		}
	}
	for n := range len(data) {
		var c checkpoint
		err := streams.Unmarshal(data[:n], &c)
		if err == nil {
			t.Fatalf("truncated to %d bytes: decoded %+v without an error", n, c)
		}
		if n > 6 && !errors.Is(err, streams.ErrDamaged) {
			t.Errorf("truncated to %d bytes: %v, want ErrDamaged", n, err)
		}
	}
}

// FuzzUnmarshalChecked feeds the decoder bodies behind a correct checksum,
// which random bytes before it would almost never pass.
func FuzzUnmarshalChecked(f *testing.F) {
	seed, _ := streams.Marshal(checkpoint{ID: "x", Vars: map[string]any{"a": []any{1, "b", 2.5}}})
	f.Add(seed[6:])
	f.Add([]byte{0x93, 0xCD, 0x01, 0x2C, 0xC0, 0xC3})
	f.Add([]byte{0xDF, 0xFF, 0xFF, 0xFF, 0xFF})
	table := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, body []byte) {
		data := binary.BigEndian.AppendUint32([]byte{0xC1, 2}, crc32.Checksum(body, table))
		data = append(data, body...)
		var v any
		if err := streams.Unmarshal(data, &v); errors.Is(err, streams.ErrDamaged) {
			t.Fatalf("a correct checksum was refused: %v", err)
		}
		var c checkpoint
		_ = streams.Unmarshal(data, &c)
	})
}

func FuzzUnmarshal(f *testing.F) {
	seed, _ := streams.Marshal(checkpoint{ID: "x", Vars: map[string]any{"a": []any{1, "b", 2.5}}})
	f.Add(seed)
	f.Add([]byte{0xC1, 1, 0x93, 0xCD, 0x01, 0x2C, 0xC0, 0xC3})
	f.Add([]byte{0xC1, 1, 0xD6, 0xFF, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		_ = streams.Unmarshal(data, &v)
		var c checkpoint
		_ = streams.Unmarshal(data, &c)
	})
}

type node struct {
	V    any             `msgpack:"v"`
	At   time.Time       `msgpack:"at"`
	Kids []node          `msgpack:"kids,omitempty"`
	ByID map[string]node `msgpack:"by,omitempty"`
}

func TestCodecRecursiveTypesConcurrently(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.FixedZone("X", -7200))
	in := node{V: 1000, At: at, Kids: []node{{V: 70000, At: at, Kids: []node{{V: "leaf", At: at}}}}, ByID: map[string]node{"k": {V: 200, At: at}}}
	data, err := streams.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := node{V: int64(1000), At: at.UTC(), Kids: []node{{V: int64(70000), At: at.UTC(), Kids: []node{{V: "leaf", At: at.UTC()}}}}, ByID: map[string]node{"k": {V: int64(200), At: at.UTC()}}}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var out node
			if err := streams.Unmarshal(data, &out); err != nil {
				errs <- err
				return
			}
			if !reflect.DeepEqual(out, want) {
				errs <- fmt.Errorf("got %#v\nwant %#v", out, want)
				return
			}
			errs <- nil
		}()
	}
	for range 8 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(testTimeout):
			t.Fatal("decoders did not finish")
		}
	}
}
