package streams

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// msgpack's loose interface decoding already maps every number to int64,
// uint64 or float64, but it returns uint64 for any value a foreign encoder
// wrote with an unsigned code (Python and JavaScript do for every positive
// integer above 127), and it decodes times in the local zone. The decoder
// here builds JSON-like values itself: int64 unless the value does not fit,
// times in UTC, string map keys.

// The decoders below run on bodies checkWellFormed accepted, so container
// lengths are plausible and nesting is bounded.

func (st *decoderState) peekNil() bool {
	c, err := st.dec.PeekCode()
	return err == nil && c == msgpcode.Nil
}

// decodeMapHook is msgpack's map decoder: every map that msgpack meets while
// decoding into an interface value comes here.
func (st *decoderState) decodeMapHook(*msgpack.Decoder) (any, error) {
	return st.decodeMap()
}

func (st *decoderState) decodeValue() (any, error) {
	c, err := st.dec.PeekCode()
	if err != nil {
		return nil, err
	}
	switch {
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		return st.decodeMap()
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		return st.decodeArray()
	case msgpcode.IsString(c):
		return st.dec.DecodeString()
	case msgpcode.IsFixedNum(c) || c >= msgpcode.Int8 && c <= msgpcode.Int64:
		return st.dec.DecodeInt64()
	case c >= msgpcode.Uint8 && c <= msgpcode.Uint64:
		// Decoded here rather than loosely so the common case boxes once.
		n, err := st.dec.DecodeUint64()
		if n <= math.MaxInt64 {
			return int64(n), err
		}
		return n, err
	case c == msgpcode.Double:
		return st.dec.DecodeFloat64()
	}
	x, err := st.dec.DecodeInterfaceLoose()
	if err != nil {
		return nil, err
	}
	return jsonScalar(x), nil
}

func (st *decoderState) decodeMap() (map[string]any, error) {
	n, err := st.dec.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, nil
	}
	m := make(map[string]any, n)
	for range n {
		k, err := st.decodeKey()
		if err != nil {
			return nil, err
		}
		if m[k], err = st.decodeValue(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (st *decoderState) decodeArray() ([]any, error) {
	n, err := st.dec.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, nil
	}
	s := make([]any, n)
	for i := range s {
		if s[i], err = st.decodeValue(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// decodeKey reads a map key as a string. Integer keys, which some encoders
// write for sparse arrays, become their decimal text as in JSON.
func (st *decoderState) decodeKey() (string, error) {
	c, err := st.dec.PeekCode()
	if err != nil {
		return "", err
	}
	if msgpcode.IsString(c) || msgpcode.IsBin(c) {
		return st.dec.DecodeString()
	}
	k, err := st.dec.DecodeInterfaceLoose()
	if err != nil {
		return "", err
	}
	switch k := k.(type) {
	case int64:
		return strconv.FormatInt(k, 10), nil
	case uint64:
		return strconv.FormatUint(k, 10), nil
	}
	return "", fmt.Errorf("map key of type %T is not a string", k)
}

// jsonScalar maps what msgpack's loose decoding returns for a scalar to its
// JSON-like form.
func jsonScalar(x any) any {
	switch x := x.(type) {
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
	case time.Time:
		return x.UTC()
	}
	return x
}
