package partition

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/streams"
)

// A checkpoint that went back under a running node (docs/reliability.md,
// "A damaged store"). A checkpoint's revision only grows: every write is
// a compare-and-set on it, and another node that takes the instance over
// writes above it. So when a write of this node loses its
// compare-and-set, the partition keeps the value it last wrote (the
// cache holds it beside the state, which a step changes in place); if the
// next read finds the checkpoint gone without a marker, or at a revision
// below the one this node wrote, the store lost acknowledged writes (its server
// restarted with a block cut short, say). The partition then writes its
// own copy back over what the store holds — the state it was told was
// stored — and reports it (WentBack), instead of stepping the instance on
// from an older state or dropping its events as an unknown instance's.

// maxSuperseded bounds the values kept: a conflict is rare (a takeover, a
// loss), and each entry goes at the instance's next read.
const maxSuperseded = 10_000

// superseded are the checkpoints this node wrote last of instances whose
// next write lost its compare-and-set.
type superseded struct {
	mu sync.Mutex
	m  map[string]cached
}

// keep remembers c, the checkpoint this node wrote last of instance id.
func (s *superseded) keep(id string, c cached) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]cached{}
	}
	if len(s.m) < maxSuperseded {
		s.m[id] = c
	}
}

// take returns and forgets what keep remembered of instance id.
func (s *superseded) take(id string) (cached, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[id]
	delete(s.m, id)
	return c, ok
}

// wentBack checks the checkpoint of instance id just read (s at rev; nil
// when there is none) against the state this node wrote last, if a write
// of it lost its compare-and-set: when the store holds less, this node's
// copy is written back and returned. A finished instance's is not: its
// record expires anyway.
func (p *Partition) wentBack(ctx context.Context, id string, s *instance.State, rev uint64) (*instance.State, uint64, error) {
	mine, ok := p.superseded.take(id)
	if !ok || s != nil && rev >= mine.rev {
		return s, rev, nil // moved on by another writer, or as it was
	}
	var back instance.State
	if err := streams.Unmarshal(mine.data, &back); err != nil {
		return nil, 0, fmt.Errorf("instance %s: this node's copy of its checkpoint: %w", id, err)
	}
	if back.Status.Finished() {
		return s, rev, nil // its record expires: nothing to keep
	}
	back.Outbox, back.OutboxBy = nil, "" // published before its events were acknowledged
	found := rev
	if s == nil {
		// A delete or purge marker says the key was removed on purpose
		// (an operator's purge; an expiry): respected. Nothing at all is
		// a loss.
		removed, err := p.removed(ctx, id)
		if err != nil || removed {
			return s, rev, err
		}
		found = 0
	}
	m, err := p.cfg.Store.Encode(&back, rev)
	if err != nil {
		return nil, 0, err
	}
	ack, err := p.cfg.JS.PublishMsg(ctx, m)
	if err != nil {
		return nil, 0, fmt.Errorf("instance %s: write back the checkpoint that went back: %w", id, err)
	}
	if err := p.cfg.Sync.Sync(ctx); err != nil {
		return nil, 0, err
	}
	p.log.Error("store damage: a checkpoint went back under this node; its copy written back",
		"instance", id, "wrote", mine.rev, "found", found, "now", ack.Sequence)
	if p.cfg.WentBack != nil {
		p.cfg.WentBack(ctx, id, mine.rev, found)
	}
	return &back, ack.Sequence, nil
}

// removed reports whether instance id's key in the instances bucket ends
// in a delete, purge or expiry marker.
func (p *Partition) removed(ctx context.Context, id string) (bool, error) {
	st, err := p.cfg.JS.Stream(ctx, streams.KVStream(streams.InstancesBucket))
	if err != nil {
		return false, fmt.Errorf("instance %s: %w", id, err)
	}
	m, err := st.GetLastMsgForSubject(ctx, streams.KVSubject(streams.InstancesBucket, id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("instance %s: last message of its key: %w", id, err)
	}
	return m.Header.Get("KV-Operation") != "" || m.Header.Get(jetstream.MarkerReasonHeader) != "", nil
}
