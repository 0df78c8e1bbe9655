package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jetbpm/jetbpm/expression"
)

// Fault is a worker's raw technical report: a code (an exit code, an HTTP
// status, any string) and a body (a JSON-like value).
type Fault struct {
	Code string
	Body any
}

// Classification is an ErrorMapper's verdict: Kind, plus ErrorCode and
// Message for a BusinessError, Status for a BusinessStatus.
type Classification struct {
	Kind      OutcomeKind
	ErrorCode string
	Message   string
	Status    string
}

// ErrorMapper classifies a fault. Rules compiled by CompileRules
// are the shippable kind; a custom Go implementation may be registered with
// the engine, which forces EngineAuthoritative since it cannot ship. An
// error from Classify makes the engine treat the fault as Technical with
// the error in the diagnostic.
type ErrorMapper interface {
	Classify(f Fault) (Classification, error)
}

// ErrorMapperFunc adapts a function to ErrorMapper.
type ErrorMapperFunc func(Fault) (Classification, error)

// Classify calls fn(f).
func (fn ErrorMapperFunc) Classify(f Fault) (Classification, error) { return fn(f) }

// CompileRules validates rules and compiles them into an ErrorMapper. The
// mapper tries the rules in order and the first match decides; no match is
// Technical (business outcomes are never inferred). A rule
// matches when Code, if set, equals the fault's code and When, if set, an
// expression (expr-lang, ${JUEL} or =FEEL) over `code` (a string) and
// `body`, yields true. A predicate that fails to evaluate — `body.type` on
// a string body, say — counts as no match, since a body of an unexpected
// shape is a reason not to apply a rule, not a reason to lose the fault.
//
// A BusinessError rule needs ErrorCode; a BusinessStatus rule needs Value
// or ValueFrom, an expression whose result becomes the status (a string as
// is, a number or bool formatted). A ValueFrom that fails, or yields nil,
// "" or a list/map, on a matched rule makes Classify return the error with
// a Technical classification. Errors name the rule's index.
//
// The engine recompiles from stored data on every report, so compiled
// mappers are cached by the rules' content: a repeat call costs building a
// key and a map lookup.
func CompileRules(rules []Rule) (ErrorMapper, error) {
	if len(rules) == 0 {
		return ruleMapper{}, nil
	}
	key := ruleKey(rules)
	if m, ok := mapperCache.get(key); ok {
		return m, nil
	}
	m := make(ruleMapper, len(rules))
	for i, r := range rules {
		c, err := compileRule(r)
		if err != nil {
			return nil, fmt.Errorf("error mapper rules[%d]: %w", i, err)
		}
		m[i] = c
	}
	mapperCache.put(key, m)
	return m, nil
}

// ValidateRules reports the first invalid rule, as CompileRules does.
func ValidateRules(rules []Rule) error {
	_, err := CompileRules(rules)
	return err
}

type compiledRule struct {
	Rule
	whenExpr, valueExpr *expression.Expression
}

// ruleMapper is immutable once compiled, hence safe to share from the cache.
type ruleMapper []compiledRule

func compileRule(r Rule) (c compiledRule, err error) {
	c.Rule = r
	if r.When != "" {
		if c.whenExpr, err = expression.Compile(r.When); err != nil {
			return c, fmt.Errorf("when: %w", err)
		}
	}
	switch r.Outcome {
	case Technical:
	case BusinessError:
		if r.ErrorCode == "" {
			return c, errors.New("bpmnError outcome without errorCode")
		}
	case BusinessStatus:
		switch {
		case r.Value == "" && r.ValueFrom == "":
			return c, errors.New("status outcome without value or valueFrom")
		case r.Value != "" && r.ValueFrom != "":
			return c, errors.New("status outcome with both value and valueFrom")
		case r.ValueFrom != "":
			if c.valueExpr, err = expression.Compile(r.ValueFrom); err != nil {
				return c, fmt.Errorf("valueFrom: %w", err)
			}
		}
	case "":
		return c, errors.New("no outcome")
	default:
		return c, fmt.Errorf("unknown outcome %q", r.Outcome)
	}
	return c, nil
}

func (m ruleMapper) Classify(f Fault) (Classification, error) {
	var vars map[string]any
	for i := range m {
		r := &m[i]
		if r.Code != "" && r.Code != f.Code {
			continue
		}
		if vars == nil {
			vars = map[string]any{"code": f.Code, "body": f.Body}
		}
		if r.whenExpr != nil {
			if ok, err := r.whenExpr.EvalBool(vars); err != nil || !ok {
				continue
			}
		}
		out := Classification{Kind: r.Outcome, ErrorCode: r.ErrorCode, Message: r.Message, Status: r.Value}
		if r.valueExpr != nil {
			v, err := r.valueExpr.Eval(vars)
			if err == nil {
				out.Status, err = statusString(v)
			}
			if err != nil {
				return Classification{Kind: Technical}, fmt.Errorf("error mapper rules[%d]: valueFrom %q: %w", i, r.ValueFrom, err)
			}
		}
		return out, nil
	}
	return Classification{Kind: Technical}, nil
}

func statusString(v any) (string, error) {
	var s string
	switch v := v.(type) {
	case nil:
		return "", errors.New("yields nil")
	case string:
		s = v
	case bool:
		s = strconv.FormatBool(v)
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	case float32:
		s = strconv.FormatFloat(float64(v), 'f', -1, 32)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		s = fmt.Sprint(v)
	default:
		return "", fmt.Errorf("yields %T, want a string, number or bool", v)
	}
	if s == "" {
		return "", errors.New("yields an empty string")
	}
	return s, nil
}

// ruleKey is the cache key: every field, length-prefixed so that no two
// rule lists share a key, and cheaper to build than JSON.
func ruleKey(rules []Rule) string {
	b := make([]byte, 0, 64*len(rules))
	for _, r := range rules {
		for _, s := range [...]string{r.Code, r.When, string(r.Outcome), r.ErrorCode, r.Message, r.Value, r.ValueFrom} {
			b = strconv.AppendInt(b, int64(len(s)), 10)
			b = append(b, ':')
			b = append(b, s...)
		}
	}
	return string(b)
}

// compileCache holds compiled policies by content. It is bounded crudely:
// past maxCached entries it starts over, which only costs recompiling the
// few policies still in use.
type compileCache[T any] struct {
	m sync.Map // string → T
	n atomic.Int64
}

const maxCached = 1024

var mapperCache compileCache[ruleMapper]

func (c *compileCache[T]) get(key string) (T, bool) {
	v, ok := c.m.Load(key)
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

func (c *compileCache[T]) put(key string, v T) {
	if _, loaded := c.m.LoadOrStore(key, v); !loaded && c.n.Add(1) > maxCached {
		c.m.Clear()
		c.n.Store(0)
	}
}
