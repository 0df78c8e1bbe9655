package bpmnxml

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
)

// Two jetbpm elements hold a retry policy, in one syntax: kind and the
// attributes of that kind.
//
//	<jetbpm:retryPolicy kind="fixed" maxAttempts="4" delay="PT10S"/>    an external task's job retries
//	<jetbpm:incidentRetry kind="fixed" maxAttempts="2" delay="PT1M"/>   an activity's automatic incident retries

// retryNames are the retry attributes besides kind; incidentRetryNames
// those an incident retry policy takes.
var (
	retryNames         = []string{"maxAttempts", "delay", "base", "cap", "jitter", "name"}
	incidentRetryNames = []string{"maxAttempts", "delay", "base", "cap"}
)

// retryForm is what one retry element takes beyond the shared syntax.
type retryForm struct {
	// attempts is maxAttempts when the element omits it.
	attempts int
	// incident says the policy schedules incident retries. The instance's
	// step schedules them, deterministically and without a registry of Go
	// policies: there is no jitter attribute (an exponential policy's
	// jitter is 0) and no custom kind.
	incident bool
}

// retrySpec reads retry element c of owner e. It reports every problem and
// returns ok false if there was one. Whenever the kind is known, spec has
// it, and MaxAttempts is the given maxAttempts if valid, else the default.
func (im *importer) retrySpec(e, c *elem, f retryForm) (spec jobs.RetrySpec, ok bool) {
	names := retryNames
	if f.incident {
		names = incidentRetryNames
	}
	a, ok := im.jetbpmAttrs(e, c, append([]string{"kind"}, names...)...)
	if !ok {
		return spec, false
	}
	im.noChildren(e, c)
	kind := jobs.RetryKind(a["kind"])
	allowed, known := jobs.RetryParams[kind]
	switch {
	case f.incident && (!known || kind == jobs.RetryCustom):
		why := ""
		if kind == jobs.RetryCustom {
			why = " (incident retries take no custom policy: the engine schedules them without consulting Go code)"
		}
		im.probs.in(e, c, "kind=%q is not one of none, fixed, exponential%s", a["kind"], why)
		return spec, false
	case !known:
		im.probs.in(e, c, "kind=%q is not one of none, fixed, exponential, custom", a["kind"])
		return spec, false
	}
	ok = true
	for _, name := range names {
		if has(a, name) && !slices.Contains(allowed, name) {
			im.probs.in(e, c, "%s does not apply to kind=%q", name, kind)
			ok = false
		}
	}
	spec = jobs.RetrySpec{Kind: kind, MaxAttempts: f.attempts}
	switch kind {
	case jobs.RetryNone:
		spec.MaxAttempts = 1
	case jobs.RetryExponential:
		spec.Base, spec.Cap = jobs.DefaultRetrySpec.Base, jobs.DefaultRetrySpec.Cap
		if !f.incident {
			spec.Jitter = jobs.DefaultRetrySpec.Jitter
		}
	}
	if v, has := a["maxAttempts"]; has {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil || n < 1:
			im.probs.in(e, c, "maxAttempts=%q is not a positive integer (it counts executions: 3 = the first + 2 retries)", v)
			ok = false
		case kind == jobs.RetryNone && n != 1:
			im.probs.in(e, c, "maxAttempts=%q: kind=\"none\" runs once; omit maxAttempts", v)
			ok = false
		default:
			spec.MaxAttempts = n
		}
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"delay", &spec.Delay}, {"base", &spec.Base}, {"cap", &spec.Cap}} {
		v, has := a[d.name]
		if !has {
			continue
		}
		dur, msg := clockDuration(v)
		if msg != "" {
			im.probs.in(e, c, "%s=%q: %s", d.name, v, msg)
			ok = false
			continue
		}
		*d.dst = dur
	}
	if v, has := a["jitter"]; has {
		j, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(j >= 0 && j <= 1) {
			im.probs.in(e, c, "jitter=%q is not a fraction in [0,1] (0.2 = ±20%%)", v)
			ok = false
		}
		spec.Jitter = j
	}
	switch {
	case kind == jobs.RetryFixed && !has(a, "delay"):
		im.probs.in(e, c, "kind=\"fixed\" needs delay (e.g. delay=\"PT1S\")")
		ok = false
	case kind == jobs.RetryCustom:
		spec.Name = strings.TrimSpace(a["name"])
		if spec.Name == "" {
			im.probs.in(e, c, "kind=\"custom\" needs the name of a retry policy registered with the engine")
			ok = false
		}
	}
	if !ok {
		return spec, false
	}
	if err := spec.Validate(); err != nil {
		im.probs.in(e, c, "%v", err)
		return spec, false
	}
	return spec, true
}

// retryPolicy reads <jetbpm:retryPolicy kind=.../>, an external task's job
// retries. maxAttempts defaults to the zeebe:taskDefinition retries, else
// 3; an exponential policy's omitted attributes are the default policy's
// (base PT0.5S, cap PT30S, jitter 0.2).
func (im *importer) retryPolicy(e, c *elem, w *model.Worker) {
	attempts := jobs.DefaultRetrySpec.MaxAttempts
	if w.Retries > 0 {
		attempts = w.Retries
	}
	spec, ok := im.retrySpec(e, c, retryForm{attempts: attempts})
	if spec.Kind != "" && w.Retries > 0 && spec.MaxAttempts != w.Retries {
		im.probs.in(e, c, "%d attempts contradict the zeebe:taskDefinition retries=\"%d\"; keep one", spec.MaxAttempts, w.Retries)
		ok = false
	}
	if ok {
		w.Options.Retry = &spec
	}
}

// incidentRetry reads <jetbpm:incidentRetry kind=.../> of any activity:
// how the engine retries the activity's incidents by itself
// (docs/incidents.md §4). maxAttempts counts the activity's runs, the
// first included, and defaults to 3; zeebe:taskDefinition retries count a
// job's executions within one run and have no say in it. An exponential
// policy's omitted base and cap are PT0.5S and PT30S, without jitter.
func (im *importer) incidentRetry(e, c *elem, n *model.Node) {
	spec, ok := im.retrySpec(e, c, retryForm{attempts: jobs.DefaultRetrySpec.MaxAttempts, incident: true})
	if ok {
		n.IncidentRetry = &spec
	}
}
