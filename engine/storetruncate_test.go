package engine_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
	"github.com/jetbpm/jetbpm/workerkit"
)

// truncateLastBlock cuts the last block file of stream in the store
// under dir to half its length, as a torn write or a full disk would.
func truncateLastBlock(t *testing.T, dir, stream string) {
	t.Helper()
	blocks := streamBlocks(t, dir, stream)
	last := blocks[len(blocks)-1]
	info, err := os.Stat(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(last, info.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// A truncated file of the instances bucket or the definitions bucket, in
// a stopped engine's store (#37). nats-server keeps the last sequence it
// had and counts what the cut took as deleted, so the marks see nothing:
// the cross-check names every instance the cut took, by its job or its
// timer, and the undamaged ones complete; the instances of a definition
// the cut took are quarantined, not failed. A cut job queue or timer
// schedule: TestLostJobsAndTimersArePutBack.
func TestTruncatedStoreFilesAreNoticed(t *testing.T) {
	for _, stream := range []string{streams.KVStream(streams.InstancesBucket), streams.KVStream(streams.DefinitionsBucket)} {
		t.Run(stream, func(t *testing.T) {
			t.Parallel()
			truncated(t, stream)
		})
	}
}

func truncated(t *testing.T, stream string) {
	env := streamstest.Start(t)
	opts := withSync(env, engine.Options{MarksFile: t.TempDir() + "/jetbpm-marks"})
	eng := enginetest.Open(t, env.Conn, opts)
	cuts, naps := cutsAndNaps(t, env, eng)
	before := lastSeq(t, env, stream)
	st, err := env.JS.Stream(bounded(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	msgs := info.State.Msgs
	if err := eng.Close(bounded(t)); err != nil {
		t.Fatal(err)
	}
	env.RestartWith(t, func(dir string) { truncateLastBlock(t, dir, stream) })
	var gone []string
	for _, id := range append(slices.Clone(cuts), naps...) {
		if storedCheckpoint(t, env.JS, id) == nil {
			gone = append(gone, id)
		}
	}
	if st, err = env.JS.Stream(bounded(t), stream); err != nil {
		t.Fatal(err)
	}
	if info, err = st.Info(bounded(t)); err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs >= msgs {
		t.Fatalf("the cut lost nothing of %s (%d messages, then %d): the test proves nothing", stream, msgs, info.State.Msgs)
	}
	// The server keeps the last sequence it had, and counts what the cut
	// took as deleted: the marks see nothing, the cross-check must.
	t.Logf("%s: %d messages before the cut, %d after; last sequence %d, then %d; %d checkpoints gone",
		stream, msgs, info.State.Msgs, before, info.State.LastSeq, len(gone))

	eng = enginetest.Open(t, env.Conn, opts)
	recs, err := eng.LostRecords(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, r := range recs {
		if r.Kind != lost.Stream {
			named = append(named, r.Instance)
		}
	}

	cutWorker(t, env)

	switch stream {
	case streams.KVStream(streams.InstancesBucket):
		// Every instance the cut took is named, by its job or its timer.
		slices.Sort(named)
		if len(gone) == 0 || !slices.Equal(named, gone) {
			t.Fatalf("records name %v, the cut took %v", named, gone)
		}
		for _, r := range recs {
			if r.Kind == lost.Instance && strings.HasPrefix(r.Instance, "nap") && r.Traces[0].Source != "timer" {
				t.Errorf("record of %s: %+v, want its timer as the trace", r.Instance, r)
			}
		}
		for _, id := range cuts {
			if !slices.Contains(gone, id) {
				if v := waitDone(t, eng, id); v.Status != instance.Completed {
					t.Errorf("%s: %s", id, v.Status)
				}
			}
		}
	case streams.KVStream(streams.DefinitionsBucket):
		// A process whose latest version pointer or every version the cut
		// took is named;
		// no instance fails; the instances of a version the cut left
		// complete. Deploying the BPMN again puts the pointer back and the
		// next check closes the record.
		defs, err := env.JS.KeyValue(bounded(t), streams.DefinitionsBucket)
		if err != nil {
			t.Fatal(err)
		}
		var unpointed []string // the pointer or every version gone
		for _, p := range []string{"cut", "nap"} {
			_, errLatest := defs.Get(bounded(t), streams.LatestKey(p))
			_, errDef := defs.Get(bounded(t), streams.DefinitionKey(p, 1))
			if errLatest != nil || errDef != nil {
				unpointed = append(unpointed, p)
			}
		}
		var procs []string
		for _, r := range recs {
			if r.Kind == lost.Definition && r.Status == lost.Open {
				procs = append(procs, r.Process)
			}
		}
		if len(unpointed) == 0 || !slices.Equal(procs, unpointed) {
			t.Fatalf("definition records name %v, the cut took the pointers of %v", procs, unpointed)
		}
		if s := eng.StoreDamage(); !strings.Contains(s, "lost definitions") {
			t.Errorf("summary %q", s)
		}
		if _, err := defs.Get(bounded(t), streams.DefinitionKey("cut", 1)); err == nil {
			for _, id := range cuts {
				if v := waitDone(t, eng, id); v.Status != instance.Completed {
					t.Errorf("%s: %s", id, v.Status)
				}
			}
		}
		deployTasks(t, eng, workerProcess(t, "cut", "cut-charge"),
			build(t, model.NewBuilder("nap").StartEvent("s").TimerCatchEvent("w", model.Duration("PT1H")).EndEvent("e").Sequence("s", "w", "e")))
		if _, err := eng.CheckStore(bounded(t)); err != nil {
			t.Fatal(err)
		}
		recs, err := eng.LostRecords(bounded(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == lost.Definition && r.Status != lost.Restored {
				t.Errorf("after the redeploy: %+v, want restored", r)
			}
		}
		startTask(t, eng, unpointed[0], unpointed[0]+"-again", map[string]any{"n": 99})
	}
}

// cutsAndNaps deploys and starts ten instances that wait at an external
// task (cut-00…, topic cut-charge, variable n) and ten that wait at an
// hour's timer (nap-00…), and waits until each waits.
func cutsAndNaps(t *testing.T, env *streamstest.Env, eng *engine.Engine) (cuts, naps []string) {
	t.Helper()
	deployTasks(t, eng, workerProcess(t, "cut", "cut-charge"),
		build(t, model.NewBuilder("nap").StartEvent("s").TimerCatchEvent("w", model.Duration("PT1H")).EndEvent("e").Sequence("s", "w", "e")))
	const n = 10
	for i := range n {
		cuts, naps = append(cuts, fmt.Sprintf("cut-%02d", i)), append(naps, fmt.Sprintf("nap-%02d", i))
		startTask(t, eng, "cut", cuts[i], map[string]any{"n": i})
		startTask(t, eng, "nap", naps[i], nil)
	}
	jobsQueued(t, env, n)
	for _, id := range naps {
		awaitView(t, eng, id, "waiting at its timer", func(v *engine.InstanceView) bool { return len(v.ActiveNodes) == 1 })
	}
	return cuts, naps
}

// cutWorker runs a worker of cut-charge until the test ends; each job
// answers {"charged": n}. It returns how often each instance's job ran.
func cutWorker(t *testing.T, env *streamstest.Env) (ran func(id string) int) {
	t.Helper()
	w, err := workerkit.New(env.NewConn(t), workerkit.Options{Name: "cut-worker", Logger: quietLog, VerdictTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	runs := map[string]int{}
	w.Handle("cut-charge", func(_ context.Context, job *workerkit.Job) (map[string]any, error) {
		mu.Lock()
		defer mu.Unlock()
		runs[job.Instance]++
		return map[string]any{"charged": job.Input["n"]}, nil
	})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	return func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		return runs[id]
	}
}
