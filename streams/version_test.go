package streams

import (
	"errors"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	good := map[string]version{
		"2.12.0":         {2, 12, 0, ""},
		"v2.11.4":        {2, 11, 4, ""},
		" 2.10.22 ":      {2, 10, 22, ""},
		"2.12.0-RC.3":    {2, 12, 0, "RC.3"},
		"2.14.0-dev":     {2, 14, 0, "dev"},
		"2.11.4+build.5": {2, 11, 4, ""},
		"2.12":           {2, 12, 0, ""},
	}
	for in, want := range good {
		got, err := parseVersion(in)
		if err != nil || got != want {
			t.Errorf("parseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2", "two.1.0", "2.x.1", "2.12.0-", "2.12.0.1", "2..1", "2.-1.0", "2.+1.0"} {
		if _, err := parseVersion(in); err == nil {
			t.Errorf("parseVersion(%q) accepted garbage", in)
		}
	}
}

func TestVersionCompare(t *testing.T) {
	ordered := []string{
		"2.9.25", "2.10.22", "2.11.9", "2.12.0-RC.1", "2.12.0-RC.2", "2.12.0-RC.10",
		"2.12.0-beta", "2.12.0", "2.12.1", "2.14.0-dev", "2.14.0", "3.0.0",
	}
	for i := range ordered {
		for j := range ordered {
			a, _ := parseVersion(ordered[i])
			b, _ := parseVersion(ordered[j])
			if got, want := a.compare(b), sign(i-j); got != want {
				t.Errorf("compare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}

func TestCheckVersion(t *testing.T) {
	err := checkVersion("nats://x:4222", "2.10.22")
	want := "jetbpm needs nats-server >= 2.12.0 with JetStream enabled; nats://x:4222 runs 2.10.22"
	if err == nil || err.Error() != want {
		t.Fatalf("checkVersion(2.10.22) = %v, want %q", err, want)
	}
	if !errors.Is(err, ErrServerUnsupported) {
		t.Errorf("error does not match ErrServerUnsupported")
	}
	for _, old := range []string{"2.11.9", "2.12.0-RC.5"} {
		if err := checkVersion("s", old); err == nil {
			t.Errorf("checkVersion(%s) passed", old)
		}
	}
	for _, ok := range []string{"2.12.0", "2.12.3", "2.15.2", "2.16.0-dev", "3.0.0"} {
		if err := checkVersion("s", ok); err != nil {
			t.Errorf("checkVersion(%s) = %v", ok, err)
		}
	}
	if err := checkVersion("s", "banana"); err == nil || !strings.Contains(err.Error(), "2.12.0") {
		t.Errorf("unreadable version: %v", err)
	}
}
