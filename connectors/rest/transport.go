package rest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HostError is a connection the allow-list refuses.
type HostError struct {
	Addr string // host:port
}

func (e *HostError) Error() string {
	return "connector: host " + e.Addr + " is not on the allow-list (--connector-hosts)"
}

// RedirectError is a redirect the connector does not follow.
type RedirectError struct{ Msg string }

func (e *RedirectError) Error() string { return "connector: " + e.Msg }

// allowList is Config.Hosts, parsed.
type allowList []allowed

type allowed struct {
	host   string // lower case; for a domain, ".example.com"
	port   string // "": any
	domain bool
}

// parseHosts reads HOST, HOST:PORT, [IPv6]:PORT and *.DOMAIN entries.
func parseHosts(entries []string) (allowList, error) {
	var list allowList
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		host, port := e, ""
		if h, p, err := net.SplitHostPort(e); err == nil {
			host, port = h, p
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("connector host %q: port %q is not 1 to 65535", e, p)
			}
		} else if strings.Count(e, ":") == 1 {
			return nil, fmt.Errorf("connector host %q: %v", e, err)
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		a := allowed{host: host, port: port}
		if rest, ok := strings.CutPrefix(host, "*."); ok {
			a.host, a.domain = "."+rest, true
		}
		if strings.ContainsAny(strings.TrimPrefix(a.host, "."), "*/ @?#") || strings.Trim(a.host, ".") == "" {
			return nil, fmt.Errorf("connector host %q: not HOST, HOST:PORT or *.DOMAIN", e)
		}
		list = append(list, a)
	}
	return list, nil
}

// allows reports whether a connection to addr (host:port) may be opened.
func (l allowList) allows(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, a := range l {
		if a.port != "" && a.port != port {
			continue
		}
		if host == a.host || a.domain && strings.HasSuffix(host, a.host) {
			return true
		}
	}
	return false
}

// maxRedirects is how many redirects a call follows, as Go's default.
const maxRedirects = 5

// newClient is the HTTP client every call uses: it dials only what list
// allows, with the connection timeout a call's context carries, never
// through a proxy, and follows at most maxRedirects redirects.
func newClient(list allowList) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !list.allows(addr) {
			return nil, &HostError{Addr: addr}
		}
		d := net.Dialer{Timeout: connectTimeout(ctx)}
		return d.DialContext(ctx, network, addr)
	}
	t := &http.Transport{
		Proxy:               nil,
		DialContext:         dial,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        100,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return &RedirectError{fmt.Sprintf("more than %d redirects (the last to %s)", maxRedirects, req.URL.Redacted())}
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return &RedirectError{fmt.Sprintf("a redirect to %s, not http or https", req.URL.Redacted())}
			}
			return nil
		},
	}
}

type connectKey struct{}

func withConnectTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, connectKey{}, d)
}

func connectTimeout(ctx context.Context) time.Duration {
	d, _ := ctx.Value(connectKey{}).(time.Duration)
	return d
}

// ErrReadTimeout is the cause of a call that waited longer than its read
// timeout for the next bytes of the answer.
var ErrReadTimeout = errors.New("read timeout")

// watchdog cancels a call when no bytes of the answer arrive for its read
// timeout: it is armed when the request is written and re-armed at every
// read of the body.
type watchdog struct {
	d      time.Duration
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	t      *time.Timer
}

func (w *watchdog) arm() {
	if w.d <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t == nil {
		w.t = time.AfterFunc(w.d, func() {
			w.cancel(fmt.Errorf("%w: no answer for %s", ErrReadTimeout, w.d))
		})
		return
	}
	w.t.Reset(w.d)
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != nil {
		w.t.Stop()
	}
}
