package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/layout"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
)

// ProcessInfo describes one deployed version of a process.
type ProcessInfo = deploy.ProcessInfo

// TimerStartInfo is one timer start event of a process.
type TimerStartInfo = deploy.TimerStartInfo

// Processes lists the latest version of every deployed process, by id.
func (e *Engine) Processes(ctx context.Context) ([]ProcessInfo, error) {
	lister, err := e.defs.KV().ListKeysFiltered(ctx, streams.LatestKeys)
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
		info, err := e.defs.Info(ctx, "", k, 0)
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
	return e.defs.Info(ctx, processID, streams.LatestKey(processID), version)
}

// ProcessSource returns the BPMN document a deployed version of a process
// was imported from; version 0 means the latest. A process built in Go
// (DeployAll) has none: ErrNotFound.
func (e *Engine) ProcessSource(ctx context.Context, processID string, version int) ([]byte, error) {
	return e.defs.Source(ctx, processID, version)
}

// ProcessOrigin returns the document version version of processID was
// deployed from (its file name) and the deploy that made the version; both
// "" for a version built in Go. It reads only that version's source record.
func (e *Engine) ProcessOrigin(ctx context.Context, processID string, version int) (resource, deploymentID string, err error) {
	src, _, err := e.defs.SourceOf(ctx, processID, version)
	return src.Name, src.Deployment, err
}

// ProcessDiagram returns a BPMN document to draw version version (0: the
// latest) of processID with: the document it was deployed from when that
// has diagram interchange (DI) for the process, else one laid out from
// the process itself (package layout) — laidOut says which. Processes
// built in Go, generated, or written without DI are drawn all the same.
func (e *Engine) ProcessDiagram(ctx context.Context, processID string, version int) (doc []byte, laidOut bool, err error) {
	p, err := e.defs.Get(ctx, processID, version)
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
