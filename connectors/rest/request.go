package rest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Request is the HTTP call a job asks for, decoded from its input.
type Request struct {
	Method  string
	URL     *url.URL // absolute, http or https, the query parameters added
	Header  http.Header
	Body    []byte // nil: no body
	Auth    Auth
	Connect time.Duration // 0: no limit
	Read    time.Duration // 0: no limit
}

// Auth is the request's authentication.
type Auth struct {
	Type string // "noAuth", "basic", "bearer", "apiKey" or OAuthType

	Username, Password string // basic
	Token              string // bearer

	Name, Value string // apiKey
	InQuery     bool   // apiKey: in the query, not a header

	TokenEndpoint          *url.URL // OAuth client credentials
	ClientID, ClientSecret string
	Scopes, Audience       string
	CredentialsInBody      bool // else a Basic header
}

// OAuthType is the authentication type of the OAuth 2.0 client
// credentials flow.
const OAuthType = "oauth-client-credentials-flow"

// defaultTimeout is the connection and read timeout when the input names
// none, as Camunda's connector.
const defaultTimeout = 20 * time.Second

// maxTimeout bounds a timeout's input.
const maxTimeout = 24 * time.Hour

// InputError says what in a job's input is not a request. It is not
// retried: the same input fails the same way.
type InputError struct {
	Field string // the input's name, a path such as authentication.type
	Msg   string
}

func (e *InputError) Error() string { return "connector input " + e.Field + ": " + e.Msg }

func inputErr(field, format string, args ...any) *InputError {
	return &InputError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

var methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// DecodeRequest reads the request a job's input describes, replacing each
// {{secrets.NAME}} in its strings with secrets(NAME). Errors are
// *InputError, or *SecretError for a secret secrets does not know.
func DecodeRequest(input map[string]any, secrets func(string) (string, bool)) (*Request, error) {
	d := decoder{secrets: secrets}
	r := &Request{Header: http.Header{}}

	r.Method = strings.ToUpper(d.str("method", input["method"]))
	if r.Method == "" {
		r.Method = http.MethodGet
	} else if !slices.Contains(methods, r.Method) {
		d.fail(inputErr("method", "%q is not one of %s", r.Method, strings.Join(methods, ", ")))
	}
	r.URL = d.url("url", input["url"])
	if params := d.strings("queryParameters", input["queryParameters"]); len(params) > 0 && r.URL != nil {
		q := r.URL.Query()
		for k, v := range params {
			q.Add(k, v)
		}
		r.URL.RawQuery = q.Encode()
	}
	for k, v := range d.strings("headers", input["headers"]) {
		if !validHeader(k, v) {
			d.fail(inputErr("headers."+k, "%q is not a valid header", k+": "+v))
			continue
		}
		r.Header.Set(k, v)
	}
	r.Body = d.body(input["body"], r.Header)
	r.Auth = d.auth(input["authentication"])
	r.Connect = d.timeout("connectionTimeoutInSeconds", input["connectionTimeoutInSeconds"])
	r.Read = d.timeout("readTimeoutInSeconds", input["readTimeoutInSeconds"])
	if d.err != nil {
		return nil, d.err
	}
	if r.Auth.Type == "apiKey" {
		if r.Auth.InQuery {
			q := r.URL.Query()
			q.Set(r.Auth.Name, r.Auth.Value)
			r.URL.RawQuery = q.Encode()
		} else {
			r.Header.Set(r.Auth.Name, r.Auth.Value)
		}
	}
	return r, nil
}

// SecretError names a secret the connector does not know.
type SecretError struct{ Name string }

func (e *SecretError) Error() string {
	return "connector: secret " + strconv.Quote(e.Name) + " is not known"
}

var secretRef = regexp.MustCompile(`\{\{\s*secrets\.([A-Za-z0-9_.-]+)\s*\}\}`)

// decoder reads the input's fields, keeping the first error.
type decoder struct {
	secrets func(string) (string, bool)
	err     error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// text replaces the secrets in s.
func (d *decoder) text(s string) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return secretRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := secretRef.FindStringSubmatch(ref)[1]
		if d.secrets != nil {
			if v, ok := d.secrets(name); ok {
				return v
			}
		}
		d.fail(&SecretError{Name: name})
		return ""
	})
}

// str reads a string field; numbers and booleans are written out, as the
// template's text fields may hold either.
func (d *decoder) str(field string, v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return d.text(v)
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int, int64, json.Number:
		return fmt.Sprint(v)
	}
	d.fail(inputErr(field, "is %s, want a string", kind(v)))
	return ""
}

func (d *decoder) url(field string, v any) *url.URL {
	s := strings.TrimSpace(d.str(field, v))
	if s == "" {
		d.fail(inputErr(field, "is missing"))
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		d.fail(inputErr(field, "%q is not a URL: %v", s, unwrapURLError(err)))
		return nil
	case u.Scheme != "http" && u.Scheme != "https":
		d.fail(inputErr(field, "%q is not an http or https URL", s))
		return nil
	case u.Host == "" || u.Hostname() == "":
		d.fail(inputErr(field, "%q names no host", s))
		return nil
	case u.User != nil:
		d.fail(inputErr(field, "%q holds credentials; use authentication", u.Redacted()))
		return nil
	}
	return u
}

func unwrapURLError(err error) error {
	if e, ok := err.(*url.Error); ok {
		return e.Err
	}
	return err
}

// strings reads a context of strings (headers, queryParameters).
func (d *decoder) strings(field string, v any) map[string]string {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		if s, isStr := v.(string); isStr && strings.TrimSpace(s) == "" {
			return nil // an empty template field
		}
		d.fail(inputErr(field, "is %s, want a context of strings", kind(v)))
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		if m[k] == nil {
			continue
		}
		out[d.text(k)] = d.str(field+"."+k, m[k])
	}
	return out
}

func (d *decoder) body(v any, h http.Header) []byte {
	if v == nil {
		return nil
	}
	v = d.secretsIn(v)
	if s, ok := v.(string); ok {
		return []byte(s)
	}
	ct := h.Get("Content-Type")
	if strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(inputErr("body", "is %s; a form (Content-Type %s) is a context", kind(v), ct))
			return nil
		}
		form := url.Values{}
		for _, k := range sortedKeys(m) {
			form.Set(k, d.str("body."+k, m[k]))
		}
		return []byte(form.Encode())
	}
	b, err := json.Marshal(v)
	if err != nil {
		d.fail(inputErr("body", "cannot be written as JSON: %v", err))
		return nil
	}
	if ct == "" {
		h.Set("Content-Type", "application/json")
	}
	return b
}

// secretsIn replaces the secrets in every string of a JSON-like value.
func (d *decoder) secretsIn(v any) any {
	switch v := v.(type) {
	case string:
		return d.text(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = d.secretsIn(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = d.secretsIn(e)
		}
		return out
	}
	return v
}

var authTypes = []string{"noAuth", "basic", "bearer", "apiKey", OAuthType}

func (d *decoder) auth(v any) Auth {
	if v == nil {
		return Auth{Type: "noAuth"}
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.fail(inputErr("authentication", "is %s, want a context with a type", kind(v)))
		return Auth{}
	}
	field := func(name string) string { return d.str("authentication."+name, m[name]) }
	need := func(name string) string {
		s := field(name)
		if s == "" {
			d.fail(inputErr("authentication."+name, "is missing (authentication type %s)", m["type"]))
		}
		return s
	}
	a := Auth{Type: field("type")}
	switch a.Type {
	case "", "noAuth":
		a.Type = "noAuth"
	case "basic":
		a.Username, a.Password = need("username"), field("password")
	case "bearer":
		a.Token = need("token")
		if !validHeader("Authorization", a.Token) {
			d.fail(inputErr("authentication.token", "cannot be sent in a header"))
		}
	case "apiKey":
		a.Name, a.Value = need("name"), field("value")
		a.InQuery = d.either("authentication.apiKeyLocation", field("apiKeyLocation"), "headers", "query")
		if !a.InQuery && a.Name != "" && !validHeader(a.Name, a.Value) {
			d.fail(inputErr("authentication.name", "%q is not a valid header", a.Name))
		}
	case OAuthType:
		a.TokenEndpoint = d.url("authentication.oauthTokenEndpoint", m["oauthTokenEndpoint"])
		a.ClientID, a.ClientSecret = need("clientId"), field("clientSecret")
		a.Scopes, a.Audience = field("scopes"), field("audience")
		a.CredentialsInBody = d.either("authentication.clientAuthentication", field("clientAuthentication"), "basicAuthHeader", "credentialsBody")
	default:
		d.fail(inputErr("authentication.type", "%q is not one of %s", a.Type, strings.Join(authTypes, ", ")))
	}
	return a
}

// either reads an input naming one of two choices, the first when
// empty: true for the second.
func (d *decoder) either(field, v, first, second string) bool {
	switch v {
	case "", first:
		return false
	case second:
		return true
	}
	d.fail(inputErr(field, "%q is not %s or %s", v, first, second))
	return false
}

// timeout reads a number of seconds (a number or its text), the default
// when absent or empty, 0 for no limit.
func (d *decoder) timeout(field string, v any) time.Duration {
	s := strings.TrimSpace(d.str(field, v))
	if s == "" {
		return defaultTimeout
	}
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || secs < 0 || math.IsNaN(secs) || secs > maxTimeout.Seconds() {
		d.fail(inputErr(field, "%q is not a number of seconds from 0 to %d", s, int(maxTimeout.Seconds())))
		return 0
	}
	return time.Duration(secs * float64(time.Second))
}

// validHeader reports whether name and value can be sent as a header.
func validHeader(name, value string) bool {
	if name == "" || strings.ContainsAny(value, "\r\n\x00") {
		return false
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int, int64, json.Number:
		return "a number"
	case map[string]any:
		return "a context"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("a %T", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
