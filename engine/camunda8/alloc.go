package camunda8

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
)

// BlockSize is how many key numbers an Allocator reserves at a time.
const BlockSize = 1024

// counterKey is the bucket entry holding the next unreserved number.
const counterKey = "counter"

// An Allocator hands out key numbers unique across every engine node: it
// reserves blocks of BlockSize from a counter entry of a KV bucket with a
// compare-and-set, and hands them out one by one. A restart skips the
// rest of its block. Safe for concurrent use.
type Allocator struct {
	kv        jetstream.KeyValue
	mu        sync.Mutex
	next, end int64 // next free number of the block; end: one past it
	sync      streams.Syncer
}

// NewAllocator allocates from the counter of bucket kv.
func NewAllocator(kv jetstream.KeyValue) *Allocator { return &Allocator{kv: kv} }

// reserveAttempts bounds the compare-and-set retries of one reservation.
const reserveAttempts = 20

// Next returns a new number, 1..MaxCounter.
func (a *Allocator) Next(ctx context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == a.end {
		start, err := a.reserve(ctx)
		if err != nil {
			return 0, err
		}
		// Durable before its first number is used: a block lost in a
		// power cut would be reserved, and its keys handed out, again.
		if err := a.sync.Sync(ctx); err != nil {
			return 0, fmt.Errorf("key counter: %w", err)
		}
		a.next, a.end = start, start+BlockSize
	}
	n := a.next
	a.next++
	return n, nil
}

// reserve takes the next block from the counter.
func (a *Allocator) reserve(ctx context.Context) (int64, error) {
	for range reserveAttempts {
		entry, err := a.kv.Get(ctx, counterKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if _, err := a.kv.Create(ctx, counterKey, []byte(strconv.FormatInt(1+BlockSize, 10))); err == nil {
				return 1, nil
			} else if !errors.Is(err, jetstream.ErrKeyExists) {
				return 0, fmt.Errorf("key counter: %w", err)
			}
			continue // another node created it first
		}
		if err != nil {
			return 0, fmt.Errorf("key counter: %w", err)
		}
		start, err := strconv.ParseInt(string(entry.Value()), 10, 64)
		if err != nil || start < 1 {
			return 0, fmt.Errorf("key counter holds %q, not a positive number", entry.Value())
		}
		if start+BlockSize-1 > MaxCounter {
			return 0, fmt.Errorf("key counter exhausted: %d of %d numbers used", start-1, int64(MaxCounter))
		}
		_, err = a.kv.Update(ctx, counterKey, []byte(strconv.FormatInt(start+BlockSize, 10)), entry.Revision())
		if err == nil {
			return start, nil
		}
		if !streams.IsConflict(err) {
			return 0, fmt.Errorf("key counter: %w", err)
		}
	}
	return 0, fmt.Errorf("key counter: %d reservations in a row lost a race with other nodes; try again", reserveAttempts)
}
