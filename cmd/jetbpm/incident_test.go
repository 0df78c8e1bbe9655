package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/testwait"
)

// calcBPMN adds one to a in a script task; started without a, the script
// fails (nil arithmetic) and raises an expression incident on "t".
const calcBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  <bpmn:process id="calc" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
    <bpmn:scriptTask id="t"><bpmn:extensionElements><zeebe:script expression="=a + 1" resultVariable="b"/></bpmn:extensionElements></bpmn:scriptTask>
    <bpmn:sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>`

// record is the part of an incident's JSON the tests look at.
type record struct {
	ID         string   `json:"id"`
	Instance   string   `json:"instanceId"`
	ProcessID  string   `json:"processId"`
	Node       string   `json:"nodeId"`
	CauseClass string   `json:"causeClass"`
	Causes     []string `json:"causeChain"`
	Attempts   int      `json:"attempts"`
	State      string   `json:"state"`
	Lineage    []string `json:"lineage"`
	History    []struct {
		Seq     int    `json:"seq"`
		Kind    string `json:"kind"`
		Command string `json:"command"`
	} `json:"history"`
	Variables []struct {
		Attempt int            `json:"attempt"`
		Vars    map[string]any `json:"variables"`
	} `json:"variables"`
}

func (r record) kinds() []string {
	var out []string
	for _, h := range r.History {
		out = append(out, h.Kind)
	}
	return out
}

func TestIncidentCommands(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	rec := p.waitReady()
	url, _ := rec["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, t.TempDir(), "calc.bpmn", calcBPMN))

	incidents := map[string]string{} // instance → its incident
	for _, id := range []string{"inc-1", "inc-2", "inc-3"} {
		c.ok("start", "calc", "--id", id, "--vars", `{"tag": "`+id+`"}`)
		v := c.waitInstance(id, func(v view) bool { return v.Status != "active" })
		if v.Status != "incident" || !slices.Equal(v.ActiveNodes, []string{"t"}) {
			t.Fatalf("instance %s = %+v, want status incident with its token on t", id, v)
		}
	}
	done := strings.TrimSpace(c.ok("start", "calc", "--vars", `{"a": 1}`))
	if v := c.waitInstance(done, func(v view) bool { return v.Status != "active" }); v.Status != "completed" {
		t.Fatalf("instance %s = %+v, want completed", done, v)
	}

	list := func(args ...string) []record {
		t.Helper()
		var out []record
		if err := json.Unmarshal([]byte(c.ok(append([]string{"incidents", "list", "--json"}, args...)...)), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	ids := func(rs []record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}

	// The records are effects, published just after the checkpoints that
	// show the incidents: wait until all three are listed.
	testwait.True(t, 10*time.Second, "three incidents listed", func() bool { return len(list()) >= 3 })

	t.Run("list and show", func(t *testing.T) {
		all := list()
		if len(all) != 3 {
			t.Fatalf("incidents list --json = %+v, want 3 open incidents", all)
		}
		for _, r := range all {
			if r.ProcessID != "calc" || r.Node != "t" || r.CauseClass != "expression" || r.State != "open" || r.Attempts != 1 ||
				len(r.Causes) != 1 || !slices.Equal(r.kinds(), []string{"raised"}) || !strings.HasPrefix(r.ID, r.Instance+"/t/") {
				t.Errorf("record %+v", r)
			}
			incidents[r.Instance] = r.ID
		}
		if got := ids(list("--instance", "inc-2")); !slices.Equal(got, []string{incidents["inc-2"]}) {
			t.Errorf("--instance inc-2 = %v", got)
		}
		for _, args := range [][]string{
			{"--process", "nope"}, {"--node", "s"}, {"--cause", "operation"}, {"--older-than", "1h"}, {"--state", "closed"},
		} {
			if got := list(args...); len(got) != 0 {
				t.Errorf("incidents list %v = %v, want none", args, ids(got))
			}
		}
		if got := list("--process", "calc", "--node", "t", "--cause", "expression", "--older-than", "0s", "--state", "all"); len(got) != 3 {
			t.Errorf("every filter matching = %v, want the 3 incidents", ids(got))
		}

		table := c.ok("incidents", "list", "--instance", "inc-1")
		lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
		if len(lines) != 2 || !regexp.MustCompile(`^ID +INSTANCE +PROCESS +NODE +CAUSE CLASS +ATTEMPTS +STATE +FIRST FAILURE +LAST FAILURE +CAUSE$`).MatchString(lines[0]) ||
			!regexp.MustCompile(`^`+regexp.QuoteMeta(incidents["inc-1"])+` +inc-1 +calc +t +expression +1 +open +\S+ +\S+ +\S`).MatchString(lines[1]) {
			t.Errorf("incidents list table:\n%s", table)
		}

		out := c.ok("instance", "show", "inc-1")
		for _, want := range []string{"status:", "incident\n", "active nodes: t", "incident:", incidents["inc-1"] + " at t (expression, 1 attempt): "} {
			if !strings.Contains(out, want) {
				t.Errorf("instance show lacks %q:\n%s", want, out)
			}
		}
		var statusList []view
		if err := json.Unmarshal([]byte(c.ok("instances", "list", "--json", "--status", "incident")), &statusList); err != nil {
			t.Fatal(err)
		}
		if len(statusList) != 3 {
			t.Errorf("instances list --status incident = %+v, want the 3 incident instances", statusList)
		}
		if err := json.Unmarshal([]byte(c.ok("instances", "list", "--json", "--status", "active")), &statusList); err != nil {
			t.Fatal(err)
		}
		if len(statusList) != 3 {
			t.Errorf("instances list --status active = %+v, want the 3 incident instances (they are alive)", statusList)
		}

		show := c.ok("incident", "show", incidents["inc-1"])
		for _, want := range []string{"id:", incidents["inc-1"], "instance:", "inc-1", "process:", "calc@1", "node:", "state:", "open",
			"cause class:", "expression", "attempts:", "first failure:", "last failure:", "lineage:", "causes (oldest first):\n  1. ",
			"history:\n  1", "raised", "variables at each failure:\n  attempt 1 (", `"tag": "inc-1"`} {
			if !strings.Contains(show, want) {
				t.Errorf("incident show lacks %q:\n%s", want, show)
			}
		}
		var r record
		if err := json.Unmarshal([]byte(c.ok("incident", "show", incidents["inc-1"], "--json")), &r); err != nil {
			t.Fatal(err)
		}
		if r.ID != incidents["inc-1"] || len(r.Lineage) != 1 || len(r.Variables) != 1 || r.Variables[0].Attempt != 1 || r.Variables[0].Vars["tag"] != "inc-1" {
			t.Errorf("incident show --json = %+v", r)
		}
	})

	t.Run("retry fails again", func(t *testing.T) {
		id := incidents["inc-1"]
		if out := c.ok("incident", "retry", id); out != id+" retried\n" {
			t.Errorf("retry printed %q", out)
		}
		var r record
		if err := json.Unmarshal([]byte(c.ok("incident", "show", id, "--json")), &r); err != nil {
			t.Fatal(err)
		}
		// The retry re-ran the script in the same step: it failed again.
		if r.State != "open" || r.Attempts != 2 || len(r.Lineage) != 2 || len(r.Variables) != 2 ||
			!slices.Equal(r.kinds(), []string{"raised", "retried", "raised"}) || r.History[1].Command == "" {
			t.Errorf("after retry: %+v", r)
		}
	})

	t.Run("resolve with vars", func(t *testing.T) {
		id := incidents["inc-1"]
		if out := c.ok("incident", "resolve", id, "--vars", `{"b": 5}`); out != id+" resolved\n" {
			t.Errorf("resolve printed %q", out)
		}
		v := c.waitInstance("inc-1", func(v view) bool { return v.Status != "incident" })
		if v.Status != "completed" || v.Variables["b"] != 5.0 {
			t.Errorf("instance inc-1 after resolve = %+v, want completed with b 5", v)
		}
		c.fails(1, `^jetbpm: incident `+regexp.QuoteMeta(id)+` is resolved$`, "incident", "resolve", id)
		c.fails(1, `^jetbpm: incident `+regexp.QuoteMeta(id)+` is resolved$`, "incident", "retry", id)
	})

	t.Run("abandon", func(t *testing.T) {
		id := incidents["inc-2"]
		var r record
		if err := json.Unmarshal([]byte(c.ok("incident", "abandon", id, "--json")), &r); err != nil {
			t.Fatal(err)
		}
		if r.ID != id || r.State != "deadLettered" || !slices.Equal(r.kinds(), []string{"raised", "dead-lettered"}) {
			t.Errorf("abandon --json = %+v", r)
		}
		if v := c.waitInstance("inc-2", func(v view) bool { return v.Status != "incident" }); v.Status != "terminated" {
			t.Errorf("instance inc-2 after abandon = %+v, want terminated (no token left)", v)
		}
		c.fails(1, `^jetbpm: incident `+regexp.QuoteMeta(id)+` is deadLettered$`, "incident", "abandon", id)
	})

	t.Run("states and errors", func(t *testing.T) {
		if got, want := ids(list("--state", "closed")), ids([]record{{ID: incidents["inc-1"]}, {ID: incidents["inc-2"]}}); !slices.Equal(got, want) {
			t.Errorf("--state closed = %v, want %v", got, want)
		}
		if got := ids(list()); !slices.Equal(got, []string{incidents["inc-3"]}) {
			t.Errorf("open incidents = %v, want only inc-3's", got)
		}
		if got := list("--state", "all"); len(got) != 3 {
			t.Errorf("--state all = %v, want 3", ids(got))
		}
		c.fails(1, `^jetbpm: incident "nope": not found$`, "incident", "show", "nope")
		c.fails(1, `^jetbpm: incident "nope": not found$`, "incident", "retry", "nope")
		c.fails(1, `^jetbpm: incident "inc-3/t/999": not found$`, "incident", "abandon", "inc-3/t/999")
		c.fails(2, `^jetbpm: --vars: not valid JSON`, "incident", "resolve", incidents["inc-3"], "--vars", "{")
		if out := c.ok("incidents", "list", "--json", "--instance", "nope"); strings.TrimSpace(out) != "[]" {
			t.Errorf("empty list printed %q, want []", out)
		}
	})
}
