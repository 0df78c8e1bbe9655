package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/camunda/zeebe/clients/go/v8/pkg/pb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // as the gateway accepts it

	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/engine/camunda8/zeebegrpc"
	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/workerkit"
)

// zeebeWorkers serves the Zeebe gateway over the first engine on loopback
// TCP and runs cfg.Workers Zeebe workers against it, each on its own gRPC
// connection, speaking the protocol as the Zeebe clients do: activate up
// to the free slots with a long poll, complete (or fail) each job as its
// handler returns, 64 jobs in flight a worker.
func (e *env) zeebeWorkers(ctx context.Context, sc *scenario, jobsDone *atomic.Int64) error {
	js, err := jetstreamOf(e.engNC)
	if err != nil {
		return err
	}
	gw, err := zeebegrpc.New(e.eng, js, zeebegrpc.Options{Logger: e.cfg.Logger})
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		gw.Close()
		return err
	}
	srv := grpc.NewServer()
	gw.Register(srv)
	go func() { _ = srv.Serve(lis) }()
	e.cleanup = append(e.cleanup, func() { srv.Stop(); gw.Close() })
	for i := range e.cfg.Workers {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		w := &zeebeWorker{client: pb.NewGatewayClient(conn), name: fmt.Sprintf("bench-%d", i), sc: sc, done: jobsDone,
			slots: make(chan struct{}, 64), log: e.cfg.Logger.Warn}
		wctx, cancel := context.WithCancel(ctx)
		stopped := make(chan struct{})
		go func() { defer close(stopped); w.run(wctx) }()
		e.cleanup = append(e.cleanup, func() { cancel(); <-stopped; _ = conn.Close() })
	}
	return nil
}

// camunda8IDs maps instance ids onto Camunda 8 keys, for a loader that
// starts instances as a Camunda 8 client's create does.
func (e *env) camunda8IDs(ctx context.Context) (*camunda8.IDs, error) {
	js, err := jetstreamOf(e.engNC)
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, streams.C8KeysBucket)
	if err != nil {
		return nil, err
	}
	return camunda8.NewIDs(kv, e.eng.Partitions(), e.eng.PartitionOf), nil
}

type zeebeWorker struct {
	client pb.GatewayClient
	name   string
	sc     *scenario
	done   *atomic.Int64
	slots  chan struct{} // one per job in flight
	log    func(msg string, args ...any)
}

func (w *zeebeWorker) run(ctx context.Context) {
	for ctx.Err() == nil {
		w.slots <- struct{}{} // at least one free slot
		free := cap(w.slots) - len(w.slots) + 1
		stream, err := w.client.ActivateJobs(ctx, &pb.ActivateJobsRequest{Type: w.sc.topic, Worker: w.name, Timeout: 60_000,
			MaxJobsToActivate: int32(free), RequestTimeout: 1_000})
		got := 0
		for err == nil {
			var resp *pb.ActivateJobsResponse
			if resp, err = stream.Recv(); err != nil {
				break
			}
			for _, job := range resp.GetJobs() {
				if got > 0 {
					w.slots <- struct{}{}
				}
				got++
				go w.work(ctx, job)
			}
		}
		if got == 0 {
			<-w.slots
		}
		if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
			w.log("zeebe bench worker: activate", "err", err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
		}
	}
}

// work runs the scenario's handler on one job and reports its outcome.
func (w *zeebeWorker) work(ctx context.Context, job *pb.ActivatedJob) {
	defer func() { <-w.slots }()
	var input map[string]any
	_ = json.Unmarshal([]byte(job.GetVariables()), &input)
	_, count, _ := camunda8.Key(job.GetKey()).Job()
	out, err := w.sc.handle(ctx, &workerkit.Job{Input: input, Delivery: int(count)})
	if err != nil {
		_, err = w.client.FailJob(ctx, &pb.FailJobRequest{JobKey: job.GetKey(), Retries: job.GetRetries() - 1, ErrorMessage: err.Error()})
	} else {
		w.done.Add(1) // as the NATS workers count: a handler that succeeded
		doc, _ := json.Marshal(out)
		_, err = w.client.CompleteJob(ctx, &pb.CompleteJobRequest{JobKey: job.GetKey(), Variables: string(doc)})
	}
	if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "NotFound") {
		w.log("zeebe bench worker: report", "job", job.GetKey(), "err", err)
	}
}
