package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/cmd/jetbpm/internal/config"
	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/streams"
)

// A setting comes from the flags given on the command line, else the
// environment, else the file, else the default.
func TestServeConfigPrecedence(t *testing.T) {
	t.Setenv("JETBPM_NATS_URL", "")
	dir := t.TempDir()
	file := writeFile(t, dir, "jetbpm.yaml", `nats:
  url: nats://from-file:4222
  user: file-user
streams:
  partitions: 5
  replicas: 3
failover: 20s
log:
  level: debug
jobs:
  lockDuration: 2m
`)
	o, err := parseServe([]string{"--config", file, "--partitions", "3", "--failover", "10s"})
	if err != nil {
		t.Fatal(err)
	}
	// --partitions and --failover were given (--failover at its default
	// value, which still wins); the rest comes from the file.
	if o.partitions != 3 || o.failover != 10*time.Second || o.replicas != 3 || o.log.level.String() != "DEBUG" ||
		o.conn.url != "nats://from-file:4222" || o.conn.user != "file-user" || o.engine.Jobs.LockDuration != 2*time.Minute {
		t.Errorf("partitions %d failover %s replicas %d level %s url %s user %s lock %s",
			o.partitions, o.failover, o.replicas, o.log.level, o.conn.url, o.conn.user, o.engine.Jobs.LockDuration)
	}

	t.Setenv("JETBPM_NATS_URL", "nats://from-env:4222")
	if o, err = parseServe([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	if o.conn.url != "nats://from-env:4222" || o.partitions != 5 {
		t.Errorf("with JETBPM_NATS_URL set: url %s, partitions %d; want the environment's url and the file's partitions", o.conn.url, o.partitions)
	}
	if o, err = parseServe([]string{"--config", file, "--nats-url", "nats://from-flag:4222"}); err != nil {
		t.Fatal(err)
	}
	if o.conn.url != "nats://from-flag:4222" {
		t.Errorf("url %s, want the flag's", o.conn.url)
	}
}

// The example file sets every flag-backed key to its default: serve with it
// runs as serve without it.
func TestServeConfigExampleIsDefaults(t *testing.T) {
	t.Setenv("JETBPM_NATS_URL", "")
	bare, err := parseServe(nil)
	if err != nil {
		t.Fatal(err)
	}
	withExample, err := parseServe([]string{"--config", "../../examples/jetbpm.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := *bare, *withExample
	a.config, b.config = "", ""
	a.engine, b.engine = engine.Options{}, engine.Options{} // compared in the config package's TestExample
	if !reflect.DeepEqual(a, b) {
		t.Errorf("serve options differ with the example file:\n%+v %+v %+v\n%+v %+v %+v", a, *a.conn, *a.log, b, *b.conn, *b.log)
	}
}

func TestServeConfigErrors(t *testing.T) {
	t.Setenv("JETBPM_NATS_URL", "")
	dir := t.TempDir()
	for _, tc := range []struct {
		yaml string
		args []string
		want string
	}{
		{"jobs:\n  lockDuratoin: 5s\n", nil, `bad.yaml:2: unknown key jobs.lockDuratoin (jobs takes trust, lockDuration, maxLockDuration, retryPolicy, errorMapper, topics)`},
		{"nats:\n  url: nats://x:4222\n", []string{"--data", "d"}, `--data and --listen configure the embedded NATS server; they do not go with nats.url (BAD:2)`},
	} {
		file := writeFile(t, dir, "bad.yaml", tc.yaml)
		_, err := parseServe(append([]string{"--config", file}, tc.args...))
		want := strings.ReplaceAll(tc.want, "BAD", file)
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%q %v: error %v, want it to end in %s", tc.yaml, tc.args, err, want)
		}
	}
	var cfgErr *config.Error
	_, err := parseServe([]string{"--config", writeFile(t, dir, "two.yaml", "a: 1\nb: 2\n")})
	if !errors.As(err, &cfgErr) || len(cfgErr.Problems) != 2 {
		t.Errorf("error %v, want both unknown keys", err)
	}
}

// The built binary with --config: the file's partitions lose to the flag,
// its topic lock is the topic consumer's AckWait, its retention the TTL of
// a finished instance's record, its history level leaves the instance
// facts unwritten; a bad file stops serve naming the line, and so does an
// unknown --history.
func TestServeConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "jetbpm.yaml", fmt.Sprintf(`embedded:
  data: %s
  listen: %s
streams:
  partitions: 3
retention:
  finishedInstances: 2h
history: incidents
jobs:
  topics:
    payments:
      lockDuration: 45s
`, filepath.Join(dir, "data"), freeAddr(t)))
	p := startServe(t, nil, "--config", file, "--partitions", "2")
	rec := p.waitReady()
	if rec["partitions"] != 2.0 {
		t.Errorf("ready record partitions = %v, want the flag's 2 over the file's 3", rec["partitions"])
	}
	url, _ := rec["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, dir, "config.bpmn", strings.ReplaceAll(workBPMN, "%PROCESSES%", strings.ReplaceAll(simpleProcess, "TOPIC", "payments"))))
	c.ok("deploy", "../../examples/order.bpmn")
	id := strings.TrimSpace(c.ok("start", "order", "--vars", `{"amount": 10, "quantity": 2}`))
	c.waitInstance(id, func(v view) bool { return v.Status == "completed" })

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for topic, want := range map[string]time.Duration{"payments": 45 * time.Second, "stock": 60 * time.Second} {
		cons, err := js.Consumer(ctx, streams.JobsStream, streams.TopicConsumer(topic))
		if err != nil {
			t.Fatal(err)
		}
		if got := cons.CachedInfo().Config.AckWait; got != want {
			t.Errorf("topic %s: AckWait %s, want %s", topic, got, want)
		}
	}
	kv, err := js.Stream(ctx, "KV_"+streams.InstancesBucket)
	if err != nil {
		t.Fatal(err)
	}
	m, err := kv.GetLastMsgForSubject(ctx, "$KV."+streams.InstancesBucket+"."+id)
	if err != nil {
		t.Fatal(err)
	}
	if ttl := m.Header.Get("Nats-TTL"); ttl != "2h0m0s" {
		t.Errorf("finished instance's record has Nats-TTL %q, want the file's 2h", ttl)
	}
	facts, err := js.Stream(ctx, streams.FactsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := facts.Info(ctx, jetstream.WithSubjectFilter(streams.FactFilter(streams.FactInstance, "order")))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 0 {
		t.Errorf("history incidents: instance facts stored %v, want none", info.State.Subjects)
	}
	p.stop()
	checkFails(t, nil, 2, `^jetbpm: --history: history level "none": use full, instances or incidents; run 'jetbpm help serve'$`,
		"serve", "--history", "none", "--http", "")

	bad := writeFile(t, dir, "bad.yaml", "jobs:\n  retryPolicy:\n    kind: sometimes\n")
	checkFails(t, nil, 1, `^jetbpm: `+regexp.QuoteMeta(bad)+`:3: jobs.retryPolicy.kind: "sometimes" is not one of none, fixed, exponential$`,
		"serve", "--config", bad, "--http", "")
}
