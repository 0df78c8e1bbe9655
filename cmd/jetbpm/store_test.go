package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const flipBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
                  xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
                  id="flip-test" targetNamespace="https://jetbpm.dev/test">
  <bpmn:process id="flip" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="charge" camunda:type="external" camunda:topic="flip-charge"/>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="charge"/>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// The case (#37), as a user meets it: jetbpm serve, 20 instances
// at an external task, serve stopped, five bits flipped in the instances
// bucket's block file, serve started again. /healthz says degraded and
// why, and 'jetbpm store check' names each lost instance with its process,
// element and variables, and exits 1.
func TestStoreCheckAfterFlippedBits(t *testing.T) {
	data := t.TempDir()
	listen := freeAddr(t)
	p := startServe(t, nil, "--data", data, "--listen", listen)
	url, _ := p.waitReady()["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, t.TempDir(), "flip.bpmn", flipBPMN))
	for i := range 20 {
		c.ok("start", "flip", "--id", fmt.Sprintf("flip-%02d", i), "--vars", fmt.Sprintf(`{"n": %d}`, i))
	}
	for i := range 20 {
		c.waitInstance(fmt.Sprintf("flip-%02d", i), func(v view) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "charge" })
	}
	if out := c.ok("store", "check"); !strings.Contains(out, "store whole") || !strings.Contains(out, "20 checkpoints, 20 jobs") {
		t.Fatalf("store check of a whole store:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(data, "jetbpm-marks")); err != nil {
		t.Fatalf("no marks file beside the store: %v", err)
	}
	p.stop()

	blocks, err := filepath.Glob(filepath.Join(data, "nats", "jetstream", "*", "streams", "KV_jetbpm-instances", "msgs", "*.blk"))
	if err != nil || len(blocks) == 0 {
		t.Fatalf("no block file of the instances bucket under %s (%v)", data, err)
	}
	block, err := os.ReadFile(blocks[len(blocks)-1])
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []float64{0.3, 0.45, 0.6, 0.75, 0.9} {
		block[int(f*float64(len(block)))] ^= 1 << i
	}
	if err := os.WriteFile(blocks[len(blocks)-1], block, 0o600); err != nil {
		t.Fatal(err)
	}

	p = startServe(t, nil, "--data", data, "--listen", listen)
	p.waitReady()
	status, body := healthz(t, p)
	if status != http.StatusOK || !strings.HasPrefix(body, "degraded: store damaged: ") ||
		!strings.Contains(body, "lost instance(s) (flip-") || !strings.Contains(body, "stream(s) went back (KV_jetbpm-instances)") {
		t.Fatalf("/healthz: %d %q; want 200 degraded, naming the lost instances and the stream", status, body)
	}

	stdout, stderr, code := c.run("store", "check")
	if code != 1 || !strings.HasPrefix(stderr, "jetbpm: store damaged: ") {
		t.Fatalf("store check: exit %d, stderr %q; want exit 1 naming the damage\n%s", code, stderr, stdout)
	}
	var lost []string
	for i := range 20 {
		id := fmt.Sprintf("flip-%02d", i)
		out, _, code := c.run("instance", "show", id)
		if code != 0 {
			lost = append(lost, id)
			if !strings.Contains(stdout, "lost instance: "+id+"\n") {
				t.Errorf("instance %s is gone (%s), but store check does not name it", id, strings.TrimSpace(out))
			}
			if !strings.Contains(stdout, fmt.Sprintf(`: variables {"n":%d}`, i)) {
				t.Errorf("store check does not show the variables the job of %s holds", id)
			}
		} else if strings.Contains(stdout, "lost instance: "+id+"\n") {
			t.Errorf("store check names %s, which is there", id)
		}
	}
	if len(lost) == 0 {
		t.Fatal("the flipped bits lost no instance: the test proves nothing")
	}
	for _, want := range []string{`stream:\s+KV_jetbpm-instances\n`, `process:\s+flip \(version not known\)\n`, `last known at: charge\n`, `from job flip-\d+/charge/\d+ \(`} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("store check output lacks %s:\n%s", want, stdout)
		}
	}
	var res struct {
		Open    int `json:"open"`
		Records []struct {
			Kind     string `json:"kind"`
			Instance string `json:"instance"`
		} `json:"records"`
	}
	out, _, code := c.run("store", "check", "--json")
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 || res.Open != len(lost)+1 {
		t.Errorf("store check --json: exit %d, %d open (want %d), %v\n%s", code, res.Open, len(lost)+1, err, out)
	}
	t.Logf("%d of 20 instances lost; store check:\n%s", len(lost), stdout)

	// The operator recreates the first lost instance and dismisses the rest.
	if out := c.ok("store", "recreate", "instance."+lost[0]); out != lost[0]+"-recreated\n" {
		t.Errorf("store recreate printed %q", out)
	}
	c.fails(2, "missing --reason", "store", "dismiss", "instance."+lost[1])
	for _, id := range lost[1:] {
		if out := c.ok("store", "dismiss", "--reason", "refunded by hand", "instance."+id); out != "instance."+id+" dismissed\n" {
			t.Errorf("store dismiss printed %q", out)
		}
	}
	c.fails(1, "is dismissed already", "store", "dismiss", "--reason", "again", "instance."+lost[1])
	c.fails(1, "not found", "store", "recreate", "instance.nobody")
	streamKey := regexp.MustCompile(`key:\s+(stream\.\S+)`).FindStringSubmatch(stdout)
	if streamKey == nil {
		t.Fatalf("no stream record key in:\n%s", stdout)
	}
	c.ok("store", "dismiss", "--reason", "restored what could be", streamKey[1])
	if out := c.ok("store", "check"); !strings.Contains(out, "store whole") {
		t.Errorf("store check after every record was acted on:\n%s", out)
	}
	c.waitInstance(lost[0]+"-recreated", func(v view) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "charge" })
}

// Backup and restore as an operator runs them (#37): serve with instances
// waiting at an external task; 'jetbpm backup' while it runs; serve
// stopped and its data directory lost; 'jetbpm restore --data' into a new
// one; serve started on it: the store is whole (no loss counted for the
// restore), and every instance continues when a worker runs.
func TestBackupAndRestoreEndToEnd(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	listen := freeAddr(t)
	p := startServe(t, nil, "--data", data, "--listen", listen)
	url, _ := p.waitReady()["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	c.ok("deploy", writeFile(t, t.TempDir(), "flip.bpmn", flipBPMN))
	const n = 10
	for i := range n {
		c.ok("start", "flip", "--id", fmt.Sprintf("kept-%02d", i), "--vars", fmt.Sprintf(`{"n": %d}`, i))
	}
	for i := range n {
		c.waitInstance(fmt.Sprintf("kept-%02d", i), func(v view) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "charge" })
	}
	backup := filepath.Join(t.TempDir(), "backup")
	out := c.ok("backup", backup)
	if !regexp.MustCompile(`(?m)^KV_jetbpm-instances\s+10\s+\d+$`).MatchString(out) || !regexp.MustCompile(`(?m)^JETBPM_JOBS\s+10\s+\d+$`).MatchString(out) {
		t.Fatalf("backup printed:\n%s", out)
	}
	p.stop()
	if err := os.RemoveAll(data); err != nil { // the store is lost
		t.Fatal(err)
	}

	c.fails(1, "is a directory|no backup|no such file", "restore", "--data", data, t.TempDir())
	out = c.ok("restore", "--data", data, backup)
	if !regexp.MustCompile(`(?m)^KV_jetbpm-instances\s+10\s+\d+$`).MatchString(out) {
		t.Fatalf("restore printed:\n%s", out)
	}
	c.fails(1, "exists; restore into an empty store, or replace it", "restore", "--data", data, backup)

	p = startServe(t, nil, "--data", data, "--listen", listen)
	p.waitReady()
	if status, body := healthz(t, p); status != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz after the restore: %d %q; want ok (a restore is no loss)", status, body)
	}
	if out := c.ok("store", "check"); !strings.Contains(out, "store whole") || !strings.Contains(out, "10 checkpoints, 10 jobs") {
		t.Fatalf("store check after the restore:\n%s", out)
	}
	w := startWork(t, c.env, "--topic", "flip-charge", "--", "echo", `{"charged": true}`)
	for i := range n {
		v := c.waitInstance(fmt.Sprintf("kept-%02d", i), func(v view) bool { return v.Status == "completed" })
		if v.Variables["charged"] != true || v.Variables["n"] != float64(i) {
			t.Errorf("kept-%02d completed with %v", i, v.Variables)
		}
	}
	w.stop()
}

// healthz returns serve's /healthz answer.
func healthz(t *testing.T, p *serveProc) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + p.httpAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
