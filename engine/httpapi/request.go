package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// A requestError is a request this layer refuses before the engine sees
// it: malformed JSON, an unknown field, a body over the limit.
type requestError struct {
	class  problemClass
	detail string
}

func (e *requestError) Error() string { return e.detail }

func badRequestf(format string, args ...any) error {
	return &requestError{class: badRequest, detail: fmt.Sprintf(format, args...)}
}

// readBody reads r's body up to limit bytes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, &requestError{class: tooLarge, detail: fmt.Sprintf("the request body is over %d bytes", limit)}
	}
	if err != nil {
		return nil, badRequestf("reading the request body: %v", err)
	}
	return data, nil
}

// decodeObject reads body, a JSON object, into its fields; an empty body
// is an empty object.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(body)) == 0 {
		return fields, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil {
		return nil, badRequestf("the body is not a JSON object: %s", jsonProblem(body, dec, err))
	}
	if fields == nil {
		return nil, badRequestf("the body is not a JSON object: null")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badRequestf("the body holds more than one JSON value")
	}
	return fields, nil
}

// jsonProblem says what is wrong with a JSON document, and where.
func jsonProblem(body []byte, dec *json.Decoder, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%v (at byte %d)", syn, syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %s: want %s, found a JSON %s", typ.Field, jsonKind(typ.Type), typ.Value)
		}
		return fmt.Sprintf("found a JSON %s", typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Sprintf("it ends early (after %d bytes)", len(body))
	}
	return err.Error()
}

// checkFields decodes the body's fields into the route's request type,
// refusing unknown fields and values of the wrong type, and fields the
// path already gives.
func checkFields(rt *route, fields map[string]json.RawMessage) error {
	for wildcard, field := range rt.pathFields {
		if _, ok := fields[field]; ok {
			return badRequestf("field %s: the path gives it ({%s}); leave it out of the body", field, wildcard)
		}
	}
	for field := range rt.fixed {
		if _, ok := fields[field]; ok {
			return badRequestf("field %s: this route sets it", field)
		}
	}
	known := jsonFields(rt.in)
	for name := range fields {
		if !slices.ContainsFunc(known, func(f jsonField) bool { return f.name == name }) {
			return badRequestf("unknown field %q; want %s", name, fieldList(rt, known))
		}
	}
	data, _ := json.Marshal(fields)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // within nested objects too
	if err := dec.Decode(reflect.New(rt.in).Interface()); err != nil {
		return badRequestf("%s", jsonProblem(data, dec, err))
	}
	return nil
}

func fieldList(rt *route, known []jsonField) string {
	var names []string
	for _, f := range known {
		if !slices.Contains(mapValues(rt.pathFields), f.name) && rt.fixed[f.name] == nil {
			names = append(names, f.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return "one of " + strings.Join(names, ", ")
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// queryFields turns the query parameters into request fields, each
// converted to its field's JSON type.
func queryFields(rt *route, q url.Values) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	params := queryParams(rt)
	for name, vals := range q {
		f, ok := findField(params, name)
		if !ok {
			var names []string
			for _, p := range params {
				names = append(names, p.name)
			}
			if len(names) == 0 {
				return nil, badRequestf("query parameter %q: this route takes none", name)
			}
			return nil, badRequestf("unknown query parameter %q; want one of %s", name, strings.Join(names, ", "))
		}
		if len(vals) != 1 {
			return nil, badRequestf("query parameter %q is given %d times; give it once", name, len(vals))
		}
		v, err := queryValue(f, vals[0])
		if err != nil {
			return nil, badRequestf("query parameter %s: %v", name, err)
		}
		fields[name] = v
	}
	return fields, nil
}

func queryValue(f jsonField, s string) (json.RawMessage, error) {
	t := f.typ
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return json.RawMessage(strconv.FormatInt(n, 10)), nil
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", s)
		}
		return json.RawMessage(strconv.FormatBool(b)), nil
	}
	v, _ := json.Marshal(s)
	return v, nil
}

// queryParams are the fields a GET route takes from the query string: its
// request's scalar fields less those the path or the route sets.
func queryParams(rt *route) []jsonField {
	var out []jsonField
	for _, f := range jsonFields(rt.in) {
		if slices.Contains(mapValues(rt.pathFields), f.name) || rt.fixed[f.name] != nil || !f.scalar() {
			continue
		}
		out = append(out, f)
	}
	return out
}

func findField(fs []jsonField, name string) (jsonField, bool) {
	for _, f := range fs {
		if f.name == name {
			return f, true
		}
	}
	return jsonField{}, false
}

// jsonField is a field of a request type, by its JSON name.
type jsonField struct {
	name string
	typ  reflect.Type
}

func (f jsonField) scalar() bool {
	t := f.typ
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String, reflect.Int, reflect.Int64, reflect.Bool:
		return true
	}
	return false
}

// jsonFields lists the JSON fields of struct type t, embedded structs'
// included.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(sf.Type)...)
			continue
		}
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, jsonField{name: name, typ: sf.Type})
	}
	return out
}

func jsonKind(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		if t == reflect.TypeFor[json.RawMessage]() {
			return "a JSON value"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// buildRequest makes the engine API request of a route from r: the body's
// or the query's fields, the path's wildcards and the route's fixed
// fields, checked against the request type.
func (s *Server) buildRequest(rt *route, r *http.Request) ([]byte, error) {
	var fields map[string]json.RawMessage
	var err error
	if rt.method == http.MethodGet {
		fields, err = queryFields(rt, r.URL.Query())
	} else {
		if len(r.URL.RawQuery) > 0 {
			return nil, badRequestf("a %s to %s takes its fields in a JSON body, not the query string", rt.method, rt.path)
		}
		var body []byte
		if body, err = readBody(r, s.maxBody); err != nil {
			return nil, err
		}
		if fields, err = decodeObject(body); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	if err := checkFields(rt, fields); err != nil {
		return nil, err
	}
	for wildcard, field := range rt.pathFields {
		v := r.PathValue(wildcard)
		if v == "" {
			return nil, badRequestf("{%s} is empty", wildcard)
		}
		fields[field], _ = json.Marshal(v)
	}
	for field, v := range rt.fixed {
		fields[field], _ = json.Marshal(v)
	}
	return json.Marshal(fields)
}
