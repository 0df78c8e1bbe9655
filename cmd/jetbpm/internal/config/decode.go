package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Problem is one mistake in a configuration file.
type Problem struct {
	Line int    // 1-based
	Key  string // dotted path, e.g. "jobs.topics.payments.lockDuration"
	Msg  string
}

// Error lists every problem of a file, in the order they were found
// (the file's order, then the checks across sections).
type Error struct {
	File     string
	Problems []Problem
}

// Error describes the first problem, and how many more there are.
func (e *Error) Error() string {
	p := e.Problems[0]
	s := fmt.Sprintf("%s:%d: %s", e.File, p.Line, p.Msg)
	if p.Key != "" {
		s = fmt.Sprintf("%s:%d: %s: %s", e.File, p.Line, p.Key, p.Msg)
	}
	switch n := len(e.Problems) - 1; n {
	case 0:
		return s
	case 1:
		return s + " (and 1 more problem)"
	default:
		return fmt.Sprintf("%s (and %d more problems)", s, n)
	}
}

// decoder walks a YAML node tree against the schema written as calls to
// its methods, collecting problems instead of stopping at the first.
type decoder struct {
	problems []Problem
}

func (d *decoder) fail(n *yaml.Node, key, format string, args ...any) {
	d.problems = append(d.problems, Problem{Line: n.Line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// field is one key a mapping takes and what to do with its value.
type field struct {
	name string
	set  func(key string, v *yaml.Node)
}

// mapping walks mapping n at path: each known key's value goes to its
// field; an unknown or repeated key is a problem.
func (d *decoder) mapping(n *yaml.Node, path string, fields ...field) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping of keys (%s), not %s", names(fields), describe(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		key := join(path, k.Value)
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, "a key must be a plain name, not %s", describe(k))
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.fail(k, key, "repeats the key of line %d", line)
			continue
		}
		seen[k.Value] = k.Line
		f, ok := lookup(fields, k.Value)
		if !ok {
			where := path
			if where == "" {
				where = "the top level"
			}
			d.fail(k, "", "unknown key %s (%s takes %s)", key, where, names(fields))
			continue
		}
		f.set(key, v)
	}
}

// entries walks a mapping whose keys are names the file chooses (topics).
func (d *decoder) entries(n *yaml.Node, path string, each func(name string, key *yaml.Node, v *yaml.Node)) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping of names to settings, not %s", describe(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" || strings.TrimSpace(k.Value) == "" {
			d.fail(k, path, "a name must be a non-empty string, not %s", describe(k))
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.fail(k, join(path, k.Value), "repeats the name of line %d", line)
			continue
		}
		seen[k.Value] = k.Line
		each(k.Value, k, v)
	}
}

// list walks sequence n, calling each for every item.
func (d *decoder) list(n *yaml.Node, path string, each func(key string, item *yaml.Node)) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list, not %s", describe(n))
		return
	}
	for i, item := range n.Content {
		each(fmt.Sprintf("%s[%d]", path, i), item)
	}
}

// scalar returns n as a single non-null value.
func (d *decoder) scalar(key string, n *yaml.Node) (*yaml.Node, bool) {
	n = resolve(n)
	switch {
	case n.Kind != yaml.ScalarNode:
		d.fail(n, key, "want a single value, not %s", describe(n))
		return nil, false
	case n.Tag == "!!null":
		d.fail(n, key, "has no value; give one or remove the key")
		return nil, false
	}
	return n, true
}

// str reads any single value as a string ("" allowed).
func (d *decoder) str(key string, n *yaml.Node) (string, bool) {
	s, ok := d.scalar(key, n)
	if !ok {
		return "", false
	}
	return s.Value, true
}

// text reads a non-empty string.
func (d *decoder) text(key string, n *yaml.Node) (string, bool) {
	s, ok := d.scalar(key, n)
	if !ok {
		return "", false
	}
	if strings.TrimSpace(s.Value) == "" {
		d.fail(s, key, "is empty")
		return "", false
	}
	return s.Value, true
}

// oneOf reads one of the allowed words.
func (d *decoder) oneOf(key string, n *yaml.Node, allowed ...string) (string, bool) {
	s, ok := d.scalar(key, n)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s.Value == a {
			return a, true
		}
	}
	d.fail(s, key, "%q is not one of %s", s.Value, strings.Join(allowed, ", "))
	return "", false
}

// integer reads an integer in [lo, hi].
func (d *decoder) integer(key string, n *yaml.Node, lo, hi int) (int, bool) {
	s, ok := d.scalar(key, n)
	if !ok {
		return 0, false
	}
	var v int64
	if s.Tag != "!!int" || s.Decode(&v) != nil {
		d.fail(s, key, "%q is not an integer", s.Value)
		return 0, false
	}
	if v < int64(lo) || v > int64(hi) {
		d.fail(s, key, "%d is not between %d and %d", v, lo, hi)
		return 0, false
	}
	return int(v), true
}

// boolean reads true or false.
func (d *decoder) boolean(key string, n *yaml.Node) (bool, bool) {
	s, ok := d.scalar(key, n)
	if !ok {
		return false, false
	}
	var v bool
	if s.Tag != "!!bool" || s.Decode(&v) != nil {
		d.fail(s, key, "%q is not true or false", s.Value)
		return false, false
	}
	return v, true
}

// fraction reads a number in [0, 1].
func (d *decoder) fraction(key string, n *yaml.Node) (float64, bool) {
	s, ok := d.scalar(key, n)
	if !ok {
		return 0, false
	}
	var v float64
	if (s.Tag != "!!float" && s.Tag != "!!int") || s.Decode(&v) != nil || !(v >= 0 && v <= 1) {
		d.fail(s, key, "%q is not a fraction in [0, 1] (0.2 = ±20%%)", s.Value)
		return 0, false
	}
	return v, true
}

// maxDays bounds an "Nd" duration well below time.Duration's ~292 years.
const maxDays = 36_500

// duration reads a Go duration (500ms, 90s, 1h30m) or a number of days
// (7d), at least min; the zero min allows 0s.
func (d *decoder) duration(key string, n *yaml.Node, min time.Duration) (time.Duration, bool) {
	s, ok := d.scalar(key, n)
	if !ok {
		return 0, false
	}
	v, err := parseDuration(s.Value)
	switch {
	case err != nil:
		d.fail(s, key, "%v", err)
		return 0, false
	case v < 0:
		d.fail(s, key, "%s is negative", s.Value)
		return 0, false
	case v < min:
		d.fail(s, key, "%s is under the minimum of %s", s.Value, min)
		return 0, false
	}
	return v, true
}

func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > maxDays || n < -maxDays {
			return 0, fmt.Errorf("%q is not a duration such as 500ms, 90s, 36h or 7d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 500ms, 90s, 36h or 7d", s)
	}
	return v, nil
}

// resolve follows aliases (&anchor / *alias) to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(truncate(n.Value))
	}
	return "an unknown node"
}

func truncate(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func lookup(fields []field, name string) (field, bool) {
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

func names(fields []field) string {
	s := make([]string, len(fields))
	for i, f := range fields {
		s[i] = f.name
	}
	return strings.Join(s, ", ")
}
