package streams

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// CodecVersion is the envelope version Marshal writes: 2 carries a
// checksum of the body. Version 1 (no checksum) is still read: records
// stored before checksums, and messages other languages write.
const CodecVersion = 2

// ErrDamaged is the error Unmarshal wraps when a version 2 envelope's body
// does not match its checksum: the record was damaged after it was
// written (a flipped bit, a torn write), not malformed by its writer.
var ErrDamaged = errors.New("damaged: checksum mismatch")

// castagnoli is CRC-32C, which the CPU computes (SSE 4.2, ARMv8 CRC).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sumLen is the length of a version 2 envelope's checksum.
const sumLen = 4

// codecMagic opens every envelope. 0xC1 is the one byte msgpack never uses,
// so an envelope cannot be mistaken for bare msgpack (or JSON) and vice versa.
const codecMagic = 0xC1

// Enveloped reports whether data starts as Marshal's output does, so a
// reader that also takes JSON can tell the two apart by the first byte.
func Enveloped(data []byte) bool { return len(data) > 0 && data[0] == codecMagic }

// readableVersions are the envelope versions Unmarshal accepts.
var readableVersions = []byte{1, CodecVersion}

// maxPooledBuffer keeps an occasional huge message from pinning its buffer
// in the pool forever.
const maxPooledBuffer = 64 << 10

// Marshal encodes v as msgpack inside the jetbpm envelope: 0xC1, the codec
// version (2), the CRC-32C of the body (4 bytes, big-endian), then the
// msgpack body.
//
// Struct fields are named by their `msgpack:"name,omitempty"` tags (the Go
// field name without one). Integers take their most compact form. Keys of
// map[string]any, map[string]string and map[string]bool are sorted, so equal
// values of types built from those encode to equal bytes; other map types
// keep Go's random order.
func Marshal(v any) ([]byte, error) {
	st := encoders.Get().(*encoderState)
	defer st.release()

	st.buf.Reset()
	st.buf.Write([]byte{codecMagic, CodecVersion, 0, 0, 0, 0})
	if err := st.enc.Encode(v); err != nil {
		return nil, fmt.Errorf("streams: encode %T: %w", v, err)
	}
	out := bytes.Clone(st.buf.Bytes())
	binary.BigEndian.PutUint32(out[2:], crc32.Checksum(out[2+sumLen:], castagnoli))
	return out, nil
}

type encoderState struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

var encoders = sync.Pool{New: func() any {
	st := &encoderState{}
	st.enc = msgpack.NewEncoder(&st.buf)
	st.enc.SetSortMapKeys(true)
	st.enc.UseCompactInts(true)
	return st
}}

func (st *encoderState) release() {
	if st.buf.Cap() <= maxPooledBuffer {
		encoders.Put(st)
	}
}

// Unmarshal decodes an envelope written by Marshal into v, a non-nil pointer.
//
// Values decoded into any (directly, or inside []any, map[string]any or a
// struct field) are JSON-like whoever encoded them: nil, bool, string, int64,
// uint64 (only above math.MaxInt64), float64, []any, map[string]any, plus
// time.Time. Every decoded time.Time is in UTC, so a checkpoint decodes to
// the same value on every node.
//
// Unmarshal never panics on bad input: an empty, foreign, truncated or
// trailing-garbage input is an error, and so is an unknown envelope version.
// A version 2 body that does not match its checksum is an error wrapping
// ErrDamaged, before anything of it is decoded.
func Unmarshal(data []byte, v any) (err error) {
	body, err := openEnvelope(data)
	if err != nil {
		return err
	}
	if err := checkWellFormed(body); err != nil {
		return fmt.Errorf("streams: decode %T: %w", v, err)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("streams: decode into %T: need a non-nil pointer", v)
	}

	// Decoders are not pooled: BenchmarkUnmarshalCheckpointLike measured
	// no gain beyond ~200 B per call.
	st := newDecoderState(body)
	defer func() {
		// msgpack's reflection can panic on odd target types; a decoder
		// fed from the network must turn that into an error.
		if r := recover(); r != nil {
			err = fmt.Errorf("streams: decode %T: %v", v, r)
		}
	}()

	direct, err := st.decodeInto(v)
	if err != nil {
		return fmt.Errorf("streams: decode %T: %w", v, err)
	}
	if n := st.r.Len(); n > 0 {
		return fmt.Errorf("streams: decode %T: %d unexpected bytes after the value", v, n)
	}
	if !direct {
		normalize(rv.Elem())
	}
	return nil
}

// openEnvelope checks the envelope and returns the msgpack body.
func openEnvelope(data []byte) ([]byte, error) {
	switch {
	case len(data) == 0:
		return nil, errors.New("streams: decode: empty input")
	case data[0] != codecMagic:
		return nil, fmt.Errorf("streams: decode: not a jetbpm envelope (first byte 0x%02X, want 0x%02X)", data[0], codecMagic)
	case len(data) < 2:
		return nil, errors.New("streams: decode: envelope truncated before its version byte")
	case bytes.IndexByte(readableVersions, data[1]) < 0:
		return nil, fmt.Errorf("streams: decode: codec version %d is unknown; this build reads version(s) %v", data[1], readableVersions)
	case len(data) == 2:
		return nil, errors.New("streams: decode: envelope has no body")
	case data[1] == 1:
		return data[2:], nil
	case len(data) < 2+sumLen:
		return nil, errors.New("streams: decode: envelope truncated in its checksum")
	case len(data) == 2+sumLen:
		return nil, errors.New("streams: decode: envelope has no body")
	}
	body := data[2+sumLen:]
	if want, got := binary.BigEndian.Uint32(data[2:]), crc32.Checksum(body, castagnoli); got != want {
		return nil, fmt.Errorf("streams: decode: %w (stored %08x, body %08x, %d bytes)", ErrDamaged, want, got, len(body))
	}
	return body, nil
}

type decoderState struct {
	r   bytes.Reader
	dec *msgpack.Decoder
}

func newDecoderState(body []byte) *decoderState {
	st := &decoderState{}
	st.r.Reset(body)
	st.dec = msgpack.NewDecoder(&st.r)
	st.dec.UseLooseInterfaceDecoding(true)
	st.dec.SetMapDecoder(st.decodeMapHook)
	return st
}

// decodeInto decodes the body into v. The JSON-like targets take a direct
// path that builds the value itself (direct is true); everything else goes
// through msgpack's reflection, and normalize fixes what that left in
// interface values.
func (st *decoderState) decodeInto(v any) (direct bool, err error) {
	switch p := v.(type) {
	case *any:
		*p, err = st.decodeValue()
		return true, err
	case *map[string]any:
		if st.peekNil() {
			*p = nil
			return true, st.dec.DecodeNil()
		}
		*p, err = st.decodeMap()
		return true, err
	case *[]any:
		if st.peekNil() {
			*p = nil
			return true, st.dec.DecodeNil()
		}
		*p, err = st.decodeArray()
		return true, err
	}
	return false, st.dec.Decode(v)
}
