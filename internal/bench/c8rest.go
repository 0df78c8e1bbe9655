package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jetbpm/jetbpm/engine/camunda8"
	"github.com/jetbpm/jetbpm/engine/camunda8/rest"
	"github.com/jetbpm/jetbpm/workerkit"
)

// restWorkers serves Camunda 8's REST API (/v2) over the first engine on
// loopback TCP and runs cfg.Workers REST workers against it, each with its
// own HTTP connections, speaking the API as the Camunda 8 REST clients'
// job workers do: activate up to the free slots with a long poll, complete
// (or fail) each job as its handler returns, 64 jobs in flight a worker.
func (e *env) restWorkers(ctx context.Context, sc *scenario, jobsDone *atomic.Int64) error {
	h, err := rest.New(e.eng, e.engNC, rest.Options{Logger: e.cfg.Logger})
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(rest.Prefix+"/", http.StripPrefix(rest.Prefix, h))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	e.cleanup = append(e.cleanup, func() { _ = srv.Close(); h.Close() })
	base := "http://" + lis.Addr().String() + rest.Prefix
	for i := range e.cfg.Workers {
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
		w := &restWorker{client: client, base: base, name: fmt.Sprintf("bench-%d", i), sc: sc, done: jobsDone,
			slots: make(chan struct{}, 64), log: e.cfg.Logger.Warn}
		wctx, cancel := context.WithCancel(ctx)
		stopped := make(chan struct{})
		go func() { defer close(stopped); w.run(wctx) }()
		e.cleanup = append(e.cleanup, func() { cancel(); <-stopped; client.CloseIdleConnections() })
	}
	return nil
}

type restWorker struct {
	client *http.Client
	base   string
	name   string
	sc     *scenario
	done   *atomic.Int64
	slots  chan struct{} // one per job in flight
	log    func(msg string, args ...any)
}

type restJob struct {
	JobKey    string         `json:"jobKey"`
	Retries   int            `json:"retries"`
	Variables map[string]any `json:"variables"`
}

func (w *restWorker) run(ctx context.Context) {
	for ctx.Err() == nil {
		w.slots <- struct{}{} // at least one free slot
		free := cap(w.slots) - len(w.slots) + 1
		var got struct {
			Jobs []restJob `json:"jobs"`
		}
		err := w.post(ctx, "/jobs/activation", map[string]any{"type": w.sc.topic, "worker": w.name, "timeout": 60_000,
			"maxJobsToActivate": free, "requestTimeout": 1_000}, &got)
		for i, job := range got.Jobs {
			if i > 0 {
				w.slots <- struct{}{}
			}
			go w.work(ctx, job)
		}
		if len(got.Jobs) == 0 {
			<-w.slots
		}
		if err != nil && ctx.Err() == nil {
			w.log("REST bench worker: activate", "err", err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
		}
	}
}

// work runs the scenario's handler on one job and reports its outcome.
func (w *restWorker) work(ctx context.Context, job restJob) {
	defer func() { <-w.slots }()
	k, _ := strconv.ParseInt(job.JobKey, 10, 64)
	_, count, _ := camunda8.Key(k).Job()
	out, err := w.sc.handle(ctx, &workerkit.Job{Input: job.Variables, Delivery: int(count)})
	if err != nil {
		err = w.post(ctx, "/jobs/"+job.JobKey+"/failure", map[string]any{"retries": job.Retries - 1, "errorMessage": err.Error()}, nil)
	} else {
		w.done.Add(1) // as the NATS workers count: a handler that succeeded
		err = w.post(ctx, "/jobs/"+job.JobKey+"/completion", map[string]any{"variables": out}, nil)
	}
	if err != nil && ctx.Err() == nil {
		w.log("REST bench worker: report", "job", job.JobKey, "err", err)
	}
}

// post sends body as JSON and decodes a 200's answer into out; a 404 (a
// job whose lock moved on) is no error, as for the Zeebe workers.
func (w *restWorker) post(ctx context.Context, path string, body, out any) error {
	doc, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.base+path, bytes.NewReader(doc))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusOK && out != nil:
		return json.NewDecoder(res.Body).Decode(out)
	case res.StatusCode < 300, res.StatusCode == http.StatusNotFound:
		_, _ = io.Copy(io.Discard, res.Body)
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
	return fmt.Errorf("%s: %d %s", path, res.StatusCode, msg)
}
