package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/camunda/zeebe/clients/go/v8/pkg/entities"
	"github.com/camunda/zeebe/clients/go/v8/pkg/worker"
	"github.com/camunda/zeebe/clients/go/v8/pkg/zbc"
)

// zeebeBPMN is a Zeebe model that doubles amount, then has a worker of
// type "adder" add one.
const zeebeBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">
  <bpmn:process id="double" isExecutable="true">
    <bpmn:startEvent id="s"/>
    <bpmn:scriptTask id="x2"><bpmn:extensionElements><zeebe:script expression="=amount * 2" resultVariable="doubled"/></bpmn:extensionElements></bpmn:scriptTask>
    <bpmn:serviceTask id="add"><bpmn:extensionElements><zeebe:taskDefinition type="adder"/></bpmn:extensionElements></bpmn:serviceTask>
    <bpmn:endEvent id="e"/>
    <bpmn:sequenceFlow id="f1" sourceRef="s" targetRef="x2"/>
    <bpmn:sequenceFlow id="f2" sourceRef="x2" targetRef="add"/>
    <bpmn:sequenceFlow id="f3" sourceRef="add" targetRef="e"/>
  </bpmn:process>
</bpmn:definitions>`

// jetbpm serve answers the Zeebe Go client on --grpc: it deploys and runs
// an instance to its result, its job worked by the client's job worker.
func TestServeZeebeGateway(t *testing.T) {
	p := startServe(t, nil, "--data", t.TempDir(), "--listen", freeAddr(t))
	rec := p.waitReady()
	if rec["grpc"] != p.grpcAddr {
		t.Errorf("ready record %v, want grpc %s", rec, p.grpcAddr)
	}
	client, err := zbc.NewClient(&zbc.ClientConfig{GatewayAddress: p.grpcAddr, UsePlaintextConnection: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.NewDeployResourceCommand().AddResource([]byte(zeebeBPMN), "double.bpmn").Send(ctx); err != nil {
		t.Fatal(err)
	}
	w := client.NewJobWorker().JobType("adder").Handler(func(c worker.JobClient, job entities.Job) {
		vars, err := job.GetVariablesAsMap()
		if err != nil {
			t.Errorf("job variables: %v", err)
			return
		}
		cmd, err := c.NewCompleteJobCommand().JobKey(job.Key).VariablesFromMap(map[string]any{"sum": vars["doubled"].(float64) + 1})
		if err == nil {
			_, err = cmd.Send(ctx)
		}
		if err != nil {
			t.Errorf("complete: %v", err)
		}
	}).Open()
	defer w.Close()
	cmd, err := client.NewCreateInstanceCommand().BPMNProcessId("double").LatestVersion().VariablesFromMap(map[string]any{"amount": 21})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cmd.WithResult().Send(ctx)
	if err != nil || res.GetVariables() != `{"amount":21,"doubled":42,"sum":43}` {
		t.Fatalf("with result: %+v, %v", res, err)
	}

	// On --http, /v2 starts one the same gRPC worker completes: both
	// Camunda 8 doors onto one engine.
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+p.httpAddr+"/v2/process-instances",
		strings.NewReader(`{"processDefinitionId":"double","variables":{"amount":1},"awaitCompletion":true,"fetchVariables":["sum"]}`))
	req.Header.Set("Content-Type", "application/json")
	hres, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer hres.Body.Close()
	var created struct {
		ProcessInstanceKey string
		Variables          map[string]any
	}
	if err := json.NewDecoder(hres.Body).Decode(&created); err != nil || hres.StatusCode != 200 || created.Variables["sum"] != 3.0 || created.ProcessInstanceKey == "" {
		t.Fatalf("/v2 with result: %d %+v %v", hres.StatusCode, created, err)
	}
}
