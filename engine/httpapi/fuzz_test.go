package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/httpapi"
)

var (
	fuzzMethods      = []string{"GET", "POST", "PUT", "DELETE"}
	fuzzContentTypes = []string{"", "application/json", "application/xml", "multipart/form-data; boundary=b", "multipart/form-data", "text/plain"}
)

// FuzzRequest: any method, path, content type and body gets a JSON answer
// or a problem of a known type with its status; nothing panics. The
// server has no engine, so a request decoded in full gets 503: every
// other answer is the decoding's.
func FuzzRequest(f *testing.F) {
	f.Add(uint8(1), "processes/calc/instances", uint8(1), `{"id": "x", "vars": {"a": [1, {"b": null}]}}`)
	f.Add(uint8(1), "processes/calc/instances", uint8(1), `{"processId": 1}`)
	f.Add(uint8(1), "deployments", uint8(3), "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.bpmn\"\r\n\r\n<x/>\r\n--b--\r\n")
	f.Add(uint8(1), "deployments?name=x", uint8(2), "<definitions/>")
	f.Add(uint8(1), "deployments", uint8(1), `{"files": [{"name": "a", "xml": 5}]}`)
	f.Add(uint8(0), "instances?status=active&limit=x", uint8(0), "")
	f.Add(uint8(0), "tasks?includeAssigned=maybe&offset=-1", uint8(0), "")
	f.Add(uint8(1), "tasks/t1/update", uint8(1), `{"priority": null, "dueDate": ""}`)
	f.Add(uint8(1), "incidents/a%2Fb%2F1/resolve", uint8(1), `{"vars": [1]}`)
	f.Add(uint8(2), "signals", uint8(1), `{} {}`)
	f.Add(uint8(1), "messages", uint8(1), `{"name": "m", "key": 1e400}`)
	srv := httpapi.New(nil)
	types := httpapi.ProblemTypes()
	f.Fuzz(func(t *testing.T, method uint8, path string, ct uint8, body string) {
		req, err := http.NewRequest(fuzzMethods[int(method)%len(fuzzMethods)], "/v1/"+path, strings.NewReader(body))
		if err != nil {
			return // not a URL a client could send
		}
		if c := fuzzContentTypes[int(ct)%len(fuzzContentTypes)]; c != "" {
			req.Header.Set("Content-Type", c)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		switch {
		case w.Code == 200 && strings.HasPrefix(w.Header().Get("Content-Type"), "application/json"):
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("200 with a body that is not JSON: %q", w.Body.Bytes())
			}
		case w.Header().Get("Content-Type") == "application/problem+json":
			var p httpapi.Problem
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatalf("a problem that is not JSON: %q", w.Body.Bytes())
			}
			if types[p.Type] != w.Code || p.Status != w.Code || p.Title == "" {
				t.Fatalf("problem %+v with status %d", p, w.Code)
			}
		case w.Code == 301 || w.Code == 307 || w.Code == 308:
			// ServeMux cleaning a path ("/v1/a/../b")
		default:
			t.Fatalf("%s %s: %d %s %q", req.Method, req.URL, w.Code, w.Header().Get("Content-Type"), w.Body.Bytes())
		}
	})
}
