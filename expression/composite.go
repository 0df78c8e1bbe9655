package expression

import (
	"strconv"
	"strings"
)

// IsComposite reports whether src is a JUEL composite text: text with one
// or more ${...} (or #{...}) in it that is not a single JUEL expression,
// such as "user-${id}" or "${first} ${last}".
func IsComposite(src string) bool {
	if !strings.Contains(src, "${") && !strings.Contains(src, "#{") {
		return false
	}
	if DialectOf(src) != JUEL {
		return true
	}
	t := strings.TrimSpace(src)
	end, ok := juelEnd(t, 0)
	return !ok || end != len(t)
}

// TranslateComposite returns the expr-lang source of a JUEL composite
// text, as Camunda 7 evaluates one: the text's parts and each ${...}'s
// value as a string, concatenated; null gives "". The text outside the
// expressions is kept as written, spaces included.
func TranslateComposite(src string) (string, error) {
	if len(src) > maxSourceLen {
		return "", newError(src, -1, "expression too long (%d bytes, max %d)", len(src), maxSourceLen)
	}
	var parts []string
	lit := func(s string) {
		if s != "" {
			parts = append(parts, Literal(s))
		}
	}
	rest, at := src, 0
	for {
		i := strings.Index(rest, "${")
		if j := strings.Index(rest, "#{"); j >= 0 && (i < 0 || j < i) {
			i = j
		}
		if i < 0 {
			lit(rest)
			break
		}
		lit(rest[:i])
		end, ok := juelEnd(rest, i)
		if !ok {
			return "", newError(src, at+i, `missing closing "}"`)
		}
		out, err := translateJUEL(rest[i:end], 0, end-i)
		if err != nil {
			return "", newError(src, at+i+max(err.Offset, 0), "%s", err.Msg)
		}
		v := genPrefix + "c" + strconv.Itoa(len(parts))
		parts = append(parts, "(let "+v+" = "+out+"; "+v+` == nil ? "" : string(`+v+"))")
		rest, at = rest[end:], at+end
	}
	if len(parts) == 0 {
		return `""`, nil
	}
	return "(" + strings.Join(parts, " + ") + ")", nil
}

// juelEnd returns the offset just past the "}" that closes the ${ or #{
// at s[i:], skipping quoted strings; ok is false when none does.
func juelEnd(s string, i int) (end int, ok bool) {
	var quote byte
	for k := i + 2; k < len(s); k++ {
		c := s[k]
		switch {
		case quote != 0 && c == '\\':
			k++
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '\'' || c == '"':
			quote = c
		case c == '}':
			return k + 1, true
		}
	}
	return 0, false
}
