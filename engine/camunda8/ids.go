package camunda8

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// IDs maps jetbpm's instance ids onto keys and back
// (docs/camunda8-migration.md §2). An instance a Camunda 8 client creates
// gets its key first and the key's text as its id; any other instance
// gets a key when a door first shows it, kept both ways in the bucket:
// "i.<id>" holds the key, "k.<key>" the id. A key's partition is its
// instance's partition plus one.
type IDs struct {
	kv          jetstream.KeyValue
	alloc       *Allocator
	partitions  int
	partitionOf func(id string) int // the engine's: 0..partitions-1
}

// NewIDs maps ids in bucket kv for an engine of partitions partitions
// that places instance id on partition partitionOf(id).
func NewIDs(kv jetstream.KeyValue, partitions int, partitionOf func(id string) int) *IDs {
	return &IDs{kv: kv, alloc: NewAllocator(kv), partitions: partitions, partitionOf: partitionOf}
}

// NewInstance returns the key and id of an instance to create: the id is
// the key's text, and the key's partition the one the engine places that
// id on.
func (m *IDs) NewInstance(ctx context.Context) (Key, string, error) {
	for {
		n, err := m.alloc.Next(ctx)
		if err != nil {
			return 0, "", err
		}
		// The id's partition follows from its text, which follows from
		// the partition: try each; about two numbers in three fit one.
		for p := 1; p <= m.partitions; p++ {
			k, err := NewKey(p, n)
			if err != nil {
				return 0, "", err
			}
			if m.partitionOf(k.String())+1 == p {
				return k, k.String(), nil
			}
		}
	}
}

// InstanceKey returns the key of instance id, giving it one when it has
// none yet.
func (m *IDs) InstanceKey(ctx context.Context, id string) (Key, error) {
	p := m.partitionOf(id) + 1
	if k, err := ParseKeyString(id, m.partitions); err == nil && k.Partition() == p {
		return k, nil // created by a Camunda 8 door
	}
	if k, ok, err := m.lookup(ctx, "i."+id); err != nil || ok {
		return k, err
	}
	n, err := m.alloc.Next(ctx)
	if err != nil {
		return 0, err
	}
	k, err := NewKey(p, n)
	if err != nil {
		return 0, err
	}
	// The reverse entry first: once "i.<id>" is visible, "k.<key>" is.
	if _, err := m.kv.Put(ctx, "k."+k.String(), []byte(id)); err != nil {
		return 0, fmt.Errorf("key of instance %s: %w", id, err)
	}
	if _, err := m.kv.Create(ctx, "i."+id, []byte(k.String())); errors.Is(err, jetstream.ErrKeyExists) {
		// Another node keyed it first: its key stands.
		got, ok, err := m.lookup(ctx, "i."+id)
		if err == nil && !ok {
			err = fmt.Errorf("key of instance %s vanished", id)
		}
		return got, err
	} else if err != nil {
		return 0, fmt.Errorf("key of instance %s: %w", id, err)
	}
	return k, nil
}

// Instance returns the id of the instance key k names. It does not check
// that the instance exists: the engine answers that.
func (m *IDs) Instance(ctx context.Context, k Key) (string, error) {
	entry, err := m.kv.Get(ctx, "k."+k.String())
	switch {
	case err == nil:
		return string(entry.Value()), nil
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return "", fmt.Errorf("instance of key %d: %w", k, err)
	}
	id := k.String()
	if m.partitionOf(id)+1 != k.Partition() {
		return "", fmt.Errorf("%w: %d names partition %d, where no instance of that key can be", ErrBadKey, k, k.Partition())
	}
	return id, nil
}

// lookup reads a key entry.
func (m *IDs) lookup(ctx context.Context, name string) (Key, bool, error) {
	entry, err := m.kv.Get(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("key entry %s: %w", name, err)
	}
	k, err := ParseKeyString(string(entry.Value()), m.partitions)
	if err != nil {
		return 0, false, fmt.Errorf("key entry %s: %w", name, err)
	}
	return k, true, nil
}
