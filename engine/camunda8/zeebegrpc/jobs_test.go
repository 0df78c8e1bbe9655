package zeebegrpc_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/camunda/zeebe/clients/go/v8/pkg/entities"
	"github.com/camunda/zeebe/clients/go/v8/pkg/pb"
	"github.com/camunda/zeebe/clients/go/v8/pkg/worker"
	"github.com/camunda/zeebe/clients/go/v8/pkg/zbc"
	"google.golang.org/grpc/codes"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/engine/camunda8/zeebegrpc"
	"github.com/jetbpm/jetbpm/engine/instance"
	"github.com/jetbpm/jetbpm/internal/httpauth"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/streams"
)

// paymentBPMN is a Zeebe model with a job: "charge" (type "charge", 3
// retries, a header, its result mapped to "receipt") has an error
// boundary for DECLINED that ends at "declined".
var paymentBPMN = testdata("payment.bpmn")

func (f *fixture) deployPayment(t *testing.T) {
	t.Helper()
	if _, err := f.client.NewDeployResourceCommand().AddResource([]byte(paymentBPMN), "payment.bpmn").Send(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) startPayment(t *testing.T, amount int) int64 {
	t.Helper()
	cmd, err := f.client.NewCreateInstanceCommand().BPMNProcessId("payment").LatestVersion().VariablesFromMap(map[string]any{"amount": amount})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := cmd.Send(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return inst.GetProcessInstanceKey()
}

// activate activates up to n jobs of type "charge" with c, waiting up to
// 10 s for the first.
func activate(t *testing.T, c zbc.Client, n int32) []entities.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := c.NewActivateJobsCommand().JobType("charge").MaxJobsToActivate(n).Timeout(time.Minute).WorkerName("w1").Send(ctx)
	if err != nil {
		t.Fatalf("activate: %v", err)
	}
	return got
}

func activateOne(t *testing.T, c zbc.Client) entities.Job {
	t.Helper()
	got := activate(t, c, 1)
	if len(got) != 1 {
		t.Fatalf("activated %d jobs, want 1", len(got))
	}
	return got[0]
}

// The Zeebe Go client's job worker completes jobs: each sees its input,
// headers and retries, and its result goes through the task's output
// mapping.
func TestZeebeJobWorker(t *testing.T) {
	f := setup(t)
	ctx := ctxT(t)
	f.deployPayment(t)
	var mu sync.Mutex
	seen := map[int64]entities.Job{}
	w := f.client.NewJobWorker().JobType("charge").Handler(func(c worker.JobClient, job entities.Job) {
		vars, err := job.GetVariablesAsMap()
		if err != nil {
			t.Errorf("job variables: %v", err)
			return
		}
		mu.Lock()
		seen[job.ProcessInstanceKey] = job
		mu.Unlock()
		cmd, err := c.NewCompleteJobCommand().JobKey(job.Key).VariablesFromMap(map[string]any{"result": vars["amount"].(float64) * 10, "scratch": 1})
		if err == nil {
			_, err = cmd.Send(ctx)
		}
		if err != nil {
			t.Errorf("complete %d: %v", job.Key, err)
		}
	}).Name("w1").Timeout(time.Minute).Open()
	defer w.Close()

	for i := 1; i <= 3; i++ {
		cmd, err := f.client.NewCreateInstanceCommand().BPMNProcessId("payment").LatestVersion().VariablesFromMap(map[string]any{"amount": i})
		if err != nil {
			t.Fatal(err)
		}
		res, err := cmd.WithResult().Send(ctx)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(res.GetVariables()), &out); err != nil || out["receipt"] != float64(10*i) || out["scratch"] != nil {
			t.Errorf("instance %d ended with %s (%v), want receipt %d and no scratch", i, res.GetVariables(), err, 10*i)
		}
		mu.Lock()
		job := seen[res.GetProcessInstanceKey()]
		mu.Unlock()
		headers, _ := job.GetCustomHeadersAsMap()
		k := camunda8.Key(job.Key)
		if job.Type != "charge" || job.BpmnProcessId != "payment" || job.ElementId != "charge" || job.Retries != 3 ||
			job.Worker != "w1" || headers["bank"] != "acme" || job.ProcessDefinitionKey <= 0 ||
			k.Partition() != camunda8.Key(job.ProcessInstanceKey).Partition() || job.Deadline <= time.Now().UnixMilli() {
			t.Errorf("instance %d: job %+v", i, job)
		}
	}
}

// FailJob: the worker's retries and backoff decide, each activation has a
// key of its own, an old key is NOT_FOUND, and 0 retries raise an
// incident.
func TestZeebeFailJob(t *testing.T) {
	f := setup(t)
	ctx := ctxT(t)
	f.deployPayment(t)
	id := strKey(f.startPayment(t, 7))

	first := activateOne(t, f.client)
	if _, err := f.client.NewFailJobCommand().JobKey(first.Key).Retries(1).ErrorMessage("bank down").Send(ctx); err != nil {
		t.Fatal(err)
	}
	second := activateOne(t, f.client)
	if second.Key == first.Key || second.Retries != 1 || second.ProcessInstanceKey != first.ProcessInstanceKey {
		t.Fatalf("after a failure with 1 retry: %+v (first %+v)", second, first)
	}
	_, err := f.client.NewCompleteJobCommand().JobKey(first.Key).Send(ctx)
	wantCode(t, "completing the failed activation", err, codes.NotFound, "no such job")

	if _, err := f.client.NewFailJobCommand().JobKey(second.Key).Retries(0).ErrorMessage("bank gone").Send(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := f.eng.WaitUntil(ctx, id, func(v *engine.InstanceView) bool { return len(v.Incidents) > 0 })
	if err != nil || v.Status != engine.StatusIncident || !strings.Contains(v.Incidents[0].Cause, "bank gone") {
		t.Fatalf("after 0 retries: %+v %v", v, err)
	}
	_, err = f.client.NewCompleteJobCommand().JobKey(second.Key).Send(ctx)
	wantCode(t, "completing a job in an incident", err, codes.NotFound, "no such job")

	// Resolving the incident queues the job again with the task's retries.
	inc := f.incidentKey(t, v.Incidents[0].ID, id)
	_, err = f.client.NewUpdateJobRetriesCommand().JobKey(second.Key).Retries(1).Send(ctx)
	wantCode(t, "update retries", err, codes.Unimplemented, "ResolveIncident")
	if _, err := f.client.NewResolveIncidentCommand().IncidentKey(int64(inc)).Send(ctx); err != nil {
		t.Fatalf("resolve incident: %v", err)
	}
	third := activateOne(t, f.client)
	if third.Retries != 3 || third.ProcessInstanceKey != first.ProcessInstanceKey {
		t.Fatalf("after the incident was resolved: %+v", third)
	}
	_, err = f.client.NewResolveIncidentCommand().IncidentKey(int64(inc)).Send(ctx)
	wantCode(t, "resolving twice", err, codes.NotFound, "not open")
	_, err = f.client.NewResolveIncidentCommand().IncidentKey(first.ProcessInstanceKey).Send(ctx)
	wantCode(t, "an instance key as an incident's", err, codes.NotFound, "no such incident")
	_, err = f.client.NewResolveIncidentCommand().IncidentKey(12).Send(ctx)
	wantCode(t, "a key of partition 0", err, codes.NotFound, "no such incident")
	cmd, err := f.client.NewCompleteJobCommand().JobKey(third.Key).VariablesFromMap(map[string]any{"result": "late"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.Send(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := f.eng.Wait(ctx, id); err != nil || v.Status != instance.Completed || v.Variables["receipt"] != "late" {
		t.Fatalf("after the retried job: %+v %v", v, err)
	}
}

// incidentKey is the key a Camunda 8 door shows for incident id.
func (f *fixture) incidentKey(t *testing.T, id, instanceID string) camunda8.Key {
	t.Helper()
	kv, err := f.env.JS.KeyValue(ctxT(t), streams.C8KeysBucket)
	if err != nil {
		t.Fatal(err)
	}
	k, err := camunda8.NewIDs(kv, f.eng.Partitions(), f.eng.PartitionOf).IncidentKey(ctxT(t), id, instanceID)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// ThrowError: a caught error takes the boundary; an uncaught one raises an
// incident.
func TestZeebeThrowError(t *testing.T) {
	f := setup(t)
	ctx := ctxT(t)
	f.deployPayment(t)
	id := strKey(f.startPayment(t, 1))
	job := activateOne(t, f.client)
	cmd, err := f.client.NewThrowErrorCommand().JobKey(job.Key).ErrorCode("DECLINED").ErrorMessage("no funds").VariablesFromMap(map[string]any{"why": "funds"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.Send(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := f.eng.Wait(ctx, id)
	if err != nil || v.Status != instance.Completed || !slices.Contains(v.Passed, "declined") || v.Variables["why"] != "funds" {
		t.Fatalf("after DECLINED: %+v %v", v, err)
	}

	id = strKey(f.startPayment(t, 2))
	job = activateOne(t, f.client)
	if _, err := f.client.NewThrowErrorCommand().JobKey(job.Key).ErrorCode("UNMAPPED").Send(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := f.eng.WaitUntil(ctx, id, func(v *engine.InstanceView) bool { return len(v.Incidents) > 0 }); err != nil || v.Status != engine.StatusIncident {
		t.Fatalf("after an uncaught error: %+v %v", v, err)
	}
}

// A report through another gateway (another engine node, or this one
// restarted) finds the job by its key: the delivery is rebuilt, and the
// fencing is the same.
func TestZeebeReportThroughAnotherGateway(t *testing.T) {
	f := setup(t)
	ctx := ctxT(t)
	f.deployPayment(t)
	id := strKey(f.startPayment(t, 3))
	other := f.another(t)

	job := activateOne(t, f.client)
	if _, err := other.NewFailJobCommand().JobKey(job.Key).Retries(2).Send(ctx); err != nil {
		t.Fatalf("fail through the other gateway: %v", err)
	}
	again := activateOne(t, f.client)
	if again.Retries != 2 || again.Key == job.Key {
		t.Fatalf("after a failure through the other gateway: %+v", again)
	}
	_, err := other.NewCompleteJobCommand().JobKey(job.Key).Send(ctx)
	wantCode(t, "the failed activation through the other gateway", err, codes.NotFound, "no such job")
	cmd, err := other.NewCompleteJobCommand().JobKey(again.Key).VariablesFromMap(map[string]any{"result": "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.Send(ctx); err != nil {
		t.Fatalf("complete through the other gateway: %v", err)
	}
	if v, err := f.eng.Wait(ctx, id); err != nil || v.Status != instance.Completed || v.Variables["receipt"] != "ok" {
		t.Fatalf("after the completion: %+v %v", v, err)
	}
}

// Keys that name no current activation are NOT_FOUND and change nothing.
func TestZeebeJobKeyRefusals(t *testing.T) {
	f := setup(t)
	ctx := ctxT(t)
	f.deployPayment(t)
	id := strKey(f.startPayment(t, 4))
	job := activateOne(t, f.client)
	k := camunda8.Key(job.Key)
	seq, count, err := k.Job()
	if err != nil || count != 1 {
		t.Fatalf("job key %d: seq %d count %d %v", job.Key, seq, count, err)
	}
	later, _ := camunda8.JobKey(k.Partition(), seq, count+1)
	otherPart, _ := camunda8.JobKey(k.Partition()%f.eng.Partitions()+1, seq, count)
	otherSeq, _ := camunda8.JobKey(k.Partition(), seq+1000, count)
	notJob, _ := camunda8.NewKey(k.Partition(), 5) // count 5, sequence 0
	for what, key := range map[string]int64{"a delivery never lent": int64(later), "another partition": int64(otherPart),
		"no such message": int64(otherSeq), "not a job key": int64(notJob), "partition 0": 77, "negative": -1} {
		if otherPart == k {
			continue // one partition
		}
		_, err := f.client.NewCompleteJobCommand().JobKey(key).Send(ctx)
		wantCode(t, what, err, codes.NotFound, "no such job")
		_, err = f.client.NewFailJobCommand().JobKey(key).Retries(0).Send(ctx)
		wantCode(t, what+" (fail)", err, codes.NotFound, "no such job")
	}
	_, err = f.raw.FailJob(ctx, &pb.FailJobRequest{JobKey: job.Key, Retries: -1})
	wantCode(t, "negative retries", err, codes.InvalidArgument, "retries")
	_, err = f.raw.FailJob(ctx, &pb.FailJobRequest{JobKey: job.Key, Retries: 1, Variables: `{"a":1}`})
	wantCode(t, "variables on a failure", err, codes.InvalidArgument, "local variable scope")
	_, err = f.raw.FailJob(ctx, &pb.FailJobRequest{JobKey: job.Key, Retries: 1, Variables: `{]`})
	wantCode(t, "malformed variables on a failure", err, codes.InvalidArgument, "JSON object")
	_, err = f.raw.ThrowError(ctx, &pb.ThrowErrorRequest{JobKey: job.Key})
	wantCode(t, "no error code", err, codes.InvalidArgument, "errorCode")
	_, err = f.raw.CompleteJob(ctx, &pb.CompleteJobRequest{JobKey: job.Key, Variables: `[1]`})
	wantCode(t, "variables not an object", err, codes.InvalidArgument, "JSON object")
	big := `{"blob": "` + strings.Repeat("x", 300<<10) + `"}`
	_, err = f.raw.CreateProcessInstance(ctx, &pb.CreateProcessInstanceRequest{BpmnProcessId: "payment", Version: -1, Variables: big})
	wantCode(t, "an oversized variable on create", err, codes.ResourceExhausted, "blob")
	huge := `{"blob": "` + strings.Repeat("x", 1536<<10) + `"}`
	_, err = f.raw.CompleteJob(ctx, &pb.CompleteJobRequest{JobKey: job.Key, Variables: huge})
	wantCode(t, "a completion over NATS's max payload", err, codes.ResourceExhausted, "maximum payload")
	for _, req := range []*pb.ActivateJobsRequest{{Type: "", MaxJobsToActivate: 1, Timeout: 1000}, {Type: "charge", MaxJobsToActivate: 0, Timeout: 1000},
		{Type: "charge", MaxJobsToActivate: 1, Timeout: 0}} {
		stream, err := f.raw.ActivateJobs(ctx, req)
		if err == nil {
			_, err = stream.Recv()
		}
		wantCode(t, "activate "+req.String(), err, codes.InvalidArgument, "expected")
	}
	if v, err := f.eng.Instance(ctx, id); err != nil || v.Status != instance.Active || len(v.Incidents) != 0 {
		t.Fatalf("refused reports touched the instance: %+v %v", v, err)
	}
	// The activation still holds: its completion works, once.
	if _, err := f.client.NewCompleteJobCommand().JobKey(job.Key).Send(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = f.client.NewCompleteJobCommand().JobKey(job.Key).Send(ctx)
	wantCode(t, "completing twice", err, codes.NotFound, "no such job")
}

// A long poll waits for a job that arrives after it began; an activation
// whose timeout outlasts the task's lock keeps the job: no other worker
// gets it while the gateway extends the lock.
func TestZeebeLongPollAndLockHold(t *testing.T) {
	f := setupWith(t, engine.Options{TopicJobs: map[string]jobs.Overrides{"charge": {LockDuration: time.Second}}})
	ctx := ctxT(t)
	f.deployPayment(t)
	got := make(chan []entities.Job, 1)
	go func() {
		pctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		jobs, err := f.client.NewActivateJobsCommand().JobType("charge").MaxJobsToActivate(1).Timeout(time.Minute).Send(pctx)
		if err != nil {
			t.Errorf("long poll: %v", err)
		}
		got <- jobs
	}()
	id := strKey(f.startPayment(t, 5))
	var job entities.Job
	select {
	case jobs := <-got:
		if len(jobs) != 1 {
			t.Fatalf("long poll got %d jobs", len(jobs))
		}
		job = jobs[0]
	case <-ctx.Done():
		t.Fatal("the long poll never returned")
	}
	if d := time.UnixMilli(job.Deadline); time.Until(d) < 50*time.Second {
		t.Errorf("deadline %s, want a minute from the activation", d)
	}
	// Three locks' worth of polling by another worker finds nothing.
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	stolen, err := f.client.NewActivateJobsCommand().JobType("charge").MaxJobsToActivate(1).Timeout(time.Minute).Send(pctx)
	cancel()
	if err != nil || len(stolen) != 0 {
		t.Fatalf("another worker got %+v (%v) while the lock was held", stolen, err)
	}
	cmd, err := f.client.NewCompleteJobCommand().JobKey(job.Key).VariablesFromMap(map[string]any{"result": 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.Send(ctx); err != nil {
		t.Fatalf("complete after the lock was held: %v", err)
	}
	if v, err := f.eng.Wait(ctx, id); err != nil || v.Status != instance.Completed {
		t.Fatalf("%+v %v", v, err)
	}
}

// A worker credential activates and reports only the jobs of its topics.
func TestZeebeWorkerTopics(t *testing.T) {
	auth, err := httpauth.Parse("auth.yaml", []byte("tokens:\n"+
		"  - {name: ops, sha256: "+httpauth.HashToken("t-ops")+", roles: [operator]}\n"+
		"  - {name: charger, sha256: "+httpauth.HashToken("t-charge")+", roles: [worker], topics: [charge]}\n"+
		"  - {name: mailer, sha256: "+httpauth.HashToken("t-mail")+", roles: [worker], topics: [mail]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t, zeebegrpc.Authenticate(auth)...)
	f.client = f.dial(t, bearer("t-ops"))
	ctx := ctxT(t)
	f.deployPayment(t)
	f.startPayment(t, 6)
	mailer := f.dial(t, bearer("t-mail"))
	_, err = mailer.NewActivateJobsCommand().JobType("charge").MaxJobsToActivate(1).Send(ctx)
	wantCode(t, "activating another topic", err, codes.PermissionDenied, `mailer may not work jobs of type "charge"`)
	job := activateOne(t, f.dial(t, bearer("t-charge")))
	_, err = mailer.NewCompleteJobCommand().JobKey(job.Key).Send(ctx)
	wantCode(t, "completing another topic's job", err, codes.PermissionDenied, "mailer may not work")
	_, err = mailer.NewCreateInstanceCommand().BPMNProcessId("payment").LatestVersion().Send(ctx)
	wantCode(t, "a worker starting", err, codes.PermissionDenied, "needs one of the roles operator")
}

// Zeebe's execution listeners run as jobs the Zeebe Go client's workers
// take: the start listener's result is the task's to use, the end
// listener sees the task's output; a listener whose retries run out is
// an incident, and resolving it runs that listener again.
func TestZeebeExecutionListeners(t *testing.T) {
	f := setup(t)
	ctx := ctxT(t)
	if _, err := f.client.NewDeployResourceCommand().AddResource([]byte(testdata("listeners.bpmn")), "listeners.bpmn").Send(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	rateFails := 1 // the first fetch-rate job fails, its retry succeeds
	handle := func(jobType string, out func(vars map[string]any) map[string]any) worker.JobWorker {
		return f.client.NewJobWorker().JobType(jobType).Handler(func(c worker.JobClient, job entities.Job) {
			vars, err := job.GetVariablesAsMap()
			if err != nil {
				t.Errorf("%s: variables: %v", jobType, err)
				return
			}
			mu.Lock()
			order = append(order, jobType)
			fail := jobType == "fetch-rate" && rateFails > 0
			if fail {
				rateFails--
			}
			mu.Unlock()
			if fail {
				_, err = c.NewFailJobCommand().JobKey(job.Key).Retries(job.Retries - 1).ErrorMessage("rate service down").Send(ctx)
			} else {
				var cmd interface {
					Send(context.Context) (*pb.CompleteJobResponse, error)
				}
				cmd, err = c.NewCompleteJobCommand().JobKey(job.Key).VariablesFromMap(out(vars))
				if err == nil {
					_, err = cmd.Send(ctx)
				}
			}
			if err != nil {
				t.Errorf("%s: report: %v", jobType, err)
			}
		}).Name("w").Timeout(time.Minute).Open()
	}
	var audited map[string]any
	ws := []worker.JobWorker{
		handle("fetch-rate", func(map[string]any) map[string]any { return map[string]any{"rate": 3} }),
		handle("charge", func(v map[string]any) map[string]any {
			return map[string]any{"receipt": v["sum"].(float64) * v["rate"].(float64)}
		}),
		handle("audit", func(v map[string]any) map[string]any {
			mu.Lock()
			audited = v
			mu.Unlock()
			return map[string]any{"auditedBy": "w"}
		}),
	}
	defer func() {
		for _, w := range ws {
			w.Close()
		}
	}()
	cmd, err := f.client.NewCreateInstanceCommand().BPMNProcessId("audited").LatestVersion().VariablesFromMap(map[string]any{"amount": 5})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cmd.WithResult().Send(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.GetVariables()), &out); err != nil || out["receipt"] != 15.0 || out["auditedBy"] != "w" || out["rate"] != nil || out["sum"] != nil {
		t.Errorf("ended with %s (%v), want receipt 15, auditedBy w, and neither rate nor sum (the task's locals)", res.GetVariables(), err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(order, []string{"fetch-rate", "fetch-rate", "charge", "audit"}) || audited["receipt"] != 15.0 {
		t.Errorf("jobs ran %v, audit saw %v", order, audited)
	}
}
