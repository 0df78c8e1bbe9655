package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/streams"
)

// ProcessInfo describes one deployed version of a process.
type ProcessInfo struct {
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Version int    `json:"version"`
	// Versions lists every deployed version of the process, oldest first.
	Versions   []int     `json:"versions"`
	DeployedAt time.Time `json:"deployedAt"`
	// TimerStarts are the version's timer start events (docs/timerstart.md).
	TimerStarts []TimerStartInfo `json:"timerStarts,omitempty"`
	// HasSource says whether the BPMN document it was imported from is kept
	// (ProcessSource): processes built in Go have none.
	HasSource bool `json:"hasSource"`
	// Resource names that document (the file name of its deploy) and
	// DeploymentID the deploy that made the version, when it is kept.
	Resource     string `json:"resource,omitempty"`
	DeploymentID string `json:"deploymentId,omitempty"`
}

// TimerStartInfo is one timer start event of a process.
type TimerStartInfo struct {
	Node  string `json:"node"`
	Type  string `json:"type"` // date, duration or cycle
	Value string `json:"value"`
}

// Info describes version v (0: the one latestKey points at) of a process;
// processID may be "" when only its latest key is known.
func (d *Definitions) Info(ctx context.Context, processID, latestKey string, v int) (ProcessInfo, error) {
	entry, err := d.kv.Get(ctx, latestKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ProcessInfo{}, fmt.Errorf("process %q: %w", processID, errdefs.ErrNotFound)
	}
	if err != nil {
		return ProcessInfo{}, fmt.Errorf("process %s: read latest version: %w", processID, err)
	}
	var rec LatestRecord
	if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
		return ProcessInfo{}, fmt.Errorf("%s: decode latest version: %w", latestKey, err)
	}
	if processID == "" {
		// The key holds the id escaped; the latest definition holds it as is.
		tok := strings.TrimPrefix(latestKey, "latest.")
		def, err := d.kv.Get(ctx, "def."+tok+"."+strconv.Itoa(rec.Version))
		if err != nil {
			return ProcessInfo{}, fmt.Errorf("%s: read latest definition: %w", latestKey, err)
		}
		var p struct {
			ID string `msgpack:"id"`
		}
		if err := streams.Unmarshal(def.Value(), &p); err != nil {
			return ProcessInfo{}, fmt.Errorf("%s: decode latest definition: %w", latestKey, err)
		}
		processID = p.ID
	}
	if v == 0 {
		v = rec.Version
	}
	if v > rec.Version {
		return ProcessInfo{}, fmt.Errorf("process %q version %d: %w", processID, v, errdefs.ErrNotFound)
	}
	p, err := d.Get(ctx, processID, v)
	if err != nil {
		return ProcessInfo{}, err
	}
	def, err := d.kv.Get(ctx, streams.DefinitionKey(processID, v))
	if err != nil {
		return ProcessInfo{}, fmt.Errorf("process %s v%d: read: %w", processID, v, err)
	}
	info := ProcessInfo{ID: p.ID, Name: p.Name, Version: v, DeployedAt: def.Created().UTC()}
	for _, n := range p.TimerStarts() {
		info.TimerStarts = append(info.TimerStarts, TimerStartInfo{Node: n.ID, Type: string(n.Timer.Type), Value: n.Timer.Value})
	}
	if info.Versions, err = d.versions(ctx, processID, rec.Version); err != nil {
		return ProcessInfo{}, err
	}
	src, ok, err := d.SourceOf(ctx, processID, v)
	if err != nil {
		return ProcessInfo{}, err
	}
	info.HasSource, info.Resource, info.DeploymentID = ok, src.Name, src.Deployment
	return info, nil
}

// versions lists the versions of a process up to latest, oldest first.
func (d *Definitions) versions(ctx context.Context, processID string, latest int) ([]int, error) {
	lister, err := d.kv.ListKeysFiltered(ctx, streams.DefinitionKeys(processID))
	if err != nil {
		return nil, fmt.Errorf("process %s: list versions: %w", processID, err)
	}
	defer lister.Stop()
	out := []int{}
	for k := range lister.Keys() {
		v, err := strconv.Atoi(k[strings.LastIndexByte(k, '.')+1:])
		if err == nil && v <= latest {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out, nil
}
