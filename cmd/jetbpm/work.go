package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/streams"
	"github.com/jetbpm/jetbpm/workerkit"
)

const workUsage = `usage: jetbpm work --topic TOPIC [flags] -- CMD [ARGS...]

Runs a worker for the external service tasks of TOPIC: for every job it
runs CMD with ARGS, the job's input as a JSON object on stdin and these
environment variables:
  JETBPM_JOB_ID, JETBPM_JOB_TOPIC, JETBPM_INSTANCE_ID, JETBPM_NODE_ID
  JETBPM_JOB_ATTEMPT    1 for the first execution of the job
  JETBPM_JOB_DELIVERED_AT  when the worker received the job (RFC 3339,
                        nanoseconds): its lock runs from then
  JETBPM_JOB_INPUT      the input as a JSON object
  JETBPM_VAR_<NAME>     each input variable whose name is a valid variable
                        name, e.g. JETBPM_VAR_amount: a string as it is,
                        any other value as JSON
(a value over 64 KiB is left out of the environment; stdin has it all).

Exit status 0 completes the task with the JSON object CMD printed on
stdout (no output is {}). Exit status 90 (--bpmn-error-exit) throws a BPMN
error, as a Camunda 8 worker's ThrowError does: CMD prints
  {"code": "NO_STOCK", "message": "none left", "variables": {"left": 0}}
on stdout (message and variables optional; the variables are set on the
task's scope first), and an error boundary or event sub-process of that
code catches it. Any other exit status is a technical fault whose
code is the exit status and whose body is {"stderr": "...", "stdout": ...}
(stdout only if it is JSON): the task's error mapper rules may classify it
(a rule for code "3" raising a BPMN error, say), else it is retried per the
task's retry policy. CMD is killed when the worker loses the job's lock.

SIGINT or SIGTERM stops fetching jobs, waits for the commands running and
exits 0; commands still running after --shutdown-timeout are killed (their
jobs go to another worker once their lock expires) and it exits 1.`

func runWork(ctx context.Context, args []string) error {
	fs := newFlagSet("work")
	conn := addConnFlags(fs, defaultNATSURL)
	logs := addLogFlags(fs)
	topic := fs.String("topic", "", "the job `TOPIC` to work on (required)")
	concurrency := fs.Int("concurrency", 1, "run up to `N` commands at once")
	name := fs.String("name", "", "the worker's `NAME` in its reports (default HOST-PID)")
	shutdown := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGINT or SIGTERM, wait `DURATION` for running commands before killing them")
	bpmnErrorExit := fs.Int("bpmn-error-exit", defaultBpmnErrorExit, "the exit `STATUS` by which CMD throws the BPMN error its stdout names (0: none)")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *topic == "":
		return usageErrorf("work", "missing --topic")
	case *concurrency < 1:
		return usageErrorf("work", "--concurrency must be 1 or more")
	case *shutdown <= 0:
		return usageErrorf("work", "--shutdown-timeout must be positive")
	case *bpmnErrorExit < 0 || *bpmnErrorExit > 255:
		return usageErrorf("work", "--bpmn-error-exit must be an exit status from 1 to 255, or 0 for none")
	case len(rest) == 0:
		return usageErrorf("work", "missing CMD")
	}
	path, err := exec.LookPath(rest[0])
	if err != nil {
		return usageErrorf("work", "%v", err)
	}

	log := logs.logger(os.Stderr)
	cfg := conn.config("jetbpm work " + *topic)
	cfg.Logger = log
	nc, err := streams.Connect(cfg)
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return fmt.Errorf("cannot connect to NATS at %s: %w", streams.RedactURLs(cfg.URL), err)
	}
	defer nc.Close()
	w, err := workerkit.New(nc, workerkit.Options{Name: *name, Logger: log, ShutdownTimeout: *shutdown})
	if err != nil {
		return err
	}
	c := commandWorker{path: path, args: rest[1:], name: rest[0], bpmnErrorExit: *bpmnErrorExit}
	w.Handle(*topic, c.handle, workerkit.Concurrency(*concurrency))
	return w.Run(ctx)
}

// defaultBpmnErrorExit is the exit status by which a command throws a
// BPMN error: outside the 64-78 of sysexits.h and the 126-165 of shells.
const defaultBpmnErrorExit = 90

// commandWorker runs one command per job.
type commandWorker struct {
	path          string
	args          []string
	name          string // as given, for messages
	bpmnErrorExit int    // 0: no status throws a BPMN error
}

// maxStderr bounds the stderr kept for a fault's body: its last bytes.
const maxStderr = 64 << 10

// maxEnvValue bounds one environment value: Linux refuses an exec whose
// single argument or variable exceeds 128 KiB.
const maxEnvValue = 64 << 10

func (c commandWorker) handle(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
	input, err := json.Marshal(job.Input)
	if err != nil {
		return nil, fmt.Errorf("encode the job's input: %w", err)
	}
	cmd := exec.CommandContext(ctx, c.path, c.args...)
	cmd.Args[0] = c.name
	isolate(cmd)
	cmd.Stdin = bytes.NewReader(input)
	cmd.Env = append(os.Environ(), jobEnv(job, input)...)
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	cmd.WaitDelay = 5 * time.Second // a child left holding stdout does not hang the job
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx) // killed: the worker reports nothing
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.Exited() && exit.ExitCode() == c.bpmnErrorExit:
		return nil, c.bpmnError(stdout.Bytes())
	case errors.As(err, &exit) && exit.Exited():
		body := map[string]any{"stderr": stderr.String()}
		var v any
		if json.Unmarshal(stdout.Bytes(), &v) == nil {
			body["stdout"] = v
		}
		return nil, workerkit.Fault(strconv.Itoa(exit.ExitCode()), body)
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		return nil, fmt.Errorf("command %s: %w; stderr: %s", c.name, err, stderr.String())
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if len(out) == 0 {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("command %s exited 0 but its stdout is not JSON (%v): %.200q", c.name, err, out)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("command %s exited 0 but printed a JSON %s on stdout, not an object", c.name, jsonKind(v))
	}
	return obj, nil
}

// thrownError is what a command prints on stdout to throw a BPMN error.
type thrownError struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Variables map[string]any `json:"variables"`
}

// bpmnError reads the BPMN error a command that exited with
// c.bpmnErrorExit printed. Output that names none is a technical fault
// saying so (the task retries, then raises an incident).
func (c commandWorker) bpmnError(stdout []byte) error {
	var e thrownError
	dec := json.NewDecoder(bytes.NewReader(stdout))
	dec.DisallowUnknownFields()
	err := dec.Decode(&e)
	if err == nil && strings.TrimSpace(e.Code) == "" {
		err = errors.New(`"code" is missing or empty`)
	}
	if err != nil {
		return fmt.Errorf("exit %d throws a BPMN error: %v; print {\"code\": \"...\", \"message\": \"...\", \"variables\": {...}} on stdout (command %s printed %.200q)",
			c.bpmnErrorExit, err, c.name, bytes.TrimSpace(stdout))
	}
	return workerkit.BpmnError(e.Code, e.Message, e.Variables)
}

// jobEnv is the job's environment for the command.
func jobEnv(job *workerkit.Job, input []byte) []string {
	env := []string{
		"JETBPM_JOB_ID=" + job.ID,
		"JETBPM_JOB_TOPIC=" + job.Topic,
		"JETBPM_INSTANCE_ID=" + job.Instance,
		"JETBPM_NODE_ID=" + job.Node,
		"JETBPM_JOB_ATTEMPT=" + strconv.Itoa(job.Attempt),
		"JETBPM_JOB_DELIVERED_AT=" + job.DeliveredAt.UTC().Format(time.RFC3339Nano),
	}
	if len(input) <= maxEnvValue {
		env = append(env, "JETBPM_JOB_INPUT="+string(input))
	}
	names := make([]string, 0, len(job.Input))
	for k := range job.Input {
		if validEnvName(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		s, ok := job.Input[k].(string)
		if !ok {
			b, err := json.Marshal(job.Input[k])
			if err != nil {
				continue
			}
			s = string(b)
		}
		if len(s) <= maxEnvValue && !strings.ContainsRune(s, 0) {
			env = append(env, "JETBPM_VAR_"+k+"="+s)
		}
	}
	return env
}

func validEnvName(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max       int
	buf       []byte
	truncated bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.truncated = true
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	if b.truncated {
		return "…" + string(b.buf)
	}
	return string(b.buf)
}
