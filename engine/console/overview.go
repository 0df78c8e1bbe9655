package console

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/history"
	"github.com/jetbpm/jetbpm/streams"
)

// Overview is what GET /console/overview answers: every deployed process
// with its counts, and the totals.
type Overview struct {
	Processes []ProcessCounts `json:"processes"`
	Totals    Counts          `json:"totals"`
	// ComputedAt is when the counts were taken; Took how long that took.
	ComputedAt time.Time `json:"computedAt"`
	Took       string    `json:"took"`
	// History is the node's history level; NotRecorded the families of
	// facts it does not write (none at full), so that the latest facts
	// are not read as all that happened.
	History     string   `json:"history"`
	NotRecorded []string `json:"notRecorded"`
}

// ProcessCounts are the counts of one process, over all its versions.
type ProcessCounts struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Version  int    `json:"version"` // the latest
	Versions []int  `json:"versions"`
	Counts
}

// Counts are instances by status (active counts the instances with
// incidents too, as instances list does), open incidents and open tasks.
type Counts struct {
	Instances     map[string]int `json:"instances"`
	OpenIncidents int            `json:"openIncidents"`
	OpenTasks     int            `json:"openTasks"`
}

// NodeCounts are one node's tokens and open incidents, in one version.
type NodeCounts struct {
	Active    int `json:"active"`
	Incidents int `json:"incidents"`
}

// overview keeps the counts. run recomputes them when facts arrive, at
// most once per refresh interval; the handlers read the last result.
type overview struct {
	eng    *engine.Engine
	logger *slog.Logger

	mu    sync.Mutex
	cur   *Overview
	nodes map[string]map[int]map[string]*NodeCounts // process → version → node
	ready chan struct{}                             // closed after the first computation
}

func newOverview(eng *engine.Engine, logger *slog.Logger) *overview {
	return &overview{eng: eng, logger: logger, ready: make(chan struct{})}
}

func newCounts() Counts {
	return Counts{Instances: map[string]int{"active": 0, "incident": 0, "completed": 0, "failed": 0, "terminated": 0}}
}

// run computes the counts, then again after facts arrived, until ctx ends.
func (o *overview) run(ctx context.Context, js jetstream.JetStream, every time.Duration) {
	dirty := make(chan struct{}, 1)
	go o.watch(ctx, js, dirty)
	first := true
	for {
		if err := o.compute(ctx); err != nil && ctx.Err() == nil {
			o.logger.Warn("console: counting instances", "err", err)
		}
		if first {
			close(o.ready)
			first = false
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		select {
		case <-ctx.Done():
			return
		case <-dirty:
		}
	}
}

// watch marks the counts dirty on each new fact — or, at a history level
// that does not write instance facts, on each checkpoint written (its
// headers only). It re-creates its consumer when it fails (the stream is
// briefly unavailable, say).
func (o *overview) watch(ctx context.Context, js jetstream.JetStream, dirty chan<- struct{}) {
	stream, cfg := streams.FactsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{streams.FactsSubjects},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	}
	if !o.eng.History().Keeps(history.Instance) {
		stream, cfg = "KV_"+streams.InstancesBucket, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{"$KV." + streams.InstancesBucket + ".>"},
			DeliverPolicy:  jetstream.DeliverNewPolicy,
			HeadersOnly:    true,
		}
	}
	for ctx.Err() == nil {
		cons, err := js.OrderedConsumer(ctx, stream, cfg)
		if err == nil {
			var msgs jetstream.MessagesContext
			if msgs, err = cons.Messages(); err == nil {
				stop := context.AfterFunc(ctx, msgs.Stop)
				for {
					if _, err = msgs.Next(); err != nil {
						break
					}
					select {
					case dirty <- struct{}{}:
					default:
					}
				}
				stop()
				msgs.Stop()
			}
		}
		if ctx.Err() == nil {
			o.logger.Warn("console: watching the facts", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// compute reads every process, instance and open task once.
func (o *overview) compute(ctx context.Context) error {
	start := time.Now()
	procs, err := o.eng.Processes(ctx)
	if err != nil {
		return err
	}
	views, err := o.eng.Instances(ctx, engine.Filter{})
	if err != nil {
		return err
	}
	tasks, err := o.eng.Tasks(ctx, engine.TaskFilter{State: engine.TasksOpen})
	if err != nil {
		return err
	}
	byID := map[string]*ProcessCounts{}
	lvl := o.eng.History()
	ov := &Overview{Totals: newCounts(), History: lvl.String(), NotRecorded: notRecorded(lvl)}
	get := func(id string) *ProcessCounts {
		if p, ok := byID[id]; ok {
			return p
		}
		p := &ProcessCounts{ID: id, Versions: []int{}, Counts: newCounts()}
		byID[id] = p
		return p
	}
	for _, pi := range procs {
		p := get(pi.ID)
		p.Name, p.Version, p.Versions = pi.Name, pi.Version, pi.Versions
	}
	nodes := map[string]map[int]map[string]*NodeCounts{}
	node := func(process string, version int, id string) *NodeCounts {
		if nodes[process] == nil {
			nodes[process] = map[int]map[string]*NodeCounts{}
		}
		if nodes[process][version] == nil {
			nodes[process][version] = map[string]*NodeCounts{}
		}
		n := nodes[process][version][id]
		if n == nil {
			n = &NodeCounts{}
			nodes[process][version][id] = n
		}
		return n
	}
	for _, v := range views {
		p := get(v.ProcessID)
		status := string(v.Status)
		p.Instances[status]++
		ov.Totals.Instances[status]++
		if status == string(engine.StatusIncident) {
			p.Instances["active"]++ // active includes the instances with incidents
			ov.Totals.Instances["active"]++
		}
		p.OpenIncidents += len(v.Incidents)
		ov.Totals.OpenIncidents += len(v.Incidents)
		for _, n := range v.ActiveNodes {
			node(v.ProcessID, v.Version, n).Active++
		}
		for _, inc := range v.Incidents {
			node(v.ProcessID, v.Version, inc.Node).Incidents++
		}
	}
	for _, t := range tasks {
		get(t.ProcessID).OpenTasks++
		ov.Totals.OpenTasks++
	}
	for _, p := range byID {
		ov.Processes = append(ov.Processes, *p)
	}
	slices.SortFunc(ov.Processes, func(a, b ProcessCounts) int { return strings.Compare(a.ID, b.ID) })
	if ov.Processes == nil {
		ov.Processes = []ProcessCounts{}
	}
	ov.ComputedAt = time.Now().UTC()
	ov.Took = time.Since(start).Round(time.Microsecond).String()
	o.mu.Lock()
	o.cur, o.nodes = ov, nodes
	o.mu.Unlock()
	return nil
}

// wait returns once the first counts are in, or with ctx's error.
func (o *overview) wait(ctx context.Context) error {
	select {
	case <-o.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Handler) serveOverview(w http.ResponseWriter, r *http.Request) {
	if err := h.overview.wait(r.Context()); err != nil {
		return
	}
	h.overview.mu.Lock()
	ov := h.overview.cur
	h.overview.mu.Unlock()
	if ov == nil {
		writeProblem(w, http.StatusServiceUnavailable, "the counts are not available yet; the log says why")
		return
	}
	writeJSON(w, ov)
}

// serveNodes answers the node counts of one version of a process
// (?version=N, absent or 0: every version added up).
func (h *Handler) serveNodes(w http.ResponseWriter, r *http.Request) {
	version := 0
	if s := r.URL.Query().Get("version"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			writeProblem(w, http.StatusBadRequest, "version "+strconv.Quote(s)+": want a version number")
			return
		}
		version = v
	}
	if err := h.overview.wait(r.Context()); err != nil {
		return
	}
	out := map[string]NodeCounts{}
	h.overview.mu.Lock()
	for v, nodes := range h.overview.nodes[r.PathValue("id")] {
		if version != 0 && v != version {
			continue
		}
		for id, n := range nodes {
			sum := out[id]
			sum.Active += n.Active
			sum.Incidents += n.Incidents
			out[id] = sum
		}
	}
	h.overview.mu.Unlock()
	writeJSON(w, map[string]any{"nodes": out})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// writeProblem answers an RFC 9457 problem, as the API does.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
}

// notRecorded lists the families of facts lvl does not write, never nil.
func notRecorded(lvl history.Level) []string {
	if out := lvl.Leaves(); out != nil {
		return out
	}
	return []string{}
}
