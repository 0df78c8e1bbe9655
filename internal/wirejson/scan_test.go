package wirejson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// probe has a field of each kind the Scanner fills, so its decoder can be
// checked against json.Unmarshal.
type probe struct {
	S   string            `json:"s"`
	N   int64             `json:"n"`
	I   int               `json:"i"`
	B   bool              `json:"b"`
	M   map[string]any    `json:"m"`
	SM  map[string]string `json:"sm"`
	A   any               `json:"a"`
	T   time.Time         `json:"t"`
	TP  *time.Time        `json:"tp"`
	IP  *int              `json:"ip"`
	Key string            `json:"kind"`
}

var probeFields = NewFields("s", "n", "i", "b", "m", "sm", "a", "t", "tp", "ip", "kind")

func decodeProbe(data []byte, p *probe, useNumber bool) error {
	s := NewScanner(data)
	s.UseNumber = useNumber
	if !s.Null() && s.Object() {
		for s.More() {
			switch s.Field(probeFields) {
			case "s":
				s.String(&p.S)
			case "n":
				s.Int64(&p.N)
			case "i":
				s.Int(&p.I)
			case "b":
				s.Bool(&p.B)
			case "m":
				s.Map(&p.M)
			case "sm":
				s.StringMap(&p.SM)
			case "a":
				s.Any(&p.A)
			case "t":
				s.Time(&p.T)
			case "tp":
				s.TimePtr(&p.TP)
			case "ip":
				s.IntPtr(&p.IP)
			case "kind":
				s.String(&p.Key)
			default:
				s.Skip()
			}
		}
	}
	return s.End()
}

// agree checks the Scanner and json.Unmarshal decode data alike: the same
// value, or both an error. A shape left to encoding/json is not compared.
func agree(t *testing.T, data []byte) {
	t.Helper()
	var fast, slow probe
	ferr := decodeProbe(data, &fast, false)
	if errors.Is(ferr, ErrUnsupported) {
		return
	}
	serr := json.Unmarshal(data, &slow)
	switch {
	case (ferr == nil) != (serr == nil):
		t.Fatalf("%q: scanner error %v, encoding/json error %v", data, ferr, serr)
	case ferr == nil && !reflect.DeepEqual(fast, slow):
		t.Fatalf("%q:\nscanner       %#v\nencoding/json %#v", data, fast, slow)
	}
	if ferr == nil {
		sameZeros(t, data, fast.A, slow.A)
	}
}

// sameZeros checks negative zeros decode as negative zeros: DeepEqual
// takes -0 for 0.
func sameZeros(t *testing.T, data []byte, a, b any) {
	t.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
		t.Fatalf("%q: scanner %s, encoding/json %s", data, x, y)
	}
}

var scanSeeds = []string{
	`{"s":"x","n":-12,"i":7,"b":true,"m":{"k":[1,"2",null,{"z":false}]},"sm":{"a":"b","c":null},"a":-0,"t":"2026-12-02T10:00:00.5+01:00","tp":"2026-01-01T00:00:00Z","ip":3}`,
	`null`, ` {} `, `{"S":"case","KIND":"k","\u212aind":"kelvin"}`, `{"s":"\u00e9\ud83d\ude00\ud800x\\\/\b\f\n\r\t"}`,
	"{\"s\":\"\xff\xfe bad utf8 \xed\xa0\x80\"}", `{"unknown":{"deep":[[[]]]},"s":"after"}`,
	`{"n":1.5}`, `{"n":1e3}`, `{"n":9223372036854775807}`, `{"n":-9223372036854775808}`, `{"n":9223372036854775808}`,
	`{"s":5}`, `{"m":[]}`, `{"m":null}`, `{"m":{"a":1},"m":{"b":2}}`, `{"a":1e400}`, `{"a":123456789012345678}`,
	`{"a":0.1,"a":1E-7}`, `{"t":"not a time"}`, `{"t":"2026-12-02T10:00:00\u005a"}`, `{"tp":null}`, `{"ip":null}`,
	`{"s":"x"} trailing`, `{"s":"x"`, `{"s" "x"}`, `{"s":"x",}`, `[1]`, `"str"`, ``, `  `, "{\"s\":\"a\x01\"}",
	`{"b":nul}`, `{"a":[1,]}`, `{"a":-}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":tru}`, "{\"a\":\x00}", `{"sm":{"a":1}}`,
}

func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range scanSeeds {
		agree(t, []byte(s))
	}
}

func TestScannerDecodesFields(t *testing.T) {
	var p probe
	if err := decodeProbe([]byte(scanSeeds[0]), &p, false); err != nil {
		t.Fatal(err)
	}
	if p.S != "x" || p.N != -12 || p.I != 7 || !p.B || p.IP == nil || *p.IP != 3 || p.SM["c"] != "" || p.SM["a"] != "b" {
		t.Fatalf("decoded %#v", p)
	}
	if f, ok := p.A.(float64); !ok || f != 0 || !math.Signbit(f) {
		t.Fatalf("-0 decoded as %#v, want negative zero", p.A)
	}
	if want := time.Date(2026, 12, 2, 9, 0, 0, 5e8, time.UTC); !p.T.Equal(want) {
		t.Fatalf("time %v, want %v", p.T, want)
	}
	want := map[string]any{"k": []any{1.0, "2", nil, map[string]any{"z": false}}}
	if !reflect.DeepEqual(p.M, want) {
		t.Fatalf("map %#v, want %#v", p.M, want)
	}
}

func TestScannerUseNumber(t *testing.T) {
	var p probe
	if err := decodeProbe([]byte(`{"a":[1,2.50,-3e2],"m":{"x":12345678901234567890}}`), &p, true); err != nil {
		t.Fatal(err)
	}
	want := []any{json.Number("1"), json.Number("2.50"), json.Number("-3e2")}
	if !reflect.DeepEqual(p.A, want) || p.M["x"] != json.Number("12345678901234567890") {
		t.Fatalf("decoded %#v %#v", p.A, p.M)
	}
}

// TestScannerErrorsSayWhat: the Scanner's own errors name the offset, the
// key and what is wrong.
func TestScannerErrorsSayWhat(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"n":1.5}`, `byte 5: key "n": want an integer, got 1.5`},
		{`{"s":5}`, `key "s": want a string, got a number`},
		{`{"b":"yes"}`, `key "b": want a boolean, got a string`},
		{`{"m":[1]}`, `key "m": want an object, got an array`},
		{`{"n":99999999999999999999}`, `number 99999999999999999999 overflows int64`},
		{`{"s":"x"`, `unexpected end of JSON input`},
		{`{"s":"x"} x`, `invalid character 'x' after top-level value`},
		{`{"a":[1,]}`, `invalid character ']' in numeric literal`},
		{"{\"s\":\"a\x01\"}", `invalid character '\x01' in string literal`},
		{`{"t":"yesterday"}`, `key "t": parsing time`},
		{`{"a":1e400}`, `number 1e400 does not fit a float64`},
	} {
		var p probe
		err := decodeProbe([]byte(tc.in), &p, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to say %q", tc.in, err, tc.want)
		}
	}
}

func TestScannerLeavesDeepNestingToEncodingJSON(t *testing.T) {
	deep := `{"a":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + `}`
	var p probe
	if err := decodeProbe([]byte(deep), &p, false); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("nesting %d deep: %v, want ErrUnsupported", MaxDepth+1, err)
	}
	ok := `{"a":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`
	if err := decodeProbe([]byte(ok), &p, false); err != nil {
		t.Fatalf("nesting %d deep: %v", MaxDepth, err)
	}
}

func TestValidNumber(t *testing.T) {
	for n, want := range map[string]bool{"0": true, "-1.5e+3": true, "1E9": true, "": false, "01": false, "1.": false,
		"+1": false, "0x10": false, "1e": false, "-": false, " 1": false, "NaN": false} {
		if ValidNumber(n) != want {
			t.Errorf("ValidNumber(%q) = %v", n, !want)
		}
	}
}

// FuzzScanner: for any input the Scanner and json.Unmarshal agree, as
// they do for an untyped value with and without UseNumber.
func FuzzScanner(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, data)

		s := NewScanner(data)
		var fast any
		s.Any(&fast)
		ferr := s.End()
		if errors.Is(ferr, ErrUnsupported) {
			return
		}
		var slow any
		serr := json.Unmarshal(data, &slow)
		if (ferr == nil) != (serr == nil) || ferr == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: any: scanner %#v (%v), encoding/json %#v (%v)", data, fast, ferr, slow, serr)
		}
		if ferr == nil {
			sameZeros(t, data, fast, slow)
		}

		s = NewScanner(data)
		s.UseNumber = true
		s.Any(&fast)
		ferr = s.Err() // a Decoder reads the first value only
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		serr = dec.Decode(&slow)
		if errors.Is(ferr, ErrUnsupported) {
			return
		}
		if (ferr == nil) != (serr == nil) || ferr == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: decoder: scanner %#v (%v), encoding/json %#v (%v)", data, fast, ferr, slow, serr)
		}
	})
}
