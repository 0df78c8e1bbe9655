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

// timerValue reads a timeDuration, timeDate or timeCycle: value is its
// ISO-8601 (or cron) text, or expr an expression that gives that text
// when the timer is armed (model.Timer.Expr). Zeebe writes timers as
// FEEL: the literal forms =PT5S, ="PT5S", =duration("PT5S"), =date and
// time("..."), =cycle(duration("...")) are read as their text; any other
// FEEL (=reminderDelay, =duration(delay)) is an expression, its
// duration(...) or date and time(...) wrapper dropped, since the value is
// read as text anyway. Camunda 7's ${...}, whole or inside text
// (PT${minutes}M), is an expression too. msg explains a refusal.
func timerValue(text string) (value, expr, msg string) {
	t := strings.TrimSpace(text)
	if t == "" {
		return "", "", "the timer is empty"
	}
	if src, isExpr, err := juelText(t); isExpr {
		if err != nil {
			return "", "", "timer expression " + strconv.Quote(t) + ": " + err.Error()
		}
		return "", src, ""
	}
	if !strings.HasPrefix(t, "=") {
		return t, "", ""
	}
	body, cycle := strings.TrimSpace(t[1:]), false
	for changed := true; changed; {
		changed = false
		for _, fn := range []string{"duration", "date and time", "date", "cycle"} {
			if inner, ok := unwrapCall(body, fn); ok {
				body = inner
				cycle = cycle || fn == "cycle"
				changed = true
			}
		}
	}
	v, ok := feelString(body)
	if !ok && isoToken(body) {
		v, ok = body, true
	}
	switch {
	case ok && cycle && !strings.HasPrefix(v, "R"):
		return "R/" + v, "", ""
	case ok:
		return v, "", ""
	case cycle:
		return "", "", "FEEL timer expression " + strconv.Quote(t) + ": cycle(...) of an expression is not supported; let the expression give the cycle's text (e.g. \"R/PT1H\")"
	}
	return "", "=" + body, ""
}

// unwrapCall returns the argument of s when s is one call of function fn,
// fn(...), whose closing parenthesis is its last character.
func unwrapCall(s, fn string) (string, bool) {
	if !strings.HasPrefix(s, fn+"(") || !strings.HasSuffix(s, ")") {
		return "", false
	}
	inner := s[len(fn)+1 : len(s)-1]
	depth, quoted := 0, false
	for i := 0; i < len(inner); i++ {
		switch c := inner[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth < 0 {
				return "", false // fn(a) + (b): the call ends before the text does
			}
		}
	}
	return strings.TrimSpace(inner), depth == 0 && !quoted
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
