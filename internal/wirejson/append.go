package wirejson

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string the way json.Marshal writes
// it: ", \ and control characters escaped (\b \f \n \r \t by name), <, >
// and & as \u003c \u003e \u0026, invalid UTF-8 as \ufffd, and U+2028,
// U+2029 escaped.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat appends f as json.Marshal writes a float of bits (32 or
// 64) bits: like %g but with exponents only below 1e-6 and from 1e21,
// and no padding of the exponent. NaN and the infinities are not JSON:
// it returns false for them.
func AppendFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 → e-7
		b = b[:n-1]
	}
	return b, true
}

// AppendTime appends t as its MarshalJSON does (RFC 3339 with
// nanoseconds, quoted). A year outside 0–9999 or a zone offset of a day
// or more is json.Marshal's error.
func AppendTime(b []byte, t time.Time) ([]byte, error) {
	n0 := len(b)
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	ok := b[n0+5] == '-' // the year has four digits
	if n := len(b); ok && b[n-2] != 'Z' {
		tz := b[n-7 : n-1] // ±hh:mm
		ok = tz[0] == '+' || tz[0] == '-'
		ok = ok && (tz[1]-'0')*10+(tz[2]-'0') < 24
	}
	if !ok {
		_, err := json.Marshal(t) // its error, as json.Marshal words it
		return b[:n0], err
	}
	return b, nil
}

// maxAppendDepth is how deeply AppendValue nests by itself; deeper
// values (a map that holds itself, say) go to json.Marshal, which finds
// cycles.
const maxAppendDepth = 64

// AppendValue appends v as json.Marshal writes it. It writes nil, bool,
// string, the integer and float types, json.Number, map[string]any,
// []any, map[string]string and []string itself; any other value through
// json.Marshal.
func AppendValue(b []byte, v any) ([]byte, error) { return appendValue(b, v, 0) }

func appendValue(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxAppendDepth {
		return appendMarshal(b, v)
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		if out, ok := AppendFloat(b, x, 64); ok {
			return out, nil
		}
	case float32:
		if out, ok := AppendFloat(b, float64(x), 32); ok {
			return out, nil
		}
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case json.Number:
		if x == "" {
			return append(b, '0'), nil
		}
		if ValidNumber(string(x)) {
			return append(b, x...), nil
		}
	case map[string]any:
		return appendMap(b, x, depth+1)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case map[string]string:
		return AppendStringMap(b, x), nil
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, e)
		}
		return append(b, ']'), nil
	}
	return appendMarshal(b, v)
}

// appendMarshal appends what json.Marshal makes of v, or returns its
// error.
func appendMarshal(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, out...), nil
}

// AppendMap appends m as json.Marshal writes it: keys sorted, nil as
// null.
func AppendMap(b []byte, m map[string]any) ([]byte, error) { return appendMap(b, m, 1) }

func appendMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	if depth > maxAppendDepth {
		return appendMarshal(b, m)
	}
	var arr [16]string // most maps fit: no allocation for their keys
	b = append(b, '{')
	for i, k := range sortedKeys(arr[:0], m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, m[k], depth); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// AppendStringMap appends m as json.Marshal writes it: keys sorted, nil
// as null.
func AppendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	var arr [16]string // most maps fit: no allocation for their keys
	b = append(b, '{')
	for i, k := range sortedKeys(arr[:0], m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, k)
		b = append(b, ':')
		b = AppendString(b, m[k])
	}
	return append(b, '}')
}

// sortedKeys appends m's keys to keys and sorts them, as json.Marshal
// writes them.
func sortedKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
