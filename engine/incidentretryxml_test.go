package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/incidents"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// failOnce is an in-process operation whose first run fails.
type failOnce struct {
	calls atomic.Int64
	first atomic.Uint64 // the activation of the failed run
}

func (f *failOnce) run(ctx context.Context, _ map[string]any) (map[string]any, error) {
	if f.calls.Add(1) == 1 {
		if c, ok := engine.CallInfo(ctx); ok {
			f.first.Store(c.Activation)
		}
		return nil, errors.New("gateway down")
	}
	return map[string]any{"receipt": "r-2"}, nil
}

// An activity's <jetbpm:incidentRetry> in BPMN XML is the policy its
// incident is retried under, with no operator and no engine-wide policy:
// the first run fails, the scheduled retry runs it again after the delay,
// and that run succeeds.
func TestXMLIncidentRetryRetriesAutomatically(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t)
	op := &failOnce{}
	ops := &engine.Operations{}
	ops.Register("charge", op.run)
	eng := openEngine(t, env, ops)
	const delay = 100 * time.Millisecond
	const src = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
                  xmlns:jetbpm="https://jetbpm.dev/schema/bpmn/1.0" id="defs">
  <bpmn:process id="xml-incident-retry" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="charge"/>
    <bpmn:serviceTask id="charge" jetbpm:operation="charge">
      <bpmn:extensionElements>
        <jetbpm:incidentRetry kind="fixed" maxAttempts="2" delay="PT0.1S"/>
      </bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f2" sourceRef="charge" targetRef="e"/>
    <bpmn:endEvent id="e"/>
  </bpmn:process>
</bpmn:definitions>`
	if _, err := eng.DeployXML(bounded(t), strings.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	id := startJob(t, eng, "xml-incident-retry", nil)
	if v := waitDone(t, eng, id); v.Status != instance.Completed || v.Variables["receipt"] != "r-2" || len(v.Incidents) != 0 {
		t.Fatalf("%+v: want completed by the retry, with its receipt", v)
	}
	if n := op.calls.Load(); n != 2 {
		t.Fatalf("charge ran %d times, want 2: the failed run and the automatic retry", n)
	}

	inc := fmt.Sprintf("%s/charge/%d", id, op.first.Load())
	rec := awaitRecord(t, env, inc, func(r *incidents.Record) bool { return r.State != incidents.Open })
	want := []incidents.Kind{incidents.Raised, incidents.RetryScheduled, incidents.Retried, incidents.ResolvedKind}
	kinds := recordKinds(rec)
	if !slices.Equal(kinds, want) || rec.State != incidents.Resolved || rec.Attempts != 1 {
		t.Fatalf("record %+v (history %v): want %v, resolved after one raise", rec, kinds, want)
	}
	retried := rec.History[2]
	if retried.Command != "" || retried.Time.Before(rec.FirstFailure.Add(delay)) {
		t.Fatalf("retry %+v after the first failure at %v: want the policy's timer (no command), %v later at the earliest",
			retried, rec.FirstFailure, delay)
	}
}
