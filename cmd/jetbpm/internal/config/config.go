// Package config reads the configuration file of `jetbpm serve`: the
// engine-wide defaults an embedding Go program sets with engine.Options
// (job lock, cap, retry policy, trust and error mapper rules, for all
// topics and per topic; the incident retry policy; retention; limits) and
// the settings serve also takes as flags (NATS connection, partitions,
// failover, logging).
//
// The file is YAML. The decoder walks yaml.v3's node tree against a fixed
// schema, so every unknown key and every bad value is reported with its
// line, all of them at once:
//
//	cfg, err := config.Load("jetbpm.yaml")
//	// err: jetbpm.yaml:12: jobs.retryPolicy.kind: "sometimes" is not one of none, fixed, exponential
//
// docs/configuration.md lists every key with its default.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// Config is what a configuration file sets.
type Config struct {
	// Flags are the file's values for settings serve also takes as flags,
	// by flag name ("partitions", "nats-url"), in the flag's own syntax;
	// serve applies each one the command line does not give.
	Flags map[string]Setting
	// Engine holds the engine options the file sets; the others are zero,
	// which the engine takes as its defaults.
	Engine engine.Options
}

// Setting is one value of the file.
type Setting struct {
	Key   string // the file's dotted key, e.g. "streams.partitions"
	Line  int
	Value string // in the syntax of the flag it stands for
}

// maxFileBytes bounds a configuration file; a real one is a few KiB.
const maxFileBytes = 1 << 20

// Load reads and parses the configuration file at path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("config %s: larger than %d bytes", path, maxFileBytes)
	}
	return Parse(path, data)
}

// Parse parses a configuration file's content; name is the file's name in
// errors. An empty file sets nothing. A problem with the content is an
// *Error listing every problem with its line.
func Parse(name string, data []byte) (*Config, error) {
	c := &Config{Flags: map[string]Setting{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return c, nil
		}
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	d := &decoder{}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		d.fail(&next, "", "a second YAML document; the file holds one")
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	if len(doc.Content) == 1 && !isNull(doc.Content[0]) {
		d.top(doc.Content[0], c)
	}
	if len(d.problems) > 0 {
		return nil, &Error{File: name, Problems: d.problems}
	}
	return c, nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// top is the schema of the file. Keys are camelCase, as the attributes of
// the jetbpm BPMN extensions that set the same options on one task.
func (d *decoder) top(root *yaml.Node, c *Config) {
	embedded := 0 // the line of the first embedded setting
	d.mapping(root, "",
		field{"nats", func(key string, v *yaml.Node) {
			d.mapping(v, key,
				d.flag(c, "url", "nats-url", d.text),
				d.flag(c, "monitor", "nats-monitor", d.text),
				d.flag(c, "user", "user", d.text),
				d.flag(c, "creds", "creds", d.text),
				field{"tls", func(key string, v *yaml.Node) {
					d.mapping(v, key,
						d.flag(c, "ca", "tls-ca", d.text),
						d.flag(c, "cert", "tls-cert", d.text),
						d.flag(c, "key", "tls-key", d.text))
				}})
		}},
		field{"embedded", func(key string, v *yaml.Node) {
			embedded = resolve(v).Line
			d.mapping(v, key,
				d.flag(c, "data", "data", d.text),
				d.flag(c, "listen", "listen", d.hostPort))
		}},
		field{"http", func(key string, v *yaml.Node) {
			// http: HOST:PORT, or a mapping with the listener's settings.
			if resolve(v).Kind != yaml.MappingNode {
				d.flag(c, "http", "http", d.str).set(key, v)
				return
			}
			d.mapping(v, key,
				d.flag(c, "listen", "http", d.str),
				d.flag(c, "auth", "http-auth", d.text),
				d.flag(c, "insecure", "http-insecure", func(key string, v *yaml.Node) (string, bool) {
					b, ok := d.boolean(key, v)
					return strconv.FormatBool(b), ok
				}),
				field{"tls", func(key string, v *yaml.Node) {
					d.mapping(v, key,
						d.flag(c, "cert", "http-tls-cert", d.text),
						d.flag(c, "key", "http-tls-key", d.text))
				}})
		}},
		// grpc: the Zeebe gateway's HOST:PORT ("" off).
		d.flag(c, "grpc", "grpc", d.str),
		field{"log", func(key string, v *yaml.Node) {
			d.mapping(v, key,
				d.flag(c, "format", "log-format", func(key string, v *yaml.Node) (string, bool) {
					return d.oneOf(key, v, "auto", "text", "json")
				}),
				d.flag(c, "level", "log-level", d.logLevel))
		}},
		field{"streams", func(key string, v *yaml.Node) {
			d.mapping(v, key,
				d.flag(c, "replicas", "replicas", d.intText(1, 5)),
				d.flag(c, "partitions", "partitions", d.intText(1, streams.MaxPartitions)))
		}},
		// durability: sync or os (docs/reliability.md, Durability).
		d.flag(c, "durability", "durability", func(key string, v *yaml.Node) (string, bool) {
			return d.oneOf(key, v, "sync", "os")
		}),
		// history: the facts written (docs/engine.md §8.2).
		d.flag(c, "history", "history", func(key string, v *yaml.Node) (string, bool) {
			return d.oneOf(key, v, "full", "instances", "incidents")
		}),
		d.flag(c, "failover", "failover", func(key string, v *yaml.Node) (string, bool) {
			f, ok := d.duration(key, v, time.Second)
			return f.String(), ok
		}),
		field{"engine", func(key string, v *yaml.Node) {
			d.mapping(v, key,
				d.intField("cacheSize", &c.Engine.CacheSize, 1, 10_000_000),
				d.intField("batchSize", &c.Engine.BatchSize, 1, 10_000),
				d.intField("maxVariableBytes", &c.Engine.MaxVariableBytes, 1, 64<<20),
				field{"scriptTimeout", func(key string, v *yaml.Node) {
					if t, ok := d.duration(key, v, time.Millisecond); ok {
						c.Engine.ScriptTimeout = t
					}
				}},
				d.intField("scriptMemory", &c.Engine.ScriptMemory, 1<<20, 4<<30))
		}},
		field{"retention", func(key string, v *yaml.Node) {
			d.mapping(v, key,
				d.retention("finishedInstances", &c.Engine.FinishedRetention),
				d.retention("closedIncidents", &c.Engine.IncidentRetention))
		}},
		field{"jobs", func(key string, v *yaml.Node) { d.jobs(key, v, &c.Engine) }},
		// connectors: the built-in connector workers (docs/scripts-listeners-connectors.md §3).
		field{"connectors", func(key string, v *yaml.Node) {
			d.mapping(v, key,
				d.flag(c, "kinds", "connectors", d.words("http")),
				d.flag(c, "hosts", "connector-hosts", d.words()),
				d.flag(c, "maxResponse", "connector-max-response", d.intText(1, 1<<40)))
		}},
		field{"incidents", func(key string, v *yaml.Node) {
			d.mapping(v, key, field{"retryPolicy", func(key string, v *yaml.Node) {
				if spec, ok := d.retry(key, v, true); ok {
					c.Engine.IncidentRetry = spec
				}
			}})
		}},
	)
	if url, ok := c.Flags["nats-url"]; ok && embedded != 0 {
		d.problems = append(d.problems, Problem{Line: embedded, Key: "embedded",
			Msg: fmt.Sprintf("configures the embedded NATS server, which does not run with nats.url (line %d)", url.Line)})
	}
}

// flag is a key whose value serve also takes as the flag flagName.
func (d *decoder) flag(c *Config, name, flagName string, read func(key string, v *yaml.Node) (string, bool)) field {
	return field{name, func(key string, v *yaml.Node) {
		if s, ok := read(key, v); ok {
			c.Flags[flagName] = Setting{Key: key, Line: resolve(v).Line, Value: s}
		}
	}}
}

func (d *decoder) intText(lo, hi int) func(key string, v *yaml.Node) (string, bool) {
	return func(key string, v *yaml.Node) (string, bool) {
		n, ok := d.integer(key, v, lo, hi)
		return strconv.Itoa(n), ok
	}
}

func (d *decoder) intField(name string, dst *int, lo, hi int) field {
	return field{name, func(key string, v *yaml.Node) {
		if n, ok := d.integer(key, v, lo, hi); ok {
			*dst = n
		}
	}}
}

// retention is a TTL: whole seconds, at least one.
func (d *decoder) retention(name string, dst *time.Duration) field {
	return field{name, func(key string, v *yaml.Node) {
		r, ok := d.duration(key, v, time.Second)
		if !ok {
			return
		}
		if r%time.Second != 0 {
			d.fail(resolve(v), key, "%s is not a whole number of seconds (a JetStream message TTL is)", resolve(v).Value)
			return
		}
		*dst = r
	}}
}

func (d *decoder) hostPort(key string, v *yaml.Node) (string, bool) {
	s, ok := d.text(key, v)
	if !ok {
		return "", false
	}
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		var p int
		p, err = strconv.Atoi(port)
		if err == nil && (p < 0 || p > 65535) {
			err = errors.New("port out of range")
		}
	}
	if err != nil {
		d.fail(resolve(v), key, "%q is not HOST:PORT", s)
		return "", false
	}
	return s, true
}

// words reads a list of words, or one, as the comma-separated text of a
// flag; with allowed, each must be one of them.
func (d *decoder) words(allowed ...string) func(key string, v *yaml.Node) (string, bool) {
	return func(key string, v *yaml.Node) (string, bool) {
		var out []string
		ok := true
		word := func(key string, n *yaml.Node) {
			s, good := d.text(key, n)
			switch {
			case !good:
			case strings.Contains(s, ","):
				d.fail(resolve(n), key, "%q holds a comma; give a list", s)
			case len(allowed) > 0 && !slices.Contains(allowed, s):
				d.fail(resolve(n), key, "%q is not one of %s", s, strings.Join(allowed, ", "))
			default:
				out = append(out, s)
				return
			}
			ok = false
		}
		if resolve(v).Kind == yaml.SequenceNode {
			d.list(v, key, word)
		} else {
			word(key, v)
		}
		return strings.Join(out, ","), ok
	}
}

func (d *decoder) logLevel(key string, v *yaml.Node) (string, bool) {
	return d.oneOf(key, v, "debug", "info", "warn", "error")
}

// jobs reads the engine-wide job defaults and the per-topic ones.
func (d *decoder) jobs(key string, v *yaml.Node, o *engine.Options) {
	type topicAt struct {
		name string
		key  *yaml.Node
	}
	var topics []topicAt
	before := len(d.problems)
	d.mapping(v, key, append(d.jobLevel(&o.Jobs), field{"topics", func(key string, v *yaml.Node) {
		d.entries(v, key, func(name string, k, v *yaml.Node) {
			var t jobs.Overrides
			d.mapping(v, join(key, name), d.jobLevel(&t)...)
			if o.TopicJobs == nil {
				o.TopicJobs = map[string]jobs.Overrides{}
			}
			o.TopicJobs[name] = t
			topics = append(topics, topicAt{name, k})
		})
	}})...)
	if len(d.problems) > before {
		return // the checks across levels would repeat a problem
	}
	if err := (jobs.Defaults{All: o.Jobs}).Validate(); err != nil {
		d.fail(resolve(v), key, "%v", err)
		return
	}
	for _, t := range topics {
		one := jobs.Defaults{All: o.Jobs, Topics: map[string]jobs.Overrides{t.name: o.TopicJobs[t.name]}}
		if err := one.Validate(); err != nil {
			d.fail(t.key, join(key+".topics", t.name), "%v", err)
		}
	}
}

// jobLevel are the keys of one level of job configuration.
func (d *decoder) jobLevel(o *jobs.Overrides) []field {
	return []field{
		{"trust", func(key string, v *yaml.Node) {
			if s, ok := d.oneOf(key, v, string(jobs.WorkerTrusted), string(jobs.EngineAuthoritative)); ok {
				o.Trust = jobs.Trust(s)
			}
		}},
		{"lockDuration", func(key string, v *yaml.Node) {
			if l, ok := d.duration(key, v, time.Millisecond); ok {
				o.LockDuration = l
			}
		}},
		{"maxLockDuration", func(key string, v *yaml.Node) {
			if l, ok := d.duration(key, v, time.Millisecond); ok {
				o.MaxLockDuration = l
			}
		}},
		{"retryPolicy", func(key string, v *yaml.Node) {
			if spec, ok := d.retry(key, v, false); ok {
				o.Retry = &spec
			}
		}},
		{"errorMapper", func(key string, v *yaml.Node) {
			if rules, ok := d.rules(key, v); ok {
				o.Rules = rules
			}
		}},
	}
}
