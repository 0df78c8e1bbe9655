package script

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// JSONPath is the subset of Jayway's JSONPath that Camunda Spin's
// jsonPath(...) takes in the scripts of Camunda 7 models: $ (the root),
// .name and ['name'] (a property), [n] (an element, negative from the
// end), [*] and .* (every child), .. (every descendant, then a selector),
// and filters [?(@.a.b == 'x' && @.n > 2)] comparing a path of the
// element with a literal ('text', "text", a number, true, false, null)
// by == != < <= > >=, combined with && and ||. Anything else is an error
// naming it.

// maxPath bounds a path's length.
const maxPath = 1000

type pathStep struct {
	deep   bool   // after ..: applies to every descendant too
	name   string // a property; "*" every child
	index  *int   // an element
	filter *pathFilter
}

type pathFilter struct {
	or []pathAnd // any of
}

type pathAnd []pathCmp // all of

type pathCmp struct {
	path []string // below @; empty: @ itself
	op   string   // "" tests that the path exists and is not null
	lit  any
}

// compilePath parses a JSONPath.
func compilePath(src string) ([]pathStep, error) {
	if len(src) > maxPath {
		return nil, fmt.Errorf("jsonPath: the path is %d bytes, at most %d", len(src), maxPath)
	}
	s := strings.TrimSpace(src)
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("jsonPath %q: a path starts with $", src)
	}
	p := &pathParser{src: src, s: s, i: 1}
	var steps []pathStep
	for p.i < len(p.s) {
		st, err := p.step()
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	return steps, nil
}

type pathParser struct {
	src, s string
	i      int
}

func (p *pathParser) errorf(format string, args ...any) error {
	return fmt.Errorf("jsonPath %q at %d: %s", p.src, p.i, fmt.Sprintf(format, args...))
}

func (p *pathParser) step() (pathStep, error) {
	var st pathStep
	switch {
	case strings.HasPrefix(p.s[p.i:], ".."):
		st.deep = true
		p.i += 2
		if p.i < len(p.s) && p.s[p.i] == '[' {
			return p.bracket(st)
		}
		return p.name(st)
	case p.s[p.i] == '.':
		p.i++
		return p.name(st)
	case p.s[p.i] == '[':
		return p.bracket(st)
	}
	return st, p.errorf("expected . or [")
}

func (p *pathParser) name(st pathStep) (pathStep, error) {
	if p.i < len(p.s) && p.s[p.i] == '*' {
		p.i++
		st.name = "*"
		return st, nil
	}
	start := p.i
	for p.i < len(p.s) && (isNameByte(p.s[p.i])) {
		p.i++
	}
	if p.i == start {
		return st, p.errorf("expected a property name")
	}
	st.name = p.s[start:p.i]
	return st, nil
}

func isNameByte(c byte) bool {
	return c == '_' || c == '$' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}

func (p *pathParser) bracket(st pathStep) (pathStep, error) {
	p.i++ // [
	p.space()
	switch {
	case strings.HasPrefix(p.s[p.i:], "*"):
		p.i++
		st.name = "*"
	case strings.HasPrefix(p.s[p.i:], "?("):
		p.i += 2
		f, err := p.filter()
		if err != nil {
			return st, err
		}
		st.filter = f
		p.space()
		if !strings.HasPrefix(p.s[p.i:], ")") {
			return st, p.errorf("expected ) closing the filter")
		}
		p.i++
	case p.i < len(p.s) && (p.s[p.i] == '\'' || p.s[p.i] == '"'):
		name, err := p.quoted()
		if err != nil {
			return st, err
		}
		st.name = name
	default:
		start := p.i
		if p.i < len(p.s) && p.s[p.i] == '-' {
			p.i++
		}
		for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
			p.i++
		}
		n, err := strconv.Atoi(p.s[start:p.i])
		if err != nil {
			return st, p.errorf("expected a name, an index, * or a filter ?(...)")
		}
		st.index = &n
	}
	p.space()
	if !strings.HasPrefix(p.s[p.i:], "]") {
		return st, p.errorf("expected ]")
	}
	p.i++
	return st, nil
}

func (p *pathParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *pathParser) quoted() (string, error) {
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", p.errorf("unclosed quote")
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	return v, nil
}

// filter parses cond (|| cond)* where cond is cmp (&& cmp)*.
func (p *pathParser) filter() (*pathFilter, error) {
	f := &pathFilter{}
	for {
		var and pathAnd
		for {
			c, err := p.cmp()
			if err != nil {
				return nil, err
			}
			and = append(and, c)
			p.space()
			if !strings.HasPrefix(p.s[p.i:], "&&") {
				break
			}
			p.i += 2
		}
		f.or = append(f.or, and)
		if !strings.HasPrefix(p.s[p.i:], "||") {
			return f, nil
		}
		p.i += 2
	}
}

func (p *pathParser) cmp() (pathCmp, error) {
	var c pathCmp
	p.space()
	if !strings.HasPrefix(p.s[p.i:], "@") {
		return c, p.errorf("expected @ (the element) in the filter")
	}
	p.i++
	for p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		start := p.i
		for p.i < len(p.s) && isNameByte(p.s[p.i]) {
			p.i++
		}
		if p.i == start {
			return c, p.errorf("expected a property name after @.")
		}
		c.path = append(c.path, p.s[start:p.i])
	}
	p.space()
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if strings.HasPrefix(p.s[p.i:], op) {
			c.op = op
			p.i += len(op)
			break
		}
	}
	if c.op == "" {
		return c, nil // @.a alone: it exists and is not null
	}
	p.space()
	lit, err := p.literal()
	if err != nil {
		return c, err
	}
	c.lit = lit
	return c, nil
}

func (p *pathParser) literal() (any, error) {
	if p.i < len(p.s) && (p.s[p.i] == '\'' || p.s[p.i] == '"') {
		return p.quoted()
	}
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune(" )]&|", rune(p.s[p.i])) {
		p.i++
	}
	word := p.s[start:p.i]
	switch word {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	n, err := strconv.ParseFloat(word, 64)
	if err != nil {
		return nil, p.errorf("expected a literal ('text', a number, true, false, null), found %q", word)
	}
	return n, nil
}

// evalPath applies steps to root: the values they select, in document
// order (object properties by name).
func evalPath(steps []pathStep, root any) []any {
	cur := []any{root}
	for _, st := range steps {
		var next []any
		for _, v := range cur {
			if st.deep {
				for _, d := range descendants(v, nil) {
					next = append(next, st.apply(d)...)
				}
				continue
			}
			next = append(next, st.apply(v)...)
		}
		cur = next
	}
	return cur
}

// descendants are v and every value below it.
func descendants(v any, out []any) []any {
	out = append(out, v)
	for _, c := range children(v) {
		out = descendants(c, out)
	}
	return out
}

// children are an array's elements or an object's values, by name.
func children(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case map[string]any:
		out := make([]any, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, x[k])
		}
		return out
	}
	return nil
}

func (st pathStep) apply(v any) []any {
	switch {
	case st.filter != nil:
		var out []any
		for _, c := range children(v) {
			if st.filter.holds(c) {
				out = append(out, c)
			}
		}
		return out
	case st.index != nil:
		list, ok := v.([]any)
		if !ok {
			return nil
		}
		i := *st.index
		if i < 0 {
			i += len(list)
		}
		if i < 0 || i >= len(list) {
			return nil
		}
		return []any{list[i]}
	case st.name == "*":
		return children(v)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if x, ok := m[st.name]; ok {
		return []any{x}
	}
	return nil
}

func (f *pathFilter) holds(v any) bool {
	for _, and := range f.or {
		all := true
		for _, c := range and {
			if !c.holds(v) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func (c pathCmp) holds(v any) bool {
	for _, name := range c.path {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[name]; !ok {
			return false
		}
	}
	if c.op == "" {
		return v != nil
	}
	if a, ok := toNumber(v); ok {
		b, ok := toNumber(c.lit)
		if !ok {
			return c.op == "!="
		}
		return compare(c.op, cmpFloat(a, b))
	}
	if a, ok := v.(string); ok {
		b, ok := c.lit.(string)
		if !ok {
			return c.op == "!="
		}
		return compare(c.op, strings.Compare(a, b))
	}
	switch c.op {
	case "==":
		return v == c.lit
	case "!=":
		return v != c.lit
	}
	return false
}

func toNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	}
	return 0, false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compare(op string, c int) bool {
	switch op {
	case "==":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}
