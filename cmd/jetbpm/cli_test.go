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
		{[]string{"help", "instances"}, "  list "},
		{[]string{"instances", "list", "--help"}, "--status STATUS"},
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
		{[]string{"instance"}, `^jetbpm: missing subcommand: want show\|cancel; run 'jetbpm help instance'$`},
		{[]string{"instance", "bogus"}, `^jetbpm: unknown subcommand "bogus": want show\|cancel; run 'jetbpm help instance'$`},
		{[]string{"instance", "--json", "show", "x"}, `^jetbpm: flag provided but not defined: -json; run 'jetbpm help instance'$`},
		{[]string{"instance", "show"}, `^jetbpm: missing ID; run 'jetbpm help instance show'$`},
		{[]string{"instance", "cancel", "a", "b"}, `^jetbpm: unexpected argument "b"; run 'jetbpm help instance cancel'$`},
		{[]string{"instances"}, `^jetbpm: missing subcommand: want list; run 'jetbpm help instances'$`},
		{[]string{"instances", "list", "--status", "bogus"}, `^jetbpm: invalid value "bogus" for flag -status: want one of active, completed, failed, terminated; run 'jetbpm help instances list'$`},
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
