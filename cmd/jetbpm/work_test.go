package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/testwait"
)

// workBPMN has one process per topic the tests work on: each is start →
// external task (Camunda 7 camunda:type="external") → end. The stock task
// maps exit code 3 to the BPMN error NO_STOCK, which a boundary catches.
const workBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
                  xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
                  xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"
                  xmlns:jetbpm="https://jetbpm.dev/schema/bpmn/1.0"
                  id="work-test" targetNamespace="https://jetbpm.dev/test">
  <bpmn:error id="no-stock" errorCode="NO_STOCK"/>
  %PROCESSES%
  <bpmn:process id="stock" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="reserve" camunda:type="external" camunda:topic="stock">
      <bpmn:extensionElements>
        <jetbpm:errorMapper>
          <jetbpm:rule code="3" bpmnError="NO_STOCK" message="out of stock"/>
        </jetbpm:errorMapper>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:endEvent id="e"/>
    <bpmn:boundaryEvent id="caught" attachedToRef="reserve">
      <bpmn:errorEventDefinition errorRef="no-stock"/>
    </bpmn:boundaryEvent>
    <bpmn:scriptTask id="backorder">
      <bpmn:extensionElements>
        <zeebe:script expression="=&quot;backorder&quot;" resultVariable="path"/>
      </bpmn:extensionElements>
    </bpmn:scriptTask>
    <bpmn:endEvent id="e2"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="reserve"/>
    <bpmn:sequenceFlow id="f2" sourceRef="reserve" targetRef="e"/>
    <bpmn:sequenceFlow id="f3" sourceRef="caught" targetRef="backorder"/>
    <bpmn:sequenceFlow id="f4" sourceRef="backorder" targetRef="e2"/>
  </bpmn:process>
</bpmn:definitions>`

// zeebeStockBPMN is a Zeebe model whose job type zstock has no error
// mapper: its worker throws NO_STOCK itself, which a boundary catches.
const zeebeStockBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"
  xmlns:modeler="http://camunda.org/schema/modeler/1.0" modeler:executionPlatform="Camunda Cloud" id="z">
  <bpmn:error id="no-stock" errorCode="NO_STOCK"/>
  <bpmn:process id="zstock" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="TYPE"/></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="e"/>
    <bpmn:boundaryEvent id="caught" attachedToRef="work"><bpmn:errorEventDefinition errorRef="no-stock"/></bpmn:boundaryEvent>
    <bpmn:scriptTask id="backorder"><bpmn:extensionElements><zeebe:script expression="=&quot;backorder&quot;" resultVariable="path"/></bpmn:extensionElements></bpmn:scriptTask>
    <bpmn:endEvent id="e2"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="e"/>
    <bpmn:sequenceFlow id="f3" sourceRef="caught" targetRef="backorder"/>
    <bpmn:sequenceFlow id="f4" sourceRef="backorder" targetRef="e2"/>
  </bpmn:process>
</bpmn:definitions>`

const simpleProcess = `
  <bpmn:process id="TOPIC" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="TOPIC"/>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="e"/>
  </bpmn:process>`

// workView is the part of 'instance show --json' these tests read.
type workView struct {
	Status    string         `json:"status"`
	Variables map[string]any `json:"variables"`
	Failure   *struct {
		Message string `json:"message"`
	} `json:"failure"`
	ActiveNodes []string `json:"activeNodes"`
	Incidents   []struct {
		ID         string `json:"id"`
		Node       string `json:"nodeId"`
		CauseClass string `json:"causeClass"`
		Cause      string `json:"cause"`
	} `json:"incidents"`
}

// incident checks that a failed job left the instance alive with one open
// incident on its task "work" and returns that incident's cause.
func (v workView) incident(t *testing.T, class string) string {
	t.Helper()
	if v.Status != "incident" || v.Failure != nil || len(v.Incidents) != 1 || v.Incidents[0].Node != "work" ||
		v.Incidents[0].CauseClass != class || !slices.Equal(v.ActiveNodes, []string{"work"}) {
		t.Errorf("instance = %+v, want status incident with one %s incident on work", v, class)
		return ""
	}
	return v.Incidents[0].Cause
}

// finished waits for the instance to leave "active" and returns its view.
func (c client) finished(id string) workView {
	c.t.Helper()
	c.waitInstance(id, func(v view) bool { return v.Status != "active" })
	var v workView
	if err := json.Unmarshal([]byte(c.ok("instance", "show", id, "--json")), &v); err != nil {
		c.t.Fatal(err)
	}
	return v
}

// workProc is a running 'jetbpm work'.
type workProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr syncBuffer
	exited chan struct{}
	code   int
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWork starts 'jetbpm work --log-format json --log-level debug args...'
// and kills it when the test ends if it still runs.
func startWork(t *testing.T, env []string, args ...string) *workProc {
	t.Helper()
	p := &workProc{t: t, exited: make(chan struct{})}
	p.cmd = exec.Command(jetbpmBin, append([]string{"work", "--log-format", "json", "--log-level", "debug"}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("jetbpm work %s stderr:\n%s", strings.Join(args, " "), p.stderr.String())
		}
	})
	return p
}

// stop sends SIGTERM and checks the worker exits 0 within 15 s.
func (p *workProc) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.t.Fatal("jetbpm work still running 15s after SIGTERM")
	}
	if p.code != 0 {
		p.t.Errorf("jetbpm work exit code after SIGTERM = %d, want 0", p.code)
	}
}

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWorkCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the worker scripts are shell scripts")
	}
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	rec := p.waitReady()
	url, _ := rec["nats_url"].(string)
	env := []string{"JETBPM_NATS_URL=" + url}
	c := client{t: t, env: env}
	dir := t.TempDir()

	var procs strings.Builder
	for _, topic := range []string{"greet", "flaky", "array", "slow"} {
		procs.WriteString(strings.ReplaceAll(simpleProcess, "TOPIC", topic))
	}
	c.ok("deploy", writeFile(t, dir, "work.bpmn", strings.Replace(workBPMN, "%PROCESSES%", procs.String(), 1)))

	greet := writeScript(t, dir, "greet.sh", `input=$(cat)
[ "$input" = "$JETBPM_JOB_INPUT" ] || { echo "stdin and JETBPM_JOB_INPUT differ" >&2; exit 9; }
printf '{"greeting": "hello %s", "stdin": %s, "count": %s, "instance": "%s", "topic": "%s", "node": "%s", "job": "%s", "delivered": "%s"}\n' \
  "$JETBPM_VAR_name" "$input" "$JETBPM_VAR_count" "$JETBPM_INSTANCE_ID" "$JETBPM_JOB_TOPIC" "$JETBPM_NODE_ID" "$JETBPM_JOB_ID" "$JETBPM_JOB_DELIVERED_AT"
`)
	stock := writeScript(t, dir, "stock.sh", `echo "no stock for $JETBPM_VAR_sku" >&2
exit 3
`)
	runs := filepath.Join(dir, "flaky-runs")
	flaky := writeScript(t, dir, "flaky.sh", `echo run >> "$RUNS"
echo boom >&2
exit 1
`)
	array := writeScript(t, dir, "array.sh", `echo '[1, 2]'`)
	c.ok("deploy", writeFile(t, dir, "zstock.bpmn", strings.Replace(zeebeStockBPMN, "TYPE", "zstock", 1)))
	c.ok("deploy", writeFile(t, dir, "zbad.bpmn", strings.NewReplacer("TYPE", "zbad", `"zstock"`, `"zbad"`).Replace(zeebeStockBPMN)))
	throws := writeScript(t, dir, "throws.sh", `echo '{"code": "NO_STOCK", "message": "none left", "variables": {"left": 0}}'
exit 90
`)
	throwsBadly := writeScript(t, dir, "throws-badly.sh", `echo '{"message": "no code"}'
exit 90
`)

	startWork(t, env, "--topic", "greet", "--", greet)
	startWork(t, env, "--topic", "stock", "--concurrency", "2", "--", stock)
	startWork(t, append(env, "RUNS="+runs), "--topic", "flaky", "--name", "flaky-1", "--", flaky)
	startWork(t, env, "--topic", "array", "--", array)
	startWork(t, env, "--topic", "zstock", "--", throws)
	startWork(t, env, "--topic", "zbad", "--", throwsBadly)

	t.Run("success with JSON output", func(t *testing.T) {
		c := client{t: t, env: env}
		id := strings.TrimSpace(c.ok("start", "greet", "--vars", `{"name": "world", "count": 2}`))
		v := c.finished(id)
		stdin, _ := v.Variables["stdin"].(map[string]any)
		if v.Status != "completed" || v.Variables["greeting"] != "hello world" || v.Variables["count"] != 2.0 ||
			stdin["name"] != "world" || v.Variables["instance"] != id || v.Variables["topic"] != "greet" ||
			v.Variables["node"] != "work" || !strings.HasPrefix(v.Variables["job"].(string), id+"/work/") {
			t.Errorf("instance = %+v, want completed with the script's output", v)
		}
		if at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(v.Variables["delivered"])); err != nil || time.Since(at) > time.Minute || time.Until(at) > 0 {
			t.Errorf("JETBPM_JOB_DELIVERED_AT = %v (%v), want the time the worker received the job", v.Variables["delivered"], err)
		}
	})

	t.Run("exit 3 mapped to a BPMN error", func(t *testing.T) {
		c := client{t: t, env: env}
		id := strings.TrimSpace(c.ok("start", "stock", "--vars", `{"sku": "A-1"}`))
		if v := c.finished(id); v.Status != "completed" || v.Variables["path"] != "backorder" {
			t.Errorf("instance = %+v, want completed through the NO_STOCK boundary", v)
		}
	})

	t.Run("exit 90 throws the BPMN error stdout names", func(t *testing.T) {
		c := client{t: t, env: env}
		id := strings.TrimSpace(c.ok("start", "zstock"))
		if v := c.finished(id); v.Status != "completed" || v.Variables["path"] != "backorder" || v.Variables["left"] != 0.0 {
			t.Errorf("instance = %+v, want completed through the NO_STOCK boundary with left = 0", v)
		}
		id = strings.TrimSpace(c.ok("start", "zbad"))
		if cause := c.finished(id).incident(t, "retriesExhausted"); !strings.Contains(cause, `exit 90 throws a BPMN error: \"code\" is missing or empty; print {`) {
			t.Errorf("incident cause %q, want it to say what exit 90 needs", cause)
		}
	})

	t.Run("always failing is retried then exhausted", func(t *testing.T) {
		c := client{t: t, env: env}
		id := strings.TrimSpace(c.ok("start", "flaky"))
		cause := c.finished(id).incident(t, "retriesExhausted")
		if !strings.Contains(cause, "retries exhausted") || !strings.Contains(cause, "code 1") || !strings.Contains(cause, "boom") {
			t.Errorf("incident cause %q, want retries exhausted with code 1 and the script's stderr", cause)
		}
		if b, _ := os.ReadFile(runs); strings.Count(string(b), "run\n") != 3 {
			t.Errorf("the script ran %d times, want 3 (the default retry policy)", strings.Count(string(b), "run\n"))
		}
	})

	t.Run("stdout not a JSON object", func(t *testing.T) {
		c := client{t: t, env: env}
		id := strings.TrimSpace(c.ok("start", "array"))
		if cause := c.finished(id).incident(t, "retriesExhausted"); !strings.Contains(cause, "printed a JSON array on stdout, not an object") {
			t.Errorf("incident cause %q, want it naming the array", cause)
		}
	})

	t.Run("SIGTERM drains the running command", func(t *testing.T) {
		c := client{t: t, env: env}
		started := filepath.Join(dir, "slow-started")
		slow := writeScript(t, dir, "slow.sh", `touch "$STARTED"
sleep 1
echo '{"slept": true}'
`)
		w := startWork(t, append(env, "STARTED="+started), "--topic", "slow", "--", slow)
		id := strings.TrimSpace(c.ok("start", "slow"))
		testwait.Until(t, 20*time.Second, "the slow script to start", func() error {
			_, err := os.Stat(started)
			return err
		})
		w.stop()
		if v := c.finished(id); v.Status != "completed" || v.Variables["slept"] != true {
			t.Errorf("instance = %+v, want completed by the drained command", v)
		}
	})
}

func TestWorkUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"work", "--", "true"}, `^jetbpm: missing --topic; run 'jetbpm help work'$`},
		{[]string{"work", "--topic", "t"}, `^jetbpm: missing CMD; run 'jetbpm help work'$`},
		{[]string{"work", "--topic", "t", "--concurrency", "0", "--", "true"}, `^jetbpm: --concurrency must be 1 or more; run 'jetbpm help work'$`},
		{[]string{"work", "--topic", "t", "--bpmn-error-exit", "256", "--", "true"}, `^jetbpm: --bpmn-error-exit must be an exit status from 1 to 255, or 0 for none; run 'jetbpm help work'$`},
		{[]string{"work", "--topic", "t", "--", "no-such-command-xyz"}, `^jetbpm: exec: "no-such-command-xyz": executable file not found in \$PATH; run 'jetbpm help work'$`},
	}
	for _, tc := range cases {
		checkFails(t, nil, 2, tc.want, tc.args...)
	}
	checkFails(t, nil, 1, `^jetbpm: cannot connect to NATS at nats://`, "work", "--topic", "t", "--nats-url", "nats://"+freeAddr(t), "--", "true")
}

func TestJobEnvNames(t *testing.T) {
	for name, want := range map[string]bool{"amount": true, "_x1": true, "A_B": true, "1x": false, "a-b": false, "": false, "é": false} {
		if got := validEnvName(name); got != want {
			t.Errorf("validEnvName(%q) = %v, want %v", name, got, want)
		}
	}
	b := &tailBuffer{max: 4}
	b.Write([]byte("abc"))
	b.Write([]byte("def"))
	if got := b.String(); got != "…cdef" {
		t.Errorf("tailBuffer = %q, want …cdef", got)
	}
}
