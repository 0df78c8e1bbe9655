package deploy

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
)

// latestCache is this node's copy of the latest version pointers, kept by
// Follow: a start of "the latest version" reads it instead of the bucket.
// It is what the watch has delivered, so another node's deploy shows here
// after the watch's delay (milliseconds); this node's own deploys show at
// once (docs/engine.md §7).
type latestCache struct {
	mu        sync.RWMutex
	following bool
	versions  map[string]int // by LatestKey
}

// cachedLatest returns the cached latest version of processID; ok is
// false while the node is not following the pointers, or has not seen one
// for the process (it may be deployed this moment on another node: read
// the bucket).
func (d *Definitions) cachedLatest(processID string) (v int, ok bool) {
	d.latest.mu.RLock()
	defer d.latest.mu.RUnlock()
	if !d.latest.following {
		return 0, false
	}
	v, ok = d.latest.versions[streams.LatestKey(processID)]
	return v, ok
}

// noteLatest records that version v of the process behind key is the
// latest at least: pointers only move forward.
func (d *Definitions) noteLatest(key string, v int) {
	d.latest.mu.Lock()
	defer d.latest.mu.Unlock()
	if d.latest.versions == nil {
		d.latest.versions = map[string]int{}
	}
	if v > d.latest.versions[key] {
		d.latest.versions[key] = v
	}
}

// Follow watches the latest version pointers until ctx ends, so that
// starts of the latest version need not read them; log hears when the
// watch fails and is made again.
func (d *Definitions) Follow(ctx context.Context, log *slog.Logger) {
	for ctx.Err() == nil {
		err := d.follow(ctx)
		d.latest.mu.Lock()
		d.latest.following = false
		d.latest.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		log.Warn("definitions: the watch of the latest versions ended; starts read them from the bucket meanwhile", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (d *Definitions) follow(ctx context.Context) error {
	w, err := d.kv.Watch(ctx, streams.LatestKeys)
	if err != nil {
		return err
	}
	caughtUp := func() { // every pointer stored so far is read
		d.latest.mu.Lock()
		d.latest.following = true
		d.latest.mu.Unlock()
	}
	return streams.FollowWatch(ctx, w, caughtUp, func(e jetstream.KeyValueEntry) {
		var rec LatestRecord
		// Pointers are never deleted: a purge leaves starts to read the bucket.
		if e.Operation() == jetstream.KeyValuePut && streams.Unmarshal(e.Value(), &rec) == nil {
			d.noteLatest(e.Key(), rec.Version)
		}
	})
}
