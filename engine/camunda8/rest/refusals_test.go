package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine"
)

// Bad requests are refused in Camunda's terms — a problem detail naming
// what is wrong — and change nothing.
func TestRESTRefusals(t *testing.T) {
	f := setup(t)
	f.deployModels(t)
	cases := []struct {
		name, method, path string
		body               any
		code               int
		text               string
	}{
		{"unknown route", "GET", "/no-such-thing", nil, http.StatusNotFound, "no route GET /v2/no-such-thing"},
		{"route not served", "POST", "/decision-definitions/search", map[string]any{}, http.StatusNotImplemented, "not supported by jetbpm"},
		{"malformed JSON", "POST", "/process-instances", `{"processDefinitionId": `, http.StatusBadRequest, "not the JSON object"},
		{"two documents", "POST", "/process-instances", `{} {}`, http.StatusBadRequest, "more than one"},
		{"variables not an object", "POST", "/process-instances", `{"processDefinitionId":"quick","variables":[1]}`, http.StatusBadRequest, "variables"},
		{"nothing to start", "POST", "/process-instances", map[string]any{}, http.StatusBadRequest, "processDefinitionId"},
		{"unknown process", "POST", "/process-instances", map[string]any{"processDefinitionId": "nope"}, http.StatusNotFound, "nope"},
		{"unknown definition key", "POST", "/process-instances", map[string]any{"processDefinitionKey": "2251799813685999"}, http.StatusNotFound, "2251799813685999"},
		{"definition key not digits", "POST", "/process-instances", map[string]any{"processDefinitionKey": "abc"}, http.StatusBadRequest, "abc"},
		{"another tenant", "POST", "/process-instances", map[string]any{"processDefinitionId": "quick", "tenantId": "acme"}, http.StatusBadRequest, "no tenants"},
		{"start instructions", "POST", "/process-instances", map[string]any{"processDefinitionId": "quick", "startInstructions": []any{map[string]any{"elementId": "qe"}}}, http.StatusNotImplemented, "start"},
		{"tags", "POST", "/process-instances", map[string]any{"processDefinitionId": "quick", "tags": []string{"a"}}, http.StatusBadRequest, "tags"},
		{"instance key not a number", "GET", "/process-instances/12x", nil, http.StatusBadRequest, "12x"},
		{"unknown instance", "GET", "/process-instances/2251799813685999", nil, http.StatusNotFound, "2251799813685999"},
		{"key of partition 0", "GET", "/process-instances/5", nil, http.StatusNotFound, "'5'"},
		{"negative key", "POST", "/process-instances/-1/cancellation", nil, http.StatusNotFound, "'-1'"},
		{"activation without type", "POST", "/jobs/activation", map[string]any{"maxJobsToActivate": 1, "timeout": 1000}, http.StatusBadRequest, "type"},
		{"activation of none", "POST", "/jobs/activation", map[string]any{"type": "charge", "maxJobsToActivate": 0, "timeout": 1000}, http.StatusBadRequest, "maxJobsToActivate"},
		{"activation without timeout", "POST", "/jobs/activation", map[string]any{"type": "charge", "maxJobsToActivate": 1}, http.StatusBadRequest, "timeout"},
		{"unknown job", "POST", "/jobs/2251799813685249/completion", nil, http.StatusNotFound, "no such job"},
		{"job key of another kind", "POST", "/jobs/5/completion", nil, http.StatusNotFound, "no such job"},
		{"fail with negative retries", "POST", "/jobs/2251799813685249/failure", map[string]any{"retries": -1}, http.StatusBadRequest, "retries"},
		{"error without code", "POST", "/jobs/2251799813685249/error", map[string]any{"errorMessage": "x"}, http.StatusBadRequest, "errorCode"},
		{"job timeout update without timeout", "PATCH", "/jobs/2251799813685249", map[string]any{"changeset": map[string]any{}}, http.StatusBadRequest, "timeout"},
		{"job timeout update of an unknown job", "PATCH", "/jobs/2251799813685249", map[string]any{"changeset": map[string]any{"timeout": 1000}}, http.StatusNotFound, "no such job"},
		{"job update", "PATCH", "/jobs/2251799813685249", map[string]any{"changeset": map[string]any{"retries": 3}}, http.StatusNotImplemented, "retry policy"},
		{"message without name", "POST", "/messages/publication", map[string]any{"correlationKey": "k"}, http.StatusBadRequest, "name"},
		{"negative TTL", "POST", "/messages/publication", map[string]any{"name": "paid", "correlationKey": "k", "timeToLive": -1}, http.StatusBadRequest, "timeToLive"},
		{"signal without name", "POST", "/signals/broadcast", map[string]any{}, http.StatusBadRequest, "signalName"},
		{"unknown incident", "GET", "/incidents/2251799813685999", nil, http.StatusNotFound, "incident"},
		{"resolve unknown incident", "POST", "/incidents/2251799813685999/resolution", nil, http.StatusNotFound, "incident"},
		{"incident search with a cursor", "POST", "/incidents/search", map[string]any{"page": map[string]any{"after": "abcd"}}, http.StatusBadRequest, "cursor"},
		{"incident search sorted", "POST", "/incidents/search", map[string]any{"sort": []any{map[string]any{"field": "creationTime"}}}, http.StatusBadRequest, "sort"},
		{"incident filter unknown", "POST", "/incidents/search", map[string]any{"filter": map[string]any{"jobKey": "1"}}, http.StatusBadRequest, `filtering by "jobKey"`},
		{"incident filter operator", "POST", "/incidents/search", map[string]any{"filter": map[string]any{"state": map[string]any{"$eq": "ACTIVE"}}}, http.StatusBadRequest, "no operators"},
		{"instance state unknown", "POST", "/process-instances/search", map[string]any{"filter": map[string]any{"state": "RUNNING"}}, http.StatusBadRequest, "RUNNING"},
		{"instance search sorted", "POST", "/process-instances/search", map[string]any{"sort": []any{map[string]any{"field": "startDate"}}}, http.StatusBadRequest, "newest first"},
		{"task filter unknown", "POST", "/user-tasks/search", map[string]any{"filter": map[string]any{"priority": 1}}, http.StatusBadRequest, `filtering by "priority"`},
		{"task state unknown", "POST", "/user-tasks/search", map[string]any{"filter": map[string]any{"state": "ASSIGNED"}}, http.StatusBadRequest, "ASSIGNED"},
		{"task key not a number", "GET", "/user-tasks/abc", nil, http.StatusBadRequest, "abc"},
		{"unknown task", "POST", "/user-tasks/2251799813685999/completion", nil, http.StatusNotFound, "user task"},
		{"unknown variable", "GET", "/variables/2251799813685999", nil, http.StatusNotFound, "variable"},
		{"unknown definition XML", "GET", "/process-definitions/2251799813685999/xml", nil, http.StatusNotFound, "process definition"},
		{"variables set without variables", "PUT", "/element-instances/2251799813685999/variables", map[string]any{}, http.StatusBadRequest, "variables"},
		{"variables of an unknown instance", "PUT", "/element-instances/2251799813685999/variables", map[string]any{"variables": map[string]any{"a": 1}}, http.StatusNotFound, "2251799813685999"},
		{"incident state unknown", "POST", "/incidents/search", map[string]any{"filter": map[string]any{"state": "PENDING"}}, http.StatusBadRequest, "PENDING"},
		{"oversized body", "POST", "/messages/publication", `{"name":"paid","correlationKey":"k","variables":{"x":"` + strings.Repeat("a", 5<<20) + `"}}`, http.StatusRequestEntityTooLarge, "over"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := f.call(t, c.method, c.path, c.body)
			want(t, c.name, code, out, c.code, c.text)
			if out["instance"] != "/v2"+c.path {
				t.Errorf("problem instance %v, want the path", out["instance"])
			}
		})
	}
	if list, err := f.eng.Instances(ctxT(t), engine.Filter{}); err != nil || len(list) != 0 {
		t.Errorf("refused requests left instances %v %v", list, err)
	}
	code, out := f.deploy(t, map[string][]byte{"rules.dmn": []byte("<definitions/>")}, nil)
	want(t, "deploy DMN", code, out, http.StatusBadRequest, "rules.dmn")
	code, out = f.deploy(t, map[string][]byte{"bad.bpmn": []byte("<nope")}, nil)
	want(t, "deploy malformed BPMN", code, out, http.StatusBadRequest, "bad.bpmn")
	code, out = f.deploy(t, nil, nil)
	want(t, "deploy nothing", code, out, http.StatusBadRequest, "at least one resource")
}
