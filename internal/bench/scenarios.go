package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jetbpm/jetbpm/engine"
	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/jobs"
	"github.com/jetbpm/jetbpm/workerkit"
)

// scenario is one benchmark: a process, what its workers do, and how many
// jobs an instance makes.
type scenario struct {
	process func(due time.Time) *model.Builder
	topic   string // "" when the process has no external task
	jobs    int    // jobs per instance
	handle  workerkit.HandlerFunc
	ops     map[string]engine.Operation
	// inline registers ops to run inside the step
	// (Operations.RegisterInline) instead of on the pool.
	inline bool
	// message, when set, is the message each instance waits for under its
	// own id as correlation key (variable "key"): the loader publishes it
	// right after the start.
	message string
}

func (s *scenario) operations() *engine.Operations {
	ops := &engine.Operations{}
	for name, fn := range s.ops {
		if s.inline {
			ops.RegisterInline(name, fn)
		} else {
			ops.Register(name, fn)
		}
	}
	return ops
}

const topic = "bench"

// benchMessage is the message of the message scenario.
const benchMessage = "bench-paid"

// messageTTL keeps a message published before its instance's subscription
// reached the message partition (most are: the loader publishes right
// after the start) until the subscription comes.
const messageTTL = time.Minute

func complete(context.Context, *workerkit.Job) (map[string]any, error) {
	return map[string]any{"done": true}, nil
}

var scenarios = map[string]*scenario{
	"one-task": {
		process: func(time.Time) *model.Builder {
			return model.NewBuilder("bench-one-task").StartEvent("start").
				ServiceTask("task", "", model.WithWorker(topic)).EndEvent("end").
				Sequence("start", "task", "end")
		},
		topic: topic, jobs: 1, handle: complete,
	},
	// one-script is one-task with a JavaScript script task before the job,
	// as a Camunda 7 model writes one: the cost of a script run in the step.
	"one-script": {
		process: func(time.Time) *model.Builder {
			return model.NewBuilder("bench-one-script").StartEvent("start").
				ScriptTask("score", `execution.setVariable("score", (execution.getVariable("n") || 0) * 2 + 1); true`, "scored", model.JavaScript()).
				ServiceTask("task", "", model.WithWorker(topic)).EndEvent("end").
				Sequence("start", "score", "task", "end")
		},
		topic: topic, jobs: 1, handle: complete,
	},
	"ten-inproc": {process: tenTasks("bench-ten-inproc"), ops: noop},
	"ten-inline": {process: tenTasks("bench-ten-inline"), ops: noop, inline: true},
	"fanout": {
		process: func(time.Time) *model.Builder {
			b := model.NewBuilder("bench-fanout").StartEvent("start").ParallelGateway("fork").ParallelGateway("join").EndEvent("end")
			b.Sequence("start", "fork").Sequence("join", "end")
			for i := range 10 {
				id := fmt.Sprintf("task%d", i)
				b.ServiceTask(id, "", model.WithWorker(topic), model.Output(fmt.Sprintf("r%d", i), "done"))
				b.Sequence("fork", id, "join")
			}
			return b
		},
		topic: topic, jobs: 10, handle: complete,
	},
	"retry": {
		process: func(time.Time) *model.Builder {
			return model.NewBuilder("bench-retry").StartEvent("start").
				ServiceTask("task", "", model.WithWorker(topic,
					model.WithWorkerTrust(jobs.EngineAuthoritative),
					model.WithRetryPolicy(jobs.FixedDelaySpec(3, 0)))).
				EndEvent("end").Sequence("start", "task", "end")
		},
		topic: topic, jobs: 1,
		// Every job fails twice technically, then succeeds: three
		// deliveries, two engine retries.
		handle: func(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
			if job.Delivery < 3 {
				return nil, workerkit.Fault("503", "try again")
			}
			return map[string]any{"done": true}, nil
		},
	},
	"message": {
		process: func(time.Time) *model.Builder {
			return model.NewBuilder("bench-message").StartEvent("start").
				MessageCatchEvent("wait", benchMessage, "key").EndEvent("end").
				Sequence("start", "wait", "end")
		},
		message: benchMessage,
	},
	"timers": {
		process: func(due time.Time) *model.Builder {
			return model.NewBuilder("bench-timers").StartEvent("start").
				TimerCatchEvent("wait", model.Date(due.UTC().Format(time.RFC3339Nano))).EndEvent("end").
				Sequence("start", "wait", "end")
		},
	},
}

// tenTasks is a process of ten sequential in-process service tasks.
func tenTasks(id string) func(time.Time) *model.Builder {
	return func(time.Time) *model.Builder {
		b := model.NewBuilder(id).StartEvent("start")
		ids := []string{"start"}
		for i := range 10 {
			task := fmt.Sprintf("task%d", i)
			b.ServiceTask(task, "noop")
			ids = append(ids, task)
		}
		return b.EndEvent("end").Sequence(append(ids, "end")...)
	}
}

var noop = map[string]engine.Operation{"noop": func(context.Context, map[string]any) (map[string]any, error) {
	return nil, nil
}}
