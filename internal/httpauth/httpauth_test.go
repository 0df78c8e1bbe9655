package httpauth_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/jetbpm/jetbpm/internal/httpauth"
)

func authFile(t *testing.T) *httpauth.Authenticator {
	t.Helper()
	hash := cheapHash(t, "pw")
	a, err := httpauth.Parse("auth.yaml", []byte(`users:
  - {name: alice, bcrypt: "`+hash+`", roles: [operator]}
  - {name: tom, bcrypt: "`+hash+`", roles: [tasklist, integration]}
tokens:
  - {name: dash, sha256: `+httpauth.HashToken("t-view")+`, roles: [viewer]}
  - {name: pay, sha256: `+httpauth.HashToken("t-pay")+`, roles: [worker], topics: [payments, refunds]}
  - {name: any, sha256: `+httpauth.HashToken("t-any")+`, roles: [worker], topics: ["*"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// cheapHash is a bcrypt hash of the lowest cost, so tests stay fast (under
// -race too); HashPassword's cost is bcrypt.DefaultCost.
func cheapHash(t *testing.T, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func TestHashPassword(t *testing.T) {
	h, err := httpauth.HashPassword("pw")
	if err != nil {
		t.Fatal(err)
	}
	if cost, err := bcrypt.Cost([]byte(h)); err != nil || cost != bcrypt.DefaultCost || bcrypt.CompareHashAndPassword([]byte(h), []byte("pw")) != nil {
		t.Errorf("HashPassword = %q (cost %d, %v)", h, cost, err)
	}
	if got := httpauth.HashToken("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("HashToken(abc) = %s", got)
	}
}

func request(authz string) *http.Request {
	r := httptest.NewRequest("GET", "/v1/processes", nil)
	if authz != "" {
		r.Header.Set("Authorization", authz)
	}
	return r
}

func basic(user, pw string) string {
	r := httptest.NewRequest("GET", "/", nil)
	r.SetBasicAuth(user, pw)
	return r.Header.Get("Authorization")
}

func TestAuthenticate(t *testing.T) {
	a := authFile(t)
	for _, c := range []struct {
		authz, name, err string
	}{
		{basic("alice", "pw"), "alice", ""},
		{basic("alice", "pw"), "alice", ""}, // from the cache of accepted credentials
		{basic("alice", "nope"), "", "wrong user name or password"},
		{basic("mallory", "pw"), "", "wrong user name or password"},
		{"Bearer t-view", "dash", ""},
		{"bearer  t-pay ", "pay", ""},
		{"Bearer t-nope", "", "unknown bearer token"},
		{"Basic !!!", "", "malformed Basic credentials"},
		{"Digest x", "", `authorization scheme "Digest"`},
		{"", "", "no credentials"},
	} {
		p, err := a.Authenticate(request(c.authz))
		switch {
		case c.err == "" && (err != nil || p.Name != c.name):
			t.Errorf("%q: %v, %v; want %s", c.authz, p, err, c.name)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v, %v; want an error containing %q", c.authz, p, err, c.err)
		}
	}
}

func TestRolesAndTopics(t *testing.T) {
	a := authFile(t)
	who := func(authz string) *httpauth.Principal {
		p, err := a.Authenticate(request(authz))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	alice, tom, dash, pay, anyTopic := who(basic("alice", "pw")), who(basic("tom", "pw")), who("Bearer t-view"), who("Bearer t-pay"), who("Bearer t-any")
	all := []httpauth.Access{httpauth.Read, httpauth.Operate, httpauth.TaskRead, httpauth.TaskWork, httpauth.Integrate, httpauth.Work}
	want := map[*httpauth.Principal][]httpauth.Access{
		alice:    all,
		tom:      {httpauth.TaskRead, httpauth.TaskWork, httpauth.Integrate},
		dash:     {httpauth.Read, httpauth.TaskRead},
		pay:      {httpauth.Work},
		anyTopic: {httpauth.Work},
		nil:      {},
	}
	for p, allowed := range want {
		for _, acc := range all {
			in := false
			for _, x := range allowed {
				in = in || x == acc
			}
			if p.Allows(acc) != in {
				t.Errorf("%v.Allows(%s) = %t", p, acc, !in)
			}
		}
	}
	for _, c := range []struct {
		p     *httpauth.Principal
		topic string
		ok    bool
	}{
		{pay, "payments", true}, {pay, "refunds", true}, {pay, "shipping", false},
		{anyTopic, "shipping", true}, {alice, "shipping", true}, {dash, "payments", false}, {tom, "payments", false}, {nil, "x", false},
	} {
		if c.p.MayWork(c.topic) != c.ok {
			t.Errorf("%v.MayWork(%s) = %t", c.p, c.topic, !c.ok)
		}
	}
	open, err := httpauth.Open().Authenticate(request(""))
	if err != nil || !open.Anonymous || !open.Allows(httpauth.Operate) || !open.MayWork("x") {
		t.Errorf("Open: %+v, %v; want an anonymous operator", open, err)
	}
}

func TestParseRefusesBadFiles(t *testing.T) {
	hash := cheapHash(t, "pw")
	sum := httpauth.HashToken("x")
	for _, c := range []struct{ file, want string }{
		{"", "no users and no tokens"},
		{"users: []\n", "no users and no tokens"},
		{"user: []\n", "field user not found"},
		{"users:\n  - {name: a, bcrypt: \"" + hash + "\", roles: [operator], colour: red}\n", "field colour not found"},
		{"users:\n  - {bcrypt: \"" + hash + "\", roles: [operator]}\n", "users[0]: no name"},
		{"users:\n  - {name: a, bcrypt: \"" + hash + "\"}\n", "users[0] (a): no roles"},
		{"users:\n  - {name: a, bcrypt: \"" + hash + "\", roles: [root]}\n", `unknown role "root"`},
		{"users:\n  - {name: a, bcrypt: plain, roles: [viewer]}\n", "users[0]: bcrypt: not a bcrypt hash"},
		{"users:\n  - {name: a, bcrypt: \"" + hash + "\", sha256: " + sum + ", roles: [viewer]}\n", "sha256 is for tokens"},
		{"users:\n  - {name: a, bcrypt: \"" + hash + "\", roles: [viewer]}\n  - {name: a, bcrypt: \"" + hash + "\", roles: [viewer]}\n", `name "a" is used twice`},
		{"tokens:\n  - {name: w, sha256: " + sum + ", roles: [worker]}\n", "a worker needs topics"},
		{"tokens:\n  - {name: v, sha256: " + sum + ", roles: [viewer], topics: [x]}\n", "topics are for the worker role"},
		{"tokens:\n  - {name: v, sha256: abc, roles: [viewer]}\n", "tokens[0]: sha256: want 64 hex digits"},
		{"tokens:\n  - {name: v, sha256: " + sum + ", roles: [viewer]}\n  - {name: w, sha256: " + sum + ", roles: [viewer]}\n", "tokens[1]: the same token as v"},
	} {
		_, err := httpauth.Parse("f.yaml", []byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "http auth f.yaml: ") {
			t.Errorf("%q: %v; want an error containing %q", c.file, err, c.want)
		}
	}
}

func TestMiddleware(t *testing.T) {
	a := authFile(t)
	var seen *httpauth.Principal
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = httpauth.FromContext(r.Context())
	}), func(w http.ResponseWriter, r *http.Request, status int, detail string) {
		http.Error(w, detail, status)
	})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, request(""))
	if w.Code != 401 || len(w.Header().Values("WWW-Authenticate")) != 2 || seen != nil {
		t.Errorf("no credentials: %d %v, handler saw %v", w.Code, w.Header(), seen)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, request("Bearer t-view"))
	if w.Code != 200 || seen == nil || seen.Name != "dash" {
		t.Errorf("viewer token: %d, handler saw %v", w.Code, seen)
	}
}
