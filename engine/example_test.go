package engine_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/streams/embedded"
)

// An engine on an embedded JetStream server: provision the streams,
// register an operation, open the engine, deploy a process, start an
// instance and wait for it to end.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	dir, err := os.MkdirTemp("", "jetbpm-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Config{StoreDir: dir, NoListen: true, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := streams.Provision(ctx, js, streams.Config{Partitions: 2, Logger: quiet}); err != nil {
		log.Fatal(err)
	}

	ops := &engine.Operations{}
	ops.Register("greet", func(ctx context.Context, in map[string]any) (map[string]any, error) {
		return map[string]any{"greeting": fmt.Sprintf("hello, %s", in["name"])}, nil
	})
	eng, err := engine.Open(ctx, nc, engine.Options{Operations: ops, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close(ctx)

	p, err := model.NewBuilder("hello").
		StartEvent("start").ServiceTask("greet", "greet").EndEvent("end").
		Sequence("start", "greet", "end").Build()
	if err != nil {
		log.Fatal(err)
	}
	if _, err := eng.Deploy(ctx, p); err != nil {
		log.Fatal(err)
	}
	id, err := eng.Start(ctx, "hello", map[string]any{"name": "Ada"})
	if err != nil {
		log.Fatal(err)
	}
	view, err := eng.Wait(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(view.Status, view.Variables["greeting"])
	// Output: completed hello, Ada
}
