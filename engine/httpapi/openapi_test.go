package httpapi_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/jetbpm/jetbpm/engine/httpapi"
)

// TestOpenAPIDocumentValidates loads GET /v1/openapi.json with an OpenAPI 3
// parser and validates it, and checks that it describes each route.
func TestOpenAPIDocumentValidates(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	r := f.get("/v1/openapi.json")
	if r.status != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %s", r.status, r.body)
	}
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document does not validate: %v", err)
	}
	routes := docRoutes(t)
	if len(routes) < 20 {
		t.Fatalf("found %d routes in docs/http-api.md", len(routes))
	}
	var described []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			described = append(described, method+" "+path)
		}
	}
	slices.Sort(described)
	if !slices.Equal(described, routes) {
		t.Errorf("docs/http-api.md's route table and the OpenAPI document differ:\n doc:     %v\n openapi: %v", routes, described)
	}
	start := doc.Paths.Find("/v1/processes/{id}/instances").Post
	if start.RequestBody == nil || start.Responses.Status(201) == nil {
		t.Errorf("start: no request body or no 201 answer")
	}
	body := start.RequestBody.Value.Content.Get("application/json").Schema.Value
	if _, ok := body.Properties["processId"]; ok {
		t.Errorf("start's body schema has processId, which the path gives")
	}
	if _, ok := body.Properties["vars"]; !ok {
		t.Errorf("start's body schema lacks vars")
	}
	list := doc.Paths.Find("/v1/instances").Get
	var params []string
	for _, p := range list.Parameters {
		params = append(params, p.Value.In+":"+p.Value.Name)
	}
	if !slices.Equal(params, []string{"query:processId", "query:status", "query:limit"}) {
		t.Errorf("GET /v1/instances parameters %v", params)
	}
	params = nil
	for _, p := range doc.Paths.Find("/v1/incidents").Get.Parameters {
		params = append(params, p.Value.Name)
	}
	if !slices.Equal(params, []string{"instance", "process", "node", "cause", "state", "olderThan", "limit", "after", "before"}) {
		t.Errorf("GET /v1/incidents parameters %v", params)
	}
	page := doc.Paths.Find("/v1/incidents").Get.Responses.Status(200).Value.Content.Get("application/json").Schema.Value
	for _, field := range []string{"incidents", "total", "next", "prev"} {
		if _, ok := page.Properties[field]; !ok {
			t.Errorf("GET /v1/incidents answer schema lacks %s", field)
		}
	}
}

// docRoutes reads the route table of docs/http-api.md: its rows begin
// "| `METHOD /path` |".
func docRoutes(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(GET|POST) (/v1/[^`]*)` \\|").FindAllStringSubmatch(string(data), -1) {
		out = append(out, m[1]+" "+m[2])
	}
	slices.Sort(out)
	return out
}

// TestProblemTypesAreStable pins the problem types and their statuses:
// clients match on them.
func TestProblemTypesAreStable(t *testing.T) {
	want := map[string]int{"bad-request": 400, "unauthenticated": 401, "forbidden": 403, "not-found": 404,
		"no-subscription": 404, "method-not-allowed": 405, "conflict": 409, "finished": 409, "duplicate": 409,
		"too-large": 413, "unprocessable": 422, "internal": 500, "unavailable": 503}
	got := httpapi.ProblemTypes()
	if len(got) != len(want) {
		t.Errorf("%d problem types, want %d: %v", len(got), len(want), got)
	}
	for name, status := range want {
		if got["urn:jetbpm:problem:"+name] != status {
			t.Errorf("problem %s: status %d, want %d", name, got["urn:jetbpm:problem:"+name], status)
		}
	}
	data, err := os.ReadFile("../../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range want {
		if !strings.Contains(string(data), "`urn:jetbpm:problem:"+name+"`") {
			t.Errorf("docs/http-api.md does not list problem type %s", name)
		}
	}
}
