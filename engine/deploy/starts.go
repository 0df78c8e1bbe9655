package deploy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
)

// The definitions bucket keeps an index of each kind of named start event
// (message starts, signal starts): under the kind's key of a name, the
// processes whose latest version starts on that name, each with that
// version and its start event. A deploy writes it in the same atomic batch
// as the versions it deploys, so a new version moves its process's starts
// at the moment it becomes the latest; a message partition reads it when a
// message arrives, a broadcast when a signal does.

// StartKind is one kind of named start event.
type StartKind struct {
	what  string          // "message", "signal": for errors
	event model.EventType // the start event's definition
	name  func(*model.Node) string
	key   func(name string) string // the index entry's key
}

var (
	MessageStarts = StartKind{what: "message", event: model.MessageEvent, key: streams.MessageStartKey,
		name: func(n *model.Node) string {
			if n.Message == nil {
				return ""
			}
			return n.Message.Name
		}}
	SignalStarts = StartKind{what: "signal", event: model.SignalEvent, key: streams.SignalStartKey,
		name: func(n *model.Node) string {
			if n.Signal == nil {
				return ""
			}
			return n.Signal.Name
		}}
)

// starts returns p's process-level start events of kind k by name (the
// first of a name, in declaration order); nil p has none.
func (k StartKind) starts(p *model.Process) map[string]correlation.StartEvent {
	out := map[string]correlation.StartEvent{}
	if p == nil {
		return out
	}
	for _, n := range p.Nodes {
		if n.Kind != model.StartEvent || n.Event != k.event || n.Scope != "" {
			continue
		}
		if name := k.name(n); name != "" {
			if _, dup := out[name]; !dup {
				out[name] = correlation.StartEvent{Process: p.ID, Version: p.Version, Node: n.ID}
			}
		}
	}
	return out
}

// MessageStartNames returns the names of p's message start events, sorted.
func MessageStartNames(p *model.Process) []string {
	return slices.Sorted(maps.Keys(MessageStarts.starts(p)))
}

// StartIndex reads the index entry of kind k for name: the start events,
// and the entry's revision (0: none).
func (d *Definitions) StartIndex(ctx context.Context, k StartKind, name string) ([]correlation.StartEvent, uint64, error) {
	entry, err := d.kv.Get(ctx, k.key(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s start index of %q: %w", k.what, name, err)
	}
	var starts []correlation.StartEvent
	if err := streams.Unmarshal(entry.Value(), &starts); err != nil {
		return nil, 0, fmt.Errorf("%s start index of %q: decode: %w", k.what, name, err)
	}
	return starts, entry.Revision(), nil
}

// movedProcess is a process a deploy gives a new latest version: the
// version before (nil for a new process) and after.
type movedProcess struct {
	process       string
	before, after *model.Process
}

// startIndexWrites returns the writes of kind k's index that moving the
// processes of moved to their new versions needs.
func (d *Definitions) startIndexWrites(ctx context.Context, k StartKind, moved []movedProcess) ([]*nats.Msg, error) {
	changes := map[string]bool{}
	after := make([]map[string]correlation.StartEvent, len(moved))
	for i, m := range moved {
		after[i] = k.starts(m.after)
		for name := range k.starts(m.before) {
			changes[name] = true
		}
		for name := range after[i] {
			changes[name] = true
		}
	}
	var msgs []*nats.Msg
	for _, name := range slices.Sorted(maps.Keys(changes)) {
		starts, rev, err := d.StartIndex(ctx, k, name)
		if err != nil {
			return nil, err
		}
		next := slices.Clone(starts)
		for i, m := range moved {
			next = slices.DeleteFunc(next, func(se correlation.StartEvent) bool { return se.Process == m.process })
			if se, ok := after[i][name]; ok {
				next = append(next, se)
			}
		}
		if slices.Equal(next, starts) {
			continue
		}
		slices.SortFunc(next, func(a, b correlation.StartEvent) int { return cmp.Compare(a.Process, b.Process) })
		body, err := streams.Marshal(next)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, kvWrite(k.key(name), body, rev))
	}
	return msgs, nil
}

// storedProcess returns a stored version of a process, read as stored (an
// old version need not validate any more).
func (d *Definitions) storedProcess(ctx context.Context, processID string, v int) (*model.Process, error) {
	d.mu.RLock()
	p := d.byVer[processID][v]
	d.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	entry, err := d.kv.Get(ctx, streams.DefinitionKey(processID, v))
	if err != nil {
		return nil, fmt.Errorf("process %s v%d: read: %w", processID, v, err)
	}
	var stored model.Process
	if err := streams.Unmarshal(entry.Value(), &stored); err != nil {
		return nil, fmt.Errorf("process %s v%d: decode: %w", processID, v, err)
	}
	return &stored, nil
}
