package engine_test

import (
	"context"
	"testing"

	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// TestPartitionsConsumeAgainAfterConsumerLoss deletes every partition
// consumer under a running engine, as an operator mistake or a cluster
// losing them would, and provisions them again: the engine's partitions
// notice their consumers stopped and consume again, so new instances run.
func TestPartitionsConsumeAgainAfterConsumerLoss(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	deployed(t, eng, model.NewBuilder("plain").StartEvent("s").ScriptTask("a", "1 + 1", "two").EndEvent("e").Sequence("s", "a", "e"))
	if v := waitDone(t, eng, startJob(t, eng, "plain", nil)); v.Status != instance.Completed {
		t.Fatalf("%+v", v)
	}
	ctx := context.Background()
	for p := range env.Layout.Partitions {
		for stream, name := range map[string]string{streams.EventsStream: streams.PartitionConsumer(p), streams.ReportsStream: streams.ReportsConsumer(p)} {
			if err := env.JS.DeleteConsumer(ctx, stream, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := streams.Provision(ctx, env.JS, streams.Config{Partitions: env.Layout.Partitions, Logger: quietLog}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, startJob(t, eng, "plain", nil)); v.Status != instance.Completed || v.Variables["two"] != int64(2) {
		t.Fatalf("%+v", v)
	}
}
