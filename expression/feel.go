package expression

import (
	"strconv"
	"strings"
)

// FEEL (Zeebe / Camunda 8 "= ..."). Grammar, lowest precedence first:
//
//	expr    := or
//	or      := and {"or" and}
//	and     := cmp {"and" cmp}
//	cmp     := add {("=" | "!=" | "<" | "<=" | ">" | ">=") add}
//	add     := mul {("+" | "-") mul}
//	mul     := pow {("*" | "/") pow}
//	pow     := unary {"**" unary}
//	unary   := "-" unary | postfix
//	postfix := primary {"." name | "[" ["-"] integer "]"}
//	primary := number | string | "true" | "false" | "null" | name | "(" expr ")"
//	         | "[" [expr {"," expr}] "]" | call
//	         | "{" [key ":" expr {"," key ":" expr}] "}"     key := name | string
//	         | ("some" | "every") name "in" expr {"," name "in" expr} "satisfies" expr
//	         | "if" expr "then" expr "else" expr

func translateFEEL(src string, start, end int) (string, *Error) {
	p, err := newParser(src, start+1, end, FEEL) // skip '='
	if err != nil {
		return "", err
	}
	out, err := p.feelExpr()
	if err != nil {
		return "", err
	}
	if t := p.peek(); t.kind != tokEOF {
		return "", p.feelBadAfterOperand(t)
	}
	return out, nil
}

func (p *parser) feelExpr() (string, *Error) {
	if err := p.enter(); err != nil {
		return "", err
	}
	defer p.leave()
	return p.binary(0)
}

func feelBinaryOp(level int, t token) (string, bool) {
	switch level {
	case 0:
		return "||", t.isWord("or")
	case 1:
		return "&&", t.isWord("and")
	}
	if t.kind != tokOp {
		return "", false
	}
	switch level {
	case 2:
		switch t.text {
		case "=":
			return "==", true
		case "!=", "<", "<=", ">", ">=":
			return t.text, true
		}
	case 3:
		return t.text, t.text == "+" || t.text == "-"
	case 4:
		return t.text, t.text == "*" || t.text == "/"
	case 5:
		return "**", t.text == "**"
	}
	return "", false
}

// feelKeyword reports words that cannot be variable names here.
func feelKeyword(w string) bool {
	switch w {
	case "true", "false", "null", "and", "or", "not", "between", "in", "instance", "of",
		"some", "every", "satisfies", "if", "then", "else", "for", "return", "function":
		return true
	}
	return false
}

func (p *parser) feelUnary() (string, *Error) {
	if err := p.enter(); err != nil {
		return "", err
	}
	defer p.leave()
	if p.peek().isOp("-") {
		p.next()
		x, err := p.feelUnary()
		if err != nil {
			return "", err
		}
		return "(-" + x + ")", nil
	}
	return p.feelPostfix()
}

func (p *parser) feelPostfix() (string, *Error) {
	out, err := p.feelPrimary()
	if err != nil {
		return "", err
	}
	if p.peek().isOp(".") || p.peek().isOp("[") {
		out = postfixBase(out)
	}
	var b strings.Builder
	b.WriteString(out)
	list := false // b is a filter's result: a path maps over its elements
	for {
		t := p.peek()
		switch {
		case t.isOp("."):
			p.next()
			name := p.next()
			if name.kind != tokIdent {
				return "", p.errAt(name, "expected property name after \".\", found %s", name.describe())
			}
			if p.peek().isOp("(") {
				return "", p.errAt(name, "unsupported FEEL method call %q", name.text+"(...)")
			}
			if list {
				s := b.String()
				b.Reset()
				b.WriteString("map(" + s + " ?? [], #" + member(name.text) + ")")
				continue
			}
			b.WriteString(member(name.text))
		case t.isOp("[") && p.isFilter():
			cond, item, err := p.feelFilter()
			if err != nil {
				return "", err
			}
			l := p.fresh()
			s := b.String()
			b.Reset()
			b.WriteString("(let " + l + " = " + s + "; " + l + " == nil ? nil : filter(" + l + ", {let " + item + " = #; " + cond + "}))")
			list = true
		case t.isOp("["):
			idx, err := p.feelIndex()
			if err != nil {
				return "", err
			}
			b.WriteString("?.[" + idx + "]")
			list = false
		case t.isOp("("):
			return "", p.errAt(t, "unsupported FEEL function call on a computed value")
		default:
			return b.String(), nil
		}
	}
}

// isFilter reports whether the brackets ahead hold a FEEL filter — a
// condition over the list's elements — rather than an index: they name
// item, compare, combine with and/or/not or call a function that tests.
// (FEEL decides at run time by the value's type; a computed index, a[i],
// is refused at deploy, as before.)
func (p *parser) isFilter() bool {
	depth := 0
	for k := 0; ; k++ {
		t := p.peekAt(k)
		switch {
		case t.kind == tokEOF:
			return false
		case t.isOp("[") || t.isOp("(") || t.isOp("{"):
			depth++
		case t.isOp("]") || t.isOp(")") || t.isOp("}"):
			depth--
			if depth == 0 {
				return false
			}
		case t.kind == tokOp && (t.text == "=" || t.text == "!=" || t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">="):
			return true
		case t.kind == tokIdent && (t.text == "item" || t.text == "and" || t.text == "or" || t.text == "not" ||
			t.text == "defined" || t.text == "contains" || t.text == "with"):
			return true
		}
	}
}

// feelFilter translates the condition of a FEEL filter list[cond] over
// an element bound to the returned let-variable.
func (p *parser) feelFilter() (cond, item string, err *Error) {
	open := p.next()
	item = p.fresh()
	p.items = append(p.items, item)
	defer func() { p.items = p.items[:len(p.items)-1] }()
	cond, err = p.feelExpr()
	if err != nil {
		return "", "", err
	}
	if err := p.expect("]", open); err != nil {
		return "", "", err
	}
	return "(" + cond + ") == true", item, nil
}

// feelIndex translates a 1-based FEEL list index to expr-lang's 0-based one.
// Only integer literals are accepted: a[x] in FEEL is a filter when x is a
// boolean and an index when it is a number, which is unknowable here.
func (p *parser) feelIndex() (string, *Error) {
	open := p.next()
	neg := p.peek().isOp("-")
	if neg {
		p.next()
	}
	t := p.next()
	if t.kind != tokNumber || strings.ContainsAny(t.text, ".eE") || !p.peek().isOp("]") {
		return "", p.errAt(open, `unsupported FEEL filter expression "[...]" (only integer literal indexes are supported)`)
	}
	p.next()
	n, err := strconv.ParseInt(t.text, 10, 64)
	switch {
	case err != nil:
		return "", p.errAt(t, "integer literal %s out of range", t.text)
	case n == 0:
		return "", p.errAt(t, "FEEL list index 0 is invalid (lists are 1-based)")
	case neg:
		return strconv.FormatInt(-n, 10), nil // -1 is the last element in both languages
	}
	return strconv.FormatInt(n-1, 10), nil
}

func (p *parser) feelPrimary() (string, *Error) {
	t := p.peek()
	switch {
	case t.kind == tokNumber:
		p.next()
		return p.number(t)
	case t.kind == tokString:
		p.next()
		return Literal(t.text), nil
	case t.isOp("("):
		p.next()
		x, err := p.feelExpr()
		if err != nil {
			return "", err
		}
		if err := p.expect(")", t); err != nil {
			return "", err
		}
		return x, nil // already self-delimiting
	case t.isOp("["):
		p.next()
		items, err := p.feelList(t, "]")
		if err != nil {
			return "", err
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	case t.isOp("{"):
		return p.feelContext()
	case t.kind != tokIdent:
		return "", p.feelBadOperand(t)
	}
	switch t.text {
	case "true", "false":
		p.next()
		return t.text, nil
	case "null":
		p.next()
		return "nil", nil
	case "some", "every":
		return p.feelQuantified()
	case "if":
		return p.feelIf()
	case "for":
		return p.feelFor()
	case "function":
		return "", p.errAt(t, "unsupported FEEL construct %q", t.text)
	}
	if name, words, ok := p.feelFunctionName(); ok {
		return p.feelCall(name, words)
	}
	if feelKeyword(t.text) {
		if t.text == "not" {
			return "", p.errAt(t, `FEEL "not" needs parentheses: not(...)`)
		}
		return "", p.errAt(t, "unexpected FEEL keyword %q", t.text)
	}
	if nx := p.peekAt(1); nx.kind == tokIdent && !feelKeyword(nx.text) {
		return "", p.errAt(t, "unsupported FEEL name with spaces %q", t.text+" "+nx.text)
	}
	if p.peekAt(1).isOp("(") {
		return "", p.errAt(t, "unsupported FEEL function %q", t.text+"(...)")
	}
	p.next()
	for k := len(p.scope) - 1; k >= 0; k-- {
		if p.scope[k].name == t.text {
			if p.scope[k].refuse != "" {
				return "", p.errAt(t, "%s", p.scope[k].refuse)
			}
			if p.scope[k].used != nil {
				*p.scope[k].used = true
			}
			return p.scope[k].emit, nil
		}
	}
	if n := len(p.items); n > 0 {
		// Inside a filter: item is the element, and an element that is a
		// context shows its entries by name, before the variables.
		it := p.items[n-1]
		if t.text == "item" {
			return it, nil
		}
		return "(type(" + it + `) == "map" ? (` + it + member(t.text)[1:] + " ?? " + ident(t.text) + ") : " + ident(t.text) + ")", nil
	}
	return ident(t.text), nil
}

// feelContext translates a FEEL context {key: value, ...} to an
// expr-lang map literal. A key is a name or a string. FEEL lets an entry
// use an earlier entry of the same context by its key, as Camunda's
// connector templates do ({baseUrl: ..., url: baseUrl + "/x"}); then each
// value is bound with let first, and the map made of the bindings.
func (p *parser) feelContext() (string, *Error) {
	open := p.next()
	scopeLen := len(p.scope)
	defer func() { p.scope = p.scope[:scopeLen] }()
	var entries, lets, bound []string
	used := false
	seen := map[string]bool{}
	if p.peek().isOp("}") {
		p.next()
		return "{}", nil
	}
	for {
		k := p.next()
		switch {
		case k.kind == tokString:
		case k.kind == tokIdent && p.peek().kind == tokIdent:
			return "", p.errAt(k, "unsupported FEEL name with spaces %q", k.text+" "+p.peek().text)
		case k.kind == tokIdent && !feelKeyword(k.text):
		default:
			return "", p.errAt(k, "expected a context key (a name or a string), found %s", k.describe())
		}
		if seen[k.text] {
			return "", p.errAt(k, "duplicate FEEL context key %q", k.text)
		}
		if c := p.next(); !c.isOp(":") {
			return "", p.errAt(c, "expected \":\" after context key %q, found %s", k.text, c.describe())
		}
		v, err := p.feelExpr()
		if err != nil {
			return "", err
		}
		name := p.fresh()
		entries = append(entries, Literal(k.text)+": "+v)
		lets = append(lets, "let "+name+" = "+v+"; ")
		bound = append(bound, Literal(k.text)+": "+name)
		seen[k.text] = true
		p.scope = append(p.scope, binding{name: k.text, emit: name, used: &used})
		switch t := p.next(); {
		case t.isOp(","):
		case t.isOp("}"):
			if used {
				return "(" + strings.Join(lets, "") + "{" + strings.Join(bound, ", ") + "})", nil
			}
			return "{" + strings.Join(entries, ", ") + "}", nil
		case t.kind == tokEOF:
			return "", p.errAt(open, `missing closing "}" for "{"`)
		default:
			return "", p.feelBadAfterOperand(t)
		}
	}
}

// feelList parses comma-separated expressions up to the closing operator.
func (p *parser) feelList(open token, closing string) ([]string, *Error) {
	var items []string
	if p.peek().isOp(closing) {
		p.next()
		return items, nil
	}
	for {
		x, err := p.feelExpr()
		if err != nil {
			return nil, err
		}
		items = append(items, x)
		if p.peek().isOp(",") {
			p.next()
			continue
		}
		return items, p.expect(closing, open)
	}
}

// feelFunctionName recognizes a supported (possibly two- or three-word) function name
// followed by "(" and returns it with its number of name tokens.
func (p *parser) feelFunctionName() (string, int, bool) {
	t, t2 := p.peek(), p.peekAt(1)
	if t3 := p.peekAt(2); t2.kind == tokIdent && t3.kind == tokIdent && p.peekAt(3).isOp("(") {
		name := t.text + " " + t2.text + " " + t3.text
		if _, _, ok := feelArity(name); ok {
			return name, 3, true
		}
	}
	if t2.kind == tokIdent && p.peekAt(2).isOp("(") {
		name := t.text + " " + t2.text
		if _, _, ok := feelArity(name); ok {
			return name, 2, true
		}
	}
	if _, _, ok := feelArity(t.text); ok && t2.isOp("(") {
		return t.text, 1, true
	}
	return "", 0, false
}

// feelArity lists the supported built-in functions and how many arguments
// each takes.
func feelArity(name string) (lo, hi int, ok bool) {
	switch name {
	case "not", "string length", "upper case", "lower case", "count", "is defined", "floor", "ceiling", "abs", "string", "number":
		return 1, 1, true
	case "round down", "round up", "round half up", "round half down":
		return 1, 2, true
	}
	if a, ok := feelGoArity[name]; ok {
		if a[1] < 0 {
			return a[0], maxArgs, true
		}
		return a[0], a[1], true
	}
	switch name {
	case "contains", "starts with", "ends with", "list contains":
		return 2, 2, true
	case "string join":
		return 1, 4, true
	case "bpmnError":
		return 2, 3, true
	case "jobError":
		return 1, 4, true
	}
	return 0, 0, false
}

func (p *parser) feelCall(name string, words int) (string, *Error) {
	first := p.peek()
	for range words {
		p.next()
	}
	open := p.next()
	args, err := p.feelList(open, ")")
	if err != nil {
		return "", err
	}
	switch lo, hi, _ := feelArity(name); {
	case lo == hi && len(args) != lo:
		return "", p.errAt(first, "FEEL function %q takes %d argument(s), got %d", name, lo, len(args))
	case name == "string join" && (len(args) < lo || len(args) > hi || len(args) == 3):
		return "", p.errAt(first, "FEEL function %q takes (list), (list, delimiter) or (list, delimiter, prefix, suffix), got %d argument(s)", name, len(args))
	case len(args) < lo || len(args) > hi:
		return "", p.errAt(first, "FEEL function %q takes %d to %d arguments, got %d", name, lo, hi, len(args))
	}
	if goName, ok := feelGo[name]; ok {
		return goName + "(" + strings.Join(args, ", ") + ")", nil
	}
	switch name {
	case "bpmnError", "jobError":
		return connectorError(name, args), nil
	case "is defined":
		return "(" + args[0] + " != nil)", nil
	case "floor":
		return "floor(" + args[0] + ")", nil
	case "ceiling":
		return "ceil(" + args[0] + ")", nil
	case "abs":
		return "abs(" + args[0] + ")", nil
	case "string":
		return "string(" + args[0] + ")", nil
	case "number":
		return "float(" + args[0] + ")", nil
	case "round down", "round up", "round half up", "round half down":
		return p.feelRound(name, args), nil
	case "not":
		return "(!" + args[0] + ")", nil
	case "string length", "count":
		return "len(" + args[0] + ")", nil
	case "upper case":
		return "upper(" + args[0] + ")", nil
	case "lower case":
		return "lower(" + args[0] + ")", nil
	case "contains":
		return "(" + args[0] + " contains " + args[1] + ")", nil
	case "starts with":
		return "(" + args[0] + " startsWith " + args[1] + ")", nil
	case "ends with":
		return "(" + args[0] + " endsWith " + args[1] + ")", nil
	case "string join":
		// FEEL skips null elements; a null delimiter, prefix or suffix is
		// empty.
		joined := "join(filter(" + args[0] + `, # != nil), ""`
		if len(args) > 1 {
			joined = "join(filter(" + args[0] + ", # != nil), " + args[1] + ` ?? "")`
		} else {
			joined += ")"
		}
		if len(args) == 4 {
			return "((" + args[2] + ` ?? "") + ` + joined + " + (" + args[3] + ` ?? ""))`, nil
		}
		return joined, nil
	}
	return "(" + args[1] + " in " + args[0] + ")", nil // list contains
}

// connectorError translates the functions of Camunda 8's connector error
// expressions into the context they give: bpmnError(code, message,
// variables) and jobError(message, variables, retries, retryBackoff),
// with "errorType" saying which; a missing argument is null.
func connectorError(name string, args []string) string {
	keys := []string{"code", "message", "variables"}
	if name == "jobError" {
		keys = []string{"message", "variables", "retries", "retryBackoff"}
	}
	out := `{"errorType": "` + name + `"`
	for i, k := range keys {
		v := "nil"
		if i < len(args) {
			v = args[i]
		}
		out += `, "` + k + `": ` + v
	}
	return out + "}"
}

// feelQuantified translates "some/every x in c satisfies p" to
// any/all(c, {let x = #; p}). Binding the element with let (instead of
// substituting #) keeps nested quantifiers and shadowing correct.
func (p *parser) feelQuantified() (string, *Error) {
	kw := p.next()
	fn := "any"
	if kw.text == "every" {
		fn = "all"
	}
	scopeLen := len(p.scope)
	defer func() { p.scope = p.scope[:scopeLen] }()
	colls, vars, err := p.feelIterations(kw)
	if err != nil {
		return "", err
	}
	if err := p.feelKeywordNext("satisfies", kw); err != nil {
		return "", err
	}
	out, err := p.feelExpr()
	if err != nil {
		return "", err
	}
	for k := len(colls) - 1; k >= 0; k-- {
		out = fn + "(" + colls[k] + ", {let " + vars[k] + " = #; " + out + "})"
	}
	return out, nil
}

// feelFor translates "for x in c return e" to map(c, {let x = #; e});
// with several iteration contexts, "for x in a, y in b return e", the
// inner lists are concatenated (reduce(..., concat(#acc, #), [])), so the result
// is one flat list in FEEL's order: x outermost.
func (p *parser) feelFor() (string, *Error) {
	kw := p.next()
	scopeLen := len(p.scope)
	defer func() { p.scope = p.scope[:scopeLen] }()
	colls, vars, err := p.feelIterations(kw)
	if err != nil {
		return "", err
	}
	if err := p.feelKeywordNext("return", kw); err != nil {
		return "", err
	}
	out, err := p.feelExpr()
	if err != nil {
		return "", err
	}
	for k := len(colls) - 1; k >= 0; k-- {
		out = "map(" + colls[k] + ", {let " + vars[k] + " = #; " + out + "})"
		if k < len(colls)-1 {
			out = "reduce(" + out + ", concat(#acc, #), [])"
		}
	}
	return out, nil
}

// feelIterations reads the iteration contexts "x in c {, y in d}" of a
// quantified or for expression (keyword kw), binding each name in p.scope
// for what follows; it returns the collections and the names to emit.
func (p *parser) feelIterations(kw token) (colls, vars []string, _ *Error) {
	for {
		name := p.next()
		if name.kind != tokIdent || feelKeyword(name.text) {
			return nil, nil, p.errAt(name, "expected variable name in %q expression, found %s", kw.text, name.describe())
		}
		if in := p.next(); !in.isWord("in") {
			return nil, nil, p.errAt(in, "expected \"in\" after %q in %q expression, found %s", name.text, kw.text, in.describe())
		}
		coll, err := p.feelExpr()
		if err != nil {
			return nil, nil, err
		}
		emit := name.text
		if !safeIdent(emit) {
			emit = p.fresh()
		}
		p.scope = append(p.scope, binding{name: name.text, emit: emit})
		colls, vars = append(colls, coll), append(vars, emit)
		if !p.peek().isOp(",") {
			return colls, vars, nil
		}
		p.next()
	}
}

// feelIf translates "if c then a else b". FEEL takes the else branch for any
// non-true condition, including null, hence the explicit "== true".
func (p *parser) feelIf() (string, *Error) {
	kw := p.next()
	cond, err := p.feelExpr()
	if err != nil {
		return "", err
	}
	if err := p.feelKeywordNext("then", kw); err != nil {
		return "", err
	}
	yes, err := p.feelExpr()
	if err != nil {
		return "", err
	}
	if err := p.feelKeywordNext("else", kw); err != nil {
		return "", err
	}
	no, err := p.feelExpr()
	if err != nil {
		return "", err
	}
	return "(" + cond + " == true ? " + yes + " : " + no + ")", nil
}

func (p *parser) feelKeywordNext(word string, kw token) *Error {
	t := p.peek()
	switch {
	case t.isWord(word):
		p.next()
		return nil
	case t.kind == tokEOF:
		return p.errAt(kw, "missing %q in %q expression", word, kw.text)
	}
	return p.feelBadAfterOperand(t)
}

// feelBadOperand explains a token found where an operand was expected.
func (p *parser) feelBadOperand(t token) *Error {
	switch {
	case t.kind == tokEOF && p.i == 0:
		return p.errAt(t, "empty expression")
	case t.kind == tokEOF:
		return p.errAt(t, "missing operand at end of expression")
	case t.kind != tokOp:
		return p.errAt(t, "unexpected %s", t.describe())
	}
	switch t.text {
	case "{":
		return p.errAt(t, `unsupported FEEL context "{...}"`)
	case "`":
		return p.errAt(t, "unsupported FEEL backquoted name")
	case "@":
		return p.errAt(t, `unsupported FEEL temporal literal "@"`)
	case "?", "<", "<=", ">", ">=", "=", "!=":
		return p.errAt(t, "unsupported FEEL unary test %q", t.text)
	case "!":
		return p.errAt(t, `unsupported FEEL operator "!" (use not(...))`)
	case "..":
		return p.errAt(t, `unsupported FEEL range ".."`)
	case ")", "]", "}":
		return p.errAt(t, "unbalanced %q", t.text)
	}
	return p.errAt(t, "unexpected %s", t.describe())
}

// feelBadAfterOperand explains a token found where an operator was expected.
func (p *parser) feelBadAfterOperand(t token) *Error {
	switch t.kind {
	case tokEOF:
		return p.errAt(t, "unexpected end of expression")
	case tokIdent:
		switch t.text {
		case "between":
			return p.errAt(t, `unsupported FEEL construct "between"`)
		case "in":
			return p.errAt(t, `unsupported FEEL construct "in" (unary tests)`)
		case "instance":
			return p.errAt(t, `unsupported FEEL construct "instance of"`)
		}
		if feelKeyword(t.text) {
			return p.errAt(t, "unexpected FEEL keyword %q", t.text)
		}
		return p.errAt(t, "unexpected name %q (FEEL names with spaces and unknown operators are unsupported)", t.text)
	case tokOp:
		switch t.text {
		case "..":
			return p.errAt(t, `unsupported FEEL range ".."`)
		case ":":
			return p.errAt(t, `unsupported FEEL construct ":" (contexts, named parameters)`)
		case ")", "]", "}":
			return p.errAt(t, "unbalanced %q", t.text)
		}
		return p.errAt(t, "unsupported FEEL operator %q", t.text)
	}
	return p.errAt(t, "unexpected %s (missing operator?)", t.describe())
}

// feelRound translates FEEL's rounding functions, round down(n, scale)
// (toward zero), round up (away from zero), round half up (half away
// from zero) and round half down (half toward zero), scale 0 when
// absent: the magnitude is rounded at the scale, then the sign put back.
func (p *parser) feelRound(name string, args []string) string {
	n, f, sign := p.fresh(), p.fresh(), p.fresh()
	scale := "0"
	if len(args) == 2 {
		scale = args[1]
	}
	mag := "abs(" + n + ") * " + f
	var rounded string
	switch name {
	case "round down":
		rounded = "floor(" + mag + ")"
	case "round up":
		rounded = "ceil(" + mag + ")"
	case "round half up":
		rounded = "floor(" + mag + " + 0.5)"
	default: // round half down
		rounded = "ceil(" + mag + " - 0.5)"
	}
	return "(let " + n + " = " + args[0] + "; let " + f + " = 10 ** (" + scale + "); let " + sign + " = " + n + " < 0 ? -1 : 1; " +
		sign + " * " + rounded + " / " + f + ")"
}
