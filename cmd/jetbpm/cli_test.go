package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestHelpExitsZero(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"help"}, "serve"},
		{[]string{"--help"}, "serve"},
		{[]string{"help", "serve"}, "--nats-url"},
		{[]string{"serve", "--help"}, "--nats-url"},
		{[]string{"serve", "-h"}, "--partitions"},
		{[]string{"help", "help"}, "usage: jetbpm help"},
		{[]string{"help"}, "\n  deploy "},
		{[]string{"help"}, "\n  start "},
		{[]string{"help"}, "\n  instance "},
		{[]string{"help"}, "\n  instances "},
		{[]string{"help", "deploy"}, "(and N more problems)"},
		{[]string{"help", "start"}, "--vars OBJECT"},
		{[]string{"help", "instance"}, "  show "},
		{[]string{"help", "instance"}, "  cancel "},
		{[]string{"instance", "--help"}, "  cancel "},
		{[]string{"help", "instance", "show"}, "--json"},
		{[]string{"instance", "show", "--help"}, "--nats-url"},
		{[]string{"instance", "cancel", "-h"}, "--reason"},
		{[]string{"instance", "compensate", "-h"}, "--node"},
		{[]string{"help", "instance"}, "  compensate "},
		{[]string{"help", "instance"}, "  set-vars "},
		{[]string{"instance", "set-vars", "-h"}, "--request-id R"},
		{[]string{"help", "instances"}, "  list "},
		{[]string{"instances", "list", "--help"}, "--status STATUS"},
		{[]string{"help"}, "\n  incidents "},
		{[]string{"help"}, "\n  incident "},
		{[]string{"help", "incidents"}, "  list "},
		{[]string{"incidents", "list", "--help"}, "--older-than AGE"},
		{[]string{"help", "incident"}, "  resolve "},
		{[]string{"help", "incident", "show"}, "--json"},
		{[]string{"help", "incident", "resolve"}, "--vars OBJECT"},
		{[]string{"incident", "abandon", "-h"}, "dead-lettered"},
		{[]string{"incident", "retry", "--help"}, "--timeout"},
	}
	for _, c := range cases {
		stdout, stderr, code := runJetbpm(t, nil, c.args...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, c.want) {
			t.Errorf("jetbpm %s: exit %d, stderr %q, stdout missing %q:\n%s", strings.Join(c.args, " "), code, stderr, c.want, stdout)
		}
	}
}

func TestUsageErrorsExitTwoWithOneLine(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--bogus"}, `^jetbpm: flag provided but not defined: -bogus; run 'jetbpm help serve'$`},
		{[]string{"serve", "--replicas", "x"}, `^jetbpm: invalid value "x" for flag -replicas: .*; run 'jetbpm help serve'$`},
		{[]string{"serve", "--log-format", "xml"}, `^jetbpm: invalid value "xml" for flag -log-format: want one of auto, text, json; run 'jetbpm help serve'$`},
		{[]string{"serve", "extra"}, `^jetbpm: unexpected argument "extra"; run 'jetbpm help serve'$`},
		{[]string{"serve", "--nats-url", "nats://127.0.0.1:1", "--data", "x"}, `^jetbpm: --data and --listen .*; run 'jetbpm help serve'$`},
		{[]string{"help", "nosuch"}, `^jetbpm: unknown command "nosuch"; run 'jetbpm help help'$`},
		{[]string{"nosuch"}, `^jetbpm: unknown command "nosuch"; run 'jetbpm help'$`},
		{[]string{"help", "instance", "bogus"}, `^jetbpm: unknown command "instance bogus"; run 'jetbpm help help'$`},
		{[]string{"deploy"}, `^jetbpm: missing FILE; run 'jetbpm help deploy'$`},
		{[]string{"start"}, `^jetbpm: missing PROCESS_ID; run 'jetbpm help start'$`},
		{[]string{"start", "a", "b"}, `^jetbpm: unexpected argument "b"; run 'jetbpm help start'$`},
		{[]string{"start", "order", "--vars", "nope"}, `^jetbpm: --vars: not valid JSON: .*; run 'jetbpm help start'$`},
		{[]string{"start", "order", "--vars", "{} {}"}, `^jetbpm: --vars: want one JSON object, found more after it; run 'jetbpm help start'$`},
		{[]string{"start", "order", "--timeout", "0s"}, `^jetbpm: --timeout must be positive; run 'jetbpm help start'$`},
		{[]string{"instance"}, `^jetbpm: missing subcommand: want show\|cancel\|compensate\|set-vars\|trigger; run 'jetbpm help instance'$`},
		{[]string{"instance", "bogus"}, `^jetbpm: unknown subcommand "bogus": want show\|cancel\|compensate\|set-vars\|trigger; run 'jetbpm help instance'$`},
		{[]string{"instance", "--json", "show", "x"}, `^jetbpm: flag provided but not defined: -json; run 'jetbpm help instance'$`},
		{[]string{"instance", "show"}, `^jetbpm: missing ID; run 'jetbpm help instance show'$`},
		{[]string{"instance", "cancel", "a", "b"}, `^jetbpm: unexpected argument "b"; run 'jetbpm help instance cancel'$`},
		{[]string{"instance", "compensate"}, `^jetbpm: missing ID; run 'jetbpm help instance compensate'$`},
		{[]string{"instance", "set-vars", "x"}, `^jetbpm: --vars is required; run 'jetbpm help instance set-vars'$`},
		{[]string{"instance", "set-vars", "x", "--vars", "[1]"}, `^jetbpm: --vars: want a JSON object, not array; run 'jetbpm help instance set-vars'$`},
		{[]string{"instances"}, `^jetbpm: missing subcommand: want list; run 'jetbpm help instances'$`},
		{[]string{"instances", "list", "--status", "bogus"}, `^jetbpm: invalid value "bogus" for flag -status: want one of active, incident, completed, failed, terminated; run 'jetbpm help instances list'$`},
		{[]string{"incidents"}, `^jetbpm: missing subcommand: want list; run 'jetbpm help incidents'$`},
		{[]string{"incidents", "list", "x"}, `^jetbpm: unexpected argument "x"; run 'jetbpm help incidents list'$`},
		{[]string{"incidents", "list", "--state", "bogus"}, `^jetbpm: invalid value "bogus" for flag -state: want one of open, closed, all; run 'jetbpm help incidents list'$`},
		{[]string{"incidents", "list", "--cause", "bogus"}, `^jetbpm: invalid value "bogus" for flag -cause: want one of operation, expression, dataFlow, retriesExhausted, bpmnError, childFailed; run 'jetbpm help incidents list'$`},
		{[]string{"incidents", "list", "--older-than", "soon"}, `^jetbpm: --older-than: age "soon": want a duration such as 90m, 36h or 7d; run 'jetbpm help incidents list'$`},
		{[]string{"incidents", "list", "--older-than", "-1h"}, `^jetbpm: --older-than: age "-1h" must not be negative; run 'jetbpm help incidents list'$`},
		{[]string{"incident"}, `^jetbpm: missing subcommand: want show\|retry\|resolve\|abandon; run 'jetbpm help incident'$`},
		{[]string{"incident", "show"}, `^jetbpm: missing ID; run 'jetbpm help incident show'$`},
		{[]string{"incident", "retry", "a", "b"}, `^jetbpm: unexpected argument "b"; run 'jetbpm help incident retry'$`},
		{[]string{"incident", "abandon", "--vars", "{}", "x"}, `^jetbpm: flag provided but not defined: -vars; run 'jetbpm help incident abandon'$`},
		{[]string{"incident", "resolve", "x", "--vars", "[1]"}, `^jetbpm: --vars: want a JSON object, not array; run 'jetbpm help incident resolve'$`},
		{[]string{"instances", "list", "--limit", "-1"}, `^jetbpm: --limit must be 0 or more; run 'jetbpm help instances list'$`},
	}
	for _, c := range cases {
		stdout, stderr, code := runJetbpm(t, nil, c.args...)
		line := strings.TrimSuffix(stderr, "\n")
		if code != 2 || stdout != "" || strings.Contains(line, "\n") || !regexp.MustCompile(c.want).MatchString(line) {
			t.Errorf("jetbpm %s: exit %d, stdout %q, stderr %q; want exit 2 and one line matching %s",
				strings.Join(c.args, " "), code, stdout, stderr, c.want)
		}
	}
	if _, stderr, code := runJetbpm(t, nil); code != 2 || !strings.Contains(stderr, "usage: jetbpm COMMAND") {
		t.Errorf("jetbpm without arguments: exit %d, stderr %q", code, stderr)
	}
}
