package deploy_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/correlation"
	"github.com/jetbpm/jetbpm/engine/deploy"
	"github.com/jetbpm/jetbpm/engine/errdefs"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// process is start → end, named name; message names a message start event
// in place of the none start when it is not "".
func process(id, name, message string) *model.Process {
	start := &model.Node{ID: "start", Kind: model.StartEvent}
	if message != "" {
		start.Event, start.Message = model.MessageEvent, &model.Message{Name: message}
	}
	return &model.Process{ID: id, Name: name, Nodes: []*model.Node{start, {ID: "end", Kind: model.EndEvent}},
		Flows: []*model.Flow{{ID: "f", Source: "start", Target: "end"}}}
}

func open(t *testing.T) (*deploy.Definitions, context.Context) {
	t.Helper()
	env := streamstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	defs, err := deploy.Open(ctx, env.JS)
	if err != nil {
		t.Fatal(err)
	}
	return defs, ctx
}

func deployOne(t *testing.T, ctx context.Context, defs *deploy.Definitions, p *model.Process, src *deploy.Resource) deploy.Deployment {
	t.Helper()
	var sources map[string]deploy.Resource
	if src != nil {
		sources = map[string]deploy.Resource{p.ID: *src}
	}
	deps, err := defs.Deploy(ctx, []*model.Process{p}, sources)
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) != 1 || deps[0].ProcessID != p.ID {
		t.Fatalf("deploy of %s: %+v", p.ID, deps)
	}
	return deps[0]
}

// A deploy makes version n+1 of a changed process and keeps the version of
// an unchanged one; every version, its source and the pointer read back.
func TestDeployVersions(t *testing.T) {
	t.Parallel()
	defs, ctx := open(t)
	src := &deploy.Resource{Name: "order.bpmn", XML: []byte("<definitions>v1</definitions>")}
	if d := deployOne(t, ctx, defs, process("order", "Order", ""), src); d.Version != 1 || !d.New || d.Resource != "order.bpmn" || d.DeploymentID == "" {
		t.Fatalf("first deploy: %+v", d)
	}
	if d := deployOne(t, ctx, defs, process("order", "Order", ""), nil); d.Version != 1 || d.New || d.Resource != "order.bpmn" {
		t.Fatalf("the same definition again: %+v, want version 1, not new, its source kept", d)
	}
	if d := deployOne(t, ctx, defs, process("order", "Order v2", ""), nil); d.Version != 2 || !d.New || d.Resource != "" {
		t.Fatalf("a changed definition: %+v, want version 2, new, no source", d)
	}
	latest, _, err := defs.Latest(ctx, "order")
	if err != nil || latest.Version != 2 {
		t.Fatalf("latest: %+v, %v", latest, err)
	}
	if p, err := defs.Get(ctx, "order", 0); err != nil || p.Version != 2 || p.Name != "Order v2" {
		t.Fatalf("Get latest: %+v, %v", p, err)
	}
	if p, err := defs.Get(ctx, "order", 1); err != nil || p.Version != 1 || p.Name != "Order" {
		t.Fatalf("Get v1: %+v, %v", p, err)
	}
	if xml, err := defs.Source(ctx, "order", 1); err != nil || string(xml) != string(src.XML) {
		t.Fatalf("Source v1: %q, %v", xml, err)
	}
	if _, err := defs.Source(ctx, "order", 2); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("Source of a version built in Go: %v, want ErrNotFound", err)
	}
	info, err := defs.Info(ctx, "order", streams.LatestKey("order"), 0)
	if err != nil || info.Version != 2 || !slices.Equal(info.Versions, []int{1, 2}) || info.HasSource {
		t.Fatalf("Info: %+v, %v", info, err)
	}
	for _, c := range []struct {
		id string
		v  int
	}{{"order", 3}, {"nope", 0}, {"nope", 1}} {
		if _, err := defs.Get(ctx, c.id, c.v); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Get(%q, %d): %v, want ErrNotFound", c.id, c.v, err)
		}
	}
}

// Deploys racing for one process each get a version of their own: the
// loser of a pointer write plans again from the new pointer.
func TestRacingDeploysGetDistinctVersions(t *testing.T) {
	t.Parallel()
	defs, ctx := open(t)
	const n = 4
	versions := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			deps, err := defs.Deploy(ctx, []*model.Process{process("race", string(rune('a'+i)), "")}, nil)
			if err == nil {
				versions[i] = deps[0].Version
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	slices.Sort(versions)
	if !slices.Equal(versions, []int{1, 2, 3, 4}) {
		t.Fatalf("versions %v, want 1 to 4 once each", versions)
	}
}

// The message start index follows the latest versions: a version without
// the start event takes its process out of the index.
func TestMessageStartIndexFollowsTheLatestVersion(t *testing.T) {
	t.Parallel()
	defs, ctx := open(t)
	deployOne(t, ctx, defs, process("a", "", "go"), nil)
	deployOne(t, ctx, defs, process("b", "", "go"), nil)
	starts, rev, err := defs.StartIndex(ctx, deploy.MessageStarts, "go")
	want := []correlation.StartEvent{{Process: "a", Version: 1, Node: "start"}, {Process: "b", Version: 1, Node: "start"}}
	if err != nil || rev == 0 || !slices.Equal(starts, want) {
		t.Fatalf("index of go: %+v (revision %d), %v; want %+v", starts, rev, err, want)
	}
	deployOne(t, ctx, defs, process("a", "", ""), nil)
	starts, _, err = defs.StartIndex(ctx, deploy.MessageStarts, "go")
	if want := want[1:]; err != nil || !slices.Equal(starts, want) {
		t.Fatalf("after a's version 2 without the start: %+v, %v; want %+v", starts, err, want)
	}
	if names := deploy.MessageStartNames(process("b", "", "go")); !slices.Equal(names, []string{"go"}) {
		t.Fatalf("MessageStartNames: %v", names)
	}
}
