package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/bpmnxml"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
)

// Deployment reports the version a deploy produced.
type Deployment struct {
	ProcessID string `json:"processId"`
	Version   int    `json:"version"`
	// New is false when the same definition was already the latest version.
	New bool `json:"new"`
}

// definitions stores deployed processes in the definitions bucket and
// caches them: a deployed version never changes, so the cache needs no
// invalidation; only the "latest" pointers are read fresh.
type definitions struct {
	kv jetstream.KeyValue

	mu    sync.RWMutex
	byVer map[string]map[int]*model.Process
}

// latestRecord is the value of a LatestKey.
type latestRecord struct {
	Version int    `msgpack:"version"`
	Hash    []byte `msgpack:"hash"`
}

func openDefinitions(ctx context.Context, js jetstream.JetStream) (*definitions, error) {
	kv, err := js.KeyValue(ctx, streams.DefinitionsBucket)
	if err != nil {
		return nil, fmt.Errorf("engine: definitions bucket: %w", err)
	}
	return &definitions{kv: kv, byVer: map[string]map[int]*model.Process{}}, nil
}

// Deploy stores p as the next version of its process. Deploying a
// definition identical to the latest version returns that version (as
// Zeebe does), so redeploying on every service start creates no versions.
func (e *Engine) Deploy(ctx context.Context, p *model.Process) (Deployment, error) {
	if err := p.Validate(); err != nil {
		return Deployment{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := e.ensureTopics(ctx, p); err != nil {
		return Deployment{}, err
	}
	return e.defs.deploy(ctx, p)
}

// ensureTopics creates the pull consumer of every topic p's external tasks
// use. The lock is the consumer's AckWait, so it is per topic (ARCH-4): a
// service asking another lock than the topic has is a deploy error.
func (e *Engine) ensureTopics(ctx context.Context, p *model.Process) error {
	locks := map[string]time.Duration{}
	for _, n := range p.Nodes {
		if !n.IsExternal() {
			continue
		}
		topic := n.Service.Worker.Topic
		lock := n.Service.Worker.Overrides().Resolve(e.opts.jobDefaults().For(topic)).LockDuration
		if prev, ok := locks[topic]; ok && prev != lock {
			return fmt.Errorf("%w: process %s: service %q wants a %s lock on topic %q, another task of the process %s; the lock is per topic",
				ErrInvalid, p.ID, n.ID, lock, topic, prev)
		}
		locks[topic] = lock
		cons, err := e.js.Consumer(ctx, streams.JobsStream, streams.TopicConsumer(topic))
		if err == nil && cons.CachedInfo().Config.AckWait != lock {
			return fmt.Errorf("%w: process %s: service %q wants a %s lock on topic %q, which has %s; the lock is per topic (ARCH-4)",
				ErrInvalid, p.ID, n.ID, lock, topic, cons.CachedInfo().Config.AckWait)
		}
		if err := streams.EnsureTopic(ctx, e.js, topic, lock, e.layout.Replicas, e.log); err != nil {
			return fmt.Errorf("process %s: topic %q: %w", p.ID, topic, err)
		}
	}
	return nil
}

// DeployXML imports BPMN 2.0 XML and deploys every executable process in it.
// Nothing is deployed if any process is invalid.
func (e *Engine) DeployXML(ctx context.Context, r io.Reader) ([]Deployment, error) {
	procs, err := bpmnxml.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	out := make([]Deployment, 0, len(procs))
	for _, p := range procs {
		dep, err := e.Deploy(ctx, p)
		if err != nil {
			return out, err
		}
		out = append(out, dep)
	}
	return out, nil
}

// DeployFile deploys the BPMN file at path.
func (e *Engine) DeployFile(ctx context.Context, path string) ([]Deployment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	deps, err := e.DeployXML(ctx, bytes.NewReader(data))
	if err != nil {
		return deps, fmt.Errorf("%s: %w", path, err)
	}
	return deps, nil
}

func (d *definitions) deploy(ctx context.Context, p *model.Process) (Deployment, error) {
	cp := *p
	cp.Version = 0
	body, err := streams.Marshal(&cp)
	if err != nil {
		return Deployment{}, fmt.Errorf("process %s: encode: %w", p.ID, err)
	}
	sum := sha256.Sum256(body)
	for attempt := 0; attempt < 10; attempt++ {
		latest, rev, err := d.latest(ctx, p.ID)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return Deployment{}, err
		}
		if bytes.Equal(latest.Hash, sum[:]) {
			return Deployment{ProcessID: p.ID, Version: latest.Version}, nil
		}
		v := latest.Version + 1
		cp.Version = v
		if body, err = streams.Marshal(&cp); err != nil {
			return Deployment{}, err
		}
		if _, err := d.kv.Create(ctx, streams.DefinitionKey(p.ID, v), body); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return Deployment{}, fmt.Errorf("process %s v%d: store: %w", p.ID, v, err)
		} else if err != nil {
			// A deploy that died between storing the version and moving the
			// pointer left it behind; take it over only if it is ours.
			other, gerr := d.load(ctx, p.ID, v)
			if gerr != nil || !sameDefinition(other, &cp) {
				continue
			}
		}
		ptr, _ := streams.Marshal(latestRecord{Version: v, Hash: sum[:]})
		if rev == 0 {
			_, err = d.kv.Create(ctx, streams.LatestKey(p.ID), ptr)
		} else {
			_, err = d.kv.Update(ctx, streams.LatestKey(p.ID), ptr, rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) || isConflict(err) {
			continue // a concurrent deploy moved the pointer; start over
		}
		if err != nil {
			return Deployment{}, fmt.Errorf("process %s v%d: publish version: %w", p.ID, v, err)
		}
		stored := cp
		d.put(&stored)
		return Deployment{ProcessID: p.ID, Version: v, New: true}, nil
	}
	return Deployment{}, fmt.Errorf("process %s: deploy kept racing with other deploys; try again", p.ID)
}

func sameDefinition(a, b *model.Process) bool {
	x, err1 := streams.Marshal(a)
	y, err2 := streams.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func (d *definitions) latest(ctx context.Context, processID string) (latestRecord, uint64, error) {
	entry, err := d.kv.Get(ctx, streams.LatestKey(processID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return latestRecord{}, 0, fmt.Errorf("process %q: %w", processID, ErrNotFound)
	}
	if err != nil {
		return latestRecord{}, 0, fmt.Errorf("process %s: read latest version: %w", processID, err)
	}
	var rec latestRecord
	if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
		return latestRecord{}, 0, fmt.Errorf("process %s: decode latest version: %w", processID, err)
	}
	return rec, entry.Revision(), nil
}

// get returns version v of a process; v == 0 means the latest.
func (d *definitions) get(ctx context.Context, processID string, v int) (*model.Process, error) {
	if v == 0 {
		rec, _, err := d.latest(ctx, processID)
		if err != nil {
			return nil, err
		}
		v = rec.Version
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

func (d *definitions) load(ctx context.Context, processID string, v int) (*model.Process, error) {
	entry, err := d.kv.Get(ctx, streams.DefinitionKey(processID, v))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("process %q version %d: %w", processID, v, ErrNotFound)
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

func (d *definitions) put(p *model.Process) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byVer[p.ID] == nil {
		d.byVer[p.ID] = map[int]*model.Process{}
	}
	d.byVer[p.ID][p.Version] = p
}

// Process returns a deployed process; version 0 means the latest.
func (e *Engine) Process(ctx context.Context, processID string, version int) (*model.Process, error) {
	return e.defs.get(ctx, processID, version)
}
