package streams

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// checkWellFormed verifies, without allocating, that body is exactly one
// msgpack value, nested at most maxDepth deep, whose every container claims
// no more elements than there are bytes left. msgpack preallocates slices
// and maps from the claimed length (up to a million elements), so a 7-byte
// message could otherwise cost ~100 MB, and nesting is recursion in the
// decoder. After this check a decode costs in proportion to the input.
func checkWellFormed(body []byte) error {
	pending := []int{1} // values still to read at each open level; the root holds one
	i := 0
	for len(pending) > 0 {
		top := len(pending) - 1
		if pending[top] == 0 {
			pending = pending[:top]
			continue
		}
		pending[top]--
		if i >= len(body) {
			return errTruncated
		}
		c := body[i]
		i++
		skip, children, err := msgpackItem(c, body[i:])
		if err != nil {
			return err
		}
		if skip > len(body)-i {
			return errTruncated
		}
		i += skip
		if children > 0 {
			if children > len(body)-i {
				return fmt.Errorf("container of %d values in %d remaining bytes", children, len(body)-i)
			}
			if len(pending) > maxDepth {
				return errTooDeep
			}
			pending = append(pending, children)
		}
	}
	if i != len(body) {
		return fmt.Errorf("%d unexpected bytes after the value", len(body)-i)
	}
	return nil
}

// maxDepth bounds nesting so hostile input cannot exhaust the stack of the
// decoders, which recurse.
const maxDepth = 10000

var (
	errTruncated = errors.New("value truncated")
	errTooDeep   = fmt.Errorf("value nested deeper than %d levels", maxDepth)
)

// msgpackItem reads the header of one msgpack item from its first byte c
// and the bytes after it: how many bytes to skip past the header (length
// fields and payload), and how many child values follow (2 per map entry).
func msgpackItem(c byte, rest []byte) (skip, children int, err error) {
	size := func(n int) (int, error) { // a big-endian length field of n bytes
		if len(rest) < n {
			return 0, errTruncated
		}
		switch n {
		case 1:
			return int(rest[0]), nil
		case 2:
			return int(binary.BigEndian.Uint16(rest)), nil
		}
		return int(binary.BigEndian.Uint32(rest)), nil
	}
	withLen := func(n, extra int) (int, int, error) { // length field then payload
		l, err := size(n)
		return n + l + extra, 0, err
	}
	container := func(n, per int) (int, int, error) { // length field then children
		l, err := size(n)
		return n, l * per, err
	}
	switch {
	case c <= 0x7f || c >= 0xe0: // positive / negative fixint
		return 0, 0, nil
	case c <= 0x8f: // fixmap
		return 0, int(c&0x0f) * 2, nil
	case c <= 0x9f: // fixarray
		return 0, int(c & 0x0f), nil
	case c <= 0xbf: // fixstr
		return int(c & 0x1f), 0, nil
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return 0, 0, nil
	case 0xc4, 0xc5, 0xc6: // bin 8/16/32
		return withLen(1<<(c-0xc4), 0)
	case 0xc7, 0xc8, 0xc9: // ext 8/16/32: length, type byte, data
		return withLen(1<<(c-0xc7), 1)
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return 4, 0, nil
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return 8, 0, nil
	case 0xcc, 0xd0: // uint8, int8
		return 1, 0, nil
	case 0xcd, 0xd1: // uint16, int16
		return 2, 0, nil
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1/2/4/8/16: type byte, data
		return 1 + 1<<(c-0xd4), 0, nil
	case 0xd9, 0xda, 0xdb: // str 8/16/32
		return withLen(1<<(c-0xd9), 0)
	case 0xdc, 0xdd: // array 16/32
		return container(2<<(c-0xdc), 1)
	case 0xde, 0xdf: // map 16/32
		return container(2<<(c-0xde), 2)
	}
	return 0, 0, fmt.Errorf("invalid msgpack code 0x%02X", c)
}
