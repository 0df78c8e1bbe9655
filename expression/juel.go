package expression

import "strings"

// JUEL (Java Unified Expression Language, as in Camunda 7 "${...}" / "#{...}").
// Grammar, lowest precedence first:
//
//	ternary := or ["?" ternary ":" ternary]
//	or      := and {("||" | "or") and}
//	and     := eq {("&&" | "and") eq}
//	eq      := rel {("==" | "!=" | "eq" | "ne") rel}
//	rel     := add {("<" | ">" | "<=" | ">=" | "lt" | "gt" | "le" | "ge") add}
//	add     := mul {("+" | "-") mul}
//	mul     := unary {("*" | "/" | "div" | "%" | "mod") unary}
//	unary   := ("-" | "!" | "not" | "empty") unary | postfix
//	postfix := primary {"." name | "[" ternary "]"}
//	primary := number | string | "true" | "false" | "null" | name | "(" ternary ")"

func translateJUEL(src string, start, end int) (string, *Error) {
	p, err := newParser(src, start+2, end, JUEL) // skip "${" or "#{"
	if err != nil {
		return "", err
	}
	out, err := p.juelTernary()
	if err != nil {
		return "", err
	}
	t := p.next()
	switch {
	case t.kind == tokEOF:
		return "", p.errAt(token{pos: start}, `missing closing "}"`)
	case !t.isOp("}"):
		return "", p.juelBadAfterOperand(t)
	case p.peek().kind != tokEOF:
		return "", p.errAt(p.peek(), `unsupported JUEL composite expression: text after closing "}"`)
	}
	return out, nil
}

func (p *parser) juelTernary() (string, *Error) {
	if err := p.enter(); err != nil {
		return "", err
	}
	defer p.leave()
	cond, err := p.binary(0)
	if err != nil || !p.peek().isOp("?") {
		return cond, err
	}
	q := p.next()
	yes, err := p.juelTernary()
	if err != nil {
		return "", err
	}
	if !p.peek().isOp(":") {
		if p.peek().kind == tokEOF || p.peek().isOp("}") {
			return "", p.errAt(q, `missing ":" of conditional operator`)
		}
		return "", p.juelBadAfterOperand(p.peek())
	}
	p.next()
	no, err := p.juelTernary()
	if err != nil {
		return "", err
	}
	return "(" + cond + " ? " + yes + " : " + no + ")", nil
}

func juelBinaryOp(level int, t token) (string, bool) {
	if t.kind != tokOp && t.kind != tokIdent {
		return "", false
	}
	switch level {
	case 0:
		switch t.text {
		case "||", "or":
			return "||", true
		}
	case 1:
		switch t.text {
		case "&&", "and":
			return "&&", true
		}
	case 2:
		switch t.text {
		case "==", "eq":
			return "==", true
		case "!=", "ne":
			return "!=", true
		}
	case 3:
		switch t.text {
		case "<", "lt":
			return "<", true
		case ">", "gt":
			return ">", true
		case "<=", "le":
			return "<=", true
		case ">=", "ge":
			return ">=", true
		}
	case 4:
		if t.kind == tokOp && (t.text == "+" || t.text == "-") {
			return t.text, true
		}
	case 5:
		switch t.text {
		case "*":
			return "*", true
		case "/", "div":
			return "/", true
		case "%", "mod":
			return "%", true
		}
	}
	return "", false
}

func (p *parser) juelUnary() (string, *Error) {
	if err := p.enter(); err != nil {
		return "", err
	}
	defer p.leave()
	t := p.peek()
	var op string
	switch {
	case t.isOp("-"):
		op = "-"
	case t.isOp("!"), t.isWord("not"):
		op = "!"
	case t.isWord("empty"):
		op = "empty"
	default:
		return p.juelPostfix()
	}
	p.next()
	x, err := p.juelUnary()
	if err != nil {
		return "", err
	}
	if op == "empty" {
		return p.emptyCheck(x), nil
	}
	return "(" + op + x + ")", nil
}

func (p *parser) juelPostfix() (string, *Error) {
	t := p.next()
	var out, path string // path names the callee in method-call errors
	switch {
	case t.kind == tokNumber:
		n, err := p.number(t)
		if err != nil {
			return "", err
		}
		out = n
	case t.kind == tokString:
		out = Literal(t.text)
	case t.kind == tokIdent:
		switch t.text {
		case "true", "false":
			out = t.text
		case "null":
			out = "nil"
		case "and", "or", "not", "eq", "ne", "lt", "gt", "le", "ge", "div", "mod", "empty", "instanceof":
			return "", p.errAt(t, "unexpected JUEL keyword %q", t.text)
		default:
			if p.peek().isOp(":") && p.peekAt(1).kind == tokIdent && p.peekAt(2).isOp("(") {
				return "", p.errAt(t, "unsupported JUEL function call %q", t.text+":"+p.peekAt(1).text)
			}
			out, path = ident(t.text), t.text
		}
	case t.isOp("("):
		x, err := p.juelTernary()
		if err != nil {
			return "", err
		}
		if err := p.expect(")", t); err != nil {
			return "", err
		}
		out = x // already self-delimiting
	default:
		return "", p.juelBadOperand(t)
	}
	if p.peek().isOp(".") || p.peek().isOp("[") {
		out = postfixBase(out)
	}
	var b strings.Builder
	b.WriteString(out)
	for {
		t := p.peek()
		switch {
		case t.isOp("."):
			p.next()
			name := p.next()
			if name.kind != tokIdent {
				return "", p.errAt(name, "expected property name after \".\", found %s", name.describe())
			}
			b.WriteString(member(name.text))
			path += "." + name.text
		case t.isOp("["):
			p.next()
			x, err := p.juelTernary()
			if err != nil {
				return "", err
			}
			if err := p.expect("]", t); err != nil {
				return "", err
			}
			b.WriteString("?.[" + x + "]")
			path += "[...]"
		case t.isOp("("):
			if !strings.Contains(path, ".") && path != "" {
				return "", p.errAt(t, "unsupported JUEL function call %q", path+"(...)")
			}
			return "", p.errAt(t, "unsupported JUEL method call %q", path+"(...)")
		default:
			return b.String(), nil
		}
	}
}

// juelBadOperand explains a token found where an operand was expected.
func (p *parser) juelBadOperand(t token) *Error {
	switch {
	case (t.kind == tokEOF || t.isOp("}")) && p.i <= 1:
		return p.errAt(t, "empty expression")
	case t.kind == tokEOF || t.isOp("}"):
		return p.errAt(t, "missing operand before %s", t.describe())
	case t.isOp("{") || t.isOp("["):
		return p.errAt(t, "unsupported JUEL collection literal %q", t.text)
	}
	return p.errAt(t, "unexpected %s", t.describe())
}

// juelBadAfterOperand explains a token found where an operator was expected.
func (p *parser) juelBadAfterOperand(t token) *Error {
	switch {
	case t.isOp(")") || t.isOp("]"):
		return p.errAt(t, "unbalanced %q", t.text)
	case t.kind == tokIdent || t.kind == tokOp:
		return p.errAt(t, "unsupported JUEL operator %q", t.text)
	case t.kind == tokEOF:
		return p.errAt(t, `missing closing "}"`)
	}
	return p.errAt(t, "unexpected %s (missing operator?)", t.describe())
}
