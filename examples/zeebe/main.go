// Command zeebe is a Camunda 8 team's Go program, unchanged but for the
// gateway's address: with the Zeebe Go client it deploys shipping.bpmn,
// runs a job worker for "print-label" and starts an order with result.
// Against jetbpm serve (its --grpc gateway, 127.0.0.1:26500 by default):
//
//	go run ./examples/zeebe -gateway 127.0.0.1:26500 -order o-42
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/camunda/zeebe/clients/go/v8/pkg/entities"
	"github.com/camunda/zeebe/clients/go/v8/pkg/worker"
	"github.com/camunda/zeebe/clients/go/v8/pkg/zbc"
)

//go:embed shipping.bpmn
var shipping []byte

func main() {
	gateway := flag.String("gateway", "127.0.0.1:26500", "the Zeebe gateway's `host:port`")
	order := flag.String("order", "o-42", "the order `id` to ship")
	flag.Parse()
	if err := run(*gateway, *order); err != nil {
		log.Printf("zeebe example: %v", err)
		os.Exit(1)
	}
}

func run(gateway, order string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := zbc.NewClient(&zbc.ClientConfig{GatewayAddress: gateway, UsePlaintextConnection: true})
	if err != nil {
		return err
	}
	defer client.Close()

	dep, err := client.NewDeployResourceCommand().AddResource(shipping, "shipping.bpmn").Send(ctx)
	if err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	p := dep.GetDeployments()[0].GetProcess()
	fmt.Printf("deployed %s version %d (key %d)\n", p.GetBpmnProcessId(), p.GetVersion(), p.GetProcessDefinitionKey())

	w := client.NewJobWorker().JobType("print-label").Handler(printLabel).Name("label-printer").Open()
	defer w.Close()

	start, err := client.NewCreateInstanceCommand().BPMNProcessId("shipping").LatestVersion().
		VariablesFromMap(map[string]any{"orderId": order})
	if err != nil {
		return err
	}
	res, err := start.WithResult().Send(ctx)
	if err != nil {
		return fmt.Errorf("start with result: %w", err)
	}
	fmt.Printf("instance %d completed with %s\n", res.GetProcessInstanceKey(), res.GetVariables())
	return nil
}

// printLabel is the job worker: it "prints" the order's label.
func printLabel(c worker.JobClient, job entities.Job) {
	vars, err := job.GetVariablesAsMap()
	if err == nil {
		label := fmt.Sprintf("LBL-%v", vars["orderId"])
		fmt.Printf("worker %s: job %d printed %s\n", job.Worker, job.Key, label)
		complete, cerr := c.NewCompleteJobCommand().JobKey(job.Key).VariablesFromMap(map[string]any{"label": label})
		if err = cerr; err == nil {
			_, err = complete.Send(context.Background())
		}
	}
	if err != nil {
		log.Printf("job %d: %v", job.Key, err)
		_, _ = c.NewFailJobCommand().JobKey(job.Key).Retries(job.Retries - 1).ErrorMessage(err.Error()).Send(context.Background())
	}
}
