package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/internal/httpauth"
)

// Behind the listener's authentication: no or unknown credentials are
// 401, a role that does not allow a route 403 naming the roles that would,
// and a worker credential works the jobs of its topics only.
func TestRESTAuth(t *testing.T) {
	f := setup(t)
	f.deployModels(t)
	auth, err := httpauth.Parse("auth.yaml", []byte("tokens:\n"+
		"  - {name: ops, sha256: "+httpauth.HashToken("t-ops")+", roles: [operator]}\n"+
		"  - {name: bus, sha256: "+httpauth.HashToken("t-bus")+", roles: [integration]}\n"+
		"  - {name: mail, sha256: "+httpauth.HashToken("t-mail")+", roles: [worker], topics: [mail]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	base := f.serveAuth(t, auth)

	as := func(token, method, path string, body any) (int, map[string]any) {
		t.Helper()
		return callWith(t, base, token, method, path, body)
	}
	code, out := as("", "GET", "/topology", nil)
	want(t, "no credentials", code, out, http.StatusUnauthorized, "")
	code, out = as("t-nope", "GET", "/topology", nil)
	want(t, "an unknown token", code, out, http.StatusUnauthorized, "")
	code, out = as("t-ops", "POST", "/process-instances", map[string]any{"processDefinitionId": "quick"})
	want(t, "operator starts", code, out, http.StatusOK, "")
	code, out = as("t-bus", "POST", "/messages/publication", map[string]any{"name": "paid", "correlationKey": "x"})
	want(t, "integration publishes", code, out, http.StatusOK, "")
	code, out = as("t-bus", "POST", "/process-instances", map[string]any{"processDefinitionId": "quick"})
	want(t, "integration starts", code, out, http.StatusForbidden, "bus may not POST /process-instances")
	if !strings.Contains(out["detail"].(string), "operator") {
		t.Errorf("refusal %v does not name the role that would do", out)
	}
	code, out = as("t-mail", "POST", "/jobs/activation", map[string]any{"type": "charge", "maxJobsToActivate": 1, "timeout": 1000, "requestTimeout": -1})
	want(t, "a worker of another topic", code, out, http.StatusForbidden, `mail may not work jobs of type "charge"`)
	code, out = as("t-mail", "POST", "/jobs/activation", map[string]any{"type": "mail", "maxJobsToActivate": 1, "timeout": 1000, "requestTimeout": -1})
	if want(t, "a worker of its topic", code, out, http.StatusOK, ""); len(out["jobs"].([]any)) != 0 {
		t.Errorf("activated %v, want none", out)
	}

	// A report for a job of another topic is refused before it is sent.
	code, inst := as("t-ops", "POST", "/process-instances", map[string]any{"processDefinitionId": "payment", "variables": map[string]any{"amount": 1}})
	want(t, "operator starts payment", code, inst, http.StatusOK, "")
	j := f.activate(t, 1)[0]
	code, out = as("t-mail", "POST", "/jobs/"+j["jobKey"].(string)+"/completion", nil)
	want(t, "a worker completing another topic's job", code, out, http.StatusForbidden, `mail may not work jobs of type "charge"`)
	code, out = as("t-ops", "POST", "/jobs/"+j["jobKey"].(string)+"/completion", nil)
	want(t, "the operator completes it", code, out, http.StatusNoContent, "")
}
