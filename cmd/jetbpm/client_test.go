package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/jetbpm/jetbpm/engine/bpmnxml"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

const orderBPMN = "../../examples/order.bpmn"

func TestExampleOrderImports(t *testing.T) {
	procs, err := bpmnxml.ParseFile(orderBPMN)
	if err != nil {
		t.Fatal(err)
	}
	if len(procs) != 1 || procs[0].ID != "order" {
		t.Fatalf("got %d processes, want the one process \"order\"", len(procs))
	}
}

// client runs client commands against one jetbpm serve.
type client struct {
	t   *testing.T
	env []string
	// flags are added to every command (connection flags such as --tls-ca).
	flags []string
}

func (c client) run(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	return runJetbpm(c.t, c.env, append(args, c.flags...)...)
}

// ok runs a command that must succeed and returns its stdout.
func (c client) ok(args ...string) string {
	c.t.Helper()
	stdout, stderr, code := c.run(args...)
	if code != 0 || stderr != "" {
		c.t.Fatalf("jetbpm %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// fails runs a command that must exit with code, print nothing on stdout
// and one line on stderr matching want, and returns that line.
func (c client) fails(code int, want string, args ...string) string {
	c.t.Helper()
	return checkFails(c.t, c.env, code, want, args...)
}

func checkFails(t *testing.T, env []string, code int, want string, args ...string) string {
	t.Helper()
	stdout, stderr, got := runJetbpm(t, env, args...)
	line := strings.TrimSuffix(stderr, "\n")
	if got != code || stdout != "" || !strings.HasSuffix(stderr, "\n") || strings.Contains(line, "\n") ||
		!strings.HasPrefix(line, "jetbpm: ") || !regexp.MustCompile(want).MatchString(line) {
		t.Errorf("jetbpm %s: exit %d, stdout %q, stderr %q; want exit %d and one line matching %s",
			strings.Join(args, " "), got, stdout, stderr, code, want)
	}
	return line
}

// view is the part of an instance's JSON the tests look at.
type view struct {
	ID          string         `json:"id"`
	ProcessID   string         `json:"processId"`
	Version     int            `json:"version"`
	Status      string         `json:"status"`
	Variables   map[string]any `json:"variables"`
	ActiveNodes []string       `json:"activeNodes"`
}

// waitInstance polls 'instance show ID --json' for up to 20 s until cond
// holds; "not found" is retried, since an instance runs after start returns.
func (c client) waitInstance(id string, cond func(view) bool) view {
	c.t.Helper()
	var last view
	testwait.Until(c.t, 20*time.Second, "instance "+id+" to meet the condition", func() error {
		stdout, stderr, code := c.run("instance", "show", id, "--json")
		switch {
		case code == 0:
			last = view{}
			if err := json.Unmarshal([]byte(stdout), &last); err != nil {
				c.t.Fatalf("instance show %s --json: %v\n%s", id, err, stdout)
			}
			if cond(last) {
				return nil
			}
			return fmt.Errorf("last view %+v", last)
		case !strings.Contains(stderr, "not found"):
			c.t.Fatalf("instance show %s --json: exit %d, stderr %q", id, code, stderr)
		}
		return errors.New(strings.TrimSpace(stderr))
	})
	return last
}

func TestClientCommands(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	rec := p.waitReady()
	url, _ := rec["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	dir := t.TempDir()

	// order-slow is order with a one-hour review, so it stays active.
	src, err := os.ReadFile(orderBPMN)
	if err != nil {
		t.Fatal(err)
	}
	slow := strings.Replace(strings.Replace(string(src), `id="order"`, `id="order-slow"`, 1), "PT2S", "PT1H", 1)
	slowFile := writeFile(t, dir, "slow.bpmn", slow)

	t.Run("deploy", func(t *testing.T) {
		if out := c.ok("deploy", orderBPMN); out != "order 1\n" {
			t.Errorf("first deploy printed %q, want \"order 1\\n\"", out)
		}
		if out := c.ok("deploy", orderBPMN); out != "order 1 (unchanged)\n" {
			t.Errorf("second deploy printed %q, want \"order 1 (unchanged)\\n\"", out)
		}
		var deps []map[string]any
		if err := json.Unmarshal([]byte(c.ok("deploy", "--json", orderBPMN, slowFile)), &deps); err != nil {
			t.Fatal(err)
		}
		if len(deps) != 2 || deps[0]["processId"] != "order" || deps[0]["new"] != false ||
			deps[1]["processId"] != "order-slow" || deps[1]["version"] != 1.0 || deps[1]["new"] != true {
			t.Errorf("deploy --json = %v", deps)
		}

		// A new version with a timer start says when it first fires.
		timed := writeFile(t, dir, "timed.bpmn", `<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL">
<bpmn:process id="timed" isExecutable="true">
<bpmn:startEvent id="tick"><bpmn:timerEventDefinition><bpmn:timeDate>2099-01-01T00:00:00Z</bpmn:timeDate></bpmn:timerEventDefinition></bpmn:startEvent>
<bpmn:sequenceFlow id="f" sourceRef="tick" targetRef="e"/>
<bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>`)
		if out, want := c.ok("deploy", timed), "timed 1 (timer start tick first fires 2099-01-01T00:00:00Z)\n"; out != want {
			t.Errorf("deploy of a timer start printed %q, want %q", out, want)
		}

		missing := filepath.Join(dir, "missing.bpmn")
		c.fails(1, `^jetbpm: cannot read .*missing\.bpmn: no such file or directory$`, "deploy", orderBPMN, missing)

		bad := writeFile(t, dir, "bad.bpmn", `<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"><bpmn:process id="bad">`)
		c.fails(1, `bad\.bpmn: line 1: malformed XML`, "deploy", bad)

		multi := writeFile(t, dir, "multi.bpmn", `<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL">
<bpmn:process id="multi">
<bpmn:startEvent id="s"/>
<bpmn:businessRuleTask id="u1"/>
<bpmn:businessRuleTask id="u2"/>
<bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>`)
		// The good file goes down with the bad one: nothing is deployed.
		never := writeFile(t, dir, "never.bpmn", strings.Replace(string(src), `id="order"`, `id="never"`, 1))
		c.fails(1, `multi\.bpmn: line 4: <bpmn:businessRuleTask id="u1">: .* \(and 1 more problem\)$`, "deploy", never, multi)
		// --verbose prints every problem, --json each with its file, line
		// and element.
		stdout, stderr, code := c.run("deploy", "--verbose", never, multi)
		wantErr := multi + ": line 4: <bpmn:businessRuleTask id=\"u1\">: business rule tasks are not supported\n" +
			multi + ": line 5: <bpmn:businessRuleTask id=\"u2\">: business rule tasks are not supported\n" +
			"jetbpm: nothing deployed: 2 problems\n"
		if code != 1 || stdout != "" || stderr != wantErr {
			t.Errorf("deploy --verbose: exit %d, stdout %q, stderr %q; want exit 1 and stderr %q", code, stdout, stderr, wantErr)
		}
		stdout, _, code = c.run("deploy", "--json", never, multi)
		var refusal struct {
			Error struct {
				Code     string
				Problems []struct {
					File, Element, Message string
					Line                   int
				}
			}
		}
		if err := json.Unmarshal([]byte(stdout), &refusal); err != nil || code != 1 {
			t.Fatalf("deploy --json: exit %d, stdout %q: %v", code, stdout, err)
		}
		if ps := refusal.Error.Problems; refusal.Error.Code != "invalid" || len(ps) != 2 || ps[0].File != multi || ps[0].Line != 4 || ps[0].Element != "u1" ||
			ps[1].Line != 5 || ps[1].Element != "u2" || !strings.Contains(ps[1].Message, "business rule tasks are not supported") {
			t.Errorf("deploy --json: %+v", refusal)
		}
		c.fails(1, `^jetbpm: process "never": not found$`, "start", "never")
	})

	var smallID string
	t.Run("start and complete", func(t *testing.T) {
		smallID = strings.TrimSpace(c.ok("start", "order", "--vars", `{"amount": 10, "quantity": 2}`))
		if smallID == "" || strings.ContainsAny(smallID, " \n") {
			t.Fatalf("start printed %q, want an instance id", smallID)
		}
		v := c.waitInstance(smallID, func(v view) bool { return v.Status != "active" })
		if v.Status != "completed" || v.Variables["total"] != 20.0 || v.ProcessID != "order" || v.Version != 1 {
			t.Errorf("instance %s = %+v, want completed with total 20", smallID, v)
		}
		out := c.ok("instance", "show", smallID)
		for _, want := range []string{"id:", smallID, "order@1", "status:", "completed", "ended:", `"total": 20`} {
			if !strings.Contains(out, want) {
				t.Errorf("instance show lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("start active and cancel", func(t *testing.T) {
		var started map[string]string
		if err := json.Unmarshal([]byte(c.ok("start", "order-slow", "--id", "slow-1", "--json", "--vars", `{"amount": 600, "quantity": 2}`)), &started); err != nil {
			t.Fatal(err)
		}
		if started["id"] != "slow-1" {
			t.Fatalf("start --json = %v, want id slow-1", started)
		}
		v := c.waitInstance("slow-1", func(v view) bool { return slices.Contains(v.ActiveNodes, "manual-review") })
		if v.Status != "active" || v.Variables["total"] != 1200.0 {
			t.Errorf("instance slow-1 = %+v, want active at manual-review with total 1200", v)
		}
		if out := c.ok("instance", "show", "slow-1"); !strings.Contains(out, "active nodes: manual-review") {
			t.Errorf("instance show lacks the active node:\n%s", out)
		}
		if out := c.ok("instance", "cancel", "slow-1", "--reason", "test"); out != "slow-1 terminated\n" {
			t.Errorf("cancel printed %q, want \"slow-1 terminated\\n\"", out)
		}
		c.fails(1, `terminated|finished`, "instance", "cancel", "slow-1")
		if v := c.waitInstance("slow-1", func(view) bool { return true }); v.Status != "terminated" {
			t.Errorf("after cancel status = %s, want terminated", v.Status)
		}
	})

	t.Run("errors", func(t *testing.T) {
		c.fails(1, `^jetbpm: process "nope": not found$`, "start", "nope")
		c.fails(2, `^jetbpm: --vars: not valid JSON`, "start", "order", "--vars", "nope")
		c.fails(2, `^jetbpm: --vars: want a JSON object, not array`, "start", "order", "--vars", "[1]")
		c.fails(1, `^jetbpm: instance "nope": not found$`, "instance", "show", "nope")
		c.fails(1, `not found`, "instance", "cancel", "nope")
		c.fails(2, `want one of active, incident, completed, failed, terminated`, "instances", "list", "--status", "bogus")
	})

	t.Run("list", func(t *testing.T) {
		ids := func(args ...string) []string {
			var list []view
			if err := json.Unmarshal([]byte(c.ok(append([]string{"instances", "list", "--json"}, args...)...)), &list); err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, v := range list {
				out = append(out, v.ID)
			}
			return out
		}
		if all := ids(); !slices.Contains(all, smallID) || !slices.Contains(all, "slow-1") {
			t.Errorf("instances list --json = %v, want %s and slow-1", all, smallID)
		}
		if got := ids("--process", "order-slow"); !slices.Equal(got, []string{"slow-1"}) {
			t.Errorf("--process order-slow = %v, want [slow-1]", got)
		}
		if got := ids("--status", "terminated"); !slices.Equal(got, []string{"slow-1"}) {
			t.Errorf("--status terminated = %v, want [slow-1]", got)
		}
		if got := ids("--process", "nope"); len(got) != 0 {
			t.Errorf("--process nope = %v, want []", got)
		}
		if out := c.ok("instances", "list", "--json", "--process", "nope"); strings.TrimSpace(out) != "[]" {
			t.Errorf("empty list printed %q, want []", out)
		}
		table := c.ok("instances", "list", "--process", "order-slow")
		lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
		if len(lines) != 2 || !regexp.MustCompile(`^ID +PROCESS +VERSION +STATUS +STARTED +ACTIVE NODES$`).MatchString(lines[0]) ||
			!regexp.MustCompile(`^slow-1 +order-slow +1 +terminated +\S+`).MatchString(lines[1]) {
			t.Errorf("instances list table:\n%s", table)
		}
	})
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clientCalls are one call of each client command.
var clientCalls = [][]string{
	{"deploy", orderBPMN},
	{"start", "order"},
	{"instance", "show", "x"},
	{"instance", "cancel", "x"},
	{"instances", "list"},
	{"incidents", "list"},
	{"incident", "show", "x"},
	{"incident", "retry", "x"},
	{"incident", "resolve", "x"},
	{"incident", "abandon", "x"},
}

func TestClientWithoutNATS(t *testing.T) {
	url := "nats://" + freeAddr(t)
	for _, args := range clientCalls {
		start := time.Now()
		checkFails(t, nil, 1, `^jetbpm: cannot connect to NATS at `+regexp.QuoteMeta(url)+`: `, append(args, "--nats-url", url)...)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("jetbpm %s took %s without NATS, want under 5s", strings.Join(args, " "), took)
		}
	}
}

func TestClientWithoutEngine(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	url := ns.ClientURL()
	want := `^jetbpm: no jetbpm engine answered on ` + regexp.QuoteMeta(url) + ` \(is 'jetbpm serve' running\?\)$`
	for _, args := range clientCalls {
		checkFails(t, []string{"JETBPM_NATS_URL=" + url}, 1, want, args...)
	}
}
