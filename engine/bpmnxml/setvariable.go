package bpmnxml

import (
	"regexp"
	"strings"

	"github.com/jetbpm/jetbpm/engine/model"
	"github.com/jetbpm/jetbpm/expression"
)

// setVariableStmt matches `execution.setVariable("name", literal);` with a
// number, boolean, null or quoted string literal.
var setVariableStmt = regexp.MustCompile(`^execution\.setVariable\(\s*(?:"([A-Za-z_$][\w$]*)"|'([A-Za-z_$][\w$]*)')\s*,\s*(-?\d+(?:\.\d+)?|true|false|null|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*\)\s*;?$`)

// setVariableScript translates a script that only sets variables to
// literals — a common pattern in Camunda examples, in any script language —
// into mappings. Anything else is not recognised (ok false), and the
// caller refuses the script as usual.
func setVariableScript(text string) (sets []model.Mapping, ok bool) {
	for _, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ';' }) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		m := setVariableStmt.FindStringSubmatch(line)
		if m == nil {
			return nil, false
		}
		name, lit := m[1]+m[2], m[3]
		switch {
		case lit == "null":
			lit = "nil"
		case lit[0] == '"' || lit[0] == '\'':
			lit = expression.Literal(unquoteJS(lit[1 : len(lit)-1]))
		}
		sets = append(sets, model.Mapping{Target: name, Source: lit})
	}
	return sets, len(sets) > 0
}

func unquoteJS(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
