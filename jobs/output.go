package jobs

import (
	"fmt"
	"strconv"
	"unicode"

	"github.com/jetbpm/jetbpm/expression"
)

// OutputMapping extracts variables from a Complete payload: each
// rule evaluates its path over `body` and sets its variable. Without rules
// the payload itself is the output. It is immutable and safe to share.
type OutputMapping struct {
	rules []compiledOutput
}

type compiledOutput struct {
	OutputRule
	pathExpr *expression.Expression
}

var outputCache compileCache[*OutputMapping]

// CompileOutputs validates and compiles rules: every variable must be an
// identifier and mapped once, every path must compile (expr-lang, ${JUEL}
// or =FEEL over `body`). Errors name the rule's index. Like CompileRules,
// it caches by content, since the engine recompiles from stored data on
// every report.
func CompileOutputs(rules []OutputRule) (*OutputMapping, error) {
	if len(rules) == 0 {
		return &OutputMapping{}, nil
	}
	key := outputKey(rules)
	if m, ok := outputCache.get(key); ok {
		return m, nil
	}
	m := &OutputMapping{rules: make([]compiledOutput, len(rules))}
	seen := make(map[string]int, len(rules))
	for i, r := range rules {
		if !isVariableName(r.Variable) {
			return nil, fmt.Errorf("outputs[%d]: variable %q is not an identifier", i, r.Variable)
		}
		if j, dup := seen[r.Variable]; dup {
			return nil, fmt.Errorf("outputs[%d]: variable %q is already mapped by outputs[%d]", i, r.Variable, j)
		}
		seen[r.Variable] = i
		if r.Path == "" {
			return nil, fmt.Errorf("outputs[%d]: variable %q has no path", i, r.Variable)
		}
		e, err := expression.Compile(r.Path)
		if err != nil {
			return nil, fmt.Errorf("outputs[%d]: path: %w", i, err)
		}
		m.rules[i] = compiledOutput{OutputRule: r, pathExpr: e}
	}
	outputCache.put(key, m)
	return m, nil
}

// Apply maps a Complete payload to the variables it sets. Without rules
// (m nil or empty) the payload must be an object and is returned as is, not
// copied. With rules, a path that yields nil or fails to evaluate finds
// nothing: expr-lang paths are not nil-safe, so `body.data.id` fails when
// data is missing (JUEL and FEEL paths yield nil; `body?.data?.id` does in
// expr-lang too). Nothing for a Required rule is an error naming the
// variable and the path; for any other rule the variable is left unset
// rather than nil written over a value the process may hold. Errors here
// are data-flow failures: an incident on the task, and the job is not run
// again.
func (m *OutputMapping) Apply(body any) (map[string]any, error) {
	if m == nil || len(m.rules) == 0 {
		obj, ok := body.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("payload is not an object (%T) and the task has no output mapping", body)
		}
		return obj, nil
	}
	vars := map[string]any{"body": body}
	out := make(map[string]any, len(m.rules))
	for _, r := range m.rules {
		v, err := r.pathExpr.Eval(vars)
		switch {
		case v != nil && err == nil:
			out[r.Variable] = v
		case !r.Required:
		case err != nil:
			return nil, fmt.Errorf("required output %s: path %s does not resolve: %w", r.Variable, r.Path, err)
		default:
			return nil, fmt.Errorf("required output %s: path %s yields nil", r.Variable, r.Path)
		}
	}
	return out, nil
}

// Len is the number of rules; 0 means the payload is the output.
func (m *OutputMapping) Len() int {
	if m == nil {
		return 0
	}
	return len(m.rules)
}

func isVariableName(s string) bool {
	for i, c := range s {
		if !(c == '_' || unicode.IsLetter(c) || i > 0 && unicode.IsDigit(c)) {
			return false
		}
	}
	return s != ""
}

func outputKey(rules []OutputRule) string {
	b := make([]byte, 0, 32*len(rules))
	for _, r := range rules {
		for _, s := range [...]string{r.Path, r.Variable} {
			b = strconv.AppendInt(b, int64(len(s)), 10)
			b = append(b, ':')
			b = append(b, s...)
		}
		b = strconv.AppendBool(b, r.Required)
	}
	return string(b)
}
