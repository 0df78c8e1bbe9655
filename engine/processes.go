package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/layout"
	"github.com/jetbpm/jetbpm/engine/model"
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

// Processes lists the latest version of every deployed process, by id.
func (e *Engine) Processes(ctx context.Context) ([]ProcessInfo, error) {
	lister, err := e.defs.kv.ListKeysFiltered(ctx, streams.LatestKeys)
	if err != nil {
		return nil, fmt.Errorf("processes: list: %w", err)
	}
	defer lister.Stop()
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	out := []ProcessInfo{}
	for _, k := range keys {
		info, err := e.defs.info(ctx, "", k, 0)
		if errors.Is(err, ErrNotFound) {
			continue // deleted while listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ProcessInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// ProcessInfo describes one deployed version of a process; version 0
// means the latest.
func (e *Engine) ProcessInfo(ctx context.Context, processID string, version int) (ProcessInfo, error) {
	return e.defs.info(ctx, processID, streams.LatestKey(processID), version)
}

// ProcessSource returns the BPMN document a deployed version of a process
// was imported from; version 0 means the latest. A process built in Go
// (DeployAll) has none: ErrNotFound.
func (e *Engine) ProcessSource(ctx context.Context, processID string, version int) ([]byte, error) {
	p, err := e.defs.get(ctx, processID, version)
	if err != nil {
		return nil, err
	}
	entry, err := e.defs.kv.Get(ctx, streams.SourceKey(processID, p.Version))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("process %q version %d has no BPMN source (deployed from Go, or by a jetbpm that kept none): %w", processID, p.Version, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("process %s v%d: read source: %w", processID, p.Version, err)
	}
	var rec sourceRecord
	if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
		return nil, fmt.Errorf("process %s v%d: decode source: %w", processID, p.Version, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Gzip))
	if err != nil {
		return nil, fmt.Errorf("process %s v%d: decode source: %w", processID, p.Version, err)
	}
	xml, err := io.ReadAll(io.LimitReader(zr, maxSourceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("process %s v%d: decode source: %w", processID, p.Version, err)
	}
	if len(xml) > maxSourceBytes {
		return nil, fmt.Errorf("%w: process %s v%d: source is over %d bytes", ErrTooLarge, processID, p.Version, maxSourceBytes)
	}
	return xml, nil
}

// ProcessOrigin returns the document version version of processID was
// deployed from (its file name) and the deploy that made the version; both
// "" for a version built in Go. It reads only that version's source record.
func (e *Engine) ProcessOrigin(ctx context.Context, processID string, version int) (resource, deploymentID string, err error) {
	src, _, err := e.defs.sourceOf(ctx, processID, version)
	return src.Name, src.Deployment, err
}

// ProcessDiagram returns a BPMN document to draw version version (0: the
// latest) of processID with: the document it was deployed from when that
// has diagram interchange (DI) for the process, else one laid out from
// the process itself (package layout) — laidOut says which. Processes
// built in Go, generated, or written without DI are drawn all the same.
func (e *Engine) ProcessDiagram(ctx context.Context, processID string, version int) (doc []byte, laidOut bool, err error) {
	p, err := e.defs.get(ctx, processID, version)
	if err != nil {
		return nil, false, err
	}
	src, err := e.ProcessSource(ctx, processID, p.Version)
	switch {
	case err == nil && hasDiagram(src, p):
		return src, false, nil
	case err != nil && !errors.Is(err, ErrNotFound):
		return nil, false, err
	}
	return layout.Document(p), true, nil
}

// hasDiagram reports whether document src has DI for a node of p.
func hasDiagram(src []byte, p *model.Process) bool {
	if !bytes.Contains(src, []byte("BPMNShape")) {
		return false
	}
	for _, n := range p.Nodes {
		if bytes.Contains(src, []byte(`bpmnElement="`+n.ID+`"`)) {
			return true
		}
	}
	return false
}

// maxSourceBytes bounds a BPMN document kept by a deploy, uncompressed.
const maxSourceBytes = 64 << 20

// sourceRecord is the value of a SourceKey: the document's name (a file
// name), the id of the deploy that wrote it and the document.
type sourceRecord struct {
	Name       string `msgpack:"name,omitempty"`
	Deployment string `msgpack:"deployment,omitempty"`
	Gzip       []byte `msgpack:"gzip"`
}

// sourceOf reads the source record of version v of processID; ok is false
// for a version deployed without one (built in Go).
func (d *definitions) sourceOf(ctx context.Context, processID string, v int) (rec sourceRecord, ok bool, err error) {
	entry, err := d.kv.Get(ctx, streams.SourceKey(processID, v))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return rec, false, nil
	case err != nil:
		return rec, false, fmt.Errorf("process %s v%d: read source: %w", processID, v, err)
	}
	if err := streams.Unmarshal(entry.Value(), &rec); err != nil {
		return rec, false, fmt.Errorf("process %s v%d: decode source: %w", processID, v, err)
	}
	return rec, true, nil
}

// sourceWrite is the write, in a deploy's batch, of the document version v
// of processID was imported from. Written without expectations: a
// version's source is only ever written by the batch that moves the
// pointer to it.
func sourceWrite(processID string, v int, src Resource, deployment string, limit int) (*nats.Msg, error) {
	if len(src.XML) > maxSourceBytes {
		return nil, fmt.Errorf("%w: process %s: its BPMN document is %d bytes; at most %d", ErrTooLarge, processID, len(src.XML), maxSourceBytes)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(src.XML); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	body, err := streams.Marshal(sourceRecord{Name: src.Name, Deployment: deployment, Gzip: buf.Bytes()})
	if err != nil {
		return nil, err
	}
	if len(body) > limit {
		return nil, fmt.Errorf("%w: process %s: its BPMN document is %d bytes compressed; the server takes at most %d",
			ErrTooLarge, processID, len(body), limit)
	}
	m := nats.NewMsg(streams.KVSubject(streams.DefinitionsBucket, streams.SourceKey(processID, v)))
	m.Data = body
	return m, nil
}

// info describes version v (0: the one latestKey points at) of a process;
// processID may be "" when only its latest key is known.
func (d *definitions) info(ctx context.Context, processID, latestKey string, v int) (ProcessInfo, error) {
	entry, err := d.kv.Get(ctx, latestKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ProcessInfo{}, fmt.Errorf("process %q: %w", processID, ErrNotFound)
	}
	if err != nil {
		return ProcessInfo{}, fmt.Errorf("process %s: read latest version: %w", processID, err)
	}
	var rec latestRecord
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
		return ProcessInfo{}, fmt.Errorf("process %q version %d: %w", processID, v, ErrNotFound)
	}
	p, err := d.get(ctx, processID, v)
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
	src, ok, err := d.sourceOf(ctx, processID, v)
	if err != nil {
		return ProcessInfo{}, err
	}
	info.HasSource, info.Resource, info.DeploymentID = ok, src.Name, src.Deployment
	return info, nil
}

// versions lists the versions of a process up to latest, oldest first.
func (d *definitions) versions(ctx context.Context, processID string, latest int) ([]int, error) {
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
