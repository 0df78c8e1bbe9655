package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine/bpmnxml"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/layout"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
)

// MaxDeploy is the most processes one deploy takes: each writes a version,
// its BPMN source and a version pointer, in one atomic batch.
const MaxDeploy = streams.MaxAtomicBatch / 3

// Deployment reports the version a deploy produced; see deploy.Deployment.
type Deployment = deploy.Deployment

// TimerStart describes the timer start event of a deployed version.
type TimerStart = deploy.TimerStart

// Process returns a deployed process; version 0 means the latest.
func (e *Engine) Process(ctx context.Context, processID string, version int) (*model.Process, error) {
	return e.defs.Get(ctx, processID, version)
}

// Deploy deploys one process; see DeployAll.
func (e *Engine) Deploy(ctx context.Context, p *model.Process) (Deployment, error) {
	deps, err := e.DeployAll(ctx, p)
	if err != nil {
		return Deployment{}, err
	}
	return deps[0], nil
}

// DeployAll deploys processes, all or none. Each becomes the next version
// of its process, unless it is identical to the latest version: then that
// version is returned with New false (as Zeebe does), so redeploying on
// every service start creates no versions.
//
// Everything is checked before anything is written: every process
// validates, no process id comes twice, and the external tasks of a topic
// agree on its lock, with each other and with the topic's consumer on the
// server (the lock is the consumer's AckWait, so it is per topic). Then
// the consumers of new topics are created, and last every new version and
// version pointer is written in one atomic batch (streams.PublishAtomic):
// a deploy that fails there — a write the server refuses, a lost
// connection, a crash — leaves no version and moves no pointer. Only the
// topic consumers it created stay: idle until a process uses the topic.
//
// After the batch, each new version's timer start event is scheduled
// (docs/timerstart.md), replacing the previous version's; a new version
// without one cancels it.
func (e *Engine) DeployAll(ctx context.Context, procs ...*model.Process) ([]Deployment, error) {
	return e.deployAll(ctx, procs, nil)
}

// deployAll is DeployAll keeping, for each process id in sources, the
// BPMN document it was imported from (ProcessSource).
func (e *Engine) deployAll(ctx context.Context, procs []*model.Process, sources map[string]Resource) ([]Deployment, error) {
	switch {
	case len(procs) == 0:
		return nil, fmt.Errorf("%w: no process to deploy", ErrInvalid)
	case len(procs) > MaxDeploy:
		return nil, fmt.Errorf("%w: %d processes in one deploy; at most %d", ErrInvalid, len(procs), MaxDeploy)
	}
	seen := map[string]bool{}
	for _, p := range procs {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if seen[p.ID] {
			return nil, fmt.Errorf("%w: process %q is in the deploy twice", ErrInvalid, p.ID)
		}
		seen[p.ID] = true
	}
	if err := e.writable(); err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	topics, err := e.topicLocks(ctx, procs)
	if err != nil {
		return nil, err
	}
	for _, tl := range topics {
		if err := streams.EnsureTopic(ctx, e.js, tl.topic, tl.lock, e.layout.Replicas, e.log); err != nil {
			return nil, fmt.Errorf("process %s: topic %q: %w", tl.process, tl.topic, err)
		}
	}
	deps, err := e.defs.Deploy(ctx, procs, sources)
	if err != nil {
		return nil, err
	}
	for i := range deps {
		for _, p := range procs {
			if p.ID == deps[i].ProcessID {
				deps[i].Warnings = e.deployWarnings(p)
			}
		}
	}
	if err := e.timers.Schedule(ctx, procs, deps); err != nil {
		return deps, fmt.Errorf("deployed, but a timer start schedule is not set (docs/timerstart.md): %w", err)
	}
	// The versions, their schedules and the topics' consumers (new files,
	// not only messages) are durable before the answer.
	if e.opts.Sync != nil {
		if err := e.opts.Sync.SyncAll(); err != nil {
			return nil, fmt.Errorf("deploy: %w", streams.NotDurable(err))
		}
	}
	return deps, nil
}

// DeployXML imports BPMN 2.0 XML and deploys every executable process in
// it, all or none (DeployAll). The document is kept beside each new
// version (ProcessSource).
func (e *Engine) DeployXML(ctx context.Context, r io.Reader) ([]Deployment, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	procs, err := bpmnxml.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	sources := map[string]Resource{}
	for _, p := range procs {
		sources[p.ID] = Resource{XML: data}
	}
	return e.deployAll(ctx, procs, sources)
}

// A Resource is one named BPMN document of a deploy.
type Resource = deploy.Resource

// DeployResources imports every document and deploys all their executable
// processes, all or none (DeployAll). A process id in two documents is an
// error naming both. Each document is kept beside the new versions of the
// processes it holds (ProcessSource). A file that is not an XML document
// is a resource the documents may load a script from
// (camunda:resource="deployment://NAME", bpmnxml.ParseIn); its text is
// kept in the definitions that load it.
func (e *Engine) DeployResources(ctx context.Context, files ...Resource) ([]Deployment, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no files to deploy", ErrInvalid)
	}
	resources := bpmnxml.Resources{}
	var docs []Resource
	for i, f := range files {
		if f.Name == "" {
			f.Name = fmt.Sprintf("file %d", i+1)
		}
		if bpmnxml.IsDocument(f.XML) {
			docs = append(docs, f)
		} else {
			resources[f.Name] = f.XML
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w: no BPMN document among the files to deploy", ErrInvalid)
	}
	var procs []*model.Process
	sources := map[string]Resource{}
	for _, f := range docs {
		name := f.Name
		ps, err := bpmnxml.ParseIn(bytes.NewReader(f.XML), resources)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, &resourceError{name: name, err: err})
		}
		for _, p := range ps {
			if prev, dup := sources[p.ID]; dup {
				return nil, fmt.Errorf("%w: %s: process %q is also in %s", ErrInvalid, name, p.ID, prev.Name)
			}
			sources[p.ID] = Resource{Name: name, XML: f.XML}
		}
		procs = append(procs, ps...)
	}
	return e.deployAll(ctx, procs, sources)
}

// DeployFile deploys the BPMN file at path (DeployXML).
func (e *Engine) DeployFile(ctx context.Context, path string) ([]Deployment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	deps, err := e.DeployXML(ctx, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return deps, nil
}

// deployWarnings are p's import warnings and one for each in-process
// operation this node has not registered: every instance would raise an
// incident there.
func (e *Engine) deployWarnings(p *model.Process) []model.Warning {
	out := slices.Clone(p.Warnings)
	for _, n := range p.Nodes {
		if n.Service == nil || n.Service.Operation == "" || e.opts.Operations.Has(n.Service.Operation) {
			continue
		}
		out = append(out, model.Warning{Node: n.ID, Line: n.Line, Message: fmt.Sprintf(
			"in-process operation %q is not registered with this engine node: each instance raises an incident here until it is; register a Go function under that name (engine.Operations.Register) or make the task external (camunda:type=\"external\" camunda:topic, a zeebe:taskDefinition or jetbpm:worker)",
			n.Service.Operation)})
	}
	return out
}

// topicLock is the lock a deploy needs on a topic, and the first task
// that asked for it.
type topicLock struct {
	topic, process, node string
	lock                 time.Duration
}

// topicLocks returns the topics procs' external tasks use, in order of
// first use, each with its lock. It refuses a deploy whose tasks disagree
// on a topic's lock, with each other or with the topic's consumer.
func (e *Engine) topicLocks(ctx context.Context, procs []*model.Process) ([]topicLock, error) {
	var out []topicLock
	index := map[string]int{}
	for _, p := range procs {
		var wants []topicLock
		// Zeebe's listeners' topics too: their workers poll before the
		// first job. A topic expression's topics are ensured as jobs are
		// queued.
		listeners := func(node string, ls ...model.JobListener) {
			for _, l := range ls {
				if l.TypeExpr == "" {
					wants = append(wants, topicLock{topic: l.Type, process: p.ID, node: node,
						lock: l.Overrides().Resolve(e.opts.jobDefaults().For(l.Type)).LockDuration})
				}
			}
		}
		listeners("(the process)", p.JobListeners...)
		for _, n := range p.Nodes {
			if n.IsExternal() && n.Service.Worker.TopicExpr == "" {
				wants = append(wants, topicLock{topic: n.Service.Worker.Topic, process: p.ID, node: n.ID,
					lock: n.Service.Worker.Overrides().Resolve(e.opts.jobDefaults().For(n.Service.Worker.Topic)).LockDuration})
			}
			listeners(n.ID, slices.Concat(n.JobListeners, n.TaskJobListeners)...)
		}
		for _, tl := range wants {
			i, ok := index[tl.topic]
			if !ok {
				index[tl.topic] = len(out)
				out = append(out, tl)
				continue
			}
			if first := out[i]; first.lock != tl.lock {
				return nil, fmt.Errorf("%w: process %s: service %q wants a %s lock on topic %q, service %q of process %s a %s lock; the lock is per topic",
					ErrInvalid, p.ID, tl.node, tl.lock, tl.topic, first.node, first.process, first.lock)
			}
		}
	}
	for _, tl := range out {
		cons, err := e.js.Consumer(ctx, streams.JobsStream, streams.TopicConsumer(tl.topic))
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("process %s: topic %q: %w", tl.process, tl.topic, err)
		}
		if have := cons.CachedInfo().Config.AckWait; have != tl.lock {
			return nil, fmt.Errorf("%w: process %s: service %q wants a %s lock on topic %q, which has %s; the lock is per topic",
				ErrInvalid, tl.process, tl.node, tl.lock, tl.topic, have)
		}
	}
	return out, nil
}

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
