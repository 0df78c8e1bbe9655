package jobs

import (
	"fmt"
	"strings"
	"testing"
)

func obj(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// adrStatus and adrError are the seed design's worked contrast
// (docs/deviations.md), one mapper per reading of a 404 NOT_FOUND.
var (
	adrStatus = []Rule{
		{Code: "404", When: `body.type == "NOT_FOUND"`, Outcome: BusinessStatus, Value: "NOT_FOUND"},
		{Code: "409", When: `body.type == "CONFLICT"`, Outcome: BusinessError, ErrorCode: "ResourceConflict", Message: "conflict"},
	}
	adrError = []Rule{
		{Code: "404", When: `body.type == "NOT_FOUND"`, Outcome: BusinessError, ErrorCode: "ResourceNotFound"},
		{Code: "409", When: `body.type == "CONFLICT"`, Outcome: BusinessError, ErrorCode: "ResourceConflict", Message: "conflict"},
	}
)

func TestClassify(t *testing.T) {
	technical := Classification{Kind: Technical}
	tests := []struct {
		name  string
		rules []Rule
		fault Fault
		want  Classification
	}{
		{"404 as status", adrStatus, Fault{"404", obj("type", "NOT_FOUND")}, Classification{Kind: BusinessStatus, Status: "NOT_FOUND"}},
		{"404 as error", adrError, Fault{"404", obj("type", "NOT_FOUND")}, Classification{Kind: BusinessError, ErrorCode: "ResourceNotFound"}},
		{"409", adrStatus, Fault{"409", obj("type", "CONFLICT")}, Classification{Kind: BusinessError, ErrorCode: "ResourceConflict", Message: "conflict"}},
		{"500 unmatched", adrStatus, Fault{"500", obj("type", "NOT_FOUND")}, technical},
		{"404 other body", adrStatus, Fault{"404", obj("type", "ROUTE")}, technical},
		{"404 predicate errors on a string body", adrStatus, Fault{"404", "Not Found"}, technical},
		{"404 nil body", adrStatus, Fault{"404", nil}, technical},
		{"no rules", nil, Fault{"404", nil}, technical},
		{"first match wins", []Rule{
			{Code: "404", Outcome: BusinessError, ErrorCode: "First"},
			{Code: "404", Outcome: BusinessError, ErrorCode: "Second"},
		}, Fault{"404", nil}, Classification{Kind: BusinessError, ErrorCode: "First"}},
		{"skipped rule lets a later one match", []Rule{
			{When: `body.type == "X"`, Outcome: BusinessError, ErrorCode: "First"},
			{Code: "7", Outcome: BusinessError, ErrorCode: "Second"},
		}, Fault{"7", []any{1, 2}}, Classification{Kind: BusinessError, ErrorCode: "Second"}},
		{"code only", []Rule{{Code: "2", Outcome: BusinessStatus, Value: "NO_FUNDS"}}, Fault{"2", nil}, Classification{Kind: BusinessStatus, Status: "NO_FUNDS"}},
		{"predicate only", []Rule{{When: `code startsWith "5" && body.retryable == false`, Outcome: BusinessError, ErrorCode: "Fatal"}},
			Fault{"503", obj("retryable", false)}, Classification{Kind: BusinessError, ErrorCode: "Fatal"}},
		{"explicit technical stops the search", []Rule{
			{Code: "503", Outcome: Technical, Message: "overloaded"},
			{Outcome: BusinessError, ErrorCode: "Any"},
		}, Fault{"503", nil}, Classification{Kind: Technical, Message: "overloaded"}},
		{"catch-all", []Rule{{Outcome: BusinessError, ErrorCode: "Any"}}, Fault{"", nil}, Classification{Kind: BusinessError, ErrorCode: "Any"}},
		{"non-bool predicate does not match", []Rule{{When: `body.type`, Outcome: BusinessError, ErrorCode: "X"}}, Fault{"1", obj("type", "A")}, technical},
		{"valueFrom string", []Rule{{Code: "404", Outcome: BusinessStatus, ValueFrom: `body.state`}},
			Fault{"404", obj("state", "ARCHIVED")}, Classification{Kind: BusinessStatus, Status: "ARCHIVED"}},
		{"valueFrom number", []Rule{{Outcome: BusinessStatus, ValueFrom: `body.n`}}, Fault{"1", obj("n", 42.0)}, Classification{Kind: BusinessStatus, Status: "42"}},
		{"valueFrom float", []Rule{{Outcome: BusinessStatus, ValueFrom: `body.n`}}, Fault{"1", obj("n", 0.5)}, Classification{Kind: BusinessStatus, Status: "0.5"}},
		{"valueFrom int", []Rule{{Outcome: BusinessStatus, ValueFrom: `body.n`}}, Fault{"1", obj("n", int64(-3))}, Classification{Kind: BusinessStatus, Status: "-3"}},
		{"valueFrom bool", []Rule{{Outcome: BusinessStatus, ValueFrom: `body.ok`}}, Fault{"1", obj("ok", true)}, Classification{Kind: BusinessStatus, Status: "true"}},
		{"valueFrom code", []Rule{{Outcome: BusinessStatus, ValueFrom: `"HTTP_" + code`}}, Fault{"418", nil}, Classification{Kind: BusinessStatus, Status: "HTTP_418"}},
		{"JUEL predicate", []Rule{{When: `${code == '404'}`, Outcome: BusinessError, ErrorCode: "J"}}, Fault{"404", nil}, Classification{Kind: BusinessError, ErrorCode: "J"}},
		{"JUEL path", []Rule{{When: `${body.type eq 'X'}`, Outcome: BusinessError, ErrorCode: "J"}}, Fault{"1", obj("type", "X")}, Classification{Kind: BusinessError, ErrorCode: "J"}},
		{"FEEL predicate", []Rule{{When: `= body.type = "X"`, Outcome: BusinessError, ErrorCode: "F"}}, Fault{"1", obj("type", "X")}, Classification{Kind: BusinessError, ErrorCode: "F"}},
		{"FEEL no match", []Rule{{When: `= body.type = "X"`, Outcome: BusinessError, ErrorCode: "F"}}, Fault{"1", obj("type", "Y")}, technical},
		{"nested body", []Rule{{When: `body.error.details[0].reason == "QUOTA"`, Outcome: BusinessStatus, ValueFrom: `body.error.details[0].reason`}},
			Fault{"429", obj("error", obj("details", []any{obj("reason", "QUOTA")}))}, Classification{Kind: BusinessStatus, Status: "QUOTA"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := CompileRules(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Classify(tt.fault)
			if err != nil || got != tt.want {
				t.Errorf("Classify(%+v) = %+v, %v; want %+v", tt.fault, got, err, tt.want)
			}
		})
	}
}

func TestClassifyValueFromFails(t *testing.T) {
	for _, body := range []any{obj(), obj("state", ""), obj("state", obj("a", 1)), obj("state", []any{"x"}), "text"} {
		m, err := CompileRules([]Rule{{Code: "404", Outcome: BusinessStatus, ValueFrom: `body.state`}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Classify(Fault{"404", body})
		if err == nil || got.Kind != Technical || !strings.Contains(err.Error(), "rules[0]") || !strings.Contains(err.Error(), "body.state") {
			t.Errorf("body %v: Classify = %+v, %v; want Technical and an error naming rules[0] and the expression", body, got, err)
		}
	}
}

func TestCompileRulesErrors(t *testing.T) {
	ok := Rule{Code: "1", Outcome: Technical}
	tests := []struct {
		rules []Rule
		want  string
	}{
		{[]Rule{{When: `body.type ==`, Outcome: Technical}}, `rules[0]: when: expression "body.type =="`},
		{[]Rule{ok, {When: `${execution.getVariable("x")}`, Outcome: Technical}}, `rules[1]: when:`},
		{[]Rule{ok, ok, {Outcome: BusinessError}}, "rules[2]: bpmnError outcome without errorCode"},
		{[]Rule{{Outcome: BusinessStatus}}, "rules[0]: status outcome without value or valueFrom"},
		{[]Rule{{Outcome: BusinessStatus, Value: "A", ValueFrom: "body.a"}}, "rules[0]: status outcome with both"},
		{[]Rule{{Outcome: BusinessStatus, ValueFrom: "body.("}}, `rules[0]: valueFrom: expression "body.("`},
		{[]Rule{ok, {Outcome: "retry"}}, `rules[1]: unknown outcome "retry"`},
		{[]Rule{{Code: "1"}}, "rules[0]: no outcome"},
	}
	for _, tt := range tests {
		m, err := CompileRules(tt.rules)
		if err == nil || m != nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CompileRules(%+v) = %v, %v; want an error containing %q", tt.rules, m, err, tt.want)
		}
		if verr := ValidateRules(tt.rules); verr == nil || verr.Error() != err.Error() {
			t.Errorf("ValidateRules = %v, want %v", verr, err)
		}
	}
	if err := ValidateRules(adrStatus); err != nil {
		t.Errorf("ValidateRules(valid) = %v", err)
	}
}

// Classify must never panic, whatever the worker sends.
func TestClassifyOddBodies(t *testing.T) {
	rules := []Rule{
		{When: `body.a.b.c == 1`, Outcome: BusinessError, ErrorCode: "A"},
		{When: `len(body) > 100`, Outcome: BusinessError, ErrorCode: "B"},
		{When: `body[3] == "x"`, Outcome: BusinessError, ErrorCode: "C"},
		{When: `= body.n + 1 > 2`, Outcome: BusinessError, ErrorCode: "D"},
		{When: `${empty body}`, Outcome: BusinessStatus, ValueFrom: `body`},
	}
	m, err := CompileRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	deep := any("leaf")
	for range 200 {
		deep = obj("a", deep, "n", []any{deep})
	}
	bodies := []any{nil, "", "x", 0, -1.5, true, []any{}, []any{nil, 1, "x"}, obj(), obj("a", nil), obj("a", "str"),
		obj("a", obj("b", []any{1})), obj("n", "2"), obj("n", nil), map[string]string{"a": "b"}, []byte("raw"),
		map[any]any{1: 2}, struct{ A int }{1}, deep, func() {}, make(chan int)}
	for _, b := range bodies {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Classify(%T) panicked: %v", b, r)
				}
			}()
			got, err := m.Classify(Fault{"1", b})
			if err == nil && got.Kind == "" {
				t.Errorf("Classify(%T) = %+v, no kind", b, got)
			}
		}()
	}
}

func TestCompileRulesCache(t *testing.T) {
	rules := []Rule{{Code: "404", When: `body.type == "cache-test"`, Outcome: BusinessStatus, Value: "X"}}
	a, err := CompileRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := CompileRules(append([]Rule(nil), rules...))
	if fmt.Sprintf("%p", a) != fmt.Sprintf("%p", b) {
		t.Error("identical rules compiled twice")
	}
	other := []Rule{{Code: "404", When: `body.type == "cache-test"`, Outcome: BusinessStatus, Value: "Y"}}
	c, _ := CompileRules(other)
	if got, _ := c.Classify(Fault{"404", obj("type", "cache-test")}); got.Status != "Y" {
		t.Errorf("different rules shared a cached mapper: %+v", got)
	}
	// Field boundaries are part of the key.
	if ruleKey([]Rule{{Code: "ab", When: "c"}}) == ruleKey([]Rule{{Code: "a", When: "bc"}}) {
		t.Error("rule keys collide")
	}
}

func TestCompileCacheBounded(t *testing.T) {
	var c compileCache[int]
	for i := range 3 * maxCached {
		c.put(fmt.Sprint(i), i)
	}
	n := 0
	c.m.Range(func(any, any) bool { n++; return true })
	if n > maxCached {
		t.Errorf("cache holds %d entries, bound %d", n, maxCached)
	}
}

func TestErrorMapperFunc(t *testing.T) {
	var m ErrorMapper = ErrorMapperFunc(func(f Fault) (Classification, error) {
		return Classification{Kind: BusinessError, ErrorCode: "E" + f.Code}, nil
	})
	if got, _ := m.Classify(Fault{Code: "1"}); got.ErrorCode != "E1" {
		t.Errorf("Classify = %+v", got)
	}
}

func BenchmarkClassify(b *testing.B) {
	rules := append(append([]Rule(nil), adrStatus...), Rule{Code: "500", Outcome: Technical})
	fault := Fault{"404", obj("type", "NOT_FOUND", "detail", "order 17")}
	b.ReportAllocs()
	for b.Loop() {
		m, err := CompileRules(rules)
		if err != nil {
			b.Fatal(err)
		}
		if c, _ := m.Classify(fault); c.Status != "NOT_FOUND" {
			b.Fatal(c)
		}
	}
}
