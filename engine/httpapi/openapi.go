package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// OpenAPI returns the OpenAPI 3 document of /v1, made from the route
// table: every route with its parameters, request body and result
// schemas (from the engine API's Go types), the roles it needs, and the
// problem answers.
func (s *Server) OpenAPI() map[string]any {
	paths := map[string]any{}
	ids := map[string]bool{}
	for _, rt := range s.routes {
		item, _ := paths[rt.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		item[strings.ToLower(rt.method)] = operation(rt, ids)
	}
	problems := map[string]any{}
	for _, c := range problemClasses {
		problems[problemBase+c.name] = c.status
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       "jetbpm HTTP API",
			"version":     "1",
			"description": "jetbpm's own HTTP API: a thin layer over the engine API (docs/api.md). Errors are RFC 9457 problem details; x-jetbpm-problem-types maps each problem type to its status.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": map[string]any{"Problem": schema(typeOf[Problem](), nil)},
			"securitySchemes": map[string]any{
				"basic":  map[string]any{"type": "http", "scheme": "basic"},
				"bearer": map[string]any{"type": "http", "scheme": "bearer"},
			},
		},
		"security":               []any{map[string]any{"basic": []any{}}, map[string]any{"bearer": []any{}}},
		"x-jetbpm-problem-types": problems,
	}
}

var wildcard = regexp.MustCompile(`\{([a-zA-Z]+)\}`)

func operation(rt *route, ids map[string]bool) map[string]any {
	id := rt.op
	if ids[id] {
		id += "." + rt.path[strings.LastIndexByte(rt.path, '/')+1:]
	}
	ids[id] = true
	var params []any
	for _, m := range wildcard.FindAllStringSubmatch(rt.path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	if rt.method == http.MethodGet {
		for _, f := range queryParams(rt) {
			params = append(params, map[string]any{"name": f.name, "in": "query", "schema": schema(f.typ, nil)})
		}
	}
	if rt.serve != nil && rt.op == "deploy" {
		params = append(params, map[string]any{"name": "name", "in": "query", "description": "the document's name, for a raw XML body", "schema": map[string]any{"type": "string"}})
	}
	status := "200"
	if rt.status != 0 {
		status = strconv.Itoa(rt.status)
	}
	ok := map[string]any{"description": rt.summary}
	switch {
	case rt.out != nil:
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": schema(rt.out, nil)}}
	case strings.HasSuffix(rt.path, "/xml"):
		ok["content"] = map[string]any{"application/xml": map[string]any{"schema": map[string]any{"type": "string"}}}
	}
	problem := map[string]any{"application/problem+json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Problem"}}}
	op := map[string]any{
		"operationId":        id,
		"summary":            rt.summary,
		"x-jetbpm-operation": rt.op,
		"x-jetbpm-roles":     httpauth.RolesFor(rt.access),
		"responses": map[string]any{
			status:    ok,
			"default": map[string]any{"description": "a problem (RFC 9457)", "content": problem},
		},
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if rt.method != http.MethodGet {
		body := bodySchema(rt)
		content := map[string]any{"application/json": map[string]any{"schema": body}}
		if rt.op == "deploy" {
			content["multipart/form-data"] = map[string]any{"schema": map[string]any{"type": "object",
				"additionalProperties": map[string]any{"type": "string", "format": "binary"}}}
			content["application/xml"] = map[string]any{"schema": map[string]any{"type": "string"}}
		}
		op["requestBody"] = map[string]any{"required": rt.op == "deploy", "content": content}
	}
	return op
}

// bodySchema is the schema of a route's JSON body: its request type less
// the fields the path and the route set.
func bodySchema(rt *route) map[string]any {
	sc := schema(rt.in, nil)
	props, _ := sc["properties"].(map[string]any)
	for _, f := range mapValues(rt.pathFields) {
		delete(props, f)
	}
	for f := range rt.fixed {
		delete(props, f)
	}
	return sc
}

// schema describes Go type t as an OpenAPI 3.0 schema; seen breaks
// recursion.
func schema(t reflect.Type, seen map[reflect.Type]bool) map[string]any {
	switch t {
	case reflect.TypeFor[time.Time]():
		return map[string]any{"type": "string", "format": "date-time"}
	case reflect.TypeFor[json.RawMessage](), reflect.TypeFor[any]():
		return map[string]any{"description": "any JSON value"}
	case reflect.TypeFor[time.Duration]():
		return map[string]any{"type": "integer", "description": "nanoseconds"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		sc := schema(t.Elem(), seen)
		sc["nullable"] = true
		return sc
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": schema(t.Elem(), seen)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schema(t.Elem(), seen)}
	case reflect.Struct:
		if seen[t] {
			return map[string]any{"type": "object"}
		}
		next := map[reflect.Type]bool{t: true}
		for k := range seen {
			next[k] = true
		}
		props := map[string]any{}
		for _, f := range jsonFields(t) {
			props[f.name] = schema(f.typ, next)
		}
		return map[string]any{"type": "object", "properties": props}
	case reflect.Interface:
		return map[string]any{"description": "any JSON value"}
	}
	return map[string]any{}
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.OpenAPI())
}
