package camunda7

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine/instance"
)

// DateLayout is Camunda 7's date format on the wire
// (yyyy-MM-dd'T'HH:mm:ss.SSSZ), e.g. 2015-10-06T16:34:42.000+0200.
const DateLayout = "2006-01-02T15:04:05.000-0700"

// formatDate renders t as Camunda 7 does; the zero time is null.
func formatDate(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.Format(DateLayout)
	return &s
}

// parseDate accepts Camunda's format and RFC 3339.
func parseDate(s string) (time.Time, error) {
	for _, layout := range []string{DateLayout, "2006-01-02T15:04:05-0700", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("date %q: want the format yyyy-MM-dd'T'HH:mm:ss.SSSZ, e.g. 2015-10-06T16:34:42.000+0200", s)
}

// Variable is Camunda 7's typed value {value, type, valueInfo}.
type Variable struct {
	Value     json.RawMessage `json:"value"`
	Type      string          `json:"type"`
	ValueInfo map[string]any  `json:"valueInfo,omitempty"`
}

// outVariable is a typed value as sent to a client: valueInfo is always
// an object.
type outVariable struct {
	Value     any            `json:"value"`
	Type      string         `json:"type"`
	ValueInfo map[string]any `json:"valueInfo"`
}

// decodeVariables turns a map of Camunda typed values into jetbpm
// variables: strings, booleans, int64, float64, nil, and JSON objects and
// arrays for Json and Object (application/json) values. Dates become
// strings in DateLayout. Transient values are dropped: Camunda does not
// store them. Any other type is refused, naming it.
func decodeVariables(in map[string]Variable) (map[string]any, error) {
	out := make(map[string]any, len(in))
	for name, v := range in {
		if transient, _ := v.ValueInfo["transient"].(bool); transient {
			continue
		}
		val, err := decodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("variable %q: %w", name, err)
		}
		out[name] = val
	}
	return instance.NormalizeVars(out)
}

func decodeValue(v Variable) (any, error) {
	raw := bytes.TrimSpace(v.Value)
	isNull := len(raw) == 0 || string(raw) == "null"
	typ := strings.ToLower(v.Type)
	if typ == "" { // Camunda guesses the type of an untyped value
		if isNull {
			return nil, nil
		}
		return unmarshalJSON(raw)
	}
	if isNull && typ != "object" {
		return nil, nil // a typed null
	}
	switch typ {
	case "null":
		return nil, nil
	case "string":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("type String wants a JSON string value")
		}
		return s, nil
	case "boolean":
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("type Boolean wants true or false")
		}
		return b, nil
	case "integer", "long", "short":
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("type %s wants a number", v.Type)
		}
		i, err := n.Int64()
		if err != nil {
			return nil, fmt.Errorf("type %s wants an integer, not %s", v.Type, n)
		}
		lim := map[string]int64{"integer": math.MaxInt32, "short": math.MaxInt16, "long": math.MaxInt64}[typ]
		if i > lim || i < -lim-1 {
			return nil, fmt.Errorf("value %d is out of range for type %s", i, v.Type)
		}
		return i, nil
	case "double":
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("type Double wants a number")
		}
		return f, nil
	case "date":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("type Date wants a string such as 2015-10-06T16:34:42.000+0200")
		}
		t, err := parseDate(s)
		if err != nil {
			return nil, err
		}
		return t.Format(DateLayout), nil
	case "json":
		return decodeSerialized(raw, "Json")
	case "object":
		format, _ := v.ValueInfo["serializationDataFormat"].(string)
		if format != "application/json" {
			return nil, fmt.Errorf("unsupported value type Object with serializationDataFormat %q: only application/json is supported", format)
		}
		if isNull {
			return nil, nil
		}
		return decodeSerialized(raw, "Object")
	}
	return nil, fmt.Errorf("unsupported value type %q: supported are String, Boolean, Integer, Long, Short, Double, Date, Json, Null and Object (application/json)", v.Type)
}

// decodeSerialized reads a Json or Object value: a string holding JSON
// (as Camunda sends it) or, leniently, the JSON itself.
func decodeSerialized(raw json.RawMessage, typ string) (any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	v, err := unmarshalJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("type %s: the value is not JSON: %v", typ, err)
	}
	return v, nil
}

func unmarshalJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// encodeVariables renders jetbpm variables as Camunda typed values; names
// (if not nil) selects which.
func encodeVariables(vars map[string]any, names []string) map[string]outVariable {
	out := map[string]outVariable{}
	if names != nil {
		for _, n := range names {
			if v, ok := vars[n]; ok {
				out[n] = encodeValue(v)
			}
		}
		return out
	}
	for n, v := range vars {
		out[n] = encodeValue(v)
	}
	return out
}

func encodeValue(v any) outVariable {
	info := map[string]any{}
	switch x := v.(type) {
	case nil:
		return outVariable{nil, "Null", info}
	case string:
		return outVariable{x, "String", info}
	case bool:
		return outVariable{x, "Boolean", info}
	case int64:
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			return outVariable{x, "Integer", info}
		}
		return outVariable{x, "Long", info}
	case int:
		return encodeValue(int64(x))
	case float64:
		return outVariable{x, "Double", info}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return encodeValue(i)
		}
		f, _ := x.Float64()
		return outVariable{f, "Double", info}
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("null")
	}
	return outVariable{string(b), "Json", info}
}
