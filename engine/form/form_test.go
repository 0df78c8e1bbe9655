package form

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const review = `{"type": "default", "components": [
  {"type": "text", "text": "## Review"},
  {"type": "textfield", "key": "note", "label": "Note", "validate": {"required": true, "minLength": 3, "maxLength": 10, "pattern": "[a-z ]+"}},
  {"type": "number", "key": "amount", "decimalDigits": 0, "validate": {"min": 1, "max": "=limit"}},
  {"type": "checkbox", "key": "ok"},
  {"type": "radio", "key": "decision", "values": [{"label": "Yes", "value": "yes"}, {"label": "No", "value": "no"}]},
  {"type": "group", "components": [{"type": "textarea", "key": "why", "validate": {"maxLength": 4}}]},
  {"type": "textfield", "key": "ref", "readonly": true, "validate": {"required": true}},
  {"type": "textfield", "key": "hidden", "disabled": "=true", "validate": {"required": true}},
  {"type": "textfield", "key": "order.id", "validate": {"required": true}},
  {"type": "textfield", "key": "shown", "conditional": {"hide": "=ok"}, "validate": {"required": true}}
]}`

func mustParse(t *testing.T, s string) *Schema {
	t.Helper()
	f, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestParse(t *testing.T) {
	f := mustParse(t, review)
	var keys []string
	for _, c := range f.Fields() {
		keys = append(keys, c.Key)
	}
	if got := strings.Join(keys, ","); got != "note,amount,ok,decision,why,ref,hidden,order.id,shown" {
		t.Errorf("fields %s", got)
	}
	if v := f.Fields()[1].Validate; v.Min == nil || *v.Min != 1 || v.Max != nil {
		t.Errorf("amount's bounds %+v: want min 1 and the expression max skipped", v)
	}
	for _, c := range []struct{ in, want string }{
		{`{"components": [}`, "not a form's JSON: invalid character"},
		{`{"fields": []}`, `no "components" array`},
		{`{"components": {}}`, `no "components" array`},
		{`[1]`, "not a form's JSON"},
		{`{"components": [{"type": 3}]}`, "not a form's JSON"},
	} {
		if _, err := Parse([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s): %v, want %q", c.in, err, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	f := mustParse(t, review)
	valid := `{"note": "all good", "amount": 5, "ok": true, "decision": "no", "why": "ok"}`
	for _, c := range []struct {
		values string
		want   []string // the failures, each "key: reason"
	}{
		{valid, nil},
		{`{"note": "fine"}`, nil}, // only note is required; readonly, disabled, conditional and path fields are not checked
		{`{}`, []string{`field "note" (Note): required`}},
		{`{"note": ""}`, []string{`field "note" (Note): required`}},
		{`{"note": "ab"}`, []string{`shorter than 3 characters`}},
		{`{"note": "much too long"}`, []string{`longer than 10 characters`}},
		{`{"note": "ABC"}`, []string{`does not match the pattern [a-z ]+`}},
		{`{"note": 12}`, []string{`12 is not a text`}},
		{`{"note": "fine", "amount": 0}`, []string{`field "amount": 0 is under the minimum 1`}},
		{`{"note": "fine", "amount": 1.5}`, []string{`1.5 is not a whole number`}},
		{`{"note": "fine", "amount": "5"}`, []string{`5 is not a number`}},
		{`{"note": "fine", "ok": "yes"}`, []string{`field "ok": yes is not true or false`}},
		{`{"note": "fine", "decision": "maybe"}`, []string{`field "decision": maybe is not one of the options`}},
		{`{"note": "fine", "why": "too long"}`, []string{`field "why": longer than 4 characters`}},
		{`{"amount": 0, "ok": 1}`, []string{`field "note" (Note): required`, `0 is under the minimum`, `1 is not true or false`}},
	} {
		var values map[string]any
		if err := json.Unmarshal([]byte(c.values), &values); err != nil {
			t.Fatal(err)
		}
		err := f.Check(values)
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("Check(%s): %v, want none", c.values, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Check(%s) passed, want %v", c.values, c.want)
			continue
		}
		if n := strings.Count(err.Error(), "\n") + 1; n != len(c.want) {
			t.Errorf("Check(%s): %d failures (%v), want %d", c.values, n, err, len(c.want))
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Check(%s): %v, want it to say %q", c.values, err, w)
			}
		}
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("Check(%s): %T, want a *FieldError", c.values, err)
		}
	}
}

// Parse and Check never panic, whatever the schema and the values.
func FuzzParseCheck(f *testing.F) {
	f.Add([]byte(review), []byte(`{"note": "ab", "amount": 1e309, "decision": null}`))
	f.Add([]byte(`{"components": [{"key": "a", "type": "textfield", "validate": {"pattern": "(", "minLength": -1}}]}`), []byte(`{"a": "x"}`))
	f.Fuzz(func(t *testing.T, schema, values []byte) {
		s, err := Parse(schema)
		if err != nil {
			return
		}
		var v map[string]any
		if json.Unmarshal(values, &v) != nil {
			return
		}
		_ = s.Check(v)
	})
}
