package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
	"github.com/jetbpm/jetbpm/workerkit"
)

// The task headers of Camunda's connector templates that Outcome reads.
const (
	HeaderResultVariable   = "resultVariable"
	HeaderResultExpression = "resultExpression"
	HeaderErrorExpression  = "errorExpression"
)

// Outcome says how a job ends after its call: the output of a response
// (resultVariable, resultExpression), or the error that ends the job — a
// status outside 2xx or callErr as a technical fault, unless the
// errorExpression maps it (or a 2xx answer) to a BPMN error or a job
// error. input is the job's input, which the errorExpression sees.
func Outcome(headers map[string]string, input map[string]any, resp *Response, callErr error) (map[string]any, error) {
	if _, ok := errors.AsType[*workerkit.Failure](callErr); ok {
		return nil, callErr // no retry mends it; the expressions have nothing to say
	}
	scope := maps.Clone(input)
	if scope == nil {
		scope = map[string]any{}
	}
	var failure error
	switch {
	case callErr != nil:
		failure = callErr
		scope["error"] = map[string]any{"code": nil, "message": callErr.Error()}
	case resp.Status/100 != 2:
		failure = workerkit.Fault(strconv.Itoa(resp.Status), "HTTP "+resp.Reason+excerpt(resp.Body))
		scope["response"] = resp.Value()
		scope["error"] = map[string]any{"code": strconv.Itoa(resp.Status), "message": resp.Reason, "response": resp.Value()}
	}

	var out map[string]any
	if failure == nil {
		var err error
		if out, err = result(headers, resp); err != nil {
			return nil, final(err)
		}
		maps.Copy(scope, out)
		scope["response"] = resp.Value()
	}
	if src := strings.TrimSpace(headers[HeaderErrorExpression]); src != "" {
		v, err := eval(HeaderErrorExpression, src, scope)
		if err != nil {
			return nil, final(err)
		}
		if end := errorOutcome(v); end != nil {
			return nil, end
		}
	}
	if failure != nil {
		return nil, failure
	}
	return out, nil
}

// result is a successful call's output.
func result(headers map[string]string, resp *Response) (map[string]any, error) {
	out := map[string]any{}
	if name := strings.TrimSpace(headers[HeaderResultVariable]); name != "" {
		out[name] = resp.Value()
	}
	src := strings.TrimSpace(headers[HeaderResultExpression])
	if src == "" {
		return out, nil
	}
	scope := resp.Value()
	scope["response"] = resp.Value()
	v, err := eval(HeaderResultExpression, src, scope)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case nil:
	case map[string]any:
		maps.Copy(out, v)
	default:
		return nil, fmt.Errorf("connector: resultExpression gave %s, want a context of variables", kind(v))
	}
	return out, nil
}

// eval compiles and evaluates one of the task's expressions (FEEL, as
// the templates write them: "= ...").
func eval(header, src string, scope map[string]any) (any, error) {
	e, err := expression.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("connector: %s: %w", header, err)
	}
	v, err := e.Eval(scope)
	if err != nil {
		return nil, fmt.Errorf("connector: %s: %w", header, err)
	}
	return v, nil
}

// errorOutcome reads an errorExpression's value: nil lets the outcome
// stand; a bpmnError or jobError context (or, as Camunda's earlier
// templates wrote, a context with a code) is the job's end, and a value
// that is neither an incident.
func errorOutcome(v any) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return final(fmt.Errorf("connector: errorExpression gave %s, want bpmnError(...), jobError(...) or null", kind(v)))
	}
	switch t := m["errorType"]; t {
	case "bpmnError", nil:
		code := text(m["code"])
		if code == "" {
			return final(errors.New("connector: errorExpression gave a BPMN error without a code"))
		}
		vars, ok := m["variables"].(map[string]any)
		if !ok && m["variables"] != nil {
			return final(fmt.Errorf("connector: errorExpression's BPMN error %s has variables that are %s, not a context", code, kind(m["variables"])))
		}
		return workerkit.BpmnError(code, text(m["message"]), vars)
	case "jobError":
		failure := errors.New("connector: " + text(m["message"]))
		if m["retries"] == nil {
			return failure // the task's retry policy decides
		}
		retries, ok := expression.Number(m["retries"])
		if !ok || retries < 0 || retries != math.Trunc(retries) || retries > math.MaxInt32 {
			return final(fmt.Errorf("connector: errorExpression's jobError has retries %v, want a whole number from 0", m["retries"]))
		}
		var backoff time.Duration
		if b := text(m["retryBackoff"]); b != "" {
			p, err := model.ParsePeriod(b)
			if err != nil || p.Years != 0 || p.Months != 0 || p.Days != 0 {
				return final(fmt.Errorf("connector: errorExpression's jobError has retryBackoff %q, want a duration such as PT30S", b))
			}
			backoff = p.Clock
		}
		return workerkit.FailWith(failure, int(retries), backoff)
	default:
		return final(fmt.Errorf("connector: errorExpression gave a context with errorType %v", t))
	}
}

// text is a string, or a number or boolean written out.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	if n, ok := expression.Number(v); ok {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// maxExcerpt bounds the part of a body a failure's message quotes.
const maxExcerpt = 300

// excerpt is the start of a body for a failure's message: ": ..." or "".
func excerpt(body any) string {
	var s string
	switch b := body.(type) {
	case nil:
		return ""
	case string:
		s = b
	default:
		data, _ := json.Marshal(b)
		s = string(data)
	}
	if len(s) > maxExcerpt {
		cut := maxExcerpt
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return ": " + s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
