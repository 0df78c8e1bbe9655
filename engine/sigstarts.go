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

// The definitions bucket keeps an index of signal start events, as it
// does of message start events (msgstarts.go): under
// streams.SignalStartKey(name), the processes whose latest version starts
// on signal name, written in the deploy's atomic batch.

// signalStarts returns p's process-level signal start events by name.
func signalStarts(p *model.Process) map[string]correlation.StartEvent {
	out := map[string]correlation.StartEvent{}
	for _, n := range p.Nodes {
		if n.Kind != model.StartEvent || n.Event != model.SignalEvent || n.Scope != "" || n.Signal == nil || n.Signal.Name == "" {
			continue
		}
		if _, dup := out[n.Signal.Name]; !dup {
			out[n.Signal.Name] = correlation.StartEvent{Process: p.ID, Version: p.Version, Node: n.ID}
		}
	}
	return out
}

// signalStartIndex reads the index entry of signal name.
func (d *definitions) signalStartIndex(ctx context.Context, name string) ([]correlation.StartEvent, uint64, error) {
	entry, err := d.kv.Get(ctx, streams.SignalStartKey(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("signal start index of %q: %w", name, err)
	}
	var starts []correlation.StartEvent
	if err := streams.Unmarshal(entry.Value(), &starts); err != nil {
		return nil, 0, fmt.Errorf("signal start index of %q: decode: %w", name, err)
	}
	return starts, entry.Revision(), nil
}

// signalStartIndexWrites returns the index writes that moving the
// processes of moved to their new versions needs.
func (d *definitions) signalStartIndexWrites(ctx context.Context, moved []movedProcess) ([]*nats.Msg, error) {
	changes := map[string]bool{}
	for _, m := range moved {
		for name := range m.sigBefore {
			changes[name] = true
		}
		for name := range m.sigAfter {
			changes[name] = true
		}
	}
	var msgs []*nats.Msg
	for _, name := range sortedKeys(changes) {
		starts, rev, err := d.signalStartIndex(ctx, name)
		if err != nil {
			return nil, err
		}
		next := slices.Clone(starts)
		for _, m := range moved {
			next = slices.DeleteFunc(next, func(se correlation.StartEvent) bool { return se.Process == m.process })
			if se, ok := m.sigAfter[name]; ok {
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
		msgs = append(msgs, kvWrite(streams.SignalStartKey(name), body, rev))
	}
	return msgs, nil
}

// storedProcess returns a stored version of a process, read as stored (an
// old version need not validate any more).
func (d *definitions) storedProcess(ctx context.Context, processID string, v int) (*model.Process, error) {
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
