package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// splitBPMN forks into "charge", a script that fails without a (an
// incident), and "pack", a script that goes straight to the join.
const splitBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  <bpmn:process id="split" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="toFork" sourceRef="s" targetRef="fork"/>
    <bpmn:parallelGateway id="fork"/>
    <bpmn:sequenceFlow id="toCharge" sourceRef="fork" targetRef="charge"/>
    <bpmn:sequenceFlow id="toPack" sourceRef="fork" targetRef="pack"/>
    <bpmn:scriptTask id="charge"><bpmn:extensionElements><zeebe:script expression="=a + 1" resultVariable="charged"/></bpmn:extensionElements></bpmn:scriptTask>
    <bpmn:scriptTask id="pack"><bpmn:extensionElements><zeebe:script expression="=&#34;box&#34;" resultVariable="packed"/></bpmn:extensionElements></bpmn:scriptTask>
    <bpmn:sequenceFlow id="charged" sourceRef="charge" targetRef="join"/>
    <bpmn:sequenceFlow id="packed" sourceRef="pack" targetRef="join"/>
    <bpmn:parallelGateway id="join"/>
    <bpmn:sequenceFlow id="toEnd" sourceRef="join" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>`

// stuckView is the part of 'instance show --json' this test reads.
type stuckView struct {
	view
	Incidents []struct {
		ID string `json:"id"`
	} `json:"incidents"`
	Stuck []struct {
		Node      string   `json:"nodeId"`
		Arrived   []string `json:"arrived"`
		Missing   []string `json:"missing"`
		Abandoned []string `json:"abandonedIncidents"`
	} `json:"stuck"`
}

// Abandoning a branch's incident leaves the instance stuck at its join:
// instance show says so, instances list --status incident lists it, and
// instance cancel ends it.
func TestStuckAtJoinCommands(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	rec := p.waitReady()
	url, _ := rec["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, t.TempDir(), "split.bpmn", splitBPMN))
	c.ok("start", "split", "--id", "stuck-1")
	show := func() stuckView {
		t.Helper()
		var v stuckView
		if err := json.Unmarshal([]byte(c.ok("instance", "show", "stuck-1", "--json")), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	listed := func(status string) []string {
		t.Helper()
		var list []view
		if err := json.Unmarshal([]byte(c.ok("instances", "list", "--json", "--status", status)), &list); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, v := range list {
			ids = append(ids, v.ID)
		}
		return ids
	}

	c.waitInstance("stuck-1", func(v view) bool { return v.Status != "active" })
	v := show()
	if v.Status != "incident" || len(v.Incidents) != 1 || len(v.Stuck) != 0 {
		t.Fatalf("instance = %+v, want one incident on charge and nothing stuck yet", v)
	}
	inc := v.Incidents[0].ID
	c.ok("incident", "abandon", inc)

	v = show()
	if v.Status != "incident" || len(v.Incidents) != 0 || !slices.Equal(v.ActiveNodes, []string{"join"}) || len(v.Stuck) != 1 ||
		v.Stuck[0].Node != "join" || !slices.Equal(v.Stuck[0].Arrived, []string{"packed"}) ||
		!slices.Equal(v.Stuck[0].Missing, []string{"charged"}) || !slices.Equal(v.Stuck[0].Abandoned, []string{inc}) {
		t.Fatalf("after abandon: %+v, want status incident, stuck at join waiting for charged", v)
	}
	out := c.ok("instance", "show", "stuck-1")
	want := `(?m)^stuck: +at join join since \S+: waiting for charged, which no token can reach any more \(arrived: packed; abandoned: ` +
		regexp.QuoteMeta(inc) + `\)$`
	if !regexp.MustCompile(want).MatchString(out) || !regexp.MustCompile(`(?m)^status: +incident$`).MatchString(out) {
		t.Errorf("instance show lacks the stuck join (want %s):\n%s", want, out)
	}
	if got := listed("incident"); !slices.Equal(got, []string{"stuck-1"}) {
		t.Errorf("instances list --status incident = %v, want stuck-1", got)
	}
	if got := listed("active"); !slices.Equal(got, []string{"stuck-1"}) {
		t.Errorf("instances list --status active = %v, want stuck-1 (it is alive)", got)
	}
	table := c.ok("instances", "list", "--status", "incident")
	if !regexp.MustCompile(`(?m)^stuck-1 +split +1 +incident +\S+ +join$`).MatchString(table) {
		t.Errorf("instances list table:\n%s", table)
	}

	if out := c.ok("instance", "cancel", "stuck-1", "--reason", "stuck at join"); out != "stuck-1 terminated\n" {
		t.Errorf("instance cancel printed %q", out)
	}
	if v := show(); v.Status != "terminated" || len(v.Stuck) != 0 || len(v.ActiveNodes) != 0 {
		t.Errorf("after cancel: %+v, want terminated with nothing stuck", v)
	}
	if got := listed("incident"); len(got) != 0 {
		t.Errorf("instances list --status incident after cancel = %v, want none", got)
	}
	if out := c.ok("instance", "show", "stuck-1"); strings.Contains(out, "stuck:") {
		t.Errorf("a terminated instance shows a stuck join:\n%s", out)
	}
}
