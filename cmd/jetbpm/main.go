// Command jetbpm runs the jetbpm BPMN engine and operates it.
//
// Every subcommand is one entry of commands() and one file holding its run
// function. Exit codes: 0 ok, 1 runtime error, 2 usage error; errors are one
// line on stderr, help goes to stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one jetbpm subcommand.
type command struct {
	name    string
	summary string // one line for 'jetbpm help'
	usage   string // synopsis and description; the flags are listed after it
	// run parses args with newFlagSet and parseArgs before anything else,
	// so that 'jetbpm help NAME' (which runs it with --help) shows its flags.
	run func(ctx context.Context, args []string) error
	// subs makes the command a group ('jetbpm instance show ...'): run is
	// then runGroup, and each sub is named "group sub" (its flag set's name).
	subs []command
}

// commands lists the subcommands in the order 'jetbpm help' shows them.
func commands() []command {
	return []command{
		{name: "serve", summary: "run the engine, with an embedded NATS server unless --nats-url is given", usage: serveUsage, run: runServe},
		{name: "deploy", summary: "deploy BPMN files", usage: deployUsage, run: runDeploy},
		{name: "processes", summary: "list deployed processes (list)", usage: processesUsage, run: runProcesses, subs: []command{
			{name: "processes list", summary: "list the latest version of every deployed process", usage: processesListUsage, run: runProcessesList},
		}},
		{name: "process", summary: "show one deployed process (show)", usage: processUsage, run: runProcess, subs: []command{
			{name: "process show", summary: "show a process version, or its BPMN document (--xml)", usage: processShowUsage, run: runProcessShow},
		}},
		{name: "start", summary: "start an instance of a deployed process", usage: startUsage, run: runStart},
		{name: "instance", summary: "show or cancel one instance (show, cancel)", usage: instanceUsage, run: runInstance, subs: []command{
			{name: "instance show", summary: "show an instance's status, active nodes and variables", usage: instanceShowUsage, run: runInstanceShow},
			{name: "instance cancel", summary: "terminate an active instance", usage: instanceCancelUsage, run: runInstanceCancel},
			{name: "instance compensate", summary: "run an instance's compensation handlers, then terminate it", usage: instanceCompensateUsage, run: runInstanceCompensate},
			{name: "instance set-vars", summary: "write variables to an active instance", usage: instanceSetVarsUsage, run: runInstanceSetVars},
			{name: "instance trigger", summary: "move on a token waiting at a receive task without a message", usage: instanceTriggerUsage, run: runInstanceTrigger},
		}},
		{name: "instances", summary: "list instances (list)", usage: instancesUsage, run: runInstances, subs: []command{
			{name: "instances list", summary: "list instances, newest first", usage: instancesListUsage, run: runInstancesList},
		}},
		{name: "incidents", summary: "list incidents (list)", usage: incidentsUsage, run: runIncidents, subs: []command{
			{name: "incidents list", summary: "list incidents, oldest first failure first", usage: incidentsListUsage, run: runIncidentsList},
		}},
		{name: "incident", summary: "show or operate one incident (show, retry, resolve, abandon)", usage: incidentUsage, run: runIncident, subs: []command{
			{name: "incident show", summary: "show an incident: cause chain, history, variables at each failure", usage: incidentShowUsage, run: runIncidentShow},
			{name: "incident retry", summary: "re-enter the incident's node now", usage: incidentRetryUsage, run: runIncidentRetry},
			{name: "incident resolve", summary: "continue as if the node had completed, after setting --vars", usage: incidentResolveUsage, run: runIncidentResolve},
			{name: "incident abandon", summary: "close as dead-lettered and cancel its token", usage: incidentAbandonUsage, run: runIncidentAbandon},
		}},
		{name: "store", summary: "check the store for damage and act on what it lost (check, dismiss, recreate)", usage: storeUsage, run: runStore, subs: []command{
			{name: "store check", summary: "check the store now; print lost instances and streams that went back; exit 1 if any", usage: storeCheckUsage, run: runStoreCheck},
			{name: "store dismiss", summary: "close a damage record: what it names is accepted as lost (--reason)", usage: storeDismissUsage, run: runStoreDismiss},
			{name: "store recreate", summary: "start a new instance in place of a lost one, from its start event", usage: storeRecreateUsage, run: runStoreRecreate},
		}},
		{name: "cluster", summary: "show the engine nodes and the partitions each holds (status)", usage: clusterUsage, run: runCluster, subs: []command{
			{name: "cluster status", summary: "list the engine nodes, each partition's holder and backlog; exit 1 if one has none", usage: clusterStatusUsage, run: runClusterStatus},
		}},
		{name: "backup", summary: "save every jetbpm stream and bucket into a directory (JetStream snapshots)", usage: backupUsage, run: runBackup},
		{name: "restore", summary: "restore a backup into serve's stopped store (--data) or a NATS server", usage: restoreUsage, run: runRestore},
		{name: "work", summary: "run a worker: a command per job of an external task topic", usage: workUsage, run: runWork},
		{name: "bench", summary: "measure throughput and latency against the raw JetStream ceiling", usage: benchUsage, run: runBench},
		{name: "tasks", summary: "list user tasks (list)", usage: tasksUsage, run: runTasks, subs: []command{
			{name: "tasks list", summary: "list open tasks, highest priority then oldest first", usage: tasksListUsage, run: runTasksList},
		}},
		{name: "task", summary: "show or work on one user task (show, form, claim, unclaim, assign, update, complete, error)", usage: taskUsage, run: runTask, subs: []command{
			{name: "task show", summary: "show a task: assignee, candidates, dates, variables, last commands", usage: taskShowUsage, run: runTaskShow},
			{name: "task form", summary: "show the form the task's BPMN file holds: fields, types, rules", usage: taskFormUsage, run: runTaskForm},
			{name: "task claim", summary: "assign the task to yourself (--user)", usage: taskClaimUsage, run: runTaskClaim},
			{name: "task unclaim", summary: "give the task back", usage: taskUnclaimUsage, run: runTaskUnclaim},
			{name: "task assign", summary: "assign the task to a user, whoever holds it", usage: taskAssignUsage, run: runTaskAssign},
			{name: "task update", summary: "change its due date, follow-up date or priority", usage: taskUpdateUsage, run: runTaskUpdate},
			{name: "task complete", summary: "complete the task with --vars; the process goes on", usage: taskCompleteUsage, run: runTaskComplete},
			{name: "task error", summary: "end the task with a BPMN error (--code)", usage: taskErrorUsage, run: runTaskError},
			{name: "task escalate", summary: "raise an escalation from the task (--code)", usage: taskEscalateUsage, run: runTaskEscalate},
		}},
		{name: "signal", summary: "broadcast a signal to waiting instances", usage: signalUsage, run: runSignal, subs: []command{
			{name: "signal broadcast", summary: "broadcast a signal; it reaches every waiting instance and starts signal-started processes", usage: signalBroadcastUsage, run: runSignalBroadcast},
		}},
		{name: "message", summary: "send a message to waiting instances (publish, correlate)", usage: messageUsage, run: runMessage, subs: []command{
			{name: "message publish", summary: "publish a message; it may be kept for later subscriptions (--ttl)", usage: messagePublishUsage, run: runMessagePublish},
			{name: "message correlate", summary: "deliver a message and print the instance it reached", usage: messageCorrelateUsage, run: runMessageCorrelate},
		}},
		{name: "hash-secret", summary: "hash a password (bcrypt) or token (sha256) from stdin for serve --http-auth", usage: hashSecretUsage, run: runHashSecret},
		{name: "help", summary: "show the commands, or the usage and flags of one command", usage: helpUsage, run: runHelp},
	}
}

// lookup finds a command by name: "serve", or "instance show" for a
// command of a group.
func lookup(name string) (command, bool) {
	group, sub, _ := strings.Cut(name, " ")
	for _, c := range commands() {
		if c.name != group {
			continue
		}
		if sub == "" {
			return c, true
		}
		for _, s := range c.subs {
			if s.name == name {
				return s, true
			}
		}
	}
	return command{}, false
}

func main() { os.Exit(run(os.Args[1:])) }

// run dispatches to a command and turns its error into an exit code.
func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal gets the default behaviour: exit at once
	}()

	if len(args) == 0 {
		printOverview(os.Stderr)
		return 2
	}
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" {
		name = "help"
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(os.Stderr, "jetbpm: unknown command %q; run 'jetbpm help'\n", name)
		return 2
	}
	return exitCode(cmd.run(ctx, args[1:]))
}

func exitCode(err error) int {
	var usage *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "jetbpm: %s; run 'jetbpm help %s'\n", oneLine(usage.msg), usage.cmd)
		return 2
	default:
		fmt.Fprintf(os.Stderr, "jetbpm: %s\n", oneLine(err.Error()))
		return 1
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
