// Package wirejson holds the pieces the hand-written JSON codecs of the
// hot wire messages are built from (jobs.Job, jobs.Report, jobs.Verdict,
// instance.Fact): a Scanner that fills a struct's fields the way
// encoding/json's Unmarshal does, and appenders that write the bytes
// encoding/json's Marshal writes.
//
// JSON stays the wire format (docs/worker-protocol.md); what the codecs
// save is reflection. encoding/json finds a struct's fields by name in a
// cache and moves every value through reflect.Value; for the small fixed
// messages a job's life is made of, that was about 6 % of the CPU of
// `jetbpm bench --scenario one-task`, and the codecs spend about a third
// of it (docs/performance.md).
//
// Agreement with encoding/json is the contract, and the fuzz tests here
// and next to each codec check it:
//
//   - A codec decodes with a Scanner first. When the Scanner reports an
//     error, the codec decodes the message again with encoding/json, so a
//     malformed message gets encoding/json's error word for word, and a
//     shape the Scanner leaves alone (ErrUnsupported: nesting deeper than
//     MaxDepth) is decoded all the same. The Scanner's own errors name the
//     byte offset and, inside an object, the key.
//   - The appenders write what encoding/json writes: keys of a map sorted,
//     <, > and & escaped as \u003c…, invalid UTF-8 as \ufffd, floats in
//     ES6 form. A value of a type they do not know (a handler's struct, a
//     time.Time in a map) is written by json.Marshal, so the bytes and any
//     error are encoding/json's whatever the value.
package wirejson

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is how deeply objects and arrays may nest before the Scanner
// leaves a message to encoding/json (which allows 10,000 levels).
const MaxDepth = 256

// ErrUnsupported marks a well-formed message the Scanner does not decode
// itself; the codec hands it to encoding/json.
var ErrUnsupported = errors.New("wirejson: left to encoding/json")

// A Scanner reads one JSON text into Go values with encoding/json's
// semantics for the targets its methods name. Errors are sticky: after
// the first one every method does nothing and Err returns it.
//
// A struct decoder reads like this:
//
//	s := wirejson.NewScanner(data)
//	if !s.Null() && s.Object() {
//		for s.More() {
//			switch s.Field(fields) {
//			case "id":
//				s.String(&v.ID)
//			default:
//				s.Skip()
//			}
//		}
//	}
//	return s.End()
type Scanner struct {
	data  []byte
	pos   int
	depth int
	// first is set by Object until More reads the object's first key.
	first bool
	key   []byte // the key More read last
	buf   []byte // a key with escapes, unescaped
	vbuf  []byte // a string value with escapes, unescaped
	err   error
	// UseNumber makes Any decode numbers as json.Number, as
	// json.Decoder.UseNumber does; otherwise they are float64.
	UseNumber bool
}

// NewScanner returns a Scanner over data.
func NewScanner(data []byte) Scanner { return Scanner{data: data} }

// Fail records err as the Scanner's error, unless it has one.
func (s *Scanner) Fail(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("wirejson: byte %d: %w", s.pos, err)
	}
}

// Err returns the first error, or nil.
func (s *Scanner) Err() error { return s.err }

// End returns the first error, or an error if anything but white space
// follows the value read (json.Unmarshal's rule).
func (s *Scanner) End() error {
	if s.err == nil {
		s.skipSpace()
		if s.pos < len(s.data) {
			s.syntax("after top-level value")
		}
	}
	return s.err
}

func (s *Scanner) fail(format string, args ...any) {
	if s.err != nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if s.key != nil {
		msg = fmt.Sprintf("key %q: %s", s.key, msg)
	}
	s.err = fmt.Errorf("wirejson: byte %d: %s", s.pos, msg)
}

// syntax fails on the byte at s.pos.
func (s *Scanner) syntax(where string) {
	if s.pos >= len(s.data) {
		s.fail("unexpected end of JSON input")
		return
	}
	s.fail("invalid character %s %s", quoteChar(s.data[s.pos]), where)
}

// wrongType fails because the value at s.pos is not of the kind wanted.
func (s *Scanner) wrongType(want string) {
	if got := kindOf(s.data[s.pos]); got != "" {
		s.fail("want %s, got %s", want, got)
		return
	}
	s.syntax("looking for beginning of value")
}

func kindOf(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if c == '-' || '0' <= c && c <= '9' {
		return "a number"
	}
	return ""
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	return strconv.QuoteRune(rune(c))
}

func (s *Scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte; at the end of the
// input it fails and returns 0.
func (s *Scanner) peek() byte {
	if s.err != nil {
		return 0
	}
	s.skipSpace()
	if s.pos >= len(s.data) {
		s.syntax("")
		return 0
	}
	c := s.data[s.pos]
	if c == 0 { // never valid outside a string; 0 means failed
		s.syntax("looking for beginning of value")
	}
	return c
}

// Null consumes a null and reports whether it did.
func (s *Scanner) Null() bool {
	if s.peek() != 'n' {
		return false
	}
	s.literal("null")
	return s.err == nil
}

func (s *Scanner) literal(word string) {
	for i := 0; i < len(word); i++ {
		if s.pos >= len(s.data) || s.data[s.pos] != word[i] {
			s.syntax("in literal " + word)
			return
		}
		s.pos++
	}
}

// Object consumes the { of an object; More then reads its keys.
func (s *Scanner) Object() bool {
	switch c := s.peek(); {
	case s.err != nil:
		return false
	case c != '{':
		s.wrongType("an object")
		return false
	}
	if !s.enter() {
		return false
	}
	s.pos++
	s.first = true
	return true
}

func (s *Scanner) enter() bool {
	if s.depth++; s.depth > MaxDepth {
		s.err = fmt.Errorf("%w: nested deeper than %d levels at byte %d", ErrUnsupported, MaxDepth, s.pos)
		return false
	}
	return true
}

// More reads the next key of the object and its colon, and reports
// whether there is one; at the object's } it consumes it and returns
// false. The caller then reads the key's value, or Skips it.
func (s *Scanner) More() bool {
	c := s.peek()
	if s.err != nil {
		return false
	}
	switch {
	case c == '}':
		s.pos++
		s.depth--
		s.first, s.key = false, nil
		return false
	case !s.first && c != ',':
		s.syntax("after object key:value pair")
		return false
	case !s.first:
		s.pos++
		if c = s.peek(); s.err != nil {
			return false
		}
	}
	s.first = false
	if c != '"' {
		s.syntax("looking for beginning of object key string")
		return false
	}
	raw, plain := s.scanString()
	if s.err != nil {
		return false
	}
	if plain {
		s.key = raw
	} else {
		s.buf = unquote(s.buf[:0], raw)
		s.key = s.buf
	}
	if s.peek() != ':' {
		if s.err == nil {
			s.syntax("after object key")
		}
		return false
	}
	s.pos++
	return true
}

// Key returns the key More read last; it is valid until the next call.
func (s *Scanner) Key() []byte { return s.key }

// scanString consumes a string, returning what is between its quotes and
// whether that is already its value (no escapes, valid UTF-8).
func (s *Scanner) scanString() (raw []byte, plain bool) {
	start := s.pos + 1
	plain, ascii := true, true
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			raw = s.data[start:i]
			if !ascii && plain {
				plain = utf8.Valid(raw)
			}
			return raw, plain
		case c == '\\':
			plain = false
			i++
			if i >= len(s.data) {
				break
			}
			switch s.data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for k := 1; k <= 4; k++ {
					if i+k >= len(s.data) {
						s.pos = len(s.data)
						s.syntax("")
						return nil, false
					}
					if !isHex(s.data[i+k]) {
						s.pos = i + k
						s.syntax("in \\u hexadecimal character escape")
						return nil, false
					}
				}
				i += 4
			default:
				s.pos = i
				s.syntax("in string escape code")
				return nil, false
			}
		case c < 0x20:
			s.pos = i
			s.syntax("in string literal")
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	s.pos = len(s.data)
	s.syntax("")
	return nil, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unquote appends the value of a string's raw contents (escapes checked
// by scanString) to b as encoding/json does: invalid UTF-8 and unpaired
// surrogates become U+FFFD.
func unquote(b, raw []byte) []byte {
	for r := 0; r < len(raw); {
		c := raw[r]
		switch {
		case c == '\\':
			switch e := raw[r+1]; e {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := hex4(raw[r+2:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(raw) && raw[r] == '\\' && raw[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(raw[r+2:])); dec != unicode.ReplacementChar {
							b = utf8.AppendRune(b, dec)
							r += 6
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, e)
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(raw[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	return b
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// text consumes a string and returns its value.
func (s *Scanner) text() string {
	raw, plain := s.scanString()
	if plain {
		return string(raw)
	}
	if s.err != nil {
		return ""
	}
	s.vbuf = unquote(s.vbuf[:0], raw)
	return string(s.vbuf)
}

// scanNumber consumes a number and returns its text.
func (s *Scanner) scanNumber() []byte {
	start, i, d := s.pos, s.pos, s.data
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && '1' <= d[i] && d[i] <= '9':
		for i++; i < len(d) && '0' <= d[i] && d[i] <= '9'; i++ {
		}
	default:
		s.pos = i
		s.syntax("in numeric literal")
		return nil
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			s.syntax("after decimal point in numeric literal")
			return nil
		}
		for ; i < len(d) && '0' <= d[i] && d[i] <= '9'; i++ {
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			s.pos = i
			s.syntax("in exponent of numeric literal")
			return nil
		}
		for ; i < len(d) && '0' <= d[i] && d[i] <= '9'; i++ {
		}
	}
	s.pos = i
	return d[start:i]
}

// ValidNumber reports whether n is a JSON number.
func ValidNumber(n string) bool {
	s := Scanner{data: []byte(n)}
	return len(n) > 0 && s.scanNumber() != nil && s.pos == len(n)
}

// Raw consumes any value and returns its text.
func (s *Scanner) Raw() []byte {
	s.peek()
	start := s.pos
	s.Skip()
	if s.err != nil {
		return nil
	}
	return s.data[start:s.pos]
}

// Skip consumes any value, checking its syntax.
func (s *Scanner) Skip() {
	switch c := s.peek(); c {
	case 0:
	case '{':
		if s.Object() {
			for s.More() {
				s.Skip()
			}
		}
	case '[':
		if !s.enter() {
			return
		}
		s.pos++
		if s.peek() == ']' {
			s.pos++
			s.depth--
			return
		}
		for s.err == nil {
			s.Skip()
			switch s.peek() {
			case ',':
				s.pos++
			case ']':
				s.pos++
				s.depth--
				return
			case 0:
			default:
				s.syntax("after array element")
			}
		}
	case '"':
		s.scanString()
	case 't':
		s.literal("true")
	case 'f':
		s.literal("false")
	case 'n':
		s.literal("null")
	default:
		s.scanNumber()
	}
}
