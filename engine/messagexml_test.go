package engine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/testwait"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// These tests run message models as BPMN XML, in both dialects: the
// import, the step and the message partitions together.

// The corpus files with an event-based gateway run down their message
// branch: the timer branch's job never runs.
func TestMessageCorpusFilesRun(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	for _, tc := range []struct {
		file, process string
		vars          map[string]any
		message, key  string
		// waitsAt is where the instance waits for the message (the
		// gateway's catches); jobs are the nodes whose jobs must run.
		waitsAt []string
		jobs    []string
	}{
		{"lib-bpmn-engine/message-intermediate-timer-event.bpmn", "message-intermediate-timer-event",
			map[string]any{"message": "m-1"}, "message", "m-1",
			[]string{"event-based-gateway"}, []string{"task-for-message"}},
		{"lib-bpmn-engine/timeout-example.bpmn", "timeout-example",
			map[string]any{"key": "q-7"}, "answer", "q-7",
			[]string{"Gateway_0znojsq"}, []string{"ask", "win"}},
		{"zeebe-node/Client-DeployWorkflow.bpmn", "test-process",
			map[string]any{"uniqueId": "u-3"}, "Message_In", "u-3",
			[]string{"ExclusiveGateway_0wne7eb"}, []string{"ServiceTask_0xdwuw7", "ServiceTask_1ng04rq"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			deps, err := eng.DeployFile(ctx, corpus+tc.file)
			if err != nil {
				t.Fatal(err)
			}
			p, err := eng.Process(ctx, tc.process, deps[0].Version)
			if err != nil {
				t.Fatal(err)
			}
			id, err := eng.Start(ctx, tc.process, tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			workers := serveJobs(t, env, id, processTopics(p), nil, nil, 30*time.Second)
			if _, err := eng.WaitUntil(ctx, id, func(v *engine.InstanceView) bool { return slices.Equal(v.ActiveNodes, tc.waitsAt) }); err != nil {
				t.Fatalf("never waited at %v: %v", tc.waitsAt, err)
			}
			subscribed(t, env, tc.message, tc.key, 1)
			if _, err := eng.PublishMessage(ctx, engine.Message{Name: tc.message, Key: tc.key}); err != nil {
				t.Fatal(err)
			}
			v := waitDone(t, eng, id)
			var worked []string
			for _, j := range workers.stop() {
				worked = append(worked, j.Node)
			}
			if v.Status != instance.Completed || !slices.Equal(worked, tc.jobs) {
				t.Fatalf("status %s, jobs worked %v; want completed after %v", v.Status, worked, tc.jobs)
			}
		})
	}
}

// approvalC7 is a Camunda 7 model: a receive task without a key (reached
// by business key) against a timer (WAIT, an ISO 8601 duration) on an
// event-based gateway; each branch sets "via".
const approvalC7 = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn"
  xmlns:modeler="http://camunda.org/schema/modeler/1.0" modeler:executionPlatform="Camunda Platform" id="d">
  <bpmn:message id="m" name="approved"/>
  <bpmn:process id="approval-c7" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:eventBasedGateway id="g"/>
    <bpmn:receiveTask id="answer" messageRef="m"/>
    <bpmn:intermediateCatchEvent id="timeout"><bpmn:timerEventDefinition><bpmn:timeDuration>WAIT</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:scriptTask id="byMessage" scriptFormat="juel" camunda:resultVariable="via"><bpmn:script>${"message"}</bpmn:script></bpmn:scriptTask>
    <bpmn:scriptTask id="byTimer" scriptFormat="juel" camunda:resultVariable="via"><bpmn:script>${"timer"}</bpmn:script></bpmn:scriptTask>
    <bpmn:endEvent id="e1"/>
    <bpmn:endEvent id="e2"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
    <bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="answer"/>
    <bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="timeout"/>
    <bpmn:sequenceFlow id="f4" sourceRef="answer" targetRef="byMessage"/>
    <bpmn:sequenceFlow id="f5" sourceRef="timeout" targetRef="byTimer"/>
    <bpmn:sequenceFlow id="f6" sourceRef="byMessage" targetRef="e1"/>
    <bpmn:sequenceFlow id="f7" sourceRef="byTimer" targetRef="e2"/>
  </bpmn:process>
</bpmn:definitions>`

// approvalZeebe is the same race in the Zeebe dialect, the message keyed by
// a variable.
const approvalZeebe = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"
  xmlns:modeler="http://camunda.org/schema/modeler/1.0" modeler:executionPlatform="Camunda Cloud" id="d">
  <bpmn:message id="m" name="approved"><bpmn:extensionElements><zeebe:subscription correlationKey="=requestId"/></bpmn:extensionElements></bpmn:message>
  <bpmn:process id="approval-zeebe" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:eventBasedGateway id="g"/>
    <bpmn:intermediateCatchEvent id="answer"><bpmn:messageEventDefinition messageRef="m"/></bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="timeout"><bpmn:timerEventDefinition><bpmn:timeDuration>WAIT</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:scriptTask id="byMessage"><bpmn:extensionElements><zeebe:script expression="=&quot;message&quot;" resultVariable="via"/></bpmn:extensionElements></bpmn:scriptTask>
    <bpmn:scriptTask id="byTimer"><bpmn:extensionElements><zeebe:script expression="=&quot;timer&quot;" resultVariable="via"/></bpmn:extensionElements></bpmn:scriptTask>
    <bpmn:endEvent id="e1"/>
    <bpmn:endEvent id="e2"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="g"/>
    <bpmn:sequenceFlow id="f2" sourceRef="g" targetRef="answer"/>
    <bpmn:sequenceFlow id="f3" sourceRef="g" targetRef="timeout"/>
    <bpmn:sequenceFlow id="f4" sourceRef="answer" targetRef="byMessage"/>
    <bpmn:sequenceFlow id="f5" sourceRef="timeout" targetRef="byTimer"/>
    <bpmn:sequenceFlow id="f6" sourceRef="byMessage" targetRef="e1"/>
    <bpmn:sequenceFlow id="f7" sourceRef="byTimer" targetRef="e2"/>
  </bpmn:process>
</bpmn:definitions>`

// The message-or-timer race of an event-based gateway, both ways, in both
// dialects: the loser is closed (a later message finds no subscription).
func TestEventGatewayXMLBothWays(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	// deploy makes the timer wait d in both processes (a new version).
	deploy := func(d string) {
		t.Helper()
		for _, src := range []string{approvalC7, approvalZeebe} {
			if _, err := eng.DeployXML(ctx, strings.NewReader(strings.Replace(src, "WAIT", d, 1))); err != nil {
				t.Fatal(err)
			}
		}
	}
	dialects := []struct {
		dialect, key string
		start        func(vars map[string]any) (string, error)
	}{
		{"camunda7", instance.BusinessKeyPrefix + "B-1", func(vars map[string]any) (string, error) {
			return eng.Start(ctx, "approval-c7", vars, engine.BusinessKey("B-1"))
		}},
		{"zeebe", "r-1", func(vars map[string]any) (string, error) {
			vars["requestId"] = "r-1"
			return eng.Start(ctx, "approval-zeebe", vars)
		}},
	}
	deploy("PT1H")
	for _, tc := range dialects {
		t.Run(tc.dialect+" message wins", func(t *testing.T) {
			id, err := tc.start(map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			subscribed(t, env, "approved", tc.key, 1)
			if _, err := eng.PublishMessage(ctx, engine.Message{Name: "approved", Key: tc.key, Vars: map[string]any{"by": "ann"}}); err != nil {
				t.Fatal(err)
			}
			v := waitDone(t, eng, id)
			if v.Status != instance.Completed || v.Variables["via"] != "message" || v.Variables["by"] != "ann" {
				t.Fatalf("%+v: want completed via the message, with its variable", v)
			}
		})
	}
	deploy("PT0.2S")
	for _, tc := range dialects {
		t.Run(tc.dialect+" timer wins", func(t *testing.T) {
			id, err := tc.start(map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			v := waitDone(t, eng, id)
			if v.Status != instance.Completed || v.Variables["via"] != "timer" {
				t.Fatalf("%+v: want completed via the timer", v)
			}
			// The message branch's subscription closed with the timer's win
			// (the unsubscribe reaches the partition just after).
			testwait.Until(t, 10*time.Second, "the losing subscription to close", func() error {
				_, err := eng.CorrelateMessage(ctx, engine.Message{Name: "approved", Key: tc.key})
				if errors.Is(err, engine.ErrNoSubscription) {
					return nil
				}
				if err != nil {
					return err
				}
				t.Fatal("a message correlated to a finished instance's closed subscription")
				return nil
			})
		})
	}
}
