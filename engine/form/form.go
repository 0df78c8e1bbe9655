// Package form reads the task forms a BPMN file holds, Camunda Forms
// (form-js) JSON schemas, and checks submitted values against them.
//
// A schema is what Camunda 8's Tasklist renders:
//
//	{"components": [
//	  {"type": "textfield", "key": "note", "label": "Note", "validate": {"required": true, "maxLength": 80}},
//	  {"type": "number", "key": "amount", "decimalDigits": 0, "validate": {"min": 1}},
//	  {"type": "select", "key": "decision", "values": [{"label": "Approve", "value": "approve"}]}
//	]}
//
// Parse reads one, keeping of each component what a check needs; Check
// applies a form's validation to the values a user submitted, as Camunda
// 7's submit-form does for its generated forms. What a schema can say
// that a check cannot follow (a FEEL expression as a bound, a dotted key,
// values from a variable) is left to the browser, which form-js checks in.
package form

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// A Schema is a form: its components, in order.
type Schema struct {
	Type          string      `json:"type,omitempty"`
	SchemaVersion int         `json:"schemaVersion,omitempty"`
	Components    []Component `json:"components"`
}

// A Component is one element of a form: a field when it has a key, else
// text, a spacer, a button or a group of components.
type Component struct {
	Type          string      `json:"type"`
	ID            string      `json:"id,omitempty"`
	Key           string      `json:"key,omitempty"`
	Label         string      `json:"label,omitempty"`
	DateLabel     string      `json:"dateLabel,omitempty"`
	Subtype       string      `json:"subtype,omitempty"`
	DecimalDigits *int        `json:"decimalDigits,omitempty"`
	DefaultValue  any         `json:"defaultValue,omitempty"`
	Readonly      Flag        `json:"readonly,omitempty"`
	Disabled      Flag        `json:"disabled,omitempty"`
	Values        []Option    `json:"values,omitempty"`
	Validate      *Validate   `json:"validate,omitempty"`
	Components    []Component `json:"components,omitempty"`
	// Conditional hides the component when its FEEL expression holds.
	Conditional json.RawMessage `json:"conditional,omitempty"`
}

// An Option is one value a select, radio or checklist offers.
type Option struct {
	Label string `json:"label"`
	Value any    `json:"value"`
}

// Validate is a field's validation. A bound form-js allows as a FEEL
// expression ("=limit") is not a number here and is not checked.
type Validate struct {
	Required  bool     `json:"required,omitempty"`
	MinLength *float64 `json:"minLength,omitempty"`
	MaxLength *float64 `json:"maxLength,omitempty"`
	Min       *float64 `json:"min,omitempty"`
	Max       *float64 `json:"max,omitempty"`
	Pattern   string   `json:"pattern,omitempty"`
}

// UnmarshalJSON reads the bounds that are numbers and skips the rest.
func (v *Validate) UnmarshalJSON(b []byte) error {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	num := func(k string) *float64 {
		if f, ok := raw[k].(float64); ok {
			return &f
		}
		return nil
	}
	*v = Validate{MinLength: num("minLength"), MaxLength: num("maxLength"), Min: num("min"), Max: num("max")}
	v.Required, _ = raw["required"].(bool)
	v.Pattern, _ = raw["pattern"].(string)
	return nil
}

// A Flag is a component's readonly or disabled: true, false, or a FEEL
// expression ("=done") the browser evaluates. An expression counts as
// true: the field may be readonly or disabled, and a check here must not
// refuse what the browser let through.
type Flag bool

// UnmarshalJSON reads true, false or an expression (true).
func (f *Flag) UnmarshalJSON(b []byte) error {
	*f = Flag(string(b) == "true" || strings.HasPrefix(string(b), `"`))
	return nil
}

// Parse reads a schema: a JSON object whose components is an array.
func Parse(data []byte) (*Schema, error) {
	var raw struct {
		Components *json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not a form's JSON: %v", err)
	}
	if raw.Components == nil || !strings.HasPrefix(strings.TrimSpace(string(*raw.Components)), "[") {
		return nil, errors.New(`not a form's JSON: it has no "components" array`)
	}
	var s Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("not a form's JSON: %v", err)
	}
	return &s, nil
}

// Fields returns the form's fields (the components with a key, those in
// groups included), in order.
func (s *Schema) Fields() []*Component {
	var out []*Component
	var walk func(cs []Component)
	walk = func(cs []Component) {
		for i := range cs {
			if cs[i].Key != "" {
				out = append(out, &cs[i])
			}
			walk(cs[i].Components)
		}
	}
	walk(s.Components)
	return out
}

// A FieldError says which field a value fails and why.
type FieldError struct {
	Key, Label string
	Reason     string
}

func (e *FieldError) Error() string {
	if e.Label != "" && e.Label != e.Key {
		return fmt.Sprintf("field %q (%s): %s", e.Key, e.Label, e.Reason)
	}
	return fmt.Sprintf("field %q: %s", e.Key, e.Reason)
}

// Check applies the form's validation to values, the variables a user
// submits: required, the lengths of a text, the bounds of a number, a
// pattern, a number's type and decimals, and the options of a select or
// radio. Readonly and disabled fields, fields shown on a condition and
// fields whose key is a path (a.b) are not checked. It returns every failure, each a *FieldError,
// joined; nil when the values pass.
func (s *Schema) Check(values map[string]any) error {
	var errs []error
	for _, c := range s.Fields() {
		if bool(c.Readonly || c.Disabled) || len(c.Conditional) > 0 || strings.Contains(c.Key, ".") {
			continue
		}
		if reason := c.check(values[c.Key]); reason != "" {
			label := c.Label
			if label == "" {
				label = c.DateLabel
			}
			errs = append(errs, &FieldError{Key: c.Key, Label: label, Reason: reason})
		}
	}
	return errors.Join(errs...)
}

// check returns why v fails c, "" when it does not.
func (c *Component) check(v any) string {
	if empty(v) {
		if c.Validate != nil && c.Validate.Required {
			return "required"
		}
		return ""
	}
	switch c.Type {
	case "number":
		n, ok := number(v)
		if !ok {
			return fmt.Sprintf("%v is not a number", v)
		}
		if c.DecimalDigits != nil && *c.DecimalDigits == 0 && n != math.Trunc(n) {
			return fmt.Sprintf("%v is not a whole number", v)
		}
		if c.Validate != nil {
			if m := c.Validate.Min; m != nil && n < *m {
				return fmt.Sprintf("%v is under the minimum %v", v, *m)
			}
			if m := c.Validate.Max; m != nil && n > *m {
				return fmt.Sprintf("%v is over the maximum %v", v, *m)
			}
		}
	case "checkbox":
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("%v is not true or false", v)
		}
	case "select", "radio":
		if len(c.Values) > 0 && !slices.ContainsFunc(c.Values, func(o Option) bool { return fmt.Sprint(o.Value) == fmt.Sprint(v) }) {
			return fmt.Sprintf("%v is not one of the options", v)
		}
	case "textfield", "textarea":
		text, ok := v.(string)
		if !ok {
			return fmt.Sprintf("%v is not a text", v)
		}
		if c.Validate == nil {
			return ""
		}
		n := float64(utf8.RuneCountInString(text))
		if m := c.Validate.MinLength; m != nil && n < *m {
			return fmt.Sprintf("shorter than %v characters", *m)
		}
		if m := c.Validate.MaxLength; m != nil && n > *m {
			return fmt.Sprintf("longer than %v characters", *m)
		}
		if p := c.Validate.Pattern; p != "" {
			// A JavaScript pattern RE2 cannot read is the browser's to check.
			if re, err := regexp.Compile("^(?:" + p + ")$"); err == nil && !re.MatchString(text) {
				return fmt.Sprintf("does not match the pattern %s", p)
			}
		}
	}
	return ""
}

// empty says whether v is no answer: absent, null, "" or an empty list.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	}
	return false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
