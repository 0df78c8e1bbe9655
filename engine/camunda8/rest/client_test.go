package rest_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetbpm/jetbpm/engine/camunda8/rest"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/internal/nodetest"
)

// TestOrchestrationClusterClient runs the real
// @camunda8/orchestration-cluster-api 9.1.5 (testdata/client, installed by
// `make jsclient`) against /v2, validating every response against the
// API's schemas: topology, deploy, a job worker that completes, fails with
// a retry, throws a BPMN error and fails with none left, instances
// awaiting completion, an incident found and resolved, a message, a
// signal, a cancellation and a correlation nobody takes.
func TestOrchestrationClusterClient(t *testing.T) {
	f := setup(t)
	models, _ := filepath.Abs(filepath.Join("..", "testdata"))
	var summary struct {
		Partitions int
		Deployed   []string
		Results    map[string]map[string]any
		Instances  map[string]string
		Seen       map[string][]struct {
			Retries int
			Headers map[string]string
			Worker  string
		}
		Incident         map[string]string
		FourState        string
		MessageKey       string
		SignalKey        string
		Uncorrelated     any
		Review           map[string]any
		Task             map[string]any
		ReviewsCompleted []string
		OtherVariables   map[string]string
		Errors           []string
	}
	nodetest.Run(t, "testdata/client", client, &summary, "run.mjs", f.url,
		filepath.Join(models, "payment.bpmn"), filepath.Join(models, "orders.bpmn"), filepath.Join(models, "review.bpmn"))
	ctx := ctxT(t)
	if summary.Partitions != f.eng.Partitions() {
		t.Errorf("topology partitions %d", summary.Partitions)
	}
	if strings.Join(summary.Deployed, ",") != "hold,order,payment,quick,review" {
		t.Errorf("deployed %v", summary.Deployed)
	}
	if r := summary.Results["1"]; r["receipt"] != 10.0 || r["result"] != nil {
		t.Errorf("amount 1 ended with %v, want receipt 10 (the output mapping) and no result", r)
	}
	if r := summary.Results["2"]; r["receipt"] != "second try" {
		t.Errorf("amount 2 ended with %v, want receipt from the second try", r)
	}
	if s := summary.Seen["2"]; len(s) != 2 || s[0].Retries != 3 || s[1].Retries != 2 {
		t.Errorf("amount 2's activations %+v, want retries 3 then 2", s)
	}
	if r := summary.Results["3"]; r["why"] != "funds" || r["receipt"] != nil {
		t.Errorf("amount 3 ended with %v, want the error's variables and no receipt", r)
	}
	if s := summary.Seen["1"]; len(s) != 1 || s[0].Headers["bank"] != "acme" || s[0].Worker != "rest-1" {
		t.Errorf("amount 1's activation %+v", s)
	}
	if i := summary.Incident; i["errorType"] != "JOB_NO_RETRIES" || !strings.Contains(i["errorMessage"], "bank gone") || i["elementId"] != "charge" {
		t.Errorf("amount 4's incident %v", i)
	}
	if summary.FourState != "COMPLETED" || len(summary.Seen["4"]) != 2 {
		t.Errorf("amount 4 after the resolution: %s, activations %+v", summary.FourState, summary.Seen["4"])
	}
	if v, err := f.eng.Wait(ctx, summary.Instances["4"]); err != nil || v.Variables["receipt"] != "after the incident" {
		t.Errorf("amount 4: %+v %v", v, err)
	}
	if v, err := f.eng.Wait(ctx, summary.Instances["order"]); err != nil || v.Status != instance.Completed || v.Variables["paidBy"] != "rest" {
		t.Errorf("the order the message released: %+v %v", v, err)
	}
	if v, err := f.eng.Wait(ctx, summary.Instances["hold"]); err != nil || v.Status != instance.Completed {
		t.Errorf("the instance the signal released: %+v %v", v, err)
	}
	if v, err := f.eng.Instance(ctx, summary.Instances["cancelled"]); err != nil || v.Status != instance.Terminated {
		t.Errorf("the cancelled instance: %+v %v", v, err)
	}
	if summary.Uncorrelated != 404.0 {
		t.Errorf("a correlation nobody takes answered %v, want 404", summary.Uncorrelated)
	}
	if summary.MessageKey == "" || summary.SignalKey == "" {
		t.Errorf("keys: message %q signal %q", summary.MessageKey, summary.SignalKey)
	}
	if r := summary.Review; r["name"] != "Review an order" || r["resource"] != "review.bpmn" || r["xmlBytes"] != float64(len(testdata(t, "review.bpmn"))) {
		t.Errorf("the review's definition %v", r)
	}
	if tk := summary.Task; tk["assignee"] != "alice" || tk["priority"] != 70.0 || fmt.Sprint(tk["candidateGroups"]) != "[sales ops]" {
		t.Errorf("the review's task %v", tk)
	}
	if len(summary.ReviewsCompleted) != 1 || summary.ReviewsCompleted[0] != summary.Instances["review"] {
		t.Errorf("completed reviews %v, want %s", summary.ReviewsCompleted, summary.Instances["review"])
	}
	if v, err := f.eng.Instance(ctx, summary.Instances["review"]); err != nil || v.Variables["approved"] != true {
		t.Errorf("the completed review: %+v %v", v, err)
	}
	if v := summary.OtherVariables; v["note"] != `"urgent"` || v["orderId"] != `"o-other"` {
		t.Errorf("the other review's variables %v", v)
	}
}

// client is the npm package testdata/client installs.
const client = "@camunda8/orchestration-cluster-api"

// The client's CAMUNDA_AUTH_STRATEGY=BASIC gets in with a user's password
// behind the listener's authentication, and not with a wrong one.
func TestOrchestrationClusterClientBasicAuth(t *testing.T) {
	hash, err := httpauth.HashPassword("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	auth, err := httpauth.Parse("auth.yaml", []byte("users:\n  - {name: alice, bcrypt: \""+hash+"\", roles: [viewer]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t)
	base := f.serveAuth(t, auth)
	var got struct {
		Partitions int
		Refused    any
		Errors     []string
	}
	nodetest.Run(t, "testdata/client", client, &got, "auth.mjs", strings.TrimSuffix(base, rest.Prefix), "alice", "s3cret")
	if got.Partitions != f.eng.Partitions() || got.Refused != 401.0 {
		t.Errorf("with the password: %d partitions; with a wrong one: %v, want 401", got.Partitions, got.Refused)
	}
}
