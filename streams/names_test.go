package streams

import (
	"regexp"
	"strings"
	"testing"
)

func TestTokenIsInjectiveAndSafe(t *testing.T) {
	names := []string{
		"", "=", "a", "A", "a.b", "a=2Eb", "a=2eb", "a_b", "a-b", "a b", "a\tb",
		"*", ">", "a.*", "a.>", "ü", "=C3=BC", "order.1", "order=2E1", "order_1",
		"$JS", "x.y.z", "x=2Ey.z", ".", "..", "=2E", "=7E", "a/b", "a:b",
	}
	seen := map[string]string{}
	for _, n := range names {
		tok := Token(n)
		if prev, dup := seen[tok]; dup {
			t.Errorf("Token(%q) = Token(%q) = %q", n, prev, tok)
		}
		seen[tok] = n
		if tok == "" || strings.ContainsAny(tok, ".*> \t\r\n") {
			t.Errorf("Token(%q) = %q is not a single safe subject token", n, tok)
		}
	}
	if got := Token("payment-service_v2"); got != "payment-service_v2" {
		t.Errorf("safe name changed: %q", got)
	}
}

func TestSubjectsStayInTheirTokens(t *testing.T) {
	// A dot in an instance id must not add a subject level.
	if got, want := EventSubject(3, "a.b"), "jetbpm.evt.3.a=2Eb"; got != want {
		t.Errorf("EventSubject = %q, want %q", got, want)
	}
	if got, want := TimerSubject(0, "i.1", "t>"), "jetbpm.tmr.0.i=2E1.t=3E"; got != want {
		t.Errorf("TimerSubject = %q, want %q", got, want)
	}
	if got, want := TopicFilter("pay.ment"), "jetbpm.job.pay=2Ement.>"; got != want {
		t.Errorf("TopicFilter = %q, want %q", got, want)
	}
}

// A report subject names the topic after the partition, so a permission
// can confine a worker to its topics' reports.
func TestReportSubjectNamesTheTopic(t *testing.T) {
	subject := ReportSubject(3, "pay.eu", "i.1")
	if want := "jetbpm.rpt.3.pay=2Eeu.i=2E1"; subject != want {
		t.Errorf("ReportSubject = %q, want %q", subject, want)
	}
	if !strings.HasPrefix(subject, ReportPrefix(3)) || !strings.HasPrefix(subject, strings.TrimSuffix(ReportsFilter(3), ">")) {
		t.Errorf("ReportSubject %q is not under ReportPrefix %q and ReportsFilter %q", subject, ReportPrefix(3), ReportsFilter(3))
	}
	if got, want := TopicReports("pay.eu"), "jetbpm.rpt.*.pay=2Eeu.>"; got != want {
		t.Errorf("TopicReports = %q, want %q", got, want)
	}
	for subject, want := range map[string]string{
		JobSubject("pay.eu", "j.1"): "pay=2Eeu",
		JobSubject("payments", "j"): "payments",
		"jetbpm.job.payments":       "",
		"jetbpm.rpt.0.payments.i":   "",
		"":                          "",
	} {
		if got := JobTopicToken(subject); got != want {
			t.Errorf("JobTopicToken(%q) = %q, want %q", subject, got, want)
		}
	}
}

func TestPartitionOfIsStable(t *testing.T) {
	// Pinned values (FNV-1a 32 mod n). Changing the hash would move every
	// stored instance to another partition: never "fix" this test by
	// updating them.
	pinned := []struct {
		id         string
		partitions int
		want       int
	}{
		{"order-1", 8, 5},
		{"order-2", 8, 4},
		{"0190c7e2-7d1a-7c3e-9a55-1b2f3c4d5e6f", 8, 0},
		{"", 8, 5},
		{"order-1", 3, 1},
		{"order-1", 1, 0},
	}
	for _, p := range pinned {
		if got := PartitionOf(p.id, p.partitions); got != p.want {
			t.Errorf("PartitionOf(%q, %d) = %d, want %d", p.id, p.partitions, got, p.want)
		}
	}
	for _, n := range []int{1, 2, 7, 64} {
		for i := range 1000 {
			id := strings.Repeat("x", i%17) + string(rune('a'+i%26))
			if p := PartitionOf(id, n); p < 0 || p >= n {
				t.Fatalf("PartitionOf(%q, %d) = %d, out of range", id, n, p)
			}
		}
	}
}

// Keys built from tokens must pass the KV key rules, or kv.Get refuses them.
func TestKeysAreValidKVKeys(t *testing.T) {
	valid := regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)
	for _, name := range []string{"order.v2", "i/node/3", "ü", "a b", "x*>"} {
		for _, key := range []string{DefinitionKey(name, 1), LatestKey(name), IncidentKey(name), SnapshotKey(name, 2)} {
			if !valid.MatchString(key) {
				t.Errorf("%q is not a valid KV key", key)
			}
		}
	}
}

func TestUntokenTakesOnlyWhatTokenWrites(t *testing.T) {
	for _, name := range []string{"", "=", "a", "o.17", "a b", "ü", "*", ">", "=2E", "x_y-z", "\x00\xff"} {
		got, err := Untoken(Token(name))
		if err != nil || got != name {
			t.Errorf("Untoken(Token(%q)) = %q, %v", name, got, err)
		}
	}
	for _, tok := range []string{"", "o@17", "o=2e17", "=", "=2", "=ZZ", "a=", "=41", "ü"} {
		if tok == "=" {
			continue // the empty name
		}
		if got, err := Untoken(tok); err == nil {
			t.Errorf("Untoken(%q) = %q, want an error: Token never writes it", tok, got)
		}
	}
}

func TestParseStoredMessage(t *testing.T) {
	for subject, want := range map[string]StoredMessage{
		"jetbpm.mp.3.order=2Epaid.o-1":  {Partition: 3, Kind: MessagePublish, Name: "order.paid", Key: "o-1"},
		"jetbpm.mc.0.sub.n.=":           {Partition: 0, Kind: MessageSubscribe, Name: "n", Key: ""},
		"jetbpm.mc.12.exp.n.k":          {Partition: 12, Kind: MessageExpire, Name: "n", Key: "k"},
		"jetbpm.mc.1.rej.a=20b.=3Dx=3D": {Partition: 1, Kind: MessageReject, Name: "a b", Key: "=x="},
	} {
		got, err := ParseStoredMessage(subject)
		if err != nil || got != want {
			t.Errorf("ParseStoredMessage(%q) = %+v, %v; want %+v", subject, got, err, want)
		}
	}
	for _, subject := range []string{
		"jetbpm.mp.3.n", "jetbpm.mp.x.n.k", "jetbpm.mp.-1.n.k", "jetbpm.mp.01.n.k", "jetbpm.mc.0.pub.n.k",
		"jetbpm.mc.0.what.n.k", "jetbpm.mp.0.=.k", "jetbpm.mp.0.n.o@1", "jetbpm.mx.0.n.k.1", "jetbpm.mp.0.n.k.x",
	} {
		if got, err := ParseStoredMessage(subject); err == nil {
			t.Errorf("ParseStoredMessage(%q) = %+v, want an error", subject, got)
		}
	}
}

func TestTaskKey(t *testing.T) {
	// A task id is its key; any other string stays one safe, distinct key
	// (a KV key may hold dots but no wildcard or space).
	if got := TaskKey("3zq0-x_1.t14"); got != "3zq0-x_1.t14" {
		t.Errorf("TaskKey of a task id = %q, want the id", got)
	}
	seen := map[string]string{}
	for _, id := range []string{"", ".", "a", "a.t1", "a.t1.t2", "a.t1=2Et2", "a.*", "a.>", "a b.t1", "a=2Eb", "a.b", "a=2Eb.t1", "*.t1"} {
		k := TaskKey(id)
		if prev, dup := seen[k]; dup {
			t.Errorf("TaskKey(%q) = TaskKey(%q) = %q", id, prev, k)
		}
		seen[k] = id
		if strings.ContainsAny(k, "*> \t") || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, "..") {
			t.Errorf("TaskKey(%q) = %q is not a valid KV key", id, k)
		}
	}
}

func TestValidInbox(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"_INBOX.abc":                         true,
		"_INBOX.abc.def":                     true,
		"_INBOX.":                            false,
		"_INBOX..x":                          false,
		"_INBOX.*":                           false,
		"_INBOX.>":                           false,
		"_INBOX.a b":                         false,
		"$KV.jetbpm-instances.i1":            false,
		"jetbpm.api.start":                   false,
		"_INBOX." + strings.Repeat("x", 250): false,
	} {
		if got := ValidInbox(s); got != want {
			t.Errorf("ValidInbox(%q) = %v, want %v", s, got, want)
		}
	}
}
