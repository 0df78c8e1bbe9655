package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/enginetest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/lost"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
	"github.com/jetbpm/jetbpm/workerkit"
)

// The store loses a checkpoint under a running node (#37): the instance
// moved from its first task to its second, then the store lost that
// checkpoint. The next step's compare-and-set fails; the read after it
// finds less than the node wrote, so the node writes its copy back and
// steps the report on it — the instance completes, where its events
// would have been dropped as an unknown instance's and it would be gone
// — and records it.
func TestACheckpointThatWentBackUnderTheNodeIsWrittenBack(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := enginetest.Open(t, env.Conn, withSync(env, engine.Options{}))
	deployTasks(t, eng, build(t, model.NewBuilder("two").StartEvent("s").
		ServiceTask("first", "", model.WithWorker("wb-first")).ServiceTask("second", "", model.WithWorker("wb-second")).
		EndEvent("e").Sequence("s", "first", "second", "e")))

	w, err := workerkit.New(env.NewConn(t), workerkit.Options{Name: "wb-worker", Logger: quietLog, VerdictTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	w.Handle("wb-first", func(context.Context, *workerkit.Job) (map[string]any, error) {
		return map[string]any{"first": "done"}, nil
	})
	seconds := make(chan string, 4)
	w.Handle("wb-second", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
		seconds <- job.Instance
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]any{"second": "done"}, nil
	})
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	released := false
	defer func() {
		if !released {
			close(release)
		}
		stop()
		<-done
	}()

	startTask(t, eng, "two", "wb-1", nil)
	select {
	case <-seconds:
	case <-time.After(20 * time.Second):
		t.Fatal("the second task's job never ran")
	}
	awaitView(t, eng, "wb-1", "at its second task", func(v *engine.InstanceView) bool {
		return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "second"
	})
	// The store loses the checkpoint: the key's messages purged from the
	// stream leave no marker, as a cut block does not; the node's next
	// compare-and-set fails as it does after a loss.
	st, err := env.JS.Stream(bounded(t), streams.KVStream(streams.InstancesBucket))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(bounded(t), jetstream.WithPurgeSubject(streams.KVSubject(streams.InstancesBucket, "wb-1"))); err != nil {
		t.Fatal(err)
	}
	close(release)
	released = true

	v := waitDone(t, eng, "wb-1")
	if v.Status != instance.Completed || v.Variables["first"] != "done" || v.Variables["second"] != "done" {
		t.Fatalf("wb-1: %s, variables %v", v.Status, v.Variables)
	}
	testwait.Until(t, 10*time.Second, "the record of wb-1", func() error {
		recs, err := eng.LostRecords(bounded(t))
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Instance == "wb-1" && r.Kind == lost.Damaged && r.Status == lost.Restored {
				return nil
			}
		}
		return fmt.Errorf("records %+v", recs)
	})
}
