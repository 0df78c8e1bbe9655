package deploy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
)

// Deployment reports the version a deploy produced.
type Deployment struct {
	ProcessID string `json:"processId"`
	Version   int    `json:"version"`
	// New is false when the same definition was already the latest version.
	New bool `json:"new"`
	// TimerStart is the timer start event a new version armed, if it has
	// one that fires (docs/timerstart.md).
	TimerStart *TimerStart `json:"timerStart,omitempty"`
	// Warnings are what the process deploys with but does not run as
	// written: elements its import ignores (model.Process.Warnings) and
	// in-process operations this engine node has not registered.
	Warnings []model.Warning `json:"warnings,omitempty"`
	// DeploymentID names the deploy that made the version (one id for
	// all the versions a deploy makes) and Resource the document it was
	// imported from; both are empty for a process built in Go.
	DeploymentID string `json:"deploymentId,omitempty"`
	Resource     string `json:"resource,omitempty"`
}

// TimerStart describes the timer start event of a deployed version.
type TimerStart struct {
	Node  string          `json:"node"`
	Type  model.TimerType `json:"type"`  // duration, date or cycle
	Timer string          `json:"timer"` // as written: R3/PT10M, a date, a cron expression
	Next  time.Time       `json:"next"`  // the first fire
}

// Definitions stores deployed processes in the definitions bucket and
// caches them: a deployed version never changes, so the cache needs no
// invalidation; only the "latest" pointers are read fresh.
type Definitions struct {
	kv jetstream.KeyValue
	nc *nats.Conn // for the atomic batch of a deploy

	mu    sync.RWMutex
	byVer map[string]map[int]*model.Process

	latest latestCache // the latest versions, while Follow runs
}

// LatestRecord is the value of a LatestKey.
type LatestRecord struct {
	Version int    `msgpack:"version"`
	Hash    []byte `msgpack:"hash"`
}

func Open(ctx context.Context, js jetstream.JetStream) (*Definitions, error) {
	kv, err := js.KeyValue(ctx, streams.DefinitionsBucket)
	if err != nil {
		return nil, fmt.Errorf("engine: definitions bucket: %w", err)
	}
	return &Definitions{kv: kv, nc: js.Conn(), byVer: map[string]map[int]*model.Process{}}, nil
}

func (d *Definitions) Latest(ctx context.Context, processID string) (LatestRecord, uint64, error) {
	entry, err := d.kv.Get(ctx, streams.LatestKey(processID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return LatestRecord{}, 0, fmt.Errorf("process %q: %w", processID, errdefs.ErrNotFound)
	}
	if err != nil {
		return LatestRecord{}, 0, fmt.Errorf("process %s: read latest version: %w", processID, err)
	}
	var rec LatestRecord
	if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
		// The revision still names the entry, for a write over it.
		return LatestRecord{}, entry.Revision(), fmt.Errorf("process %s: decode latest version: %w", processID, err)
	}
	return rec, entry.Revision(), nil
}

// get returns version v of a process; v == 0 means the latest.
func (d *Definitions) Get(ctx context.Context, processID string, v int) (*model.Process, error) {
	if v == 0 {
		cached, ok := d.cachedLatest(processID)
		if !ok {
			rec, _, err := d.Latest(ctx, processID)
			if err != nil {
				return nil, err
			}
			cached = rec.Version
		}
		v = cached
	}
	d.mu.RLock()
	p := d.byVer[processID][v]
	d.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	p, err := d.load(ctx, processID, v)
	if err != nil {
		return nil, err
	}
	d.put(p)
	return p, nil
}

func (d *Definitions) load(ctx context.Context, processID string, v int) (*model.Process, error) {
	entry, err := d.kv.Get(ctx, streams.DefinitionKey(processID, v))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("process %q version %d: %w", processID, v, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("process %s v%d: read: %w", processID, v, err)
	}
	var p model.Process
	if err := streams.Unmarshal(entry.Value(), &p); err != nil {
		return nil, fmt.Errorf("process %s v%d: decode: %w", processID, v, err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("process %s v%d: stored definition no longer validates: %w", processID, v, err)
	}
	return &p, nil
}

func (d *Definitions) put(p *model.Process) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byVer[p.ID] == nil {
		d.byVer[p.ID] = map[int]*model.Process{}
	}
	d.byVer[p.ID][p.Version] = p
}

// KV returns the definitions bucket.
func (d *Definitions) KV() jetstream.KeyValue { return d.kv }
