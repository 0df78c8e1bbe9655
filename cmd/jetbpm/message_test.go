package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/internal/testwait"
)

const messageBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  <bpmn:message id="paid" name="order-paid">
    <bpmn:extensionElements><zeebe:subscription correlationKey="=orderId"/></bpmn:extensionElements>
  </bpmn:message>
  <bpmn:process id="pay" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:intermediateCatchEvent id="wait"><bpmn:messageEventDefinition messageRef="paid"/></bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait"/>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// approveBPMN is a Camunda 7 model: its catch has no key, so it is reached
// by the instance's business key or by instance id.
const approveBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:modeler="http://camunda.org/schema/modeler/1.0" modeler:executionPlatform="Camunda Platform" id="d">
  <bpmn:message id="ok" name="approve"/>
  <bpmn:process id="approval" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:receiveTask id="wait" messageRef="ok"/>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="wait"/>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

func TestMessageCommands(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	url, _ := p.waitReady()["nats_url"].(string)
	c := client{t: t, env: []string{"JETBPM_NATS_URL=" + url}}
	dir := t.TempDir()
	c.ok("deploy", writeFile(t, dir, "pay.bpmn", messageBPMN), writeFile(t, dir, "approve.bpmn", approveBPMN))

	completedWith := func(id, name string, want any) {
		t.Helper()
		v := c.waitInstance(id, func(v view) bool { return v.Status != "active" })
		if v.Status != "completed" || v.Variables[name] != want {
			t.Errorf("instance %s = %+v, want completed with %s = %v", id, v, name, want)
		}
	}

	t.Run("correlate reaches the waiting instance", func(t *testing.T) {
		id := strings.TrimSpace(c.ok("start", "pay", "--vars", `{"orderId": "o-17"}`))
		c.waitInstance(id, func(v view) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "wait" })
		// The subscription opens after the instance parks; correlate until
		// it has reached the message partition.
		got := c.correlateWhenSubscribed("order-paid", "--key", "o-17", "--vars", `{"amount": 20}`)
		if got != id {
			t.Fatalf("message correlate printed %q, want the instance %s", got, id)
		}
		completedWith(id, "amount", 20.0)
	})

	t.Run("publish with a ttl waits for the instance", func(t *testing.T) {
		if out := c.ok("message", "publish", "order-paid", "--key", "o-18", "--ttl", "1m", "--id", "pay-18", "--vars", `{"amount": 30}`); out != "pay-18\n" {
			t.Fatalf("message publish printed %q, want the message id", out)
		}
		c.fails(1, `duplicate`, "message", "publish", "order-paid", "--key", "o-18", "--ttl", "1m", "--id", "pay-18")
		id := strings.TrimSpace(c.ok("start", "pay", "--vars", `{"orderId": "o-18"}`))
		completedWith(id, "amount", 30.0)
	})

	t.Run("correlate with nobody waiting fails and keeps nothing", func(t *testing.T) {
		c.fails(1, `no subscription for message "order-paid" with key "o-99"`, "message", "correlate", "order-paid", "--key", "o-99")
		id := strings.TrimSpace(c.ok("start", "pay", "--id", "late-99", "--vars", `{"orderId": "o-99"}`))
		v := c.waitInstance(id, func(v view) bool { return len(v.ActiveNodes) == 1 })
		if v.Status != "active" {
			t.Errorf("instance %s = %+v, want it still waiting: the failed correlate kept nothing", id, v)
		}
	})

	t.Run("business key", func(t *testing.T) {
		id := strings.TrimSpace(c.ok("start", "approval", "--business-key", "B-4"))
		c.waitInstance(id, func(v view) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "wait" })
		var res map[string]string
		out := c.correlateWhenSubscribed("approve", "--business-key", "B-4", "--json", "--vars", `{"ok": true}`)
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		if res["instanceId"] != id {
			t.Fatalf("correlate --json = %v, want instanceId %s", res, id)
		}
		completedWith(id, "ok", true)
	})

	t.Run("straight to an instance", func(t *testing.T) {
		id := strings.TrimSpace(c.ok("start", "approval"))
		c.waitInstance(id, func(v view) bool { return len(v.ActiveNodes) == 1 && v.ActiveNodes[0] == "wait" })
		if out := strings.TrimSpace(c.ok("message", "correlate", "approve", "--instance", id, "--vars", `{"n": 1}`)); out != id {
			t.Fatalf("correlate --instance printed %q, want %s", out, id)
		}
		completedWith(id, "n", 1.0)
	})

	t.Run("bad input", func(t *testing.T) {
		c.fails(2, `--key, --business-key and --instance are exclusive`, "message", "publish", "x", "--key", "k", "--instance", "i")
		c.fails(2, `--vars: want a JSON object`, "message", "publish", "x", "--vars", "[1]")
		c.fails(1, `ttl "soon"`, "message", "publish", "x", "--ttl", "soon")
		c.fails(2, `flag provided but not defined: -ttl`, "message", "correlate", "x", "--ttl", "1m")
	})
}

// correlateWhenSubscribed runs 'message correlate NAME args...' until it
// finds the subscription (an instance's subscription reaches its message
// partition just after the instance parks) and returns what it printed.
func (c client) correlateWhenSubscribed(name string, args ...string) string {
	c.t.Helper()
	var out string
	testwait.Until(c.t, 20*time.Second, "message "+name+" to find its subscription", func() error {
		stdout, stderr, code := c.run(append([]string{"message", "correlate", name}, args...)...)
		if code != 0 {
			return errors.New(strings.TrimSpace(stderr))
		}
		out = strings.TrimSpace(stdout)
		return nil
	})
	return out
}
