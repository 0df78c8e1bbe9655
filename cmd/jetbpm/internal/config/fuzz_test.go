package config

import (
	"errors"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/jobs"
)

// FuzzParse: whatever the file holds, Parse never panics; what it accepts
// is a configuration the engine takes, and what it refuses names a line.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile(examplePath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	for _, s := range []string{
		"",
		"jobs:\n  lockDuration: 2m\n  topics:\n    a: {maxLockDuration: 1h, retryPolicy: {kind: fixed, delay: 1s}}\n",
		"jobs:\n  errorMapper:\n    - {code: 409, bpmnError: X, message: m}\n    - {when: 'body.x > 1', technical: true}\n",
		"incidents:\n  retryPolicy: {kind: exponential, maxAttempts: 4, base: 1s, cap: 1m}\n",
		"a: &x [*x]\n",
		"jobs: &j\n  topics: {t: *j}\n",
		"retention: {finishedInstances: 1d, closedIncidents: 1s}\nfailover: 1s\n",
		"streams: {partitions: 0x10, replicas: 3}\n",
		"<<: {http: x}\n",
		"x: 1\n---\n",
		"jobs:\n  retryPolicy:\n    kind: exponential\n    jitter: .nan\n",
	} {
		f.Add([]byte(s))
	}
	line := regexp.MustCompile(`^f\.yaml:[1-9][0-9]*: `)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data)
		var perr *Error
		switch {
		case errors.As(err, &perr):
			if len(perr.Problems) == 0 || !line.MatchString(err.Error()) {
				t.Fatalf("problems without a line: %v", err)
			}
			return
		case err != nil:
			return // the YAML parser's own error
		}
		o := c.Engine
		if err := (jobs.Defaults{All: o.Jobs, Topics: o.TopicJobs}).Validate(); err != nil {
			t.Fatalf("accepted job defaults that do not validate: %v", err)
		}
		if o.IncidentRetry.Kind != "" {
			if err := o.IncidentRetry.Validate(); err != nil || o.IncidentRetry.Jitter != 0 {
				t.Fatalf("accepted incident retry %+v: %v", o.IncidentRetry, err)
			}
		}
		for _, r := range []time.Duration{o.FinishedRetention, o.IncidentRetention} {
			if r != 0 && (r < time.Second || r%time.Second != 0) {
				t.Fatalf("accepted retention %s", r)
			}
		}
		if o.CacheSize < 0 || o.BatchSize < 0 || o.MaxVariableBytes < 0 {
			t.Fatalf("accepted negative limits %+v", o)
		}
		for name, s := range c.Flags {
			if s.Line < 1 || s.Key == "" {
				t.Fatalf("flag %s from %+v", name, s)
			}
		}
	})
}
