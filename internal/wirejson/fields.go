package wirejson

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// The Scanner's methods for struct fields: each reads one value into a Go
// target with what encoding/json does for a target of that type.

// Fields are a struct's JSON field names, for Field.
type Fields struct{ names, folded []string }

// NewFields lists the JSON names of a struct's fields.
func NewFields(names ...string) *Fields {
	f := &Fields{names: names}
	for _, n := range names {
		f.folded = append(f.folded, string(foldName(nil, []byte(n))))
	}
	return f
}

// Field returns the field the last key names, "" for none: the field of
// that exact name, else one whose name equals the key but for case
// (encoding/json's rule, folding non-ASCII letters as it does).
func (s *Scanner) Field(f *Fields) string {
	for _, n := range f.names {
		if string(s.key) == n {
			return n
		}
	}
	var arr [32]byte
	folded := foldName(arr[:0], s.key)
	for i, n := range f.folded {
		if string(folded) == n {
			return f.names[i]
		}
	}
	return ""
}

// foldName is encoding/json's: ASCII letters in upper case, any other
// rune as the smallest rune of its case-folding orbit.
func foldName(out, in []byte) []byte {
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		out = utf8.AppendRune(out, r)
		i += n
	}
	return out
}

// String decodes a string into *dst; null leaves it.
func (s *Scanner) String(dst *string) {
	switch s.peek() {
	case '"':
		*dst = s.text()
	case 'n':
		s.literal("null")
	case 0:
	default:
		s.wrongType("a string")
	}
}

// Bool decodes a boolean into *dst; null leaves it.
func (s *Scanner) Bool(dst *bool) {
	switch s.peek() {
	case 't':
		s.literal("true")
		*dst = true
	case 'f':
		s.literal("false")
		*dst = false
	case 'n':
		s.literal("null")
	case 0:
	default:
		s.wrongType("a boolean")
	}
}

// Int64 decodes an integer into *dst; null leaves it. A fraction, an
// exponent or a value out of range is an error, as with encoding/json.
func (s *Scanner) Int64(dst *int64) {
	switch c := s.peek(); {
	case c == 'n':
		s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		if n, ok := s.integer(); ok {
			*dst = n
		}
	case c != 0:
		s.wrongType("an integer")
	}
}

// Int is Int64 for an int.
func (s *Scanner) Int(dst *int) {
	n := int64(*dst)
	s.Int64(&n)
	if s.err == nil {
		if int64(int(n)) != n {
			s.fail("integer %d overflows int", n)
			return
		}
		*dst = int(n)
	}
}

// IntPtr decodes an integer into **dst, allocating it; null sets nil.
func (s *Scanner) IntPtr(dst **int) {
	if s.Null() {
		*dst = nil
		return
	}
	if s.err != nil {
		return
	}
	var n int
	if *dst != nil {
		n = **dst
	}
	s.Int(&n)
	if s.err == nil {
		if *dst == nil {
			*dst = new(int)
		}
		**dst = n
	}
}

func (s *Scanner) integer() (int64, bool) {
	start := s.pos
	lit := s.scanNumber()
	if lit == nil {
		return 0, false
	}
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = lit[1:]
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			s.pos = start
			s.fail("want an integer, got %s", lit)
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			s.pos = start
			s.fail("number %s overflows int64", lit)
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	case neg && u <= 1<<63:
		return -int64(u-1) - 1, true
	}
	s.pos = start
	s.fail("number %s overflows int64", lit)
	return 0, false
}

// Time decodes a time with time.Time's UnmarshalJSON (RFC 3339 in a
// string, escapes not undone); null leaves it.
func (s *Scanner) Time(dst *time.Time) {
	switch s.peek() {
	case '"':
		start := s.pos
		if s.scanString(); s.err == nil {
			if err := dst.UnmarshalJSON(s.data[start:s.pos]); err != nil {
				s.pos = start
				s.fail("%v", err)
			}
		}
	case 'n':
		s.literal("null")
	case 0:
	default:
		s.wrongType("a time string")
	}
}

// TimePtr decodes a time into **dst, allocating it; null sets nil.
func (s *Scanner) TimePtr(dst **time.Time) {
	if s.Null() {
		*dst = nil
		return
	}
	if s.err != nil {
		return
	}
	if s.data[s.pos] != '"' {
		s.wrongType("a time string")
		return
	}
	if *dst == nil {
		*dst = new(time.Time)
	}
	s.Time(*dst)
}

// Map decodes an object into *dst, adding to the map if there is one
// (encoding/json merges a repeated key's objects); null sets nil.
func (s *Scanner) Map(dst *map[string]any) {
	if s.Null() {
		*dst = nil
		return
	}
	if !s.Object() {
		return
	}
	if *dst == nil {
		*dst = map[string]any{}
	}
	s.members(*dst)
}

func (s *Scanner) members(m map[string]any) {
	for s.More() {
		k := string(s.key)
		m[k] = s.anyValue()
	}
}

// StringMap decodes an object of strings into *dst, adding to the map if
// there is one; null sets nil, and a null member is "".
func (s *Scanner) StringMap(dst *map[string]string) {
	if s.Null() {
		*dst = nil
		return
	}
	if !s.Object() {
		return
	}
	if *dst == nil {
		*dst = map[string]string{}
	}
	for s.More() {
		k := string(s.key)
		var v string
		s.String(&v)
		(*dst)[k] = v
	}
}

// Any decodes any value into *dst as encoding/json does into an
// interface: objects as map[string]any, arrays as []any, numbers as
// float64 (json.Number with UseNumber).
func (s *Scanner) Any(dst *any) {
	v := s.anyValue()
	if s.err == nil {
		*dst = v
	}
}

func (s *Scanner) anyValue() any {
	switch c := s.peek(); c {
	case 0:
		return nil
	case '{':
		s.Object()
		m := map[string]any{}
		s.members(m)
		return m
	case '[':
		if !s.enter() {
			return nil
		}
		s.pos++
		a := []any{}
		if s.peek() == ']' {
			s.pos++
			s.depth--
			return a
		}
		for s.err == nil {
			a = append(a, s.anyValue())
			switch s.peek() {
			case ',':
				s.pos++
			case ']':
				s.pos++
				s.depth--
				return a
			case 0:
			default:
				s.syntax("after array element")
			}
		}
		return nil
	case '"':
		return s.text()
	case 't':
		s.literal("true")
		return true
	case 'f':
		s.literal("false")
		return false
	case 'n':
		s.literal("null")
		return nil
	}
	return s.number()
}

func (s *Scanner) number() any {
	start := s.pos
	lit := s.scanNumber()
	switch {
	case lit == nil:
		return nil
	case s.UseNumber:
		return json.Number(lit)
	}
	if f, ok := smallInt(lit); ok {
		return f
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		s.pos = start
		s.fail("number %s does not fit a float64", lit)
		return nil
	}
	return f
}

// smallInt converts an integer of at most 15 digits exactly, without
// strconv; -0 stays negative zero, as ParseFloat has it.
func smallInt(lit []byte) (float64, bool) {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	if len(lit) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range lit {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	f := float64(n)
	if neg {
		f = -f // -0 too
	}
	return f, true
}
