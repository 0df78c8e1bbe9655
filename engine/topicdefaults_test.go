package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// A topic's defaults sit between the engine-wide ones and a task's own:
// its lock becomes the topic consumer's AckWait, its retry policy is what
// the engine runs for the topic's jobs (kept: a task's policy ships only
// when it differs from the topic's default), and a task's own option still
// wins.
func TestTopicDefaults(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openWith(t, env, engine.Options{
		Jobs: jobs.Overrides{Retry: ptr(jobs.FixedDelaySpec(7, time.Second)), LockDuration: 90 * time.Second},
		TopicJobs: map[string]jobs.Overrides{
			"slow": {LockDuration: 3 * time.Minute, Retry: ptr(jobs.FixedDelaySpec(2, time.Second))},
		},
	})
	task := func(process, topic string, opts ...model.WorkerOption) {
		deployed(t, eng, model.NewBuilder(process).StartEvent("s").ServiceTask("work", "", model.WithWorker(topic, opts...)).
			EndEvent("e").Sequence("s", "work", "e"))
	}
	task("on-t", "t")
	task("on-slow", "slow")
	task("on-slow-own", "slow", model.WithRetryPolicy(jobs.NoRetrySpec()))

	for topic, want := range map[string]time.Duration{"t": 90 * time.Second, "slow": 3 * time.Minute} {
		cons, err := env.JS.Consumer(bounded(t), streams.JobsStream, streams.TopicConsumer(topic))
		if err != nil {
			t.Fatal(err)
		}
		if got := cons.CachedInfo().Config.AckWait; got != want {
			t.Errorf("topic %s: consumer AckWait %s, want %s", topic, got, want)
		}
	}
	for _, tc := range []struct {
		process, topic string
		attempts       int
		lock           time.Duration
		kept           bool
	}{
		{"on-t", "t", 7, 90 * time.Second, true},
		{"on-slow", "slow", 2, 3 * time.Minute, true},
		{"on-slow-own", "slow", 1, 3 * time.Minute, false},
	} {
		w := newRawWorker(t, env, tc.topic)
		startJob(t, eng, tc.process, nil)
		m, job := w.fetch()
		if tc.kept {
			// The topic's default: not shipped; the engine retries a fault
			// with the topic's attempts, 1 s apart.
			if job.Policy != nil || job.LockDurationMs != tc.lock.Milliseconds() {
				t.Errorf("%s: job lock %d ms, shipped policy %+v; want a %s lock and the topic's default kept", tc.process, job.LockDurationMs, job.Policy, tc.lock)
			}
			want := fmt.Sprintf("attempt 1 of %d failed, retrying in 1s", tc.attempts)
			if v := w.report(m, job, jobs.Report{Kind: jobs.Fail, Code: "503"}); !v.Accepted || !strings.Contains(v.Reason, want) {
				t.Errorf("%s: fail verdict %+v, want %q", tc.process, v, want)
			}
			m, job = w.fetch()
			if meta, _ := m.Metadata(); meta == nil || meta.NumDelivered != 2 {
				t.Fatalf("%s: want the job's second delivery, got %+v", tc.process, meta)
			}
			w.report(m, job, jobs.Report{Kind: jobs.Complete})
			continue
		}
		if job.Policy == nil || job.Policy.Retry.MaxAttempts != tc.attempts || job.Policy.LockDuration != tc.lock ||
			job.LockDurationMs != tc.lock.Milliseconds() {
			t.Errorf("%s: job lock %d ms, shipped policy %+v; want %d attempts, a %s lock", tc.process, job.LockDurationMs, job.Policy, tc.attempts, tc.lock)
		}
		w.report(m, job, jobs.Report{Kind: jobs.Complete})
	}
}

// Open refuses topic defaults that do not validate, naming the topic.
func TestTopicDefaultsValidated(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	for _, tc := range []struct {
		opts engine.Options
		want string
	}{
		{engine.Options{TopicJobs: map[string]jobs.Overrides{"slow": {LockDuration: -time.Second}}}, `topic "slow": lock durations must not be negative`},
		{engine.Options{Jobs: jobs.Overrides{MaxLockDuration: time.Minute}, TopicJobs: map[string]jobs.Overrides{"slow": {LockDuration: time.Hour}}},
			`topic "slow": lockDuration 1h0m0s is longer than maxLockDuration 1m0s`},
	} {
		eng, err := engine.Open(context.Background(), env.Conn, tc.opts)
		if err == nil {
			_ = eng.Close(context.Background())
			t.Fatalf("Open with %+v succeeded", tc.opts.TopicJobs)
		}
		if got := err.Error(); got != "engine: job defaults: "+tc.want {
			t.Errorf("Open: %q, want %q", got, "engine: job defaults: "+tc.want)
		}
	}
}
