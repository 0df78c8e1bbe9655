package jobs

import (
	"reflect"
	"strings"
	"testing"
)

func TestOutputApply(t *testing.T) {
	order := obj("data", obj("id", "A-17", "status", "NEW", "lines", []any{obj("sku", "X")}))
	tests := []struct {
		name  string
		rules []OutputRule
		body  any
		want  map[string]any
		err   string
	}{
		{"path to variable", []OutputRule{{Path: "body.data.id", Variable: "orderId", Required: true}, {Path: "body.data.status", Variable: "orderStatus"}},
			order, obj("orderId", "A-17", "orderStatus", "NEW"), ""},
		{"JUEL and FEEL paths", []OutputRule{{Path: "${body.data.lines[0].sku}", Variable: "first"}, {Path: `= body.data.lines[1].sku`, Variable: "alsoFirst"}},
			order, obj("first", "X", "alsoFirst", "X"), ""},
		{"whole body and scalar body", []OutputRule{{Path: "body", Variable: "raw"}}, 42.0, obj("raw", 42.0), ""},
		{"optional missing is omitted", []OutputRule{{Path: "body.data.total", Variable: "total"}, {Path: "body.data.id", Variable: "orderId"}},
			order, obj("orderId", "A-17"), ""},
		{"optional missing under nil body", []OutputRule{{Path: "body.data.id", Variable: "orderId"}}, nil, obj(), ""},
		{"required missing", []OutputRule{{Path: "body.data.total", Variable: "total", Required: true}},
			order, nil, "required output total: path body.data.total yields nil"},
		{"required path fails on a string body", []OutputRule{{Path: "body.data.id", Variable: "orderId", Required: true}},
			"oops", nil, "required output orderId: path body.data.id does not resolve"},
		{"required path missing an intermediate", []OutputRule{{Path: "body.data.id", Variable: "orderId", Required: true}},
			obj(), nil, "required output orderId: path body.data.id does not resolve"},
		{"required nil-safe path", []OutputRule{{Path: "body?.data?.id", Variable: "orderId", Required: true}},
			obj(), nil, "required output orderId: path body?.data?.id yields nil"},
		{"optional path fails on a string body", []OutputRule{{Path: "body.data.id", Variable: "orderId"}, {Path: "body", Variable: "raw"}},
			"oops", obj("raw", "oops"), ""},
		{"no rules, object", nil, order, order, ""},
		{"no rules, list", nil, []any{1}, nil, "payload is not an object ([]interface {})"},
		{"no rules, nil", nil, nil, nil, "payload is not an object"},
		{"no rules, string", nil, "x", nil, "payload is not an object (string)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := CompileOutputs(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Apply(tt.body)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Apply = %v, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Apply = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestOutputNilMapping(t *testing.T) {
	var m *OutputMapping
	body := obj("a", 1.0)
	if got, err := m.Apply(body); err != nil || !reflect.DeepEqual(got, body) {
		t.Errorf("nil mapping Apply = %v, %v", got, err)
	}
	if _, err := m.Apply("x"); err == nil {
		t.Error("nil mapping accepted a non-object payload")
	}
	if m.Len() != 0 {
		t.Error("nil mapping has rules")
	}
}

func TestCompileOutputsErrors(t *testing.T) {
	ok := OutputRule{Path: "body.a", Variable: "a"}
	tests := []struct {
		rules []OutputRule
		want  string
	}{
		{[]OutputRule{{Path: "body.a", Variable: ""}}, `outputs[0]: variable "" is not an identifier`},
		{[]OutputRule{ok, {Path: "body.a", Variable: "order id"}}, `outputs[1]: variable "order id" is not an identifier`},
		{[]OutputRule{{Path: "body.a", Variable: "1st"}}, `variable "1st" is not an identifier`},
		{[]OutputRule{{Path: "body.a", Variable: "a.b"}}, `variable "a.b" is not an identifier`},
		{[]OutputRule{{Path: "", Variable: "a"}}, `outputs[0]: variable "a" has no path`},
		{[]OutputRule{{Path: "body.(", Variable: "a"}}, `outputs[0]: path: expression "body.("`},
		{[]OutputRule{ok, {Path: "body.b", Variable: "a"}}, `outputs[1]: variable "a" is already mapped by outputs[0]`},
	}
	for _, tt := range tests {
		m, err := CompileOutputs(tt.rules)
		if err == nil || m != nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CompileOutputs(%+v) = %v, %v; want an error containing %q", tt.rules, m, err, tt.want)
		}
	}
	for _, v := range []string{"a", "_x", "orderId2", "größe"} {
		if _, err := CompileOutputs([]OutputRule{{Path: "body", Variable: v}}); err != nil {
			t.Errorf("variable %q rejected: %v", v, err)
		}
	}
}

func TestCompileOutputsCache(t *testing.T) {
	rules := []OutputRule{{Path: "body.data.id", Variable: "orderId", Required: true}}
	a, err := CompileOutputs(rules)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := CompileOutputs([]OutputRule{{Path: "body.data.id", Variable: "orderId", Required: true}})
	c, _ := CompileOutputs([]OutputRule{{Path: "body.data.id", Variable: "orderId"}})
	if a != b {
		t.Error("identical rules compiled twice")
	}
	if a == c {
		t.Error("rules differing in Required share a mapping")
	}
	if _, err := c.Apply(obj()); err != nil {
		t.Errorf("optional mapping from cache: %v", err)
	}
}

func BenchmarkOutputApply(b *testing.B) {
	rules := []OutputRule{{Path: "body.data.id", Variable: "orderId", Required: true}, {Path: "body.data.status", Variable: "orderStatus"}}
	body := obj("data", obj("id", "A-17", "status", "NEW"))
	b.ReportAllocs()
	for b.Loop() {
		m, err := CompileOutputs(rules)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Apply(body); err != nil {
			b.Fatal(err)
		}
	}
}
