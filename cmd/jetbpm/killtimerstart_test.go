package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetbpm/jetbpm/engine/api"
	"github.com/jetbpm/jetbpm/internal/testwait"
)

// TestServeKilledAcrossTimerStartFire runs jetbpm serve with the failpoint
// that SIGKILLs the process right after a checkpoint write: the first
// checkpoint is that of the instance a timer start's fire starts, so serve
// dies with its instance written but its facts not published, and the
// fire taken but (unless its handler was quicker than the partition) not
// acknowledged. After a restart on the same data directory the
// fire makes exactly one instance, which completes once.
func TestServeKilledAcrossTimerStartFire(t *testing.T) {
	serve := startCrashingServe(t, 1)
	url := serve.url

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	due := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
	xml := `<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL">
<bpmn:process id="once" isExecutable="true">
<bpmn:startEvent id="tick"><bpmn:timerEventDefinition><bpmn:timeDate>` + due + `</bpmn:timeDate></bpmn:timerEventDefinition></bpmn:startEvent>
<bpmn:sequenceFlow id="f" sourceRef="tick" targetRef="e"/>
<bpmn:endEvent id="e"/>
</bpmn:process>
</bpmn:definitions>`
	deps, err := api.NewClient(natsConn(t, url)).Deploy(ctx, api.File{Name: "once.bpmn", XML: xml})
	if err != nil || len(deps) != 1 || deps[0].TimerStart == nil {
		t.Fatalf("deploy: %+v, %v; want a timer start armed", deps, err)
	}
	serve.restartAfterKill()
	nc := natsConn(t, url)
	client := api.NewClient(nc)
	var id string
	testwait.Until(t, 30*time.Second, "the fire's instance after the restart", func() error {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		views, err := client.Instances(rctx, api.ListRequest{ProcessID: "once"})
		if err != nil || len(views) == 0 {
			return fmt.Errorf("no instance (%v)", err)
		}
		if len(views) > 1 {
			t.Fatalf("%d instances of one fire: %+v", len(views), views)
		}
		id = views[0].ID
		return nil
	})
	waitCompleted(t, ctx, client, id)
	if counts := completedFactsOfEach(t, ctx, nc, "once", 1); len(counts) != 1 || counts[id] != 1 || !strings.HasPrefix(id, "t") {
		t.Fatalf("completed facts %v, want one of the timer-started instance %s", counts, id)
	}
	// Still the one instance after it completed.
	views, err := client.Instances(ctx, api.ListRequest{ProcessID: "once"})
	if err != nil || len(views) != 1 {
		t.Fatalf("instances %+v, %v; want the one", views, err)
	}
}
