package config

import (
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jetbpm/jetbpm/jobs"
)

// retry reads a retry policy as <jetbpm:retryPolicy> takes it: kind is
// required; maxAttempts defaults to 3 (1 for none); an exponential
// policy's omitted base, cap and jitter are the default policy's. An
// incident retry runs without jitter, so it takes none. Custom policies
// are Go code an embedding program registers; serve has none.
func (d *decoder) retry(key string, v *yaml.Node, incident bool) (jobs.RetrySpec, bool) {
	given := map[string]*yaml.Node{}
	keep := func(name string) field {
		return field{name, func(_ string, v *yaml.Node) { given[name] = v }}
	}
	before := len(d.problems)
	d.mapping(v, key, keep("kind"), keep("maxAttempts"), keep("delay"), keep("base"), keep("cap"), keep("jitter"))
	if len(d.problems) > before {
		return jobs.RetrySpec{}, false
	}
	kn, ok := given["kind"]
	if !ok {
		d.fail(resolve(v), key, "has no kind (none, fixed or exponential)")
		return jobs.RetrySpec{}, false
	}
	s, ok := d.oneOf(join(key, "kind"), kn, string(jobs.RetryNone), string(jobs.RetryFixed), string(jobs.RetryExponential))
	if !ok {
		return jobs.RetrySpec{}, false
	}
	kind := jobs.RetryKind(s)
	for _, name := range []string{"maxAttempts", "delay", "base", "cap", "jitter"} {
		n, has := given[name]
		switch {
		case !has:
		case !slices.Contains(jobs.RetryParams[kind], name):
			d.fail(resolve(n), join(key, name), "does not apply to kind %s", kind)
		case incident && name == "jitter":
			d.fail(resolve(n), join(key, name), "incident retries are scheduled by the deterministic step, without jitter")
		}
	}
	if len(d.problems) > before {
		return jobs.RetrySpec{}, false
	}

	spec := jobs.RetrySpec{Kind: kind, MaxAttempts: jobs.DefaultRetrySpec.MaxAttempts}
	switch kind {
	case jobs.RetryNone:
		spec.MaxAttempts = 1
	case jobs.RetryExponential:
		spec = jobs.DefaultRetrySpec
		if incident {
			spec.Jitter = 0
		}
	case jobs.RetryFixed:
		if _, has := given["delay"]; !has {
			d.fail(resolve(v), key, "kind fixed needs a delay (e.g. delay: 10s)")
		}
	}
	if n, has := given["maxAttempts"]; has {
		attempts, ok := d.integer(join(key, "maxAttempts"), n, 1, 1_000_000)
		if ok && kind == jobs.RetryNone && attempts != 1 {
			d.fail(resolve(n), join(key, "maxAttempts"), "kind none runs once; omit maxAttempts")
		}
		spec.MaxAttempts = max(attempts, 1)
	}
	for _, f := range []struct {
		name string
		dst  *time.Duration
	}{{"delay", &spec.Delay}, {"base", &spec.Base}, {"cap", &spec.Cap}} {
		if n, has := given[f.name]; has {
			*f.dst, _ = d.duration(join(key, f.name), n, 0)
		}
	}
	if n, has := given["jitter"]; has {
		spec.Jitter, _ = d.fraction(join(key, "jitter"), n)
	}
	if len(d.problems) > before {
		return jobs.RetrySpec{}, false
	}
	if err := spec.Validate(); err != nil {
		d.fail(resolve(v), key, "%v", err)
		return jobs.RetrySpec{}, false
	}
	return spec, true
}

// rules reads error mapper rules as the <jetbpm:rule> elements of
// <jetbpm:errorMapper> take them, less the status outcomes: those write the
// task's jetbpm:status variable, which only a task names.
func (d *decoder) rules(key string, v *yaml.Node) ([]jobs.Rule, bool) {
	if n := resolve(v); n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		d.fail(n, key, "has no rules; remove the key to have none")
		return nil, false
	}
	before := len(d.problems)
	var rules []jobs.Rule
	d.list(v, key, func(key string, item *yaml.Node) {
		var r jobs.Rule
		outcomes := 0
		text := func(name string, dst *string) field {
			return field{name, func(key string, v *yaml.Node) {
				if s, ok := d.text(key, v); ok {
					*dst = s
				}
			}}
		}
		status := func(name string) field {
			return field{name, func(key string, v *yaml.Node) {
				d.fail(resolve(v), key, "a status outcome writes the task's jetbpm:status variable; give this rule on the task")
			}}
		}
		at := len(d.problems)
		d.mapping(item, key, text("code", &r.Code), text("when", &r.When),
			field{"bpmnError", func(key string, v *yaml.Node) {
				outcomes++
				if s, ok := d.text(key, v); ok {
					r.Outcome, r.ErrorCode = jobs.BusinessError, s
				}
			}},
			text("message", &r.Message),
			field{"technical", func(key string, v *yaml.Node) {
				outcomes++
				if b, ok := d.boolean(key, v); ok && !b {
					d.fail(resolve(v), key, "is false; a rule's outcome is technical: true, or bpmnError")
				} else if ok {
					r.Outcome = jobs.Technical
				}
			}},
			status("status"), status("statusFrom"))
		if len(d.problems) > at {
			return
		}
		switch {
		case outcomes != 1:
			d.fail(resolve(item), key, "has %d outcomes; give one: bpmnError: CODE or technical: true", outcomes)
		case r.Message != "" && r.Outcome != jobs.BusinessError:
			d.fail(resolve(item), key, "message goes with bpmnError only")
		default:
			if err := jobs.ValidateRules([]jobs.Rule{r}); err != nil {
				d.fail(resolve(item), key, "%v", err)
				return
			}
			rules = append(rules, r)
		}
	})
	return rules, len(d.problems) == before
}
