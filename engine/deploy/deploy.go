package deploy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
)

// A Resource is one named BPMN document of a deploy.
type Resource struct {
	Name string // a file name, say; it names the document in errors
	XML  []byte
}

// errCodeAtomicPublishDisabled is the server's answer to an atomic batch
// for a stream that does not allow them.
const errCodeAtomicPublishDisabled jetstream.ErrorCode = 10174

// deployAttempts bounds how often a deploy starts over after losing a race
// for a version pointer to another deploy.
const deployAttempts = 10

// Deploy writes the versions procs become in one atomic batch and returns
// what each became. A batch refused because another deploy moved one of
// its version pointers first is planned again from the new pointers.
func (d *Definitions) Deploy(ctx context.Context, procs []*model.Process, sources map[string]Resource) ([]Deployment, error) {
	id := nuid.Next()
	for range deployAttempts {
		plan, err := d.plan(ctx, procs, sources, id)
		if err != nil {
			return nil, err
		}
		if len(plan.msgs) == 0 {
			return plan.deps, nil // every process is unchanged
		}
		_, err = streams.PublishAtomic(ctx, d.nc, plan.msgs)
		if streams.IsConflict(err) {
			continue
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeAtomicPublishDisabled {
			return nil, fmt.Errorf("deploy: nothing deployed: the definitions bucket takes no atomic batches; provision the streams with this version of jetbpm ('jetbpm serve' does at start): %w", err)
		}
		if err != nil {
			return nil, fmt.Errorf("deploy: nothing deployed: %w", err)
		}
		for _, p := range plan.stored {
			d.put(p)
		}
		for _, dep := range plan.deps {
			d.noteLatest(streams.LatestKey(dep.ProcessID), dep.Version)
		}
		return plan.deps, nil
	}
	return nil, fmt.Errorf("deploy kept racing with other deploys of the same processes; nothing deployed, try again")
}

// deployPlan is what a deploy writes, read from the version pointers as
// they are now.
type deployPlan struct {
	deps   []Deployment
	msgs   []*nats.Msg      // versions and version pointers, for one atomic batch
	stored []*model.Process // the new versions, to cache once written
}

// maxHeaderBytes is room left in a message for the headers of a batch.
const maxHeaderBytes = 1 << 10

func (d *Definitions) plan(ctx context.Context, procs []*model.Process, sources map[string]Resource, deployment string) (deployPlan, error) {
	var plan deployPlan
	var moved []movedProcess
	for _, p := range procs {
		cp := *p
		cp.Version = 0
		body, err := streams.Marshal(&cp)
		if err != nil {
			return plan, fmt.Errorf("process %s: encode: %w", p.ID, err)
		}
		sum := sha256.Sum256(body)
		latest, rev, err := d.Latest(ctx, p.ID)
		switch {
		case errors.Is(err, streams.ErrDamaged):
			// The pointer is damaged (the store check records it): plan
			// from the stored versions, as when it is gone, and write the
			// new pointer over the damaged one.
			latest = LatestRecord{}
		case err != nil && !errors.Is(err, errdefs.ErrNotFound):
			return plan, err
		}
		if bytes.Equal(latest.Hash, sum[:]) {
			src, _, err := d.SourceOf(ctx, p.ID, latest.Version)
			if err != nil {
				return plan, err
			}
			plan.deps = append(plan.deps, Deployment{ProcessID: p.ID, Version: latest.Version, DeploymentID: src.Deployment, Resource: src.Name})
			continue
		}
		v, stored, err := d.freeVersion(ctx, &cp, latest.Version+1)
		if err != nil {
			return plan, err
		}
		cp.Version = v
		if !stored {
			if body, err = streams.Marshal(&cp); err != nil {
				return plan, fmt.Errorf("process %s: encode: %w", p.ID, err)
			}
			if limit := int(d.nc.MaxPayload()) - maxHeaderBytes; len(body) > limit {
				return plan, fmt.Errorf("%w: process %s: its definition is %d bytes encoded; the server takes at most %d",
					errdefs.ErrTooLarge, p.ID, len(body), limit)
			}
			plan.msgs = append(plan.msgs, kvWrite(streams.DefinitionKey(p.ID, v), body, 0))
		}
		dep := Deployment{ProcessID: p.ID, Version: v, New: true}
		if src, ok := sources[p.ID]; ok {
			m, err := sourceWrite(p.ID, v, src, deployment, int(d.nc.MaxPayload())-maxHeaderBytes)
			if err != nil {
				return plan, err
			}
			plan.msgs = append(plan.msgs, m)
			dep.DeploymentID, dep.Resource = deployment, src.Name
		}
		ptr, err := streams.Marshal(LatestRecord{Version: v, Hash: sum[:]})
		if err != nil {
			return plan, err
		}
		plan.msgs = append(plan.msgs, kvWrite(streams.LatestKey(p.ID), ptr, rev))
		plan.stored = append(plan.stored, &cp)
		plan.deps = append(plan.deps, dep)
		m := movedProcess{process: p.ID, after: &cp}
		if latest.Version > 0 {
			if m.before, err = d.storedProcess(ctx, p.ID, latest.Version); err != nil {
				return plan, err
			}
		}
		moved = append(moved, m)
	}
	for _, k := range []StartKind{MessageStarts, SignalStarts} {
		index, err := d.startIndexWrites(ctx, k, moved)
		if err != nil {
			return plan, err
		}
		plan.msgs = append(plan.msgs, index...)
	}
	if len(plan.msgs) > streams.MaxAtomicBatch {
		return plan, fmt.Errorf("%w: this deploy writes %d definitions, version pointers and message start index entries; at most %d go in one deploy",
			errdefs.ErrInvalid, len(plan.msgs), streams.MaxAtomicBatch)
	}
	return plan, nil
}

// freeVersion returns the first version from v on that p can become: one
// not stored yet, or one stored with p's very definition (stored true).
// The latter, and versions stored with another definition, are left by a
// deploy that stored a version without moving the pointer (jetbpm wrote
// them apart before deploys were atomic); they are never overwritten.
func (d *Definitions) freeVersion(ctx context.Context, p *model.Process, v int) (int, bool, error) {
	for ; ; v++ {
		entry, err := d.kv.Get(ctx, streams.DefinitionKey(p.ID, v))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return v, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("process %s v%d: read: %w", p.ID, v, err)
		}
		var other model.Process
		want := *p
		want.Version = v
		if streams.Unmarshal(entry.Value(), &other) == nil && sameDefinition(&other, &want) {
			return v, true, nil
		}
	}
}

func sameDefinition(a, b *model.Process) bool {
	x, err1 := streams.Marshal(a)
	y, err2 := streams.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// kvWrite is a write of key in the definitions bucket that the server
// takes only if the key's last revision is still rev (0: no such key).
func kvWrite(key string, value []byte, rev uint64) *nats.Msg {
	m := nats.NewMsg(streams.KVSubject(streams.DefinitionsBucket, key))
	m.Data = value
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	return m
}
