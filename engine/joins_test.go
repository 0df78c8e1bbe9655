package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams/streamstest"
)

// Abandoning one parallel branch's incident strands the other at the
// join. Once every token left waits there, the instance shows as needing
// an operator — status incident, the stuck join with the abandoned
// incident, listed by --status incident and active — across an engine
// restart; cancelling it ends it.
func TestAbandonedBranchLeavesInstanceStuckAtJoin(t *testing.T) {
	t.Parallel()
	env := streamstest.Start(t, streamstest.WithFastFailover(time.Second))
	ctx := context.Background()
	eng := openEngine(t, env, nil)
	deployed(t, eng, model.NewBuilder("split").StartEvent("s").ParallelGateway("fork").
		ScriptTask("charge", "missing + 1", "charged").
		ServiceTask("ship", "", model.WithWorker("ship")).
		ParallelGateway("join").EndEvent("e").
		Flow("s", "fork").Flow("fork", "charge").Flow("fork", "ship").
		Flow("charge", "join", model.FlowID("fromCharge")).Flow("ship", "join", model.FlowID("fromShip")).
		Flow("join", "e"))
	w := newRawWorker(t, env, "ship")
	id := startJob(t, eng, "split", nil)
	m, job := w.fetch()
	_, inc := waitIncident(t, eng, id)
	if err := eng.AbandonIncident(bounded(t), inc.ID); err != nil {
		t.Fatal(err)
	}
	v, err := eng.Instance(bounded(t), id)
	if err != nil || v.Status != instance.Active || len(v.Stuck) != 0 {
		t.Fatalf("after abandon, while ship still works: %+v, %v; want active, not stuck", v, err)
	}
	if r := w.report(m, job, jobs.Report{Kind: jobs.Complete}); !r.Accepted {
		t.Fatalf("complete refused: %+v", r)
	}
	v = awaitView(t, eng, id, "got stuck at the join", func(v *engine.InstanceView) bool { return len(v.Stuck) > 0 })
	check := func(v *engine.InstanceView) {
		t.Helper()
		if v.Status != engine.StatusIncident || len(v.Incidents) != 0 || !slices.Equal(v.ActiveNodes, []string{"join"}) || len(v.Stuck) != 1 {
			t.Fatalf("stuck view %+v, want status incident, no open incident, the token at join", v)
		}
		j := v.Stuck[0]
		if j.Node != "join" || !slices.Equal(j.Arrived, []string{"fromShip"}) || !slices.Equal(j.Missing, []string{"fromCharge"}) ||
			!slices.Equal(j.Abandoned, []string{inc.ID}) || j.Since.IsZero() {
			t.Fatalf("stuck join %+v, want join waiting for fromCharge, naming %s", j, inc.ID)
		}
	}
	check(v)
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	eng = openEngine(t, env, nil)
	v, err = eng.Instance(bounded(t), id)
	if err != nil {
		t.Fatal(err)
	}
	check(v)
	for _, status := range []instance.Status{engine.StatusIncident, instance.Active} {
		list, err := eng.Instances(bounded(t), engine.Filter{Status: status})
		if err != nil || len(list) != 1 || list[0].ID != id {
			t.Fatalf("instances with status %s = %+v, %v; want the stuck one", status, list, err)
		}
	}

	if err := eng.Cancel(bounded(t), id, "stuck at join"); err != nil {
		t.Fatal(err)
	}
	v, err = eng.Instance(bounded(t), id)
	if err != nil || v.Status != instance.Terminated || len(v.Stuck) != 0 || len(v.ActiveNodes) != 0 {
		t.Fatalf("after cancel: %+v, %v; want terminated, nothing stuck", v, err)
	}
	if list, err := eng.Instances(bounded(t), engine.Filter{Status: engine.StatusIncident}); err != nil || len(list) != 0 {
		t.Fatalf("instances with status incident after cancel = %+v, %v", list, err)
	}
}
