package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jetbpm/jetbpm/workerkit"
)

// Type is the job type of Camunda 8's REST connector.
const Type = "io.camunda:http-json:1"

// DefaultMaxResponse is Config.MaxResponse's default: 10 MiB.
const DefaultMaxResponse = 10 << 20

// Config configures a Connector. The zero value makes a connector that
// may call no host.
type Config struct {
	// Hosts is the allow-list: "HOST", "HOST:PORT" or "*.DOMAIN".
	Hosts []string
	// MaxResponse caps a response body, in bytes; 0 is
	// DefaultMaxResponse.
	MaxResponse int64
	// Secrets answers {{secrets.NAME}}; nil knows none.
	Secrets func(name string) (string, bool)
}

// Connector makes the calls of REST connector jobs. It is safe for
// concurrent use.
type Connector struct {
	client  *http.Client
	max     int64
	secrets func(string) (string, bool)
}

// New returns a connector, or an error naming an allow-list entry it
// cannot read.
func New(cfg Config) (*Connector, error) {
	list, err := parseHosts(cfg.Hosts)
	if err != nil {
		return nil, err
	}
	if cfg.MaxResponse < 0 {
		return nil, fmt.Errorf("connector: the response limit %d is negative", cfg.MaxResponse)
	}
	max := cfg.MaxResponse
	if max == 0 {
		max = DefaultMaxResponse
	}
	return &Connector{client: newClient(list), max: max, secrets: cfg.Secrets}, nil
}

// Close closes the idle connections the connector keeps.
func (c *Connector) Close() { c.client.CloseIdleConnections() }

// Run is the workerkit handler of Type: it makes the job's call and
// returns its output or its outcome (see the package doc).
func (c *Connector) Run(ctx context.Context, job *workerkit.Job) (map[string]any, error) {
	req, err := DecodeRequest(job.Input, c.secrets)
	if err != nil {
		return nil, final(err)
	}
	resp, callErr := c.Do(ctx, req)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx) // the lock is lost: nothing is reported
	}
	return Outcome(job.Headers, job.Input, resp, callErr)
}

// final fails a job with no retries left: an incident now.
func final(err error) error { return workerkit.FailWith(err, 0, 0) }

// Response is a call's answer, as expressions see it.
type Response struct {
	Status  int
	Reason  string // "404 Not Found"
	Headers map[string]any
	Body    any
	raw     []byte
}

// Value is the response as a FEEL context {status, headers, body}.
func (r *Response) Value() map[string]any {
	return map[string]any{"status": r.Status, "headers": r.Headers, "body": r.Body}
}

// Do makes the call: the OAuth token first, if the authentication asks
// for one. A response with any status is returned; the error is a
// failure to get one (the allow-list, a timeout, the network, the size
// limit).
func (c *Connector) Do(ctx context.Context, r *Request) (*Response, error) {
	header := r.Header.Clone()
	switch r.Auth.Type {
	case "basic":
		header.Set("Authorization", basicAuth(r.Auth.Username, r.Auth.Password))
	case "bearer":
		header.Set("Authorization", "Bearer "+r.Auth.Token)
	case OAuthType:
		token, err := c.token(ctx, r)
		if err != nil {
			return nil, err
		}
		header.Set("Authorization", "Bearer "+token)
	}
	return c.exchange(ctx, r, r.Method, r.URL, header, r.Body)
}

// exchange sends one request and reads its answer within the limits.
func (c *Connector) exchange(ctx context.Context, r *Request, method string, u *url.URL, header http.Header, body []byte) (*Response, error) {
	ctx, cancel := context.WithCancelCause(withConnectTimeout(ctx, r.Connect))
	defer cancel(nil)
	dog := &watchdog{d: r.Read, cancel: cancel}
	defer dog.stop()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { dog.arm() },
	})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, final(fmt.Errorf("connector: %w", err))
	}
	hreq.Header = header
	hresp, err := c.client.Do(hreq)
	if err != nil {
		return nil, callError(ctx, method, u, err)
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(&armedReader{r: io.LimitReader(hresp.Body, c.max+1), dog: dog})
	if err != nil {
		return nil, callError(ctx, method, u, err)
	}
	if int64(len(data)) > c.max {
		return nil, final(fmt.Errorf("connector: the response of %s %s is over the limit of %d bytes (--connector-max-response)", method, u.Redacted(), c.max))
	}
	return &Response{
		Status:  hresp.StatusCode,
		Reason:  hresp.Status,
		Headers: headerValue(hresp.Header),
		Body:    bodyValue(data),
		raw:     data,
	}, nil
}

// callError is a call that got no answer: final when the allow-list or a
// redirect refused it, else a technical fault for the retry policy.
func callError(ctx context.Context, method string, u *url.URL, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrReadTimeout) {
		err = cause
	}
	err = fmt.Errorf("connector: %s %s: %w", method, u.Redacted(), unwrapURLError(err))
	_, host := errors.AsType[*HostError](err)
	_, redirect := errors.AsType[*RedirectError](err)
	if host || redirect {
		return final(err)
	}
	return err
}

// armedReader re-arms the read timeout at every read.
type armedReader struct {
	r   io.Reader
	dog *watchdog
}

func (a *armedReader) Read(p []byte) (int, error) {
	a.dog.arm()
	return a.r.Read(p)
}

func basicAuth(user, password string) string {
	req := http.Request{Header: http.Header{}}
	req.SetBasicAuth(user, password)
	return req.Header.Get("Authorization")
}

// token fetches an access token by the client credentials flow.
func (c *Connector) token(ctx context.Context, r *Request) (string, error) {
	a := r.Auth
	form := url.Values{"grant_type": {"client_credentials"}}
	if a.Scopes != "" {
		form.Set("scope", a.Scopes)
	}
	if a.Audience != "" {
		form.Set("audience", a.Audience)
	}
	header := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Accept": {"application/json"}}
	if a.CredentialsInBody {
		form.Set("client_id", a.ClientID)
		form.Set("client_secret", a.ClientSecret)
	} else {
		header.Set("Authorization", basicAuth(url.QueryEscape(a.ClientID), url.QueryEscape(a.ClientSecret)))
	}
	resp, err := c.exchange(ctx, r, http.MethodPost, a.TokenEndpoint, header, []byte(form.Encode()))
	if err != nil {
		return "", err
	}
	where := a.TokenEndpoint.Redacted()
	if resp.Status/100 != 2 {
		return "", workerkit.Fault(strconv.Itoa(resp.Status), fmt.Sprintf("connector: the OAuth token endpoint %s answered %s", where, resp.Reason))
	}
	body, _ := resp.Body.(map[string]any)
	token, _ := body["access_token"].(string)
	if token == "" {
		return "", fmt.Errorf("connector: the OAuth token endpoint %s answered no access_token", where)
	}
	return token, nil
}

// headerValue is a response's headers as a context: one value as a
// string, more as a list.
func headerValue(h http.Header) map[string]any {
	out := make(map[string]any, len(h))
	for k, vs := range h {
		if len(vs) == 1 {
			out[k] = vs[0]
			continue
		}
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = v
		}
		out[k] = list
	}
	return out
}

// bodyValue decodes a body as JSON when it is JSON, else keeps its text
// (invalid UTF-8 replaced); empty is null.
func bodyValue(data []byte) any {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(data, &v) == nil {
		return v
	}
	if !utf8.Valid(data) {
		return strings.ToValidUTF8(string(data), "\uFFFD")
	}
	return string(data)
}
