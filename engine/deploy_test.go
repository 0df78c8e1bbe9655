package engine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// scriptProcess is a valid process whose one script task evaluates expr.
func scriptProcess(t testing.TB, id, expr string) *model.Process {
	t.Helper()
	return build(t, model.NewBuilder(id).StartEvent("s").ScriptTask("t", expr, "v").EndEvent("e").Sequence("s", "t", "e"))
}

// workerProcess is a valid process with one external task on topic.
func workerProcess(t testing.TB, id, topic string, opts ...model.WorkerOption) *model.Process {
	t.Helper()
	return build(t, model.NewBuilder(id).StartEvent("s").ServiceTask("charge", "", model.WithWorker(topic, opts...)).EndEvent("e").Sequence("s", "charge", "e"))
}

// requireNotDeployed fails unless no version of each process exists.
func requireNotDeployed(t *testing.T, eng *engine.Engine, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if p, err := eng.Process(ctxT(t), id, 0); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("process %s after a failed deploy: version %v, %v; want ErrNotFound", id, p, err)
		}
	}
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestDeployAllIsAllOrNone(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := ctxT(t)

	// Two processes of one deploy disagree on a topic's lock: found before
	// anything is written, the topic's consumer included.
	_, err := eng.DeployAll(ctx,
		workerProcess(t, "pay-a", "payments"),
		workerProcess(t, "pay-b", "payments", model.WithLockDuration(30*time.Second)))
	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "pay-b") {
		t.Fatalf("deploy with conflicting locks: %v; want ErrInvalid naming pay-b", err)
	}
	requireNotDeployed(t, eng, "pay-a", "pay-b")
	if _, err := env.JS.Consumer(ctx, streams.JobsStream, streams.TopicConsumer("payments")); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("topic consumer after a refused deploy: %v; want none", err)
	}

	// A process asks another lock than its topic already has.
	if _, err := eng.Deploy(ctx, workerProcess(t, "ship", "shipping")); err != nil {
		t.Fatal(err)
	}
	_, err = eng.DeployAll(ctx, scriptProcess(t, "calc", "1 + 1"), workerProcess(t, "ship-fast", "shipping", model.WithLockDuration(5*time.Second)))
	if !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("deploy against a topic's lock: %v; want ErrInvalid", err)
	}
	requireNotDeployed(t, eng, "calc", "ship-fast")

	// The same process twice in one deploy.
	_, err = eng.DeployAll(ctx, scriptProcess(t, "twice", "1"), scriptProcess(t, "twice", "2"))
	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), `"twice"`) {
		t.Fatalf("deploy of one process twice: %v; want ErrInvalid naming it", err)
	}
	requireNotDeployed(t, eng, "twice")

	// Nothing to deploy.
	if _, err := eng.DeployAll(ctx); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("deploy of nothing: %v; want ErrInvalid", err)
	}
}

// A write that the server refuses midway — here the second process's
// definition is over the bucket's message size — leaves nothing deployed:
// not the first process, not a version pointer.
func TestDeployAllWriteFailsMidway(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := ctxT(t)

	setMaxMsgSize := func(n int32) {
		t.Helper()
		s, err := env.JS.Stream(ctx, "KV_"+streams.DefinitionsBucket)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		cfg.MaxMsgSize = n
		if _, err := env.JS.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	small := func() *model.Process { return scriptProcess(t, "small", "1 + 1") }
	big := func() *model.Process {
		return scriptProcess(t, "big", fmt.Sprintf("%q", strings.Repeat("x", 32<<10)))
	}

	// An earlier version of small, so a failed deploy must also leave its
	// version pointer where it was.
	if _, err := eng.Deploy(ctx, scriptProcess(t, "small", "0")); err != nil {
		t.Fatal(err)
	}
	setMaxMsgSize(16 << 10)
	deps, err := eng.DeployAll(ctx, small(), big())
	if err == nil {
		t.Fatalf("deploy over the bucket's message size = %+v; want an error", deps)
	}
	t.Logf("deploy over the bucket's message size: %v", err)
	if p, err := eng.Process(ctx, "small", 0); err != nil || p.Version != 1 {
		t.Errorf("small after the failed deploy: %+v, %v; want version 1 still the latest", p, err)
	}
	if p, err := eng.Process(ctx, "small", 2); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("small version 2 after the failed deploy: %+v, %v; want ErrNotFound", p, err)
	}
	requireNotDeployed(t, eng, "big")

	// Once the server takes them, the same deploy goes through whole.
	setMaxMsgSize(-1)
	deps, err = eng.DeployAll(ctx, small(), big())
	want := []engine.Deployment{{ProcessID: "small", Version: 2, New: true}, {ProcessID: "big", Version: 1, New: true}}
	if err != nil || !reflect.DeepEqual(deps, want) {
		t.Fatalf("deploy = %+v, %v; want %+v", deps, err, want)
	}
	deps, err = eng.DeployAll(ctx, small(), big())
	want = []engine.Deployment{{ProcessID: "small", Version: 2}, {ProcessID: "big", Version: 1}}
	if err != nil || !reflect.DeepEqual(deps, want) {
		t.Fatalf("identical redeploy = %+v, %v; want %+v", deps, err, want)
	}
}

// Concurrent deploys of one process each get their own version: a deploy
// that lost the race to the version pointer starts over.
func TestDeployAllConcurrent(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	const n = 6
	engs := []*engine.Engine{openEngine(t, env, nil), openEngine(t, env, nil)}
	ctx := ctxT(t)

	var wg sync.WaitGroup
	versions := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			deps, err := engs[i%2].DeployAll(ctx, scriptProcess(t, "shared", fmt.Sprint(i)), scriptProcess(t, fmt.Sprintf("own-%d", i), "1"))
			errs[i] = err
			if err == nil {
				versions[i] = deps[0].Version
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("deploy %d: %v", i, err)
		}
	}
	slices.Sort(versions)
	if want := []int{1, 2, 3, 4, 5, 6}; !slices.Equal(versions, want) {
		t.Fatalf("versions %v; want each of %v once", versions, want)
	}
	latest, err := engs[0].Process(ctx, "shared", 0)
	if err != nil || latest.Version != n {
		t.Fatalf("latest shared = %+v, %v; want version %d", latest, err, n)
	}
}

// On streams provisioned by a jetbpm that wrote deploys apart, a deploy
// says what to do instead of half-deploying.
func TestDeployOnAnOldLayout(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := ctxT(t)
	s, err := env.JS.Stream(ctx, streams.KVStream(streams.DefinitionsBucket))
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowAtomicPublish = false
	if _, err := env.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, err = eng.DeployAll(ctx, scriptProcess(t, "a", "1"), scriptProcess(t, "b", "2"))
	if err == nil || !strings.Contains(err.Error(), "provision the streams") {
		t.Fatalf("deploy on a layout without atomic batches: %v; want a hint to provision", err)
	}
	requireNotDeployed(t, eng, "a", "b")
}
