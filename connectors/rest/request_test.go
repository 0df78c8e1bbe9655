package rest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func secrets(name string) (string, bool) {
	v, ok := map[string]string{"TOKEN": "s3cr3t", "HOST": "api.test"}[name]
	return v, ok
}

// The template's inputs as the job carries them, secrets replaced.
func TestDecodeRequest(t *testing.T) {
	in := map[string]any{
		"method":                     "post",
		"url":                        "https://{{secrets.HOST}}/orders?x=1",
		"queryParameters":            map[string]any{"page": 2.0, "q": "a b", "skip": nil},
		"headers":                    map[string]any{"X-Trace": "t-1", "Accept": "application/json"},
		"body":                       map[string]any{"id": 7.0, "key": "{{ secrets.TOKEN }}"},
		"authentication":             map[string]any{"type": "apiKey", "name": "X-Api-Key", "value": "{{secrets.TOKEN}}", "apiKeyLocation": "headers"},
		"connectionTimeoutInSeconds": "5",
		"readTimeoutInSeconds":       0.5,
		"unrelated":                  []any{"ignored"},
	}
	r, err := DecodeRequest(in, secrets)
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != "POST" || r.URL.String() != "https://api.test/orders?page=2&q=a+b&x=1" {
		t.Errorf("method %s url %s", r.Method, r.URL)
	}
	if r.Header.Get("X-Trace") != "t-1" || r.Header.Get("X-Api-Key") != "s3cr3t" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", r.Header)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil || body["key"] != "s3cr3t" || body["id"] != 7.0 {
		t.Errorf("body %s (%v)", r.Body, err)
	}
	if r.Connect != 5*time.Second || r.Read != 500*time.Millisecond {
		t.Errorf("timeouts %v %v", r.Connect, r.Read)
	}

	r, err = DecodeRequest(map[string]any{"url": "http://h/", "body": map[string]any{"a": "1 2", "b": 3.0},
		"headers": map[string]any{"Content-Type": "application/x-www-form-urlencoded"}}, nil)
	if err != nil || r.Method != "GET" || string(r.Body) != "a=1+2&b=3" || r.Connect != defaultTimeout || r.Read != defaultTimeout {
		t.Errorf("a form: %+v %s (%v)", r, r.Body, err)
	}
	r, err = DecodeRequest(map[string]any{"url": "http://h/", "body": "raw text",
		"authentication": map[string]any{"type": "apiKey", "name": "key", "value": "v", "apiKeyLocation": "query"}}, nil)
	if err != nil || string(r.Body) != "raw text" || r.Header.Get("Content-Type") != "" || r.URL.RawQuery != "key=v" {
		t.Errorf("a string body and a key in the query: %+v %s (%v)", r, r.Body, err)
	}
	r, err = DecodeRequest(map[string]any{"url": "http://h/", "authentication": map[string]any{
		"type": OAuthType, "oauthTokenEndpoint": "http://idp/token", "clientId": "c", "clientSecret": "s",
		"scopes": "read write", "clientAuthentication": "credentialsBody"}}, nil)
	if err != nil || r.Auth.TokenEndpoint.String() != "http://idp/token" || !r.Auth.CredentialsInBody || r.Auth.Scopes != "read write" {
		t.Errorf("OAuth: %+v (%v)", r.Auth, err)
	}
}

// Input that is no request is refused naming the field, and so is a
// secret nobody knows.
func TestDecodeRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{}, "connector input url: is missing"},
		{map[string]any{"url": "ftp://h/x"}, `url: "ftp://h/x" is not an http or https URL`},
		{map[string]any{"url": "http:///x"}, "names no host"},
		{map[string]any{"url": "http://u:p@h/"}, "holds credentials"},
		{map[string]any{"url": 12.0}, `url: "12" is not an http or https URL`},
		{map[string]any{"url": map[string]any{}}, "url: is a context, want a string"},
		{map[string]any{"url": "http://h/", "method": "BREW"}, `method: "BREW" is not one of GET`},
		{map[string]any{"url": "http://h/", "headers": "X: y"}, "headers: is a string, want a context of strings"},
		{map[string]any{"url": "http://h/", "headers": map[string]any{"Bad Name": "x"}}, `headers.Bad Name: "Bad Name: x" is not a valid header`},
		{map[string]any{"url": "http://h/", "headers": map[string]any{"X": "a\r\nInjected: 1"}}, "is not a valid header"},
		{map[string]any{"url": "http://h/", "authentication": map[string]any{"type": "digest"}}, `authentication.type: "digest" is not one of noAuth, basic`},
		{map[string]any{"url": "http://h/", "authentication": map[string]any{"type": "bearer"}}, "authentication.token: is missing (authentication type bearer)"},
		{map[string]any{"url": "http://h/", "authentication": "basic"}, "authentication: is a string, want a context with a type"},
		{map[string]any{"url": "http://h/", "authentication": map[string]any{"type": OAuthType, "clientId": "c"}}, "authentication.oauthTokenEndpoint: is missing"},
		{map[string]any{"url": "http://h/", "readTimeoutInSeconds": "-1"}, `readTimeoutInSeconds: "-1" is not a number of seconds`},
		{map[string]any{"url": "http://h/", "connectionTimeoutInSeconds": "soon"}, `connectionTimeoutInSeconds: "soon" is not`},
		{map[string]any{"url": "http://h/", "body": []any{1.0}, "headers": map[string]any{"Content-Type": "application/x-www-form-urlencoded"}}, "body: is a list; a form"},
		{map[string]any{"url": "http://h/{{secrets.NOPE}}"}, `connector: secret "NOPE" is not known`},
	} {
		_, err := DecodeRequest(tc.in, secrets)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.in, err, tc.want)
		}
		var ie *InputError
		var se *SecretError
		if err != nil && !errors.As(err, &ie) && !errors.As(err, &se) {
			t.Errorf("%v: %T is neither an InputError nor a SecretError", tc.in, err)
		}
	}
}

func TestAllowList(t *testing.T) {
	list, err := parseHosts([]string{"api.test", "local:8080", "*.corp.test", "[::1]:9000", "10.0.0.1", " "})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{
		"api.test:443": true, "API.TEST:80": true, "api.test.:443": true, "evil.api.test:443": false,
		"local:8080": true, "local:8081": false,
		"a.corp.test:443": true, "a.b.corp.test:1": true, "corp.test:443": false, "xcorp.test:443": false,
		"[::1]:9000": true, "[::1]:9001": false, "10.0.0.1:22": true, "10.0.0.2:22": false, "garbage": false,
	} {
		if got := list.allows(addr); got != want {
			t.Errorf("allows(%s) = %v, want %v", addr, got, want)
		}
	}
	for _, bad := range []string{"h:0", "h:x", "*.", "a/b", "*", "h:99999"} {
		if _, err := parseHosts([]string{bad}); err == nil {
			t.Errorf("parseHosts(%q) took it", bad)
		}
	}
	if (allowList{}).allows("api.test:443") {
		t.Error("an empty allow-list allows a host")
	}
}

// FuzzDecodeRequest: any input decodes to a request with an absolute
// http(s) URL and headers that can be sent, or to an error; never a panic.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(`{"url":"http://h/x","method":"post","headers":{"A":"b"},"queryParameters":{"q":1},"body":{"a":[1,"{{secrets.TOKEN}}"]}}`)
	f.Add(`{"url":"https://{{secrets.HOST}}:8443","authentication":{"type":"oauth-client-credentials-flow","oauthTokenEndpoint":"http://i/t","clientId":"c"}}`)
	f.Add(`{"url":"http://h","authentication":{"type":"apiKey","name":"k","value":"v","apiKeyLocation":"query"},"readTimeoutInSeconds":"1.5"}`)
	f.Add(`{"url":"http://h","body":"x","headers":{"Content-Type":"application/x-www-form-urlencoded"}}`)
	f.Fuzz(func(t *testing.T, data string) {
		var in map[string]any
		if json.Unmarshal([]byte(data), &in) != nil {
			return
		}
		r, err := DecodeRequest(in, secrets)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if r.URL == nil || (r.URL.Scheme != "http" && r.URL.Scheme != "https") || r.URL.Hostname() == "" {
			t.Fatalf("decoded URL %v", r.URL)
		}
		for k, vs := range r.Header {
			for _, v := range vs {
				if !validHeader(k, v) {
					t.Fatalf("header %q: %q cannot be sent", k, v)
				}
			}
		}
		if r.Connect < 0 || r.Read < 0 {
			t.Fatalf("timeouts %v %v", r.Connect, r.Read)
		}
	})
}
