package camunda8

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
)

// IDs maps jetbpm's ids onto keys and back (docs/camunda8-migration.md
// §2). An instance a Camunda 8 client creates gets its key first and the
// key's text as its id; any other instance gets a key when a door first
// shows it, kept both ways in the bucket: "i.<id>" holds the key and
// "k.<key>" "i <id>". An instance key's partition is its instance's
// partition plus one. A process version's key is kept the same way:
// "d.<process>.<version>" and "k.<key>" "d <version> <process>", on
// partition 1 (as Zeebe deploys); an incident's as "n.<id>" and "k.<key>"
// "n <id>", on its instance's partition.
type IDs struct {
	kv          jetstream.KeyValue
	alloc       *Allocator
	partitions  int
	partitionOf func(id string) int // the engine's: 0..partitions-1
	known       sync.Map            // entry name → Key: entries never change once created
	sync        streams.Syncer      // SyncKeys
}

// NewIDs maps ids in bucket kv for an engine of partitions partitions
// that places instance id on partition partitionOf(id).
func NewIDs(kv jetstream.KeyValue, partitions int, partitionOf func(id string) int, opts ...IDsOption) *IDs {
	m := &IDs{kv: kv, alloc: NewAllocator(kv), partitions: partitions, partitionOf: partitionOf}
	for _, o := range opts {
		o(m)
	}
	return m
}

// An IDsOption configures NewIDs.
type IDsOption func(*IDs)

// SyncKeys makes a block of numbers durable before its first key is handed
// out, and a key's entries before the key: after a power cut no key is
// handed out twice, and none the door answered is unknown (Engine.Sync).
func SyncKeys(sync func(context.Context) error) IDsOption {
	return func(m *IDs) {
		m.sync = sync
		m.alloc.sync = sync
	}
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

// NewKey returns a new key on partition p for something that is not
// looked up again (a deployment, a published message, a broadcast).
func (m *IDs) NewKey(ctx context.Context, p int) (Key, error) {
	n, err := m.alloc.Next(ctx)
	if err != nil {
		return 0, err
	}
	return NewKey(p, n)
}

// InstanceKey returns the key of instance id, giving it one when it has
// none yet.
func (m *IDs) InstanceKey(ctx context.Context, id string) (Key, error) {
	p := m.partitionOf(id) + 1
	if k, err := ParseKeyString(id, m.partitions); err == nil && k.Partition() == p {
		return k, nil // created by a Camunda 8 door
	}
	return m.keyed(ctx, "i."+id, "i "+id, p)
}

// keyed returns the key entry name holds, giving it a new key on
// partition p, with reverse entry "k.<key>" holding reverse, when it has
// none. Of two nodes racing, the first to create name wins.
func (m *IDs) keyed(ctx context.Context, name, reverse string, p int) (k Key, err error) {
	if k, ok := m.known.Load(name); ok {
		return k.(Key), nil
	}
	defer func() {
		if err == nil {
			m.known.Store(name, k)
		}
	}()
	if k, ok, err := m.lookup(ctx, name); err != nil || ok {
		return k, err
	}
	n, err := m.alloc.Next(ctx)
	if err != nil {
		return 0, err
	}
	k, err = NewKey(p, n)
	if err != nil {
		return 0, err
	}
	// The reverse entry first: once name is visible, "k.<key>" is.
	if _, err := m.kv.Put(ctx, "k."+k.String(), []byte(reverse)); err != nil {
		return 0, fmt.Errorf("key entry %s: %w", name, err)
	}
	if _, err := m.kv.Create(ctx, name, []byte(k.String())); errors.Is(err, jetstream.ErrKeyExists) {
		got, ok, err := m.lookup(ctx, name)
		if err == nil && !ok {
			err = fmt.Errorf("key entry %s vanished", name)
		}
		return got, err
	} else if err != nil {
		return 0, fmt.Errorf("key entry %s: %w", name, err)
	}
	if err := m.sync.Sync(ctx); err != nil {
		return 0, fmt.Errorf("key entry %s: %w", name, err)
	}
	return k, nil
}

// reverse reads the reverse entry of key k: its kind ('i', 'd') and text.
func (m *IDs) reverse(ctx context.Context, k Key) (kind byte, text string, ok bool, err error) {
	entry, err := m.kv.Get(ctx, "k."+k.String())
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return 0, "", false, nil
	case err != nil:
		return 0, "", false, fmt.Errorf("key %d: %w", k, err)
	}
	v := string(entry.Value())
	if len(v) < 2 || v[1] != ' ' {
		return 0, "", false, fmt.Errorf("key %d: reverse entry %q is malformed", k, v)
	}
	return v[0], v[2:], true, nil
}

// DefinitionKey returns the key of version version of processID.
func (m *IDs) DefinitionKey(ctx context.Context, processID string, version int) (Key, error) {
	return m.keyed(ctx, "d."+streams.Token(processID)+"."+strconv.Itoa(version), "d "+strconv.Itoa(version)+" "+processID, 1)
}

// Definition returns the process version key k names; ErrBadKey wraps
// the error of a key that names none.
func (m *IDs) Definition(ctx context.Context, k Key) (processID string, version int, err error) {
	kind, text, ok, err := m.reverse(ctx, k)
	if err != nil {
		return "", 0, err
	}
	v, id, _ := strings.Cut(text, " ")
	version, verr := strconv.Atoi(v)
	if !ok || kind != 'd' || verr != nil {
		return "", 0, fmt.Errorf("%w: %d names no process definition", ErrBadKey, k)
	}
	return id, version, nil
}

// Instance returns the id of the instance key k names. It does not check
// that the instance exists: the engine answers that.
func (m *IDs) Instance(ctx context.Context, k Key) (string, error) {
	kind, text, ok, err := m.reverse(ctx, k)
	switch {
	case err != nil:
		return "", err
	case ok && kind == 'i':
		return text, nil
	case ok:
		return "", fmt.Errorf("%w: %d names no process instance", ErrBadKey, k)
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

// IncidentKey returns the key of incident id of instance instanceID,
// giving it one when it has none yet; it is on the instance's partition.
func (m *IDs) IncidentKey(ctx context.Context, id, instanceID string) (Key, error) {
	return m.keyed(ctx, "n."+streams.Token(id), "n "+id, m.partitionOf(instanceID)+1)
}

// Incident returns the id of the incident key k names; ErrBadKey wraps the
// error of a key that names none. It does not check that the incident
// exists: the engine answers that.
func (m *IDs) Incident(ctx context.Context, k Key) (string, error) {
	return m.named(ctx, k, 'n', "incident")
}

// TaskKey returns the key of user task id of instance instanceID, giving
// it one when it has none yet; it is on the instance's partition.
func (m *IDs) TaskKey(ctx context.Context, id, instanceID string) (Key, error) {
	return m.keyed(ctx, "u."+streams.Token(id), "u "+id, m.partitionOf(instanceID)+1)
}

// Task returns the id of the user task key k names, as Incident does.
func (m *IDs) Task(ctx context.Context, k Key) (string, error) {
	return m.named(ctx, k, 'u', "user task")
}

// VariableKey returns the key of variable name of instance instanceID,
// giving it one when it has none yet.
func (m *IDs) VariableKey(ctx context.Context, instanceID, name string) (Key, error) {
	return m.keyed(ctx, "v."+streams.Token(instanceID)+"."+streams.Token(name), "v "+instanceID+" "+name, m.partitionOf(instanceID)+1)
}

// Variable returns the instance and name of the variable key k names, as
// Incident does.
func (m *IDs) Variable(ctx context.Context, k Key) (instanceID, name string, err error) {
	text, err := m.named(ctx, k, 'v', "variable")
	if err != nil {
		return "", "", err
	}
	instanceID, name, _ = strings.Cut(text, " ")
	return instanceID, name, nil
}

// named returns the text of key k's reverse entry, which must be of kind
// kind; ErrBadKey wraps the error of a key that names no what.
func (m *IDs) named(ctx context.Context, k Key, kind byte, what string) (string, error) {
	got, text, ok, err := m.reverse(ctx, k)
	switch {
	case err != nil:
		return "", err
	case !ok || got != kind:
		return "", fmt.Errorf("%w: %d names no %s", ErrBadKey, k, what)
	}
	return text, nil
}
