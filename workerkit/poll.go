package workerkit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetbpm/jetbpm/streams"
)

// lookupTimeout bounds one lookup of a topic's consumer.
const lookupTimeout = 5 * time.Second

// poll fetches h's jobs while ctx lasts, at most h.concurrency at a time,
// and runs each in its own goroutine under jobsCtx, counted by inFlight.
// Fetches wait at most PollWait and are never cut short, so a job the
// server hands out is always run, never left locked until it expires.
func (w *Worker) poll(ctx, jobsCtx context.Context, h *handler, inFlight *sync.WaitGroup) {
	log := w.log.With("topic", h.topic)
	slots := make(chan struct{}, h.concurrency) // a send takes a slot
	var cons jetstream.Consumer
	var missingLogged bool
	pause := backoff{min: 100 * time.Millisecond, max: 5 * time.Second}
	for ctx.Err() == nil {
		if cons == nil {
			// Bounded on its own: a request lost with a dying server is never
			// answered, and ctx may have no deadline or a distant one.
			lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
			c, err := w.js.Consumer(lctx, streams.JobsStream, streams.TopicConsumer(h.topic))
			cancel()
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound):
				if !missingLogged {
					log.Info("waiting for the topic's consumer: no process using the topic is deployed yet", "consumer", streams.TopicConsumer(h.topic))
					missingLogged = true
				}
				pause.wait(ctx)
				continue
			case err != nil:
				log.Warn("cannot look up the topic's consumer", "err", err)
				pause.wait(ctx)
				continue
			}
			if missingLogged {
				log.Info("topic consumer found; fetching jobs")
				missingLogged = false
			}
			cons = c
			pause.reset()
		}

		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1
	more:
		for n < cap(slots) {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(w.opts.PollWait))
		if err != nil {
			for range n {
				<-slots
			}
			log.Warn("fetch failed", "err", err)
			cons = nil
			pause.wait(ctx)
			continue
		}
		got := 0
		for m := range batch.Messages() {
			got++
			inFlight.Go(func() {
				defer func() { <-slots }()
				w.execute(jobsCtx, h, m)
			})
		}
		for ; got < n; got++ {
			<-slots
		}
		if err := batch.Error(); err != nil && ctx.Err() == nil {
			log.Warn("fetch failed", "err", err)
			cons = nil // it may have been deleted; look it up again
			pause.wait(ctx)
			continue
		}
		pause.reset()
	}
}

// backoff doubles a pause from min to max.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) reset() { b.cur = 0 }

// wait sleeps the next pause, or until ctx is done.
func (b *backoff) wait(ctx context.Context) {
	b.cur = min(max(2*b.cur, b.min), b.max)
	t := time.NewTimer(b.cur)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
