package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
)

// The definitions bucket keeps an index of message start events: under
// streams.MessageStartKey(name), the processes whose latest version starts
// on message name, each with that version and its start event. A deploy
// writes it in the same atomic batch as the versions it deploys, so a new
// version moves its process's message starts at the moment it becomes the
// latest; the message partitions read it when a message arrives.

// messageStarts returns p's process-level message start events by message
// name (the first of a name, in declaration order).
func messageStarts(p *model.Process) map[string]correlation.StartEvent {
	out := map[string]correlation.StartEvent{}
	for _, n := range p.Nodes {
		if n.Kind != model.StartEvent || n.Event != model.MessageEvent || n.Scope != "" || n.Message == nil || n.Message.Name == "" {
			continue
		}
		if _, dup := out[n.Message.Name]; !dup {
			out[n.Message.Name] = correlation.StartEvent{Process: p.ID, Version: p.Version, Node: n.ID}
		}
	}
	return out
}

// messageStartNames returns the names of p's message start events, sorted.
func messageStartNames(p *model.Process) []string {
	var names []string
	for name := range messageStarts(p) {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// startIndex reads the index entry of message name: the start events, and
// the entry's revision (0: none).
func (d *definitions) startIndex(ctx context.Context, name string) ([]correlation.StartEvent, uint64, error) {
	entry, err := d.kv.Get(ctx, streams.MessageStartKey(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("message start index of %q: %w", name, err)
	}
	var starts []correlation.StartEvent
	if err := streams.Unmarshal(entry.Value(), &starts); err != nil {
		return nil, 0, fmt.Errorf("message start index of %q: decode: %w", name, err)
	}
	return starts, entry.Revision(), nil
}

// startIndexWrites returns the index writes that moving the processes of
// moved to their new versions needs: for each process, the message start
// events of its version before (nil for a new process) and after.
func (d *definitions) startIndexWrites(ctx context.Context, moved []movedProcess) ([]*nats.Msg, error) {
	changes := map[string]bool{}
	for _, m := range moved {
		for name := range m.before {
			changes[name] = true
		}
		for name := range m.after {
			changes[name] = true
		}
	}
	names := make([]string, 0, len(changes))
	for name := range changes {
		names = append(names, name)
	}
	slices.Sort(names)
	var msgs []*nats.Msg
	for _, name := range names {
		starts, rev, err := d.startIndex(ctx, name)
		if err != nil {
			return nil, err
		}
		next := slices.Clone(starts)
		for _, m := range moved {
			next = slices.DeleteFunc(next, func(se correlation.StartEvent) bool { return se.Process == m.process })
			if se, ok := m.after[name]; ok {
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
		msgs = append(msgs, kvWrite(streams.MessageStartKey(name), body, rev))
	}
	return msgs, nil
}

// movedProcess is a process a deploy gives a new latest version.
type movedProcess struct {
	process       string
	before, after map[string]correlation.StartEvent
	// sigBefore and sigAfter are its signal start events (sigstarts.go).
	sigBefore, sigAfter map[string]correlation.StartEvent
}

// storedStarts returns the message start events of a stored version of a
// process, read as stored (an old version need not validate any more).
func (d *definitions) storedStarts(ctx context.Context, processID string, v int) (map[string]correlation.StartEvent, error) {
	d.mu.RLock()
	p := d.byVer[processID][v]
	d.mu.RUnlock()
	if p != nil {
		return messageStarts(p), nil
	}
	entry, err := d.kv.Get(ctx, streams.DefinitionKey(processID, v))
	if err != nil {
		return nil, fmt.Errorf("process %s v%d: read: %w", processID, v, err)
	}
	var stored model.Process
	if err := streams.Unmarshal(entry.Value(), &stored); err != nil {
		return nil, fmt.Errorf("process %s v%d: decode: %w", processID, v, err)
	}
	return messageStarts(&stored), nil
}
