// Package lost is what the engine knows of damage to its store
// (docs/reliability.md, "A damaged store"): the high-water marks that show a
// stream went back, the instances a cross-check finds named by jobs,
// timers, tasks or incidents but without a checkpoint, and the records an
// operator acts on. It imports no NATS: the engine reads the store and
// hands what it found to these types.
//
// A stream's last sequence only ever grows: a write takes the next number,
// and deleting, expiring or acknowledging messages leaves it where it is.
// So a last sequence below one seen before means the store lost its tail
// (a block truncated, a file lost, the wrong backup restored), and the
// numbers from there on will be handed out again to new writes.
//
//	marks := lost.Marks{Streams: map[string]uint64{"KV_jetbpm-instances": 1000}}
//	gaps := marks.Compare(map[string]uint64{"KV_jetbpm-instances": 950})
//	// gaps[0]: KV_jetbpm-instances went back from 1000 to 950
package lost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Marks are the last sequences of the store's streams, taken after the
// store made them durable: none of them may be lower later.
type Marks struct {
	// Streams maps a stream's name to its last sequence.
	Streams map[string]uint64 `json:"streams"`
	// At is when the marks were taken.
	At time.Time `json:"at"`
}

// Merge returns the marks of m and o together: the higher sequence of each
// stream, the later time.
func (m Marks) Merge(o Marks) Marks {
	out := Marks{Streams: maps.Clone(m.Streams), At: m.At}
	if out.Streams == nil {
		out.Streams = map[string]uint64{}
	}
	for name, seq := range o.Streams {
		out.Streams[name] = max(out.Streams[name], seq)
	}
	if o.At.After(out.At) {
		out.At = o.At
	}
	return out
}

// Covers reports whether m holds every sequence o does, as high or higher:
// writing o over m would change nothing.
func (m Marks) Covers(o Marks) bool {
	for name, seq := range o.Streams {
		if m.Streams[name] < seq {
			return false
		}
	}
	return true
}

// A Gap is a stream whose last sequence is below its mark.
type Gap struct {
	Stream string `msgpack:"stream" json:"stream"`
	Marked uint64 `msgpack:"marked" json:"marked"`                 // the mark
	Found  uint64 `msgpack:"found" json:"found"`                   // the stream's last sequence now; 0 when the stream is gone
	Gone   bool   `msgpack:"gone,omitempty" json:"gone,omitempty"` // the stream does not exist
}

func (g Gap) String() string {
	if g.Gone {
		return fmt.Sprintf("stream %s is gone (its last sequence was marked at %d)", g.Stream, g.Marked)
	}
	return fmt.Sprintf("stream %s went back from sequence %d to %d: up to %d stored messages lost, and their sequence numbers are handed out again",
		g.Stream, g.Marked, g.Found, g.Marked-g.Found)
}

// Compare returns the streams of m whose last sequence in found is below
// their mark, by name; a marked stream missing from found is gone.
func (m Marks) Compare(found map[string]uint64) []Gap {
	var gaps []Gap
	for _, name := range slices.Sorted(maps.Keys(m.Streams)) {
		marked := m.Streams[name]
		seq, ok := found[name]
		switch {
		case !ok && marked > 0:
			gaps = append(gaps, Gap{Stream: name, Marked: marked, Gone: true})
		case seq < marked:
			gaps = append(gaps, Gap{Stream: name, Marked: marked, Found: seq})
		}
	}
	return gaps
}

// fileMagic opens a marks file; the checksum line follows it.
const fileMagic = "jetbpm-marks 1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeFile returns m as the marks file holds it: a first line naming the
// format, a second with the CRC-32C of the rest, then m as JSON.
func (m Marks) EncodeFile() []byte {
	body, _ := json.Marshal(m) // a map of uint64 and a time: cannot fail
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n%08x\n", fileMagic, crc32.Checksum(body, castagnoli))
	b.Write(body)
	b.WriteByte('\n')
	return b.Bytes()
}

// ErrDamagedMarks is what DecodeFile's errors wrap.
var ErrDamagedMarks = errors.New("marks unreadable")

// DecodeFile reads a marks file EncodeFile wrote; damage to it is an
// error wrapping ErrDamagedMarks, never marks that are wrong.
func DecodeFile(data []byte) (Marks, error) {
	m, err := decodeFile(data)
	if err != nil {
		return Marks{}, fmt.Errorf("%w: %w", ErrDamagedMarks, err)
	}
	return m, nil
}

func decodeFile(data []byte) (Marks, error) {
	magic, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok || string(magic) != fileMagic {
		return Marks{}, errors.New("not a jetbpm marks file (first line)")
	}
	sumLine, body, ok := bytes.Cut(rest, []byte("\n"))
	if !ok || len(sumLine) != 8 {
		return Marks{}, errors.New("no checksum line")
	}
	want, err := strconv.ParseUint(string(sumLine), 16, 32)
	if err != nil {
		return Marks{}, fmt.Errorf("checksum line %q: %w", sumLine, err)
	}
	body = bytes.TrimSuffix(body, []byte("\n"))
	if got := crc32.Checksum(body, castagnoli); uint64(got) != want {
		return Marks{}, fmt.Errorf("damaged: checksum %08x, body %08x", want, got)
	}
	var m Marks
	if err := json.Unmarshal(body, &m); err != nil {
		return Marks{}, err
	}
	return m, nil
}
