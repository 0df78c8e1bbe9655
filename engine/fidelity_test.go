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
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// These tests run Camunda models that jetbpm once ran wrongly or refused
// (docs/deviations.md), imported from XML and driven end to end.

// orderESP is a Zeebe model whose service task waits for a worker that
// never comes, inside a sub-process: message event sub-processes at the
// root (interrupting and not) and in the sub-process, all keyed by
// orderId, beside a timer event sub-process that does not fire.
const orderESP = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0"
  xmlns:modeler="http://camunda.org/schema/modeler/1.0" modeler:executionPlatform="Camunda Cloud" id="d">
  <bpmn:process id="order-esp" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:subProcess id="inner">
      <bpmn:startEvent id="is"/>
      <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="never-worked"/></bpmn:extensionElements></bpmn:serviceTask>
      <bpmn:endEvent id="ie"/>
      <bpmn:sequenceFlow id="i1" sourceRef="is" targetRef="work"/>
      <bpmn:sequenceFlow id="i2" sourceRef="work" targetRef="ie"/>
      <bpmn:subProcess id="innerCancel" triggeredByEvent="true">
        <bpmn:startEvent id="ics"><bpmn:messageEventDefinition messageRef="mInner"/></bpmn:startEvent>
        <bpmn:scriptTask id="markInner"><bpmn:extensionElements><zeebe:script expression="=&quot;inner&quot;" resultVariable="via"/></bpmn:extensionElements></bpmn:scriptTask>
        <bpmn:endEvent id="ice"/>
        <bpmn:sequenceFlow id="c1" sourceRef="ics" targetRef="markInner"/>
        <bpmn:sequenceFlow id="c2" sourceRef="markInner" targetRef="ice"/>
      </bpmn:subProcess>
    </bpmn:subProcess>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="inner"/>
    <bpmn:sequenceFlow id="f2" sourceRef="inner" targetRef="e"/>
    <bpmn:subProcess id="cancel" triggeredByEvent="true">
      <bpmn:startEvent id="cs" isInterrupting="true"><bpmn:messageEventDefinition messageRef="mCancel"/></bpmn:startEvent>
      <bpmn:scriptTask id="markCancel"><bpmn:extensionElements><zeebe:script expression="=&quot;cancel&quot;" resultVariable="via"/></bpmn:extensionElements></bpmn:scriptTask>
      <bpmn:endEvent id="ce"/>
      <bpmn:sequenceFlow id="c3" sourceRef="cs" targetRef="markCancel"/>
      <bpmn:sequenceFlow id="c4" sourceRef="markCancel" targetRef="ce"/>
    </bpmn:subProcess>
    <bpmn:subProcess id="note" triggeredByEvent="true">
      <bpmn:startEvent id="ns" isInterrupting="false"><bpmn:messageEventDefinition messageRef="mNote"/></bpmn:startEvent>
      <bpmn:scriptTask id="count"><bpmn:extensionElements><zeebe:script expression="=notes + 1" resultVariable="notes"/></bpmn:extensionElements></bpmn:scriptTask>
      <bpmn:endEvent id="ne"/>
      <bpmn:sequenceFlow id="c5" sourceRef="ns" targetRef="count"/>
      <bpmn:sequenceFlow id="c6" sourceRef="count" targetRef="ne"/>
    </bpmn:subProcess>
    <bpmn:subProcess id="late" triggeredByEvent="true">
      <bpmn:startEvent id="ts"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:startEvent>
      <bpmn:endEvent id="te"/>
      <bpmn:sequenceFlow id="c7" sourceRef="ts" targetRef="te"/>
    </bpmn:subProcess>
  </bpmn:process>
  <bpmn:message id="mCancel" name="cancelOrder"><bpmn:extensionElements><zeebe:subscription correlationKey="=orderId"/></bpmn:extensionElements></bpmn:message>
  <bpmn:message id="mNote" name="orderNote"><bpmn:extensionElements><zeebe:subscription correlationKey="=orderId"/></bpmn:extensionElements></bpmn:message>
  <bpmn:message id="mInner" name="cancelWork"><bpmn:extensionElements><zeebe:subscription correlationKey="=orderId"/></bpmn:extensionElements></bpmn:message>
</bpmn:definitions>`

// Message event sub-processes of a Zeebe model subscribe under their
// message's correlation key: at the root, interrupting and not, and in a
// sub-process; correlate and publish both reach them.
func TestEventSubProcessMessageKeysXML(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.DeployXML(ctx, strings.NewReader(orderESP)); err != nil {
		t.Fatal(err)
	}
	start := func(t *testing.T, key string) string {
		t.Helper()
		id, err := eng.Start(ctx, "order-esp", map[string]any{"orderId": key, "notes": 0})
		if err != nil {
			t.Fatal(err)
		}
		subscribed(t, env, "cancelOrder", key, 1)
		subscribed(t, env, "orderNote", key, 1)
		subscribed(t, env, "cancelWork", key, 1)
		return id
	}

	t.Run("root", func(t *testing.T) {
		id := start(t, "K9")
		// The non-interrupting one runs twice and stays subscribed.
		for range 2 {
			if _, err := eng.CorrelateMessage(ctx, engine.Message{Name: "orderNote", Key: "K9"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := eng.WaitUntil(ctx, id, func(v *engine.InstanceView) bool { return v.Variables["notes"] == int64(2) }); err != nil {
			t.Fatal(err)
		}
		subscribed(t, env, "orderNote", "K9", 1)
		if _, err := eng.PublishMessage(ctx, engine.Message{Name: "cancelOrder", Key: "K9"}); err != nil {
			t.Fatal(err)
		}
		if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["via"] != "cancel" {
			t.Fatalf("%+v: want completed by the cancel event sub-process", v)
		}
		// Its subscriptions close with it (the unsubscribes reach the
		// message partitions just after the end).
		for _, name := range []string{"orderNote", "cancelWork"} {
			m := &msgEnv{Env: env}
			testwait.True(t, 10*time.Second, name+"'s subscription to close", func() bool {
				e := m.entry(t, name, "K9")
				return e == nil || len(e.Subs) == 0
			})
			if _, err := eng.CorrelateMessage(ctx, engine.Message{Name: name, Key: "K9"}); !errors.Is(err, engine.ErrNoSubscription) {
				t.Errorf("%s after the instance ended: %v, want no subscription", name, err)
			}
		}
	})
	t.Run("sub-process", func(t *testing.T) {
		id := start(t, "K10")
		if _, err := eng.CorrelateMessage(ctx, engine.Message{Name: "cancelWork", Key: "K10"}); err != nil {
			t.Fatal(err)
		}
		if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["via"] != "inner" {
			t.Fatalf("%+v: want completed through the sub-process's event sub-process", v)
		}
	})
}

// topicsC7 and topicsZeebe queue their one job on the topic a variable
// names, as Camunda 7 (camunda:topic="${...}") and Zeebe (type="=...") do.
const topicsC7 = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="topics-c7" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="work" camunda:type="external" camunda:topic="${topicName}"/>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

const topicsZeebe = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  <bpmn:process id="topics-zeebe" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:serviceTask id="work"><bpmn:extensionElements><zeebe:taskDefinition type="=region + &quot;-billing&quot;"/></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="work"/>
    <bpmn:sequenceFlow id="f2" sourceRef="work" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// A topic expression is evaluated as each job is queued: each instance's
// job goes to the topic it names, whose consumer the first job creates.
// A topic that is not a string is an expression incident.
func TestTopicExpressionsXML(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	for _, src := range []string{topicsC7, topicsZeebe} {
		if _, err := eng.DeployXML(ctx, strings.NewReader(src)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		process string
		vars    map[string]any
		topic   string
	}{
		{"topics-c7", map[string]any{"topicName": "billing-eu"}, "billing-eu"},
		{"topics-c7", map[string]any{"topicName": "billing-us"}, "billing-us"},
		{"topics-zeebe", map[string]any{"region": "apac"}, "apac-billing"},
	} {
		t.Run(tc.topic, func(t *testing.T) {
			id, err := eng.Start(ctx, tc.process, tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			awaitView(t, eng, id, "waited at work", func(v *engine.InstanceView) bool { return slices.Equal(v.ActiveNodes, []string{"work"}) })
			// The job, and with it the topic's consumer, goes out after
			// the checkpoint that shows the instance waiting.
			testwait.Until(t, 10*time.Second, "topic "+tc.topic+"'s consumer", func() error {
				_, err := env.JS.Consumer(ctx, streams.JobsStream, streams.TopicConsumer(tc.topic))
				return err
			})
			workers := serveJobs(t, env, id, []string{tc.topic}, nil, nil, 30*time.Second)
			if v := waitDone(t, eng, id); v.Status != instance.Completed {
				t.Fatalf("%+v: want completed", v)
			}
			if served := workers.stop(); len(served) != 1 || served[0].Node != "work" {
				t.Fatalf("served %+v on %s, want work's job", served, tc.topic)
			}
		})
	}
	t.Run("not a string", func(t *testing.T) {
		id, err := eng.Start(ctx, "topics-c7", map[string]any{"topicName": 7})
		if err != nil {
			t.Fatal(err)
		}
		v := awaitView(t, eng, id, "had an incident", func(v *engine.InstanceView) bool { return len(v.Incidents) == 1 })
		if in := v.Incidents[0]; in.Node != "work" || in.CauseClass != "expression" || !strings.Contains(in.Cause, `topic "${topicName}"`) {
			t.Fatalf("incident %+v", in)
		}
	})
}

// relaxedC7 is a Camunda 7 model with what jetbpm once refused and Camunda
// 7 deploys: sequence flows without ids, a data object and data
// associations, a condition on an inclusive gateway's default flow, a
// script without a result variable, an output mapping on a link throw, an
// errorRef naming no <bpmn:error> and an operation nobody registered
// (on a branch never taken).
const relaxedC7 = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="relaxed" isExecutable="true">
    <bpmn:dataObject id="order"/>
    <bpmn:dataObjectReference id="orderRef" dataObjectRef="order"/>
    <bpmn:startEvent id="s"/>
    <bpmn:scriptTask id="check" scriptFormat="juel"><bpmn:script>${amount > 0}</bpmn:script>
      <bpmn:dataInputAssociation id="in"><bpmn:sourceRef>orderRef</bpmn:sourceRef></bpmn:dataInputAssociation></bpmn:scriptTask>
    <bpmn:inclusiveGateway id="g" default="dflt"/>
    <bpmn:scriptTask id="big" scriptFormat="juel" camunda:resultVariable="size"><bpmn:script>${"big"}</bpmn:script></bpmn:scriptTask>
    <bpmn:serviceTask id="legacy" camunda:class="com.example.Legacy"/>
    <bpmn:intermediateThrowEvent id="jump"><bpmn:extensionElements><camunda:inputOutput>
      <camunda:outputParameter name="jumped">${true}</camunda:outputParameter></camunda:inputOutput></bpmn:extensionElements>
      <bpmn:linkEventDefinition name="L"/></bpmn:intermediateThrowEvent>
    <bpmn:intermediateCatchEvent id="land"><bpmn:linkEventDefinition name="L"/></bpmn:intermediateCatchEvent>
    <bpmn:subProcess id="inner">
      <bpmn:startEvent id="is"/>
      <bpmn:endEvent id="boom"><bpmn:errorEventDefinition errorRef="NOT_DECLARED"/></bpmn:endEvent>
      <bpmn:sequenceFlow sourceRef="is" targetRef="boom"/>
    </bpmn:subProcess>
    <bpmn:boundaryEvent id="caught" attachedToRef="inner"><bpmn:errorEventDefinition errorRef="NOT_DECLARED"/></bpmn:boundaryEvent>
    <bpmn:endEvent id="e"/>
    <bpmn:endEvent id="never"/>
    <bpmn:sequenceFlow sourceRef="s" targetRef="check"/>
    <bpmn:sequenceFlow sourceRef="check" targetRef="g"/>
    <bpmn:sequenceFlow id="dflt" sourceRef="g" targetRef="big"><bpmn:conditionExpression>${false}</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow sourceRef="g" targetRef="legacy"><bpmn:conditionExpression>${amount &lt; 0}</bpmn:conditionExpression></bpmn:sequenceFlow>
    <bpmn:sequenceFlow sourceRef="legacy" targetRef="never"/>
    <bpmn:sequenceFlow sourceRef="big" targetRef="jump"/>
    <bpmn:sequenceFlow sourceRef="land" targetRef="inner"/>
    <bpmn:sequenceFlow sourceRef="inner" targetRef="never"/>
    <bpmn:sequenceFlow sourceRef="caught" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// The relaxed model deploys with a warning for each thing it ignores or
// cannot run, and runs as Camunda 7 runs it.
func TestRelaxedCamunda7ModelRuns(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	deps, err := eng.DeployXML(ctx, strings.NewReader(relaxedC7))
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, w := range deps[0].Warnings {
		warned = append(warned, w.Node)
	}
	slices.Sort(warned)
	// The inclusive default is named by its flow; two errorRefs; the
	// unregistered class.
	if want := []string{"boom", "caught", "check", "dflt", "legacy", "order", "orderRef"}; !slices.Equal(warned, want) {
		t.Fatalf("warnings on %v, want %v: %+v", warned, want, deps[0].Warnings)
	}
	for _, w := range deps[0].Warnings {
		if w.Node == "legacy" && !strings.Contains(w.Message, `"com.example.Legacy" is not registered`) {
			t.Errorf("legacy's warning: %s", w)
		}
	}
	id, err := eng.Start(ctx, "relaxed", map[string]any{"amount": 5})
	if err != nil {
		t.Fatal(err)
	}
	v := waitDone(t, eng, id)
	if v.Status != instance.Completed || v.Variables["size"] != "big" || v.Variables["jumped"] != true || !slices.Contains(v.Passed, "Flow_caught_e") {
		t.Fatalf("%+v: want completed through big, the link's mapping and the error boundary", v)
	}
	if _, ok := v.Variables["check"]; ok || len(v.Variables) != 3 {
		t.Errorf("variables %v: the script without a result variable wrote one", v.Variables)
	}
}

// A refused deploy's problems come apart with their file, line and
// element: import problems and validation problems alike.
func TestDeployProblems(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	imported := `<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL">
<bpmn:process id="a"><bpmn:startEvent id="s"/>
<bpmn:complexGateway id="c"/></bpmn:process></bpmn:definitions>`
	validated := `<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL">
<bpmn:process id="b"><bpmn:startEvent id="s"/>
<bpmn:sequenceFlow id="f" sourceRef="s" targetRef="ghost"/></bpmn:process></bpmn:definitions>`
	_, err := eng.DeployResources(bounded(t), engine.Resource{Name: "ok.bpmn", XML: []byte(topicsC7)},
		engine.Resource{Name: "a.bpmn", XML: []byte(imported)})
	ps := engine.Problems(err)
	if !errors.Is(err, engine.ErrInvalid) || len(ps) != 1 || ps[0].File != "a.bpmn" || ps[0].Line != 3 || ps[0].Element != "c" {
		t.Errorf("import problems %+v of %v", ps, err)
	}
	_, err = eng.DeployResources(bounded(t), engine.Resource{Name: "b.bpmn", XML: []byte(validated)})
	if ps := engine.Problems(err); len(ps) != 1 || ps[0].File != "b.bpmn" || ps[0].Line != 3 || ps[0].Element != "f" || !strings.Contains(ps[0].Message, "ghost") {
		t.Errorf("validation problems %+v of %v", ps, err)
	}
	if ps := engine.Problems(errors.New("other")); ps != nil {
		t.Errorf("problems of another error: %+v", ps)
	}
}

// waitStates is a Camunda 7 model with two plain receive tasks on
// parallel branches ("approve" maps the trigger's "ok" to "approved") and a
// signal race after an event-based gateway: signal "go" or a one-hour timer.
const waitStates = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:signal id="sigGo" name="go-${orderId}"/>
  <bpmn:process id="wait-states" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:parallelGateway id="fork"/>
    <bpmn:receiveTask id="approve">
      <bpmn:extensionElements><camunda:inputOutput><camunda:outputParameter name="approved">${ok}</camunda:outputParameter></camunda:inputOutput></bpmn:extensionElements>
    </bpmn:receiveTask>
    <bpmn:receiveTask id="ship"/>
    <bpmn:parallelGateway id="join"/>
    <bpmn:eventBasedGateway id="race"/>
    <bpmn:intermediateCatchEvent id="go"><bpmn:signalEventDefinition signalRef="sigGo"/></bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="late"><bpmn:timerEventDefinition><bpmn:timeDuration>PT1H</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="e"/>
    <bpmn:endEvent id="timedOut"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="fork"/>
    <bpmn:sequenceFlow id="f2" sourceRef="fork" targetRef="approve"/>
    <bpmn:sequenceFlow id="f3" sourceRef="fork" targetRef="ship"/>
    <bpmn:sequenceFlow id="f4" sourceRef="approve" targetRef="join"/>
    <bpmn:sequenceFlow id="f5" sourceRef="ship" targetRef="join"/>
    <bpmn:sequenceFlow id="f6" sourceRef="join" targetRef="race"/>
    <bpmn:sequenceFlow id="f7" sourceRef="race" targetRef="go"/>
    <bpmn:sequenceFlow id="f8" sourceRef="race" targetRef="late"/>
    <bpmn:sequenceFlow id="f9" sourceRef="go" targetRef="e"/>
    <bpmn:sequenceFlow id="f10" sourceRef="late" targetRef="timedOut"/>
  </bpmn:process>
</bpmn:definitions>`

// Plain receive tasks wait until triggered (Camunda 7's signal on an
// execution); a signal catch after an event-based gateway wins its race.
func TestPlainReceiveTasksAndSignalRaceXML(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.DeployXML(ctx, strings.NewReader(waitStates)); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "wait-states", map[string]any{"orderId": "A1"})
	if err != nil {
		t.Fatal(err)
	}
	awaitView(t, eng, id, "waited at both receive tasks", func(v *engine.InstanceView) bool {
		return slices.Equal(v.ActiveNodes, []string{"approve", "ship"})
	})

	// Refusals change nothing.
	for _, tc := range []struct {
		node string
		vars map[string]any
		want error
		text string
	}{
		{"", nil, engine.ErrInvalid, "waits at several receive tasks (approve, ship): name one"},
		{"nope", nil, engine.ErrConflict, `does not wait at receive task "nope" (it waits at approve, ship)`},
		{"approve", map[string]any{"": 1}, engine.ErrInvalid, "a variable name is empty"},
	} {
		if _, err := eng.Trigger(ctx, id, tc.node, tc.vars); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("Trigger(%q, %v): %v, want %v saying %q", tc.node, tc.vars, err, tc.want, tc.text)
		}
	}
	if _, err := eng.Trigger(ctx, "no-such-instance", "approve", nil); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Trigger on an unknown instance: %v, want ErrNotFound", err)
	}

	v, err := eng.Trigger(ctx, id, "approve", map[string]any{"ok": true}, engine.RequestID("approve-1"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.ActiveNodes, []string{"join", "ship"}) || v.Variables["approved"] != true {
		t.Fatalf("after approve: %+v", v)
	}
	// A retry of the same request applies nothing more.
	if v, err = eng.Trigger(ctx, id, "approve", map[string]any{"ok": false}, engine.RequestID("approve-1")); err != nil || v.Variables["approved"] != true {
		t.Fatalf("retried trigger: %+v, %v", v, err)
	}
	// The one plain wait left needs no name.
	if v, err = eng.Trigger(ctx, id, "", map[string]any{"carrier": "ups"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.ActiveNodes, []string{"race"}) || v.Variables["carrier"] != "ups" {
		t.Fatalf("after ship: %+v", v)
	}
	if _, err := eng.Trigger(ctx, id, "", nil); !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "waits at no receiveTask without a message") {
		t.Errorf("Trigger with nothing to trigger: %v, want ErrConflict", err)
	}

	signalsSubscribed(t, env, "go-A1", 1)
	if _, err := eng.BroadcastSignal(ctx, engine.Signal{Name: "go-A1"}); err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed || !slices.Contains(v.Passed, "e") || slices.Contains(v.Passed, "timedOut") {
		t.Fatalf("%+v: want completed at e through the signal", v)
	}
	if _, err := eng.Trigger(ctx, id, "approve", nil); !errors.Is(err, engine.ErrFinished) {
		t.Errorf("Trigger on a completed instance: %v, want ErrFinished", err)
	}
}

// reminders waits on timers whose values come from variables: a Zeebe
// FEEL duration and a Camunda 7 composite text.
const reminders = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  <bpmn:process id="reminders" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:intermediateCatchEvent id="feel"><bpmn:timerEventDefinition><bpmn:timeDuration>=reminderDelay</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:intermediateCatchEvent id="juel"><bpmn:timerEventDefinition><bpmn:timeDuration>PT${seconds}S</bpmn:timeDuration></bpmn:timerEventDefinition></bpmn:intermediateCatchEvent>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="feel"/>
    <bpmn:sequenceFlow id="f2" sourceRef="feel" targetRef="juel"/>
    <bpmn:sequenceFlow id="f3" sourceRef="juel" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// Timers from variables fire after the durations the variables give; a
// value that is no duration is an incident naming it.
func TestTimerExpressionsXML(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.DeployXML(ctx, strings.NewReader(reminders)); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, "reminders", map[string]any{"reminderDelay": "PT0.2S", "seconds": 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if v := waitDone(t, eng, id); v.Status != instance.Completed {
		t.Fatalf("%+v: want completed after both timers", v)
	}
	id, err = eng.Start(ctx, "reminders", map[string]any{"reminderDelay": "later"})
	if err != nil {
		t.Fatal(err)
	}
	v := awaitView(t, eng, id, "raised an incident", func(v *engine.InstanceView) bool { return len(v.Incidents) == 1 })
	if inc := v.Incidents[0]; inc.Node != "feel" || !strings.Contains(inc.Cause, `timer duration "=reminderDelay" gave "later"`) {
		t.Fatalf("incident %+v", inc)
	}
}

// booking is a Camunda 7 transaction: book (undone by unbook), then a
// cancel end event when cancel is true; the cancel boundary marks the
// outcome.
const booking = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:camunda="http://camunda.org/schema/1.0/bpmn" id="d">
  <bpmn:process id="booking" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:transaction id="tx">
      <bpmn:startEvent id="ts"/>
      <bpmn:task id="book"/>
      <bpmn:boundaryEvent id="bookComp" attachedToRef="book"><bpmn:compensateEventDefinition/></bpmn:boundaryEvent>
      <bpmn:scriptTask id="unbook" isForCompensation="true" scriptFormat="juel" camunda:resultVariable="unbooked"><bpmn:script>${true}</bpmn:script></bpmn:scriptTask>
      <bpmn:association id="a1" associationDirection="One" sourceRef="bookComp" targetRef="unbook"/>
      <bpmn:exclusiveGateway id="ok" default="fine"/>
      <bpmn:endEvent id="abort"><bpmn:cancelEventDefinition/></bpmn:endEvent>
      <bpmn:endEvent id="te"/>
      <bpmn:sequenceFlow id="t1" sourceRef="ts" targetRef="book"/>
      <bpmn:sequenceFlow id="t2" sourceRef="book" targetRef="ok"/>
      <bpmn:sequenceFlow id="t3" sourceRef="ok" targetRef="abort"><bpmn:conditionExpression>${cancel}</bpmn:conditionExpression></bpmn:sequenceFlow>
      <bpmn:sequenceFlow id="fine" sourceRef="ok" targetRef="te"/>
    </bpmn:transaction>
    <bpmn:boundaryEvent id="onCancel" attachedToRef="tx"><bpmn:cancelEventDefinition/></bpmn:boundaryEvent>
    <bpmn:scriptTask id="mark" scriptFormat="juel" camunda:resultVariable="outcome"><bpmn:script>${"cancelled"}</bpmn:script></bpmn:scriptTask>
    <bpmn:endEvent id="cancelled"/>
    <bpmn:endEvent id="done"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="tx"/>
    <bpmn:sequenceFlow id="f2" sourceRef="tx" targetRef="done"/>
    <bpmn:sequenceFlow id="f3" sourceRef="onCancel" targetRef="mark"/>
    <bpmn:sequenceFlow id="f4" sourceRef="mark" targetRef="cancelled"/>
  </bpmn:process>
</bpmn:definitions>`

// A cancel end event compensates its transaction and leaves by the cancel
// boundary, as in Camunda 7; without it the transaction completes.
func TestTransactionXML(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	eng := openEngine(t, env, nil)
	ctx := bounded(t)
	if _, err := eng.DeployXML(ctx, strings.NewReader(booking)); err != nil {
		t.Fatal(err)
	}
	for _, cancel := range []bool{true, false} {
		id, err := eng.Start(ctx, "booking", map[string]any{"cancel": cancel})
		if err != nil {
			t.Fatal(err)
		}
		v := waitDone(t, eng, id)
		switch {
		case v.Status != instance.Completed:
			t.Fatalf("cancel=%v: %+v", cancel, v)
		case cancel && (v.Variables["unbooked"] != true || v.Variables["outcome"] != "cancelled" || !slices.Contains(v.Passed, "cancelled")):
			t.Errorf("cancelled: %+v, want book compensated and out by the cancel boundary", v)
		case !cancel && (v.Variables["unbooked"] != nil || !slices.Contains(v.Passed, "done")):
			t.Errorf("not cancelled: %+v, want the transaction completed without compensation", v)
		}
	}
}
