package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
	"github.com/jetbpm/jetbpm/workerkit"
)

// flipBits flips one bit at each of the fractions at of the length of
// file, as a failing disk would.
func flipBits(t *testing.T, file string, at ...float64) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range at {
		data[int(f*float64(len(data)))] ^= 1 << (i % 8)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// streamBlocks returns the message block files of stream in the store
// under dir.
func streamBlocks(t *testing.T, dir, stream string) []string {
	t.Helper()
	blocks, err := filepath.Glob(filepath.Join(dir, "*", "*", "streams", stream, "msgs", "*.blk"))
	if err != nil || len(blocks) == 0 {
		t.Fatalf("no block files of stream %s under %s (%v)", stream, dir, err)
	}
	return blocks
}

// The case (#37): instances wait at an external task; the store
// is stopped and five bits flip in the instances bucket's block file; the
// server drops what follows the first bad record without a word. The
// engine notices: each lost instance its job still names gets an open
// record with what the job knew, /healthz's summary says so, and every
// instance that survived completes when the worker runs.
func TestFlippedBitsInTheInstancesBucketAreNoticed(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	opts := withSync(env, engine.Options{MarksFile: filepath.Join(t.TempDir(), "jetbpm-marks")})
	eng := enginetest.Open(t, env.Conn, opts)
	deployTasks(t, eng, workerProcess(t, "flip", "flip-charge"))
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("flip-%02d", i)
		startTask(t, eng, "flip", ids[i], map[string]any{"n": i})
	}
	jobsQueued(t, env, n)
	if s := eng.StoreDamage(); s != "" {
		t.Fatalf("damage before any: %q", s)
	}
	before := lastSeq(t, env, streams.KVStream(streams.InstancesBucket))
	if err := eng.Close(bounded(t)); err != nil {
		t.Fatal(err)
	}

	env.RestartWith(t, func(dir string) {
		blocks := streamBlocks(t, dir, streams.KVStream(streams.InstancesBucket))
		flipBits(t, blocks[len(blocks)-1], 0.3, 0.45, 0.6, 0.75, 0.9)
	})
	var gone []string
	for _, id := range ids {
		if storedCheckpoint(t, env.JS, id) == nil {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		t.Fatal("the flipped bits lost no checkpoint: the test proves nothing; flip others")
	}
	after := lastSeq(t, env, streams.KVStream(streams.InstancesBucket))
	t.Logf("%d of %d checkpoints gone; the bucket's last sequence %d before, %d after", len(gone), n, before, after)

	eng = enginetest.Open(t, env.Conn, opts)
	recs, err := eng.LostRecords(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	var gaps []lost.Record
	for _, r := range recs {
		switch r.Kind {
		case lost.Instance:
			named = append(named, r.Instance)
			if r.Status != lost.Open || r.Process != "flip" || r.Element != "charge" || r.Vars["n"] == nil ||
				len(r.Traces) != 1 || r.Traces[0].Source != "job" {
				t.Errorf("record of %s: %+v; want open, process flip at charge, its job's input", r.Instance, r)
			}
		case lost.Stream:
			gaps = append(gaps, r)
		default:
			t.Errorf("unexpected record %+v", r)
		}
	}
	slices.Sort(named)
	if !slices.Equal(named, gone) {
		t.Fatalf("records name %v, the store lost %v", named, gone)
	}
	if after < before {
		if len(gaps) != 1 || gaps[0].Gap.Stream != streams.KVStream(streams.InstancesBucket) || gaps[0].Gap.Marked != before || gaps[0].Gap.Found != after {
			t.Errorf("the bucket went back from %d to %d; gap records %+v", before, after, gaps)
		}
	}
	summary := eng.StoreDamage()
	if !strings.Contains(summary, fmt.Sprintf("%d lost instance(s)", len(gone))) {
		t.Errorf("summary %q", summary)
	}

	w, err := workerkit.New(env.NewConn(t), workerkit.Options{Name: "flip-worker", Logger: quietLog, VerdictTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	handled := map[string]bool{}
	w.Handle("flip-charge", func(_ context.Context, job *workerkit.Job) (map[string]any, error) {
		mu.Lock()
		handled[job.Instance] = true
		mu.Unlock()
		return nil, nil
	})
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	for _, id := range ids {
		if slices.Contains(gone, id) {
			continue
		}
		if v := waitDone(t, eng, id); v.Status != instance.Completed {
			t.Errorf("%s: %s, want completed", id, v.Status)
		}
	}

	// The jobs of the lost instances ran once (the worker had them
	// already), and are kept back with their records: not dropped.
	testwait.Until(t, 20*time.Second, "the lost instances' jobs reported and kept back", func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range gone {
			if !handled[id] {
				return fmt.Errorf("%s's job not run yet", id)
			}
		}
		js, err := env.JS.Stream(bounded(t), streams.JobsStream)
		if err != nil {
			return err
		}
		cons, err := js.Consumer(bounded(t), streams.TopicConsumer("flip-charge"))
		if err != nil {
			return err
		}
		ci, err := cons.Info(bounded(t))
		if err != nil {
			return err
		}
		si, err := js.Info(bounded(t))
		if err != nil {
			return err
		}
		if ci.NumAckPending != len(gone) || si.State.Msgs != uint64(len(gone)) {
			return fmt.Errorf("%d jobs in the queue, %d of them delivered and not decided; want the %d lost ones kept", si.State.Msgs, ci.NumAckPending, len(gone))
		}
		return nil
	})

	// The operator acts: recreates the first lost instance from what its
	// job held, dismisses the second with a reason.
	first, second := "instance."+gone[0], "instance."+gone[1]
	newID, err := eng.RecreateLost(bounded(t), first)
	if err != nil || newID != gone[0]+"-recreated" {
		t.Fatalf("recreate %s: %q, %v", first, newID, err)
	}
	if v := waitDone(t, eng, newID); v.Status != instance.Completed || v.Variables["n"] == nil {
		t.Errorf("the recreated instance: %s %v; want completed with the lost one's variables", v.Status, v.Variables)
	}
	if _, err := eng.RecreateLost(bounded(t), first); !errors.Is(err, engine.ErrFinished) {
		t.Errorf("recreating again: %v, want ErrFinished", err)
	}
	if err := eng.DismissLost(bounded(t), second, " "); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("dismissing without a reason: %v, want ErrInvalid", err)
	}
	if err := eng.DismissLost(bounded(t), second, "refunded by hand"); err != nil {
		t.Fatal(err)
	}
	if err := eng.DismissLost(bounded(t), "instance.nobody", "x"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("dismissing an unknown record: %v, want ErrNotFound", err)
	}
	if len(gaps) > 0 {
		if _, err := eng.RecreateLost(bounded(t), gaps[0].Key()); !errors.Is(err, engine.ErrInvalid) {
			t.Errorf("recreating a stream gap: %v, want ErrInvalid", err)
		}
	}
	recs, err = eng.LostRecords(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		switch r.Key() {
		case first:
			if r.Status != lost.Recreated || r.Reason != "recreated as instance "+newID {
				t.Errorf("record %s: %s %q", first, r.Status, r.Reason)
			}
		case second:
			if r.Status != lost.Dismissed || r.Reason != "refunded by hand" || r.Closed.IsZero() {
				t.Errorf("record %s: %s %q", second, r.Status, r.Reason)
			}
		}
	}
	testwait.Until(t, 5*time.Second, "the summary to count two lost instances fewer", func() error {
		if s := eng.StoreDamage(); !strings.Contains(s, fmt.Sprintf("%d lost instance(s)", len(gone)-2)) {
			return errors.New(s)
		}
		return nil
	})
}

// jobsQueued waits until the jobs stream holds n jobs.
func jobsQueued(t *testing.T, env *streamstest.Env, n uint64) {
	t.Helper()
	testwait.Until(t, 10*time.Second, fmt.Sprintf("%d jobs queued", n), func() error {
		s, err := env.JS.Stream(bounded(t), streams.JobsStream)
		if err != nil {
			return err
		}
		info, err := s.Info(bounded(t))
		if err != nil {
			return err
		}
		if info.State.Msgs != n {
			return fmt.Errorf("%d queued", info.State.Msgs)
		}
		return nil
	})
}

func lastSeq(t *testing.T, env *streamstest.Env, stream string) uint64 {
	t.Helper()
	s, err := env.JS.Stream(bounded(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// A checkpoint damaged where the server does not notice (its message is
// whole, its value is not): the instance is quarantined — a damaged
// record, /healthz's summary, its worker's report held — while another
// instance of the same partition completes; once the checkpoint is put
// back, the held report is applied, the instance completes and its record
// closes as restored.
func TestADamagedCheckpointIsQuarantinedUntilRestored(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithPartitions(1))
	opts := withSync(env, engine.Options{})
	engine.QuarantineRedelivery(&opts, 200*time.Millisecond)
	eng := enginetest.Open(t, env.Conn, opts)
	deployTasks(t, eng, workerProcess(t, "quar", "quar-charge"))
	startTask(t, eng, "quar", "quar-bad", map[string]any{"n": 1})
	startTask(t, eng, "quar", "quar-good", map[string]any{"n": 2})
	jobsQueued(t, env, 2)
	if err := eng.Close(bounded(t)); err != nil {
		t.Fatal(err)
	}

	kv, err := env.JS.KeyValue(bounded(t), streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := kv.Get(bounded(t), "quar-bad")
	if err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(whole.Value())
	bad[len(bad)/2] ^= 0x08
	if _, err := kv.Put(bounded(t), "quar-bad", bad); err != nil {
		t.Fatal(err)
	}

	eng = enginetest.Open(t, env.Conn, opts)
	w, err := workerkit.New(env.NewConn(t), workerkit.Options{Name: "quar-worker", Logger: quietLog, VerdictTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("quar-charge", func(context.Context, *workerkit.Job) (map[string]any, error) {
		return map[string]any{"paid": true}, nil
	})
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	if v := waitDone(t, eng, "quar-good"); v.Status != instance.Completed {
		t.Fatalf("the undamaged instance: %s", v.Status)
	}
	var rec lost.Record
	testwait.Until(t, 10*time.Second, "a damaged record of quar-bad", func() error {
		recs, err := eng.LostRecords(bounded(t))
		if err != nil {
			return err
		}
		if len(recs) != 1 {
			return fmt.Errorf("records %+v", recs)
		}
		rec = recs[0]
		return nil
	})
	if rec.Kind != lost.Damaged || rec.Instance != "quar-bad" || rec.Status != lost.Open || !strings.Contains(rec.Detail, "checksum mismatch") {
		t.Fatalf("record %+v", rec)
	}
	if s := eng.StoreDamage(); !strings.Contains(s, "1 damaged checkpoint(s) (quar-bad)") {
		t.Errorf("summary %q", s)
	}
	if _, err := eng.Instance(bounded(t), "quar-bad"); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("reading the damaged instance: %v; want the checksum named", err)
	}

	// The operator restores the checkpoint (here: puts the whole value back).
	if _, err := kv.Put(bounded(t), "quar-bad", whole.Value()); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, "quar-bad"); v.Status != instance.Completed || v.Variables["paid"] != true {
		t.Fatalf("the restored instance: %s %v; want completed with its worker's result", v.Status, v.Variables)
	}
	testwait.Until(t, 10*time.Second, "the record closed as restored", func() error {
		recs, err := eng.LostRecords(bounded(t))
		if err != nil {
			return err
		}
		if len(recs) != 1 || recs[0].Status != lost.Restored {
			return fmt.Errorf("records %+v", recs)
		}
		return nil
	})
	if s := eng.StoreDamage(); s != "" {
		t.Errorf("summary after the restore %q, want none", s)
	}
}

// A process's latest-version pointer whose value is damaged (#37): the
// check records the process, its new starts are refused naming the
// damage, and deploying its BPMN again writes the pointer over the
// damaged one (the same definition: the version it was) and closes the
// record.
func TestADamagedVersionPointerIsRecordedAndRedeployRepairsIt(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	opts := withSync(env, engine.Options{})
	eng := enginetest.Open(t, env.Conn, opts)
	deployTasks(t, eng, workerProcess(t, "ptr", "ptr-charge"))
	if err := eng.Close(bounded(t)); err != nil {
		t.Fatal(err)
	}
	defs, err := env.JS.KeyValue(bounded(t), streams.DefinitionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := defs.Get(bounded(t), streams.LatestKey("ptr"))
	if err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(whole.Value())
	bad[len(bad)-1] ^= 0x10
	if _, err := defs.Put(bounded(t), streams.LatestKey("ptr"), bad); err != nil {
		t.Fatal(err)
	}

	eng = enginetest.Open(t, env.Conn, opts)
	recs, err := eng.LostRecords(bounded(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Kind != lost.Definition || recs[0].Process != "ptr" || recs[0].Status != lost.Open ||
		!strings.Contains(recs[0].Detail, "cannot be read") {
		t.Fatalf("records %+v, want the damaged pointer of ptr", recs)
	}
	if _, err := eng.Start(bounded(t), "ptr", nil); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a start over the damaged pointer: %v, want refused naming the checksum", err)
	}
	deps, err := eng.DeployAll(bounded(t), workerProcess(t, "ptr", "ptr-charge"))
	if err != nil {
		t.Fatalf("deploy over the damaged pointer: %v", err)
	}
	if len(deps) != 1 || deps[0].Version != 1 {
		t.Fatalf("deployed %+v, want version 1 again", deps)
	}
	startTask(t, eng, "ptr", "ptr-after", nil)
	if _, err := eng.CheckStore(bounded(t)); err != nil {
		t.Fatal(err)
	}
	if recs, err = eng.LostRecords(bounded(t)); err != nil || len(recs) != 1 || recs[0].Status != lost.Restored {
		t.Fatalf("after the redeploy: %+v %v, want the record restored", recs, err)
	}
	testwait.Until(t, 10*time.Second, "the store no longer degraded", func() error {
		if s := eng.StoreDamage(); s != "" {
			return fmt.Errorf("still degraded: %q", s)
		}
		return nil
	})
}
