package workerkit_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/embedded"
	"github.com/jetbpm/jetbpm/workerkit"
)

// A worker for the "payments" topic: New, Handle, Run.
func Example() {
	nc, eng, cleanup := startJetbpm() // in production: nats.Connect(url) to the jetbpm cluster
	defer cleanup()

	w, err := workerkit.New(nc, workerkit.Options{Name: "billing-1", Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	w.Handle("payments", func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
		if job.Input["amount"].(float64) > 1000 {
			return nil, workerkit.BpmnError("REJECTED", "amount over limit", nil)
		}
		return map[string]any{"receipt": "r-" + job.Input["order"].(string)}, nil
	}, workerkit.Concurrency(8))

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }() // in production: Run(ctx) until SIGTERM

	id, _ := eng.Start(ctx, "pay", map[string]any{"order": "42", "amount": 10})
	view, _ := eng.Wait(ctx, id)
	fmt.Println(view.Status, view.Variables["receipt"])

	stop()
	fmt.Println("run:", <-done)
	// Output:
	// completed r-42
	// run: <nil>
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startJetbpm starts an embedded NATS server and a jetbpm engine with the
// process "pay" deployed: start → charge (topic payments) → end.
func startJetbpm() (*nats.Conn, *engine.Engine, func()) {
	dir, err := os.MkdirTemp("", "workerkit-example-")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := embedded.Start(embedded.Config{StoreDir: dir, NoListen: true, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	if _, err := streams.Provision(ctx, js, streams.Config{Logger: quiet}); err != nil {
		log.Fatal(err)
	}
	eng, err := engine.Open(ctx, nc, engine.Options{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	p, err := model.NewBuilder("pay").StartEvent("s").
		ServiceTask("charge", "", model.WithWorker("payments")).
		EndEvent("e").Sequence("s", "charge", "e").Build()
	if err == nil {
		_, err = eng.Deploy(ctx, p)
	}
	if err != nil {
		log.Fatal(err)
	}
	return nc, eng, func() {
		_ = eng.Close(ctx)
		nc.Close()
		srv.Shutdown()
		os.RemoveAll(dir)
	}
}
