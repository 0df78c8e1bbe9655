package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/jobs"
)

// examplePath is the example every key of which docs/configuration.md
// documents; TestExample and the CLI's tests load it, so it cannot rot.
const examplePath = "../../../../examples/jetbpm.yaml"

func ptr[T any](v T) *T { return &v }

// TestExample: the example file parses, and what it sets is what its
// comments say: the defaults, and two topics.
func TestExample(t *testing.T) {
	c, err := Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	wantFlags := map[string]string{
		"data": "./jetbpm-data", "listen": "127.0.0.1:4222", "http": "127.0.0.1:9464",
		"log-format": "auto", "log-level": "info", "replicas": "1", "failover": "10s",
		"durability": "sync", "history": "full",
	}
	if len(c.Flags) != len(wantFlags) {
		t.Errorf("flags %+v, want %v", c.Flags, wantFlags)
	}
	for name, want := range wantFlags {
		if got := c.Flags[name]; got.Value != want || got.Line == 0 {
			t.Errorf("flag %s = %+v, want %q with its line", name, got, want)
		}
	}
	want := engine.Options{
		CacheSize: 10_000, BatchSize: 256, MaxVariableBytes: 256 << 10, ScriptTimeout: time.Second, ScriptMemory: 64 << 20,
		FinishedRetention: 7 * 24 * time.Hour, IncidentRetention: 30 * 24 * time.Hour,
		Jobs: jobs.Overrides{
			Trust: jobs.WorkerTrusted, LockDuration: jobs.DefaultLockDuration, MaxLockDuration: jobs.DefaultMaxLockDuration,
			Retry: ptr(jobs.DefaultRetrySpec),
		},
		TopicJobs: map[string]jobs.Overrides{
			"reports": {LockDuration: 10 * time.Minute, MaxLockDuration: 2 * time.Hour},
			"payments": {Trust: jobs.EngineAuthoritative, Retry: ptr(jobs.FixedDelaySpec(5, 10*time.Second)), Rules: []jobs.Rule{
				{Code: "409", Outcome: jobs.BusinessError, ErrorCode: "PAYMENT_CONFLICT", Message: "the payment is already in progress"},
				{When: `body.reason == "insufficient_funds"`, Outcome: jobs.BusinessError, ErrorCode: "INSUFFICIENT_FUNDS"},
			}},
		},
		IncidentRetry: jobs.NoRetrySpec(),
	}
	if !reflect.DeepEqual(c.Engine, want) {
		t.Errorf("engine options\n got %+v\nwant %+v", c.Engine, want)
	}
}

// The docs show the example file as it is checked in.
func TestExampleInDocs(t *testing.T) {
	doc, err := os.ReadFile("../../../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(example)+"```\n") {
		t.Error("docs/configuration.md does not show examples/jetbpm.yaml as it is; copy it into the ```yaml block")
	}
}

func TestParseSettings(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		check      func(t *testing.T, c *Config)
	}{
		{"empty file", "", func(t *testing.T, c *Config) {
			if len(c.Flags) != 0 || !reflect.DeepEqual(c.Engine, engine.Options{}) {
				t.Errorf("%+v", c)
			}
		}},
		{"comments only", "# nothing\n", func(t *testing.T, c *Config) {
			if len(c.Flags) != 0 {
				t.Errorf("%+v", c)
			}
		}},
		{"nats connection", "nats:\n  url: nats://a:4222,nats://b:4222\n  user: engine\n  creds: e.creds\n  tls: {ca: ca.pem, cert: c.pem, key: k.pem}\n",
			func(t *testing.T, c *Config) {
				want := map[string]string{"nats-url": "nats://a:4222,nats://b:4222", "user": "engine", "creds": "e.creds",
					"tls-ca": "ca.pem", "tls-cert": "c.pem", "tls-key": "k.pem"}
				for name, v := range want {
					if c.Flags[name].Value != v || c.Flags[name].Line == 0 {
						t.Errorf("%s = %+v, want %q", name, c.Flags[name], v)
					}
				}
				if c.Flags["tls-key"].Key != "nats.tls.key" || c.Flags["tls-key"].Line != 5 {
					t.Errorf("tls-key = %+v", c.Flags["tls-key"])
				}
			}},
		{"the Zeebe gateway", "grpc: 127.0.0.1:26600\n",
			func(t *testing.T, c *Config) {
				if g := c.Flags["grpc"]; g.Value != "127.0.0.1:26600" || g.Key != "grpc" || g.Line != 1 {
					t.Errorf("grpc = %+v", g)
				}
			}},
		{"connectors", "connectors:\n  kinds: [http]\n  hosts: [a.test, \"*.b.test\", \"c.test:8080\"]\n  maxResponse: 4096\n",
			func(t *testing.T, c *Config) {
				if k := c.Flags["connectors"]; k.Value != "http" || k.Key != "connectors.kinds" || k.Line != 2 {
					t.Errorf("connectors = %+v", k)
				}
				if h := c.Flags["connector-hosts"]; h.Value != "a.test,*.b.test,c.test:8080" || h.Line != 3 {
					t.Errorf("connector-hosts = %+v", h)
				}
				if m := c.Flags["connector-max-response"]; m.Value != "4096" {
					t.Errorf("connector-max-response = %+v", m)
				}
			}},
		{"one connector kind as a word", "connectors: {kinds: http}\n", func(t *testing.T, c *Config) {
			if k := c.Flags["connectors"]; k.Value != "http" {
				t.Errorf("connectors = %+v", k)
			}
		}},
		{"http off, durations in days and hours", "http: \"\"\nfailover: 1m30s\nretention: {finishedInstances: 36h, closedIncidents: 90d}\n",
			func(t *testing.T, c *Config) {
				if h, ok := c.Flags["http"]; !ok || h.Value != "" {
					t.Errorf("http = %+v, want set to empty", h)
				}
				if c.Flags["failover"].Value != "1m30s" || c.Engine.FinishedRetention != 36*time.Hour || c.Engine.IncidentRetention != 90*24*time.Hour {
					t.Errorf("%+v %+v", c.Flags, c.Engine)
				}
			}},
		{"http as a mapping: listener, auth, TLS", "http:\n  listen: 0.0.0.0:9464\n  auth: auth.yaml\n  insecure: true\n  tls: {cert: h.pem, key: hk.pem}\n",
			func(t *testing.T, c *Config) {
				want := map[string]string{"http": "0.0.0.0:9464", "http-auth": "auth.yaml", "http-insecure": "true",
					"http-tls-cert": "h.pem", "http-tls-key": "hk.pem"}
				for name, v := range want {
					if c.Flags[name].Value != v {
						t.Errorf("%s = %+v, want %q", name, c.Flags[name], v)
					}
				}
				if c.Flags["http-tls-key"].Key != "http.tls.key" || c.Flags["http-tls-key"].Line != 5 {
					t.Errorf("http-tls-key = %+v", c.Flags["http-tls-key"])
				}
			}},
		{"exponential fills in the default policy", "jobs:\n  retryPolicy: {kind: exponential, maxAttempts: 8, cap: 5m}\n", func(t *testing.T, c *Config) {
			want := jobs.ExponentialSpec(8, 500*time.Millisecond, 5*time.Minute, 0.2)
			if c.Engine.Jobs.Retry == nil || *c.Engine.Jobs.Retry != want {
				t.Errorf("retry %+v, want %+v", c.Engine.Jobs.Retry, want)
			}
		}},
		{"incident retry without jitter", "incidents:\n  retryPolicy: {kind: exponential, base: 1s, cap: 1m}\n", func(t *testing.T, c *Config) {
			if want := jobs.ExponentialSpec(3, time.Second, time.Minute, 0); c.Engine.IncidentRetry != want {
				t.Errorf("incident retry %+v, want %+v", c.Engine.IncidentRetry, want)
			}
		}},
		{"fixed retry, none", "jobs:\n  retryPolicy: {kind: fixed, delay: 0s}\n  topics:\n    t: {retryPolicy: {kind: none}}\n", func(t *testing.T, c *Config) {
			if *c.Engine.Jobs.Retry != jobs.FixedDelaySpec(3, 0) || *c.Engine.TopicJobs["t"].Retry != jobs.NoRetrySpec() {
				t.Errorf("%+v %+v", c.Engine.Jobs.Retry, c.Engine.TopicJobs["t"].Retry)
			}
		}},
		{"a technical catch-all rule; a numeric code is its text", "jobs:\n  errorMapper:\n    - code: 503\n      technical: true\n", func(t *testing.T, c *Config) {
			if want := []jobs.Rule{{Code: "503", Outcome: jobs.Technical}}; !reflect.DeepEqual(c.Engine.Jobs.Rules, want) {
				t.Errorf("rules %+v, want %+v", c.Engine.Jobs.Rules, want)
			}
		}},
		{"aliases", "jobs:\n  lockDuration: &lock 2m\n  topics:\n    a: {lockDuration: *lock}\n", func(t *testing.T, c *Config) {
			if c.Engine.TopicJobs["a"].LockDuration != 2*time.Minute {
				t.Errorf("%+v", c.Engine.TopicJobs)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("f.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// Every problem names the line and the key; nothing is half-applied.
func TestParseProblems(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want string // the error, with every problem after the first counted; ending in ":", its start
	}{
		{"http:\n  insecure: maybe\n  tls: {cert: \"\"}\n  colour: red\n", "f.yaml:2: http.insecure: \"maybe\" is not true or false (and 2 more problems)"},
		{"partitons: 4\n", "f.yaml:1: unknown key partitons (the top level takes nats, embedded, http, grpc, log, streams, durability, history, failover, engine, retention, jobs, connectors, incidents)"},
		{"jobs:\n  lockDuratoin: 5s\n", "f.yaml:2: unknown key jobs.lockDuratoin (jobs takes trust, lockDuration, maxLockDuration, retryPolicy, errorMapper, topics)"},
		{"jobs:\n  topics:\n    p:\n      topics: {}\n", "f.yaml:4: unknown key jobs.topics.p.topics (jobs.topics.p takes trust, lockDuration, maxLockDuration, retryPolicy, errorMapper)"},
		{"jobs:\n  lockDuration: -5s\n", `f.yaml:2: jobs.lockDuration: -5s is negative`},
		{"jobs:\n  lockDuration: 0s\n", `f.yaml:2: jobs.lockDuration: 0s is under the minimum of 1ms`},
		{"jobs:\n  maxLockDuration: soon\n", `f.yaml:2: jobs.maxLockDuration: "soon" is not a duration such as 500ms, 90s, 36h or 7d`},
		{"failover: 10\n", `f.yaml:1: failover: "10" is not a duration such as 500ms, 90s, 36h or 7d`},
		{"failover: 500ms\n", `f.yaml:1: failover: 500ms is under the minimum of 1s`},
		{"retention:\n  closedIncidents: 1500ms\n", `f.yaml:2: retention.closedIncidents: 1500ms is not a whole number of seconds (a JetStream message TTL is)`},
		{"retention:\n  finishedInstances: 99999d\n", `f.yaml:2: retention.finishedInstances: "99999d" is not a duration such as 500ms, 90s, 36h or 7d`},
		{"jobs:\n  trust: maybe\n", `f.yaml:2: jobs.trust: "maybe" is not one of workerTrusted, engineAuthoritative`},
		{"jobs:\n  retryPolicy:\n    kind: sometimes\n", `f.yaml:3: jobs.retryPolicy.kind: "sometimes" is not one of none, fixed, exponential`},
		{"jobs:\n  retryPolicy:\n    kind: custom\n", `f.yaml:3: jobs.retryPolicy.kind: "custom" is not one of none, fixed, exponential`},
		{"jobs:\n  retryPolicy:\n    maxAttempts: 3\n", `f.yaml:3: jobs.retryPolicy: has no kind (none, fixed or exponential)`},
		{"jobs:\n  retryPolicy: {kind: fixed}\n", `f.yaml:2: jobs.retryPolicy: kind fixed needs a delay (e.g. delay: 10s)`},
		{"jobs:\n  retryPolicy:\n    kind: fixed\n    delay: 1s\n    base: 1s\n", `f.yaml:5: jobs.retryPolicy.base: does not apply to kind fixed`},
		{"jobs:\n  retryPolicy:\n    kind: none\n    maxAttempts: 2\n", `f.yaml:4: jobs.retryPolicy.maxAttempts: kind none runs once; omit maxAttempts`},
		{"jobs:\n  retryPolicy:\n    kind: fixed\n    delay: 1s\n    maxAttempts: 0\n", `f.yaml:5: jobs.retryPolicy.maxAttempts: 0 is not between 1 and 1000000`},
		{"jobs:\n  retryPolicy:\n    kind: exponential\n    base: 1m\n    cap: 1s\n", `f.yaml:3: jobs.retryPolicy: retry exponential: base 1m0s exceeds cap 1s`},
		{"jobs:\n  retryPolicy:\n    kind: exponential\n    jitter: 1.5\n", `f.yaml:4: jobs.retryPolicy.jitter: "1.5" is not a fraction in [0, 1] (0.2 = ±20%)`},
		{"incidents:\n  retryPolicy:\n    kind: exponential\n    jitter: 0.1\n", `f.yaml:4: incidents.retryPolicy.jitter: incident retries are scheduled by the deterministic step, without jitter`},
		{"jobs:\n  lockDuration: 2h\n", `f.yaml:2: jobs: lockDuration 2h0m0s is longer than maxLockDuration 30m0s`},
		{"jobs:\n  maxLockDuration: 1m\n  topics:\n    slow:\n      lockDuration: 5m\n", `f.yaml:4: jobs.topics.slow: topic "slow": lockDuration 5m0s is longer than maxLockDuration 1m0s`},
		{"jobs:\n  errorMapper: []\n", `f.yaml:2: jobs.errorMapper: has no rules; remove the key to have none`},
		{"jobs:\n  errorMapper:\n    - code: \"404\"\n", `f.yaml:3: jobs.errorMapper[0]: has 0 outcomes; give one: bpmnError: CODE or technical: true`},
		{"jobs:\n  errorMapper:\n    - {code: \"1\", bpmnError: X, technical: true}\n", `f.yaml:3: jobs.errorMapper[0]: has 2 outcomes; give one: bpmnError: CODE or technical: true`},
		{"jobs:\n  errorMapper:\n    - {code: \"1\", status: NOT_FOUND}\n", `f.yaml:3: jobs.errorMapper[0].status: a status outcome writes the task's jetbpm:status variable; give this rule on the task`},
		{"jobs:\n  errorMapper:\n    - {technical: false}\n", `f.yaml:3: jobs.errorMapper[0].technical: is false; a rule's outcome is technical: true, or bpmnError`},
		{"jobs:\n  errorMapper:\n    - {technical: yes}\n", `f.yaml:3: jobs.errorMapper[0].technical: "yes" is not true or false`},
		{"jobs:\n  errorMapper:\n    - {when: \"body.(\", technical: true}\n", `f.yaml:3: jobs.errorMapper[0]: error mapper rules[0]: when:`},
		{"jobs:\n  errorMapper:\n    - {message: m, technical: true}\n", `f.yaml:3: jobs.errorMapper[0]: message goes with bpmnError only`},
		{"streams:\n  partitions: 0\n", `f.yaml:2: streams.partitions: 0 is not between 1 and 1024`},
		{"streams:\n  replicas: three\n", `f.yaml:2: streams.replicas: "three" is not an integer`},
		{"streams:\n  replicas: 1.0\n", `f.yaml:2: streams.replicas: "1.0" is not an integer`},
		{"log:\n  level: loud\n", `f.yaml:2: log.level: "loud" is not one of debug, info, warn, error`},
		{"durability: always\n", `f.yaml:1: durability: "always" is not one of sync, os`},
		{"connectors:\n  kinds: [http, smtp]\n", `f.yaml:2: connectors.kinds[1]: "smtp" is not one of http`},
		{"connectors:\n  hosts: \"a.test,b.test\"\n", `f.yaml:2: connectors.hosts: "a.test,b.test" holds a comma; give a list`},
		{"connectors:\n  maxResponse: 0\n", `f.yaml:2: connectors.maxResponse: 0 is not between 1 and 1099511627776`},
		{"history: none\n", `f.yaml:1: history: "none" is not one of full, instances, incidents`},
		{"embedded:\n  listen: localhost\n", `f.yaml:2: embedded.listen: "localhost" is not HOST:PORT`},
		{"embedded:\n  data:\n", `f.yaml:2: embedded.data: has no value; give one or remove the key`},
		{"embedded:\n  data: [a, b]\n", `f.yaml:2: embedded.data: want a single value, not a list`},
		{"jobs: 5\n", `f.yaml:1: jobs: want a mapping of keys (trust, lockDuration, maxLockDuration, retryPolicy, errorMapper, topics), not "5"`},
		{"jobs:\n  topics:\n    \"\": {}\n", `f.yaml:3: jobs.topics: a name must be a non-empty string, not ""`},
		{"jobs:\n  trust: workerTrusted\n  trust: engineAuthoritative\n", `f.yaml:3: jobs.trust: repeats the key of line 2`},
		{"embedded: {data: d}\nnats: {url: \"nats://x:4222\"}\n", `f.yaml:1: embedded: configures the embedded NATS server, which does not run with nats.url (line 2)`},
		{"x: 1\n---\ny: 2\n", "f.yaml:2: a second YAML document; the file holds one (and 1 more problem)"},
		{"- 1\n", "f.yaml:1: want a mapping of keys (nats, embedded, http, grpc, log, streams, durability, history, failover, engine, retention, jobs, connectors, incidents), not a list"},
		// Several problems: all are collected, the first is shown.
		{"jobs:\n  lockDuratoin: 5s\n  trust: maybe\nfoo: 1\n", "f.yaml:2: unknown key jobs.lockDuratoin (jobs takes trust, lockDuration, maxLockDuration, retryPolicy, errorMapper, topics) (and 2 more problems)"},
	} {
		c, err := Parse("f.yaml", []byte(tc.yaml))
		if err == nil {
			t.Errorf("%q: parsed to %+v, want an error", tc.yaml, c)
			continue
		}
		var perr *Error
		if !errors.As(err, &perr) {
			t.Errorf("%q: %T %v, want an *Error", tc.yaml, err, err)
			continue
		}
		got := err.Error()
		if prefix, ok := strings.CutSuffix(tc.want, ":"); ok && !strings.HasPrefix(got, prefix) || !ok && got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.yaml, got, tc.want)
		}
	}
}

func TestParseYAMLSyntaxError(t *testing.T) {
	_, err := Parse("f.yaml", []byte("jobs: [\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "config f.yaml: yaml: line ") {
		t.Errorf("error %v, want the YAML parser's, naming the file and line", err)
	}
}

func TestLoad(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", maxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("big file: %v", err)
	}
}
