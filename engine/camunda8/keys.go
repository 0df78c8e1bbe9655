// Package camunda8 holds what jetbpm's Camunda 8 doors share
// (docs/camunda8-migration.md): the int64 keys Camunda 8 clients address
// everything by, mapped onto jetbpm's ids.
package camunda8

import (
	"errors"
	"fmt"
	"strconv"
)

// A Key is a Camunda 8 key: as Zeebe lays them out, the partition in the
// high bits and a number unique within its kind below,
// partition<<PartitionShift | n. A job key's n is a delivery: the job
// message's stream sequence and its delivery count, seq<<8 | count
// (docs/camunda8-migration.md §2).
type Key int64

// Layout.
const (
	PartitionShift = 51                         // Zeebe's
	MaxPartition   = 1<<(63-PartitionShift) - 1 // 4095
	MaxCounter     = 1<<PartitionShift - 1
	countBits      = 8
	MaxJobSeq      = MaxCounter >> countBits // 2^43-1
	maxCount       = 1<<countBits - 1
)

// ErrBadKey is what every malformed key error wraps.
var ErrBadKey = errors.New("bad key")

// NewKey returns the key of number n on partition (1..MaxPartition).
func NewKey(partition int, n int64) (Key, error) {
	switch {
	case partition < 1 || partition > MaxPartition:
		return 0, fmt.Errorf("%w: partition %d is outside 1..%d", ErrBadKey, partition, MaxPartition)
	case n < 0 || n > MaxCounter:
		return 0, fmt.Errorf("%w: number %d is outside 0..%d", ErrBadKey, n, MaxCounter)
	}
	return Key(int64(partition)<<PartitionShift | n), nil
}

// JobKey returns the key of delivery count of the job message at stream
// sequence seq, on partition. A count over 255 is kept as 255.
func JobKey(partition int, seq uint64, count uint64) (Key, error) {
	switch {
	case seq == 0 || seq > MaxJobSeq:
		return 0, fmt.Errorf("%w: job sequence %d is outside 1..%d", ErrBadKey, seq, uint64(MaxJobSeq))
	case count == 0:
		return 0, fmt.Errorf("%w: a job delivery counts from 1", ErrBadKey)
	}
	return NewKey(partition, int64(seq<<countBits|min(count, maxCount)))
}

// Partition returns k's partition.
func (k Key) Partition() int { return int(int64(k) >> PartitionShift) }

// Number returns k's number within its partition.
func (k Key) Number() int64 { return int64(k) & MaxCounter }

// Job returns the delivery a job key names: the job message's stream
// sequence and the delivery count (255 for 255 and more).
func (k Key) Job() (seq, count uint64, err error) {
	n := uint64(k.Number())
	seq, count = n>>countBits, n&maxCount
	if seq == 0 || count == 0 {
		return 0, 0, fmt.Errorf("%w: %d is not a job key", ErrBadKey, int64(k))
	}
	return seq, count, nil
}

// ParseKey checks k against partitions, the number of partitions the
// engine runs (keys of partitions 1..partitions are valid).
func ParseKey(k int64, partitions int) (Key, error) {
	key := Key(k)
	switch p := key.Partition(); {
	case k < 0:
		return 0, fmt.Errorf("%w: %d is negative", ErrBadKey, k)
	case p < 1 || p > partitions:
		return 0, fmt.Errorf("%w: %d names partition %d; this engine has partitions 1..%d", ErrBadKey, k, p, partitions)
	}
	return key, nil
}

// ParseKeyString reads a key written as decimal text, as Camunda's REST
// API writes keys, and checks it as ParseKey does.
func ParseKeyString(s string, partitions int) (Key, error) {
	k, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(k, 10) != s {
		return 0, fmt.Errorf("%w: %q is not a decimal int64 as keys are written", ErrBadKey, s)
	}
	return ParseKey(k, partitions)
}

// String writes k as decimal text.
func (k Key) String() string { return strconv.FormatInt(int64(k), 10) }
