package streams_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams"
)

// snapshot is every config Provision controls, as the server reports it.
type snapshot struct {
	Streams   map[string]jetstream.StreamConfig
	Consumers map[string]jetstream.ConsumerConfig
	Created   map[string]time.Time
}

func takeSnapshot(t *testing.T, ctx context.Context, js jetstream.JetStream) snapshot {
	t.Helper()
	s := snapshot{map[string]jetstream.StreamConfig{}, map[string]jetstream.ConsumerConfig{}, map[string]time.Time{}}
	for name := range js.StreamNames(ctx).Name() {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		s.Streams[name] = st.CachedInfo().Config
		s.Created[name] = st.CachedInfo().Created
		for info := range st.ListConsumers(ctx).Info() {
			s.Consumers[name+"/"+info.Name] = info.Config
			s.Created[name+"/"+info.Name] = info.Created
		}
	}
	return s
}

func TestProvisionIsIdempotent(t *testing.T) {
	_, _, js := startBare(t)
	ctx := testContext(t)

	first, err := streams.Provision(ctx, js, streams.Config{Partitions: 3, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if first != (streams.Layout{Partitions: 3, Replicas: 1}) {
		t.Fatalf("layout = %+v", first)
	}
	before := takeSnapshot(t, ctx, js)
	// Events, reports, jobs, facts, messages, message commands, signals,
	// timer starts and nine KV buckets (meta, instances, definitions,
	// incidents, messages, tasks, lost, signals, Camunda 8 keys); four consumers
	// per partition, the message buffer count, the signals and the timer
	// starts consumers.
	if len(before.Streams) != 18 || len(before.Consumers) != 15 {
		t.Fatalf("provisioned %d streams and %d consumers, want 18 and 15: %v", len(before.Streams), len(before.Consumers), before.Created)
	}

	log, rec := recordLogs()
	second, err := streams.Provision(ctx, js, streams.Config{Partitions: 3, Logger: log})
	if err != nil {
		t.Fatalf("second Provision: %v", err)
	}
	if second != first {
		t.Errorf("second layout %+v != first %+v", second, first)
	}
	if changed := append(rec.matching("created"), rec.matching("updated")...); len(changed) > 0 {
		t.Errorf("second Provision changed something: %v", changed)
	}
	if after := takeSnapshot(t, ctx, js); !reflect.DeepEqual(before, after) {
		t.Errorf("configs changed by a second Provision:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestProvisionLayoutDetails(t *testing.T) {
	_, nc, js := startBare(t)
	ctx := testContext(t)
	if _, err := streams.Provision(ctx, js, streams.Config{Partitions: 2, Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	s := takeSnapshot(t, ctx, js)

	ev := s.Streams[streams.EventsStream]
	if ev.Retention != jetstream.WorkQueuePolicy || !ev.AllowMsgSchedules || !ev.AllowMsgTTL || !ev.AllowRollup || ev.Duplicates != 2*time.Minute {
		t.Errorf("events stream config: %+v", ev)
	}
	facts := s.Streams[streams.FactsStream]
	if facts.Retention != jetstream.LimitsPolicy || facts.MaxAge != streams.DefaultFactsMaxAge {
		t.Errorf("facts stream config: %+v", facts)
	}
	pc := s.Consumers[streams.EventsStream+"/"+streams.PartitionConsumer(1)]
	if pc.PriorityPolicy != jetstream.PriorityPolicyPinned || !reflect.DeepEqual(pc.PriorityGroups, []string{streams.PriorityGroup}) ||
		pc.PinnedTTL != 10*time.Second || pc.MaxDeliver != -1 || pc.AckWait != 30*time.Second ||
		pc.FilterSubject != streams.PartitionFilter(1) {
		t.Errorf("partition consumer config: %+v", pc)
	}
	rc := s.Consumers[streams.ReportsStream+"/"+streams.ReportsConsumer(1)]
	if rc.PriorityPolicy != jetstream.PriorityPolicyPinned || rc.FilterSubject != streams.ReportsFilter(1) {
		t.Errorf("reports consumer config: %+v", rc)
	}
	rep := s.Streams[streams.ReportsStream]
	if rep.AllowRollup || rep.AllowMsgSchedules || rep.AllowMsgTTL || !rep.DenyPurge || rep.Retention != jetstream.WorkQueuePolicy {
		t.Errorf("reports stream must refuse rollups, schedules, TTLs and purges: %+v", rep)
	}
	msgs := s.Streams[streams.MessagesStream]
	if msgs.AllowRollup || msgs.AllowMsgSchedules || msgs.AllowMsgTTL || !msgs.DenyPurge || !msgs.DenyDelete || msgs.Retention != jetstream.WorkQueuePolicy ||
		!reflect.DeepEqual(msgs.Subjects, []string{"jetbpm.m.pub.*.*"}) || msgs.SubjectTransform == nil ||
		msgs.SubjectTransform.Destination != "jetbpm.mp.{{partition(2,1,2)}}.{{wildcard(1)}}.{{wildcard(2)}}" {
		t.Errorf("messages stream must take publishes only, route them by name and key, and refuse rollups, schedules, TTLs and purges: %+v", msgs)
	}
	cmds := s.Streams[streams.MessageCommandsStream]
	if !cmds.AllowMsgSchedules || cmds.Retention != jetstream.WorkQueuePolicy || slices.Contains(cmds.Subjects, "jetbpm.m.pub.*.*") ||
		cmds.SubjectTransform == nil || cmds.SubjectTransform.Destination != "jetbpm.mc.{{partition(2,2,3)}}.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}" {
		t.Errorf("message commands stream config: %+v", cmds)
	}
	for _, c := range []string{streams.MessagesStream + "/" + streams.MessagesConsumer(1), streams.MessageCommandsStream + "/" + streams.MessageCommandsConsumer(1)} {
		if mc := s.Consumers[c]; mc.PriorityPolicy != jetstream.PriorityPolicyPinned || mc.MaxDeliver != -1 || mc.PinnedTTL != 10*time.Second {
			t.Errorf("message partition consumer %s config: %+v", c, mc)
		}
	}
	inst := s.Streams["KV_"+streams.InstancesBucket]
	if inst.MaxMsgSize != int32(nc.MaxPayload()) || !inst.AllowMsgTTL || inst.SubjectDeleteMarkerTTL != time.Second || inst.MaxMsgsPerSubject != 1 {
		t.Errorf("instances bucket config: %+v", inst)
	}
	// Finished task records expire, and a watch hears of it (a marker).
	tasks := s.Streams["KV_"+streams.TasksBucket]
	if tasks.MaxMsgSize != int32(nc.MaxPayload()) || !tasks.AllowMsgTTL || tasks.SubjectDeleteMarkerTTL != time.Second || tasks.MaxMsgsPerSubject != 1 {
		t.Errorf("tasks bucket config: %+v", tasks)
	}
	if c8 := s.Streams["KV_"+streams.C8KeysBucket]; c8.MaxMsgsPerSubject != 1 {
		t.Errorf("Camunda 8 keys bucket config: %+v", c8)
	}
	meta, err := js.KeyValue(ctx, streams.MetaBucket)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{streams.MetaPartitionsKey: "2", streams.MetaSchemaKey: streams.LayoutSchema} {
		if e, err := meta.Get(ctx, key); err != nil || string(e.Value()) != want {
			t.Errorf("meta %s = %v, %v; want %q", key, e, err, want)
		}
	}
}

func TestProvisionUpdatesInPlaceAndKeepsMessages(t *testing.T) {
	_, _, js := startBare(t)
	ctx := testContext(t)
	if _, err := streams.Provision(ctx, js, streams.Config{FactsMaxAge: time.Hour, Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := js.Publish(ctx, streams.FactSubject(streams.FactInstance, "order", "completed"), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := js.Publish(ctx, streams.EventSubject(0, "i-1"), []byte("e")); err != nil {
		t.Fatal(err)
	}

	log, rec := recordLogs()
	if _, err := streams.Provision(ctx, js, streams.Config{FactsMaxAge: 2 * time.Hour, Logger: log}); err != nil {
		t.Fatal(err)
	}
	if got := rec.matching("stream updated", streams.FactsStream, "MaxAge"); len(got) != 1 {
		t.Errorf("want one facts stream update naming MaxAge, got %v", rec.matching("updated"))
	}
	if got := rec.matching("updated"); len(got) != 1 {
		t.Errorf("only the facts stream should change, got %v", got)
	}
	facts, err := js.Stream(ctx, streams.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	info := facts.CachedInfo()
	if info.Config.MaxAge != 2*time.Hour || info.State.Msgs != 3 {
		t.Errorf("facts after update: MaxAge %s, %d msgs; want 2h, 3", info.Config.MaxAge, info.State.Msgs)
	}
	events, err := js.Stream(ctx, streams.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := events.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("events stream holds %d msgs after Provision, want 1", n)
	}
}

func TestProvisionPartitionCountIsFixed(t *testing.T) {
	_, _, js := startBare(t)
	ctx := testContext(t)
	if _, err := streams.Provision(ctx, js, streams.Config{Partitions: 3, Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}

	_, err := streams.Provision(ctx, js, streams.Config{Partitions: 5, Logger: quietLogger()})
	if !errors.Is(err, streams.ErrPartitions) || !strings.Contains(err.Error(), "5 partitions were asked for, but the store was created with 3") {
		t.Errorf("a second Provision with another count: %v, want it refused naming both counts", err)
	}
	if _, err := js.Consumer(ctx, streams.EventsStream, streams.PartitionConsumer(3)); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("consumer for partition 3 of 3: %v", err)
	}

	log, rec := recordLogs()
	if layout, err := streams.Provision(ctx, js, streams.Config{Logger: log}); err != nil || layout.Partitions != 3 {
		t.Errorf("Provision with the default count = %+v, %v", layout, err)
	}
	if got := rec.matching("WARN"); len(got) != 0 {
		t.Errorf("an unset count should not warn: %v", got)
	}
	if layout, err := streams.ReadLayout(ctx, js); err != nil || layout != (streams.Layout{Partitions: 3, Replicas: 1}) {
		t.Errorf("ReadLayout = %+v, %v", layout, err)
	}
}

func TestReadLayoutNotProvisioned(t *testing.T) {
	_, _, js := startBare(t)
	_, err := streams.ReadLayout(testContext(t), js)
	if !errors.Is(err, streams.ErrNotProvisioned) {
		t.Fatalf("ReadLayout on a bare server = %v, want ErrNotProvisioned", err)
	}
}

func TestProvisionRefusesOtherSchema(t *testing.T) {
	_, _, js := startBare(t)
	ctx := testContext(t)
	if _, err := streams.Provision(ctx, js, streams.Config{Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	meta, err := js.KeyValue(ctx, streams.MetaBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := meta.Put(ctx, streams.MetaSchemaKey, []byte("1")); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Provision":  func() error { _, err := streams.Provision(ctx, js, streams.Config{Logger: quietLogger()}); return err },
		"ReadLayout": func() error { _, err := streams.ReadLayout(ctx, js); return err },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), `schema "1"`) {
			t.Errorf("%s on schema 1 = %v", name, err)
		}
	}
}

func TestProvisionRejectsBadConfig(t *testing.T) {
	_, _, js := startBare(t)
	for _, cfg := range []streams.Config{{Replicas: 7}, {Partitions: -1}, {Partitions: 100000}, {FactsMaxAge: time.Millisecond}} {
		if _, err := streams.Provision(testContext(t), js, cfg); err == nil {
			t.Errorf("Provision(%+v) accepted", cfg)
		}
	}
}

func TestTimerFiresIntoItsPartition(t *testing.T) {
	_, _, js := startBare(t)
	ctx := testContext(t)
	layout, err := streams.Provision(ctx, js, streams.Config{Partitions: 4, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	p := streams.PartitionOf("i-7", layout.Partitions)

	msg := nats.NewMsg(streams.TimerSubject(p, "i-7", "boundary-1"))
	msg.Data = []byte("timer fired")
	msg.Header.Set("Nats-Schedule", "@at "+time.Now().Add(50*time.Millisecond).UTC().Format(time.RFC3339Nano))
	msg.Header.Set("Nats-Schedule-Target", streams.EventSubject(p, "i-7"))
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatalf("publish schedule: %v", err)
	}

	cons, err := js.Consumer(ctx, streams.EventsStream, streams.PartitionConsumer(p))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchPriorityGroup(streams.PriorityGroup), jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []jetstream.Msg
	for m := range batch.Messages() {
		got = append(got, m)
	}
	if len(got) != 1 || string(got[0].Data()) != "timer fired" || got[0].Subject() != streams.EventSubject(p, "i-7") {
		t.Fatalf("partition %d got %d messages (err %v), want the fired timer", p, len(got), batch.Error())
	}
	if err := got[0].Ack(); err != nil {
		t.Fatal(err)
	}
}

func TestInstancesBucketPerMessageTTL(t *testing.T) {
	_, _, js := startBare(t)
	ctx := testContext(t)
	if _, err := streams.Provision(ctx, js, streams.Config{Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Create(ctx, "i-1", []byte("running"))
	if err != nil {
		t.Fatal(err)
	}

	// The engine's final write: compare-and-set on the revision, with a TTL.
	final := nats.NewMsg("$KV." + streams.InstancesBucket + ".i-1")
	final.Data = []byte("completed")
	final.Header.Set(jetstream.MsgTTLHeader, "1s")
	final.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	if _, err := js.PublishMsg(ctx, final); err != nil {
		t.Fatalf("final write with Nats-TTL: %v", err)
	}
	if e, err := kv.Get(ctx, "i-1"); err != nil || string(e.Value()) != "completed" {
		t.Fatalf("final record = %v, %v", e, err)
	}
	testwait.True(t, testTimeout, "the final record to expire", func() bool {
		_, err := kv.Get(ctx, "i-1")
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
}
