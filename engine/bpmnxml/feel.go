package bpmnxml

import (
	"strconv"
	"strings"

	"github.com/jetbpm/jetbpm/expression"
)

// feelConst returns the constant a Zeebe attribute holds: its text, or after
// a leading '=' a FEEL string or number literal. ok is false for any other
// FEEL expression.
func feelConst(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "=") {
		return t, true
	}
	body := strings.TrimSpace(t[1:])
	if v, ok := feelString(body); ok {
		return v, true
	}
	if _, err := strconv.ParseFloat(body, 64); err == nil && body != "" && !strings.ContainsAny(body, "xXpPeEnN_") {
		return body, true
	}
	return "", false
}

// feelString unquotes a FEEL string literal.
func feelString(s string) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	inner := s[1 : len(s)-1]
	if !strings.ContainsAny(inner, `"\`) {
		return inner, true
	}
	v, err := strconv.Unquote(s)
	return v, err == nil
}

// timerValue returns the ISO-8601 text of a timeDuration, timeDate or
// timeCycle. Zeebe writes timers as FEEL; the literal forms =PT5S,
// ="PT5S", =duration("PT5S"), =date and time("..."), =cycle(duration("..."))
// are accepted. msg explains a refusal.
func timerValue(text string) (value, msg string) {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return "", "the timer is empty"
	case expression.DialectOf(t) == expression.JUEL:
		return "", "timer expression " + strconv.Quote(t) + " is not supported; write the ISO-8601 value"
	case !strings.HasPrefix(t, "="):
		return t, ""
	}
	body, cycle := strings.TrimSpace(t[1:]), false
	for changed := true; changed; {
		changed = false
		for _, fn := range []string{"duration", "date and time", "date", "cycle"} {
			if strings.HasPrefix(body, fn+"(") && strings.HasSuffix(body, ")") {
				body = strings.TrimSpace(body[len(fn)+1 : len(body)-1])
				cycle = cycle || fn == "cycle"
				changed = true
			}
		}
	}
	v, ok := feelString(body)
	if !ok && isoToken(body) {
		v, ok = body, true
	}
	if !ok {
		return "", "FEEL timer expression " + strconv.Quote(t) + " is not supported; write the ISO-8601 value (e.g. PT5S or =\"PT5S\")"
	}
	if cycle && !strings.HasPrefix(v, "R") {
		v = "R/" + v
	}
	return v, ""
}

// isoToken reports whether s looks like an ISO-8601 duration, date or
// repetition written bare after '=' (e.g. =PT5S).
func isoToken(s string) bool {
	if s == "" || !(s[0] == 'P' || s[0] == 'R' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		ok := r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || strings.ContainsRune(":.,+-/", r)
		if !ok {
			return false
		}
	}
	return true
}

// juelText reads Camunda 7 text that may hold ${...}: a whole ${...} or
// #{...} is kept as written, a composite text such as "user-${id}"
// becomes the expr-lang source of its concatenation
// (expression.TranslateComposite), and plain text is no expression
// (isExpr false). err says why a composite does not translate.
func juelText(text string) (src string, isExpr bool, err error) {
	t := strings.TrimSpace(text)
	switch {
	case expression.IsComposite(t):
		src, err := expression.TranslateComposite(t)
		return src, true, err
	case expression.DialectOf(t) == expression.JUEL:
		return t, true, nil
	}
	return t, false, nil
}
