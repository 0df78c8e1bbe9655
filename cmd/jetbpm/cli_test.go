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
