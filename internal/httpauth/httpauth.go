// Package httpauth authenticates the requests of jetbpm's HTTP listener and
// says what each caller may do.
//
// A caller proves who it is with HTTP Basic (a user name and password,
// checked against a bcrypt hash) or a bearer token (checked against the
// token's SHA-256). Each user and token holds roles, the roles of
// nats.conf plus a read-only one:
//
//	operator     everything: deploy, start, cancel, incidents, messages, signals, tasks, jobs
//	viewer       read only: processes, instances, incidents, tasks
//	tasklist     read and work user tasks
//	integration  publish and correlate messages, broadcast signals
//	worker       fetch and report jobs, of its topics only
//
// The users and tokens come from a YAML file (Load):
//
//	users:
//	  - name: alice
//	    bcrypt: "$2a$10$…"        # jetbpm hash-secret bcrypt < password.txt
//	    roles: [operator]
//	tokens:
//	  - name: payments-worker
//	    sha256: "5e88…"           # jetbpm hash-secret sha256 < token.txt
//	    roles: [worker]
//	    topics: [payments]       # "*": every topic
//
// An Authenticator made by Open lets every request in as operator: serve
// uses it only on a loopback listener, or with --http-insecure.
//
// Handlers read the caller with FromContext and check it with Allows (and
// MayWork for the topic of a job):
//
//	p := httpauth.FromContext(r.Context())
//	if !p.MayWork(topic) { … 403 … }
package httpauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// Role is a set of permissions given to users and tokens.
type Role string

// The roles.
const (
	Operator    Role = "operator"
	Viewer      Role = "viewer"
	Tasklist    Role = "tasklist"
	Integration Role = "integration"
	Worker      Role = "worker"
)

// Roles lists every role.
var Roles = []Role{Operator, Viewer, Tasklist, Integration, Worker}

// Access is a kind of request a route serves.
type Access string

// The kinds of request.
const (
	Read      Access = "read"      // processes, instances, incidents: operator, viewer
	Operate   Access = "operate"   // deploy, start, cancel, incidents: operator
	TaskRead  Access = "taskRead"  // list and read user tasks: operator, viewer, tasklist
	TaskWork  Access = "taskWork"  // claim, complete, … user tasks: operator, tasklist
	Integrate Access = "integrate" // messages and signals: operator, integration
	Work      Access = "work"      // fetch and report jobs (MayWork checks the topic): operator, worker
)

// grants says which roles allow each access.
var grants = map[Access][]Role{
	Read:      {Operator, Viewer},
	Operate:   {Operator},
	TaskRead:  {Operator, Viewer, Tasklist},
	TaskWork:  {Operator, Tasklist},
	Integrate: {Operator, Integration},
	Work:      {Operator, Worker},
}

// RolesFor lists the roles that allow a; for documentation.
func RolesFor(a Access) []Role { return slices.Clone(grants[a]) }

// A Principal is an authenticated caller.
type Principal struct {
	Name  string
	Roles []Role
	// Topics are the job topics a worker may fetch and report for; "*" is
	// every topic.
	Topics []string
	// Anonymous is set when authentication is off (Open).
	Anonymous bool
}

// Allows reports whether p may make requests of kind a. A nil Principal
// may do nothing.
func (p *Principal) Allows(a Access) bool {
	if p == nil {
		return false
	}
	for _, r := range grants[a] {
		if slices.Contains(p.Roles, r) {
			return true
		}
	}
	return false
}

// MayWork reports whether p may fetch and report the jobs of topic: an
// operator may for every topic, a worker for its topics.
func (p *Principal) MayWork(topic string) bool {
	switch {
	case p == nil:
		return false
	case slices.Contains(p.Roles, Operator):
		return true
	case !slices.Contains(p.Roles, Worker):
		return false
	}
	return slices.Contains(p.Topics, "*") || slices.Contains(p.Topics, topic)
}

type ctxKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the caller a Middleware stored, or nil.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}

// An Authenticator checks the credentials of requests. The zero value
// refuses everyone; Open lets everyone in.
type Authenticator struct {
	open   bool
	users  map[string]*entry // by name
	tokens map[[sha256.Size]byte]*entry

	mu       sync.Mutex
	verified map[[sha256.Size]byte]*Principal // sha256(name, password) of Basic credentials bcrypt accepted
}

type entry struct {
	principal Principal
	hash      []byte // bcrypt, for users
}

// maxVerified bounds the cache of accepted Basic credentials.
const maxVerified = 1024

// Open returns an Authenticator that lets every request in as an
// anonymous operator.
func Open() *Authenticator {
	return &Authenticator{open: true}
}

// Enabled reports whether requests must authenticate.
func (a *Authenticator) Enabled() bool { return !a.open }

// ErrUnauthenticated is the error of a request without valid credentials.
var ErrUnauthenticated = errors.New("unauthenticated")

var anonymous = &Principal{Name: "anonymous", Roles: []Role{Operator}, Topics: []string{"*"}, Anonymous: true}

// Authenticate returns the caller of r.
func (a *Authenticator) Authenticate(r *http.Request) (*Principal, error) {
	if a.open {
		return anonymous, nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, fmt.Errorf("%w: no credentials: send HTTP Basic or a bearer token", ErrUnauthenticated)
	}
	scheme, cred, _ := strings.Cut(h, " ")
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		e := a.tokens[sha256.Sum256([]byte(strings.TrimSpace(cred)))]
		if e == nil {
			return nil, fmt.Errorf("%w: unknown bearer token", ErrUnauthenticated)
		}
		return &e.principal, nil
	case strings.EqualFold(scheme, "Basic"):
		name, password, ok := r.BasicAuth()
		if !ok {
			return nil, fmt.Errorf("%w: malformed Basic credentials", ErrUnauthenticated)
		}
		return a.basic(name, password)
	}
	return nil, fmt.Errorf("%w: authorization scheme %q: want Basic or Bearer", ErrUnauthenticated, scheme)
}

// basic checks a user's password. bcrypt is slow by design, so credentials
// it accepted are remembered (by their SHA-256) for the next requests.
func (a *Authenticator) basic(name, password string) (*Principal, error) {
	key := sha256.Sum256([]byte(name + "\x00" + password))
	a.mu.Lock()
	p := a.verified[key]
	a.mu.Unlock()
	if p != nil {
		return p, nil
	}
	e := a.users[name]
	if e == nil {
		// Spend the time of a check all the same, so a caller cannot tell
		// user names from timing.
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return nil, fmt.Errorf("%w: wrong user name or password", ErrUnauthenticated)
	}
	if bcrypt.CompareHashAndPassword(e.hash, []byte(password)) != nil {
		return nil, fmt.Errorf("%w: wrong user name or password", ErrUnauthenticated)
	}
	a.mu.Lock()
	if len(a.verified) >= maxVerified {
		clear(a.verified)
	}
	a.verified[key] = &e.principal
	a.mu.Unlock()
	return &e.principal, nil
}

var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("jetbpm"), bcrypt.DefaultCost)

// Challenge sets the WWW-Authenticate headers of a 401 answer.
func (a *Authenticator) Challenge(w http.ResponseWriter) {
	w.Header().Add("WWW-Authenticate", `Basic realm="jetbpm", charset="UTF-8"`)
	w.Header().Add("WWW-Authenticate", `Bearer realm="jetbpm"`)
}

// A DenyFunc answers a request that is refused with status (401 or 403)
// for the reason in detail, in the format of the API it belongs to.
type DenyFunc func(w http.ResponseWriter, r *http.Request, status int, detail string)

// Middleware authenticates every request before next sees it: next finds
// the caller with FromContext. A request without valid credentials is
// answered by deny with 401 (and the WWW-Authenticate challenge).
func (a *Authenticator) Middleware(next http.Handler, deny DenyFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.Authenticate(r)
		if err != nil {
			a.Challenge(w)
			deny(w, r, http.StatusUnauthorized, err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// maxFileBytes bounds an auth file.
const maxFileBytes = 1 << 20

// Load reads the users and tokens of the YAML file at path.
func Load(path string) (*Authenticator, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("http auth: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("http auth %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("http auth %s: larger than %d bytes", path, maxFileBytes)
	}
	return Parse(path, data)
}

type fileEntry struct {
	Name   string   `yaml:"name"`
	Bcrypt string   `yaml:"bcrypt"`
	SHA256 string   `yaml:"sha256"`
	Roles  []Role   `yaml:"roles"`
	Topics []string `yaml:"topics"`
}

type file struct {
	Users  []fileEntry `yaml:"users"`
	Tokens []fileEntry `yaml:"tokens"`
}

// Parse reads an auth file's content; name names it in errors. Every
// problem is reported, with the entry it is in.
func Parse(name string, data []byte) (*Authenticator, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("http auth %s: %w", name, err)
	}
	a := &Authenticator{users: map[string]*entry{}, tokens: map[[sha256.Size]byte]*entry{}, verified: map[[sha256.Size]byte]*Principal{}}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	names := map[string]bool{}
	check := func(what string, i int, e fileEntry) (Principal, bool) {
		where := fmt.Sprintf("%s[%d]", what, i)
		if e.Name != "" {
			where += fmt.Sprintf(" (%s)", e.Name)
		}
		n := len(problems)
		switch {
		case e.Name == "":
			bad("%s: no name", where)
		case names[e.Name]:
			bad("%s: name %q is used twice", where, e.Name)
		}
		names[e.Name] = true
		if len(e.Roles) == 0 {
			bad("%s: no roles: want some of %s", where, roleList())
		}
		for _, r := range e.Roles {
			if !slices.Contains(Roles, r) {
				bad("%s: unknown role %q: want one of %s", where, r, roleList())
			}
		}
		worker := slices.Contains(e.Roles, Worker)
		switch {
		case worker && len(e.Topics) == 0:
			bad("%s: a worker needs topics (\"*\" for every topic)", where)
		case !worker && len(e.Topics) > 0:
			bad("%s: topics are for the worker role", where)
		}
		for _, t := range e.Topics {
			if strings.TrimSpace(t) == "" {
				bad("%s: an empty topic", where)
			}
		}
		return Principal{Name: e.Name, Roles: e.Roles, Topics: e.Topics}, len(problems) == n
	}
	for i, u := range f.Users {
		p, ok := check("users", i, u)
		if u.SHA256 != "" {
			bad("users[%d]: sha256 is for tokens; a user has a bcrypt password hash", i)
			ok = false
		}
		if _, err := bcrypt.Cost([]byte(u.Bcrypt)); err != nil {
			bad("users[%d]: bcrypt: not a bcrypt hash (%v); make one with 'jetbpm hash-secret bcrypt'", i, err)
			ok = false
		}
		if ok {
			a.users[u.Name] = &entry{principal: p, hash: []byte(u.Bcrypt)}
		}
	}
	for i, t := range f.Tokens {
		p, ok := check("tokens", i, t)
		if t.Bcrypt != "" {
			bad("tokens[%d]: bcrypt is for users; a token has its sha256", i)
			ok = false
		}
		sum, err := hex.DecodeString(t.SHA256)
		if err != nil || len(sum) != sha256.Size {
			bad("tokens[%d]: sha256: want 64 hex digits; make them with 'jetbpm hash-secret sha256'", i)
			ok = false
		}
		if ok {
			key := [sha256.Size]byte(sum)
			if prev := a.tokens[key]; prev != nil {
				bad("tokens[%d]: the same token as %s", i, prev.principal.Name)
				continue
			}
			a.tokens[key] = &entry{principal: p}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("http auth %s: %s", name, strings.Join(problems, "; "))
	}
	if len(a.users)+len(a.tokens) == 0 {
		return nil, fmt.Errorf("http auth %s: no users and no tokens: nobody could call", name)
	}
	return a, nil
}

func roleList() string {
	s := make([]string, len(Roles))
	for i, r := range Roles {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// HashToken returns the hex SHA-256 of a bearer token, as an auth file
// holds it.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// HashPassword returns the bcrypt hash of a password, as an auth file
// holds it.
func HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	return string(h), err
}
