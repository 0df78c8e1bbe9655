package expression

import (
	"errors"
	"strings"
	"testing"
)

// sampleVars are the process variables used by the translation table.
func sampleVars() map[string]any {
	return map[string]any{
		"approved":          true,
		"fraud":             false,
		"score":             int64(7),
		"loopAmount":        2,
		"totalLoops":        3.0,
		"reviewResult":      "approved",
		"conditionVariable": false,
		"price":             0.0,
		"riskLevels":        []any{"red", "yellow"},
		"order":             map[string]any{"customer": map[string]any{"name": "Bob"}, "items": []any{map[string]any{"qty": 2}}},
		"name":              "",
		"tags":              []any{},
		"len":               4,
	}
}

func TestTranslateAndEval(t *testing.T) {
	tests := []struct {
		src   string
		want  string // expected expr-lang source; "" skips the check
		value any
	}{
		// Conditions taken from real BPMN files.
		{`= approved`, `approved`, true},
		{`= not(approved)`, `(!approved)`, false},
		{`=fraud`, `fraud`, false},
		{`#{!approved}`, `(!approved)`, false},
		{`#{approved}`, `approved`, true},
		{`${score > 5}`, `(score > 5)`, true},
		{`${score <= 5}`, `(score <= 5)`, false},
		{`= loopAmount != totalLoops`, `(loopAmount != totalLoops)`, true},
		{`= reviewResult = "approved"`, `(reviewResult == "approved")`, true},
		{`=conditionVariable=false`, `(conditionVariable == false)`, true},
		{`=price = 0`, `(price == 0)`, true},
		{`price > 0`, `price > 0`, false},
		{`= some risk in riskLevels satisfies risk = "red"`, `any(riskLevels, {let risk = #; (risk == "red")})`, true},
		{`= every risk in riskLevels satisfies risk = "yellow"`, `all(riskLevels, {let risk = #; (risk == "yellow")})`, false},
		{`= for risk in riskLevels return upper case(risk)`, "", []any{"RED", "YELLOW"}},
		{`= for i in [1, 2], j in [10, 20] return i * j`, `reduce(map([1, 2], {let i = #; map([10, 20], {let j = #; (i * j)})}), concat(#acc, #), [])`, []any{10, 20, 20, 40}},
		{`= for x in [[1], [2, 3]] return x`, "", []any{[]any{1}, []any{2, 3}}},
		{`= for item in order.items return item.qty + 1`, "", []any{3}},
		{`= count(for t in tags return t)`, "", 0},

		// JUEL operators and literals.
		{`  ${ score gt 5 and not fraud }  `, `((score > 5) && (!fraud))`, true},
		{`${score eq 7 || score ne 7}`, `((score == 7) || (score != 7))`, true},
		{`${score lt 1 or score le 1 or score ge 8}`, `(((score < 1) || (score <= 1)) || (score >= 8))`, false},
		{`${score div 2}`, `(score / 2)`, 3.5},
		{`${score mod 4 + 1}`, `((score % 4) + 1)`, 4},
		{`${1 + 2 * 3 - -1}`, `((1 + (2 * 3)) - (-1))`, 8},
		{`${(1 + 2) * 3}`, `((1 + 2) * 3)`, 9},
		{`${score > 5 ? 'high' : "low"}`, `((score > 5) ? "high" : "low")`, "high"},
		{`${'it\'s }' == "it's }"}`, `("it's }" == "it's }")`, true},
		{`${"a\\b\"c"}`, `"a\\b\"c"`, `a\b"c`},
		{`${null == nothing}`, `(nil == nothing)`, true},
		{`${true && !false}`, `(true && (!false))`, true},
		{`${.5 + 1.5e1}`, `(0.5 + 15.0)`, 15.5},
		{`${007}`, `7`, 7},
		{`${empty tags}`, "", true},
		{`${empty name}`, "", true},
		{`${empty reviewResult}`, "", false},
		{`${empty score}`, "", false},
		{`${not empty nothing}`, "", false},
		{`${order.customer.name}`, `order?.customer?.name`, "Bob"},
		{`${order['customer'].name}`, `order?.["customer"]?.name`, "Bob"},
		{`${order.items[0].qty}`, `order?.items?.[0]?.qty`, 2},
		{`${riskLevels[score - 6]}`, `riskLevels?.[(score - 6)]`, "yellow"},
		{`${nothing.b.c}`, `nothing?.b?.c`, nil},
		{`${len}`, `$env["len"]`, 4},
		{`${a$b}`, `$env["a$b"]`, nil},

		// FEEL operators and literals.
		{`= score > 5 and score <= 7 or fraud`, `(((score > 5) && (score <= 7)) || fraud)`, true},
		{`= (score + 1) * 2 / 4`, `(((score + 1) * 2) / 4)`, 4.0},
		{`= 2 ** 3`, `(2 ** 3)`, 8.0},
		{`= -score`, `(-score)`, int64(-7)},
		{`= "a\"b\n\u00e9\U01F600"`, `"a\"b\né😀"`, "a\"b\né😀"},
		{`= null = nothing`, `(nil == nothing)`, true},
		{`= [1, 2, "x"]`, `[1, 2, "x"]`, []any{1, 2, "x"}},
		{`= []`, `[]`, []any{}},
		{`= riskLevels[1]`, `riskLevels?.[0]`, "red"},
		{`= riskLevels[-1]`, `riskLevels?.[-1]`, "yellow"},
		{`= order.customer.name`, `order?.customer?.name`, "Bob"},
		{`= order.items[1].qty`, `order?.items?.[0]?.qty`, 2},
		{`= if score > 5 then "high" else "low"`, `((score > 5) == true ? "high" : "low")`, "high"},
		{`= if nothing then 1 else 2`, `(nothing == true ? 1 : 2)`, 2},
		{`= string length(reviewResult)`, `len(reviewResult)`, 8},
		{`= upper case(reviewResult)`, `upper(reviewResult)`, "APPROVED"},
		{`= lower case("AB")`, `lower("AB")`, "ab"},
		{`= count(riskLevels)`, `len(riskLevels)`, 2},
		{`= contains(reviewResult, "prov")`, `(reviewResult contains "prov")`, true},
		{`= starts with(reviewResult, "app")`, `(reviewResult startsWith "app")`, true},
		{`= ends with(reviewResult, "x")`, `(reviewResult endsWith "x")`, false},
		{`= list contains(riskLevels, "red")`, `("red" in riskLevels)`, true},
		{`= some x in [1, 2], y in [2, 3] satisfies x = y`, `any([1, 2], {let x = #; any([2, 3], {let y = #; (x == y)})})`, true},
		{`= every x in [1, 2] satisfies some y in [2, 1] satisfies x = y`, "", true},
		{`= some len in riskLevels satisfies len = "red"`, `any(riskLevels, {let _jb1 = #; (_jb1 == "red")})`, true},
		{`= some approved in [false] satisfies approved`, "", false}, // the bound name shadows the variable
		{`={"name": "order1", "id": "1234"}`, `{"name": "order1", "id": "1234"}`, map[string]any{"name": "order1", "id": "1234"}},
		{`= {a: 1, b: score + 1, c: {d: [reviewResult]}}`, `{"a": 1, "b": (score + 1), "c": {"d": [reviewResult]}}`,
			map[string]any{"a": 1, "b": 8, "c": map[string]any{"d": []any{"approved"}}}},
		{`= {}`, `{}`, map[string]any{}},
		{`= string join(["a", null, "b"])`, `join(filter(["a", nil, "b"], # != nil), "")`, "ab"},
		{`= string join(riskLevels, ", ")`, `join(filter(riskLevels, # != nil), ", " ?? "")`, "red, yellow"},
		{`= string join(riskLevels, "-", "[", "]")`, "", "[red-yellow]"},
		// Camunda 8 connectors' error expression functions give contexts.
		{`= if score > 5 then bpmnError("HIGH", "score too high") else null`, "",
			map[string]any{"errorType": "bpmnError", "code": "HIGH", "message": "score too high", "variables": nil}},
		{`= jobError("busy", {a: 1}, 2, "PT1S")`, "",
			map[string]any{"errorType": "jobError", "message": "busy", "variables": map[string]any{"a": 1}, "retries": 2, "retryBackoff": "PT1S"}},
		{`= string join(tags, ",")`, "", ""},
		{`= {a: {b: 2}}.a.b`, "", 2},
		{`= some x in [1] satisfies {x: 2}.x = x + 1`, "", true}, // a key is no binding outside its entries
		// An entry may use the earlier entries of its context, nested
		// contexts too; an entry shadows a variable of its name.
		{`= {a: 1, b: a + 1}`, `(let _jb1 = 1; let _jb2 = (_jb1 + 1); {"a": _jb1, "b": _jb2})`, map[string]any{"a": 1, "b": 2}},
		{`= {"base": "https://x", url: base + "/orders", n: {m: url}}.n.m`, "", "https://x/orders"},
		{`= {score: 1, s: score}.s`, "", 1},
		{`= {price: 10, qty: 2, total: price * qty}.total`, "", 20},
		// Filters: the elements a condition holds for; an element that is
		// a context shows its entries by name, before the variables.
		{`= riskLevels[item = "red"]`, "", []any{"red"}},
		{`= count(riskLevels[item != "red" and item != "blue"])`, "", 1},
		{`= [{v: 7, n: "a"}, {v: 8, n: "b"}][v = score][1].n`, "", "a"},
		{`= [{value: "read", mapsTo: "GET"}, {value: "create", mapsTo: "POST"}][value = "create"].mapsTo[1]`, "", "POST"},
		{`= missing[item > 1]`, "", nil},
		// FEEL's string and list functions.
		{`= substring("foobar", 3)`, "", "obar"},
		{`= substring("foobar", -2, 1)`, "", "a"},
		{`= substring("foobar", 9)`, "", nil},
		{`= substring before("foo/bar", "/") + substring after("foo/bar", "/")`, "", "foobar"},
		{`= replace("a b  c", " +", "-")`, "", "a-b-c"},
		{`= replace("abc", "(b)", "[$1]")`, "", "a[b]c"},
		{`= matches("Foo", "^f", "i")`, "", true},
		{`= matches("foo", "[")`, "", nil},
		{`= split("a, b,c", ", *")`, "", []any{"a", "b", "c"}},
		{`= trim("  x ")`, "", "x"},
		{`= append([1], 2, 3)`, "", []any{1, 2, 3}},
		{`= concatenate([1], [], ["a"])`, "", []any{1, "a"}},
		{`= sum([1, 2, 3.5])`, "", 6.5},
		{`= sum(1, 2)`, "", 3.0},
		{`= min([3, 1, 2]) + max(4, 9)`, "", 10.0},
		{`= mean([1, 2, 3])`, "", 2.0},
		{`= sum(["x"])`, "", nil},
		{`= distinct values([1, 2, 1, "a", "a"])`, "", []any{1, 2, "a"}},
		{`= flatten([1, [2, [3]]])`, "", []any{1, 2, 3}},
		{`= reverse([1, 2])`, "", []any{2, 1}},
		{`= index of([1, 2, 1], 1)`, "", []any{1, 3}},
		{`= get value({a: 1}, "a")`, "", 1},
		{`= upper case(substring(reviewResult, 1, 1))`, "", "A"},
		// Camunda 8 templates' numeric and presence functions.
		{`= if is defined(score) then "yes" else "no"`, "", "yes"},
		{`= is defined(missing)`, "", false},
		{`= is defined(missing.deeper)`, "", false},
		{`= round down(5.56, 1)`, "", 5.5},
		{`= round down(-5.56, 1)`, "", -5.5},
		{`= round up(5.51, 1)`, "", 5.6},
		{`= round up(-5.51)`, "", -6.0},
		{`= round half up(2.5)`, "", 3.0},
		{`= round half up(-2.5)`, "", -3.0},
		{`= round half down(2.5)`, "", 2.0},
		{`= round half down(2.51, 1)`, "", 2.5},
		{`= floor(-1.5) + ceiling(1.2) + abs(-3)`, "", 3.0},
		{`= string(score) + "!"`, "", "7!"},
		{`= number("12.5") * 2`, "", 25.0},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := Translate(tt.src)
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("Translate = %s, want %s", got, tt.want)
			}
			e, err := Compile(tt.src)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			v, err := e.Eval(sampleVars())
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !equalValues(v, tt.value) {
				t.Errorf("Eval = %#v, want %#v", v, tt.value)
			}
		})
	}
}

// equalValues compares results loosely enough for []any built by expr-lang.
func equalValues(a, b any) bool {
	as, ok1 := a.([]any)
	bs, ok2 := b.([]any)
	if ok1 || ok2 {
		if !ok1 || !ok2 || len(as) != len(bs) {
			return false
		}
		for i := range as {
			if !equalValues(as[i], bs[i]) {
				return false
			}
		}
		return true
	}
	am, ok1 := a.(map[string]any)
	bm, ok2 := b.(map[string]any)
	if ok1 || ok2 {
		if !ok1 || !ok2 || len(am) != len(bm) {
			return false
		}
		for k, v := range am {
			if w, ok := bm[k]; !ok || !equalValues(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}

func TestTranslateRefusals(t *testing.T) {
	tests := []struct {
		src    string
		msg    string // expected substring of the message
		offset int
	}{
		{`${execution.getVariable("x")}`, `unsupported JUEL method call "execution.getVariable(...)"`, 23},
		{`${a.b()}`, `unsupported JUEL method call "a.b(...)"`, 5},
		{`${foo(1)}`, `unsupported JUEL function call "foo(...)"`, 5},
		{`${fn:upper(x)}`, `unsupported JUEL function call "fn:upper"`, 2},
		{`${a eqq b}`, `unsupported JUEL operator "eqq"`, 4},
		{`${a instanceof b}`, `unsupported JUEL operator "instanceof"`, 4},
		{`${a = 1}`, `unsupported JUEL operator "="`, 4},
		{`${a += "x"}`, `unsupported JUEL operator "+="`, 4},
		{`${x -> x}`, `unsupported JUEL operator "->"`, 4},
		{`${[1, 2]}`, `unsupported JUEL collection literal "["`, 2},
		{`${a ? b}`, `missing ":" of conditional operator`, 4},
		{`${'abc}`, `unterminated string literal`, 2},
		{`${"a\nb"}`, `invalid escape sequence "\\n"`, 4},
		{`${a`, `missing closing "}"`, 0},
		{`${(a}`, `missing closing ")" for "("`, 2},
		{`${a)}`, `unbalanced ")"`, 3},
		{`${a}}`, `unsupported JUEL composite expression`, 4},
		{`${a} and ${b}`, `unsupported JUEL composite expression`, 5},
		{`${}`, `empty expression`, 2},
		{`${ a + }`, `missing operand before "}"`, 7},
		{`${a 1}`, `unexpected number 1 (missing operator?)`, 4},
		{`${and}`, `unexpected JUEL keyword "and"`, 2},
		{`${99999999999999999999}`, `integer literal 99999999999999999999 out of range`, 2},
		{`${a # b}`, `unsupported JUEL operator "#"`, 4},
		{"${a \x01}", `unexpected character '\x01'`, 4},

		{`= for x in [1] x`, `unexpected name "x"`, 15},
		{`= for in y return x`, `expected variable name in "for" expression, found "in"`, 6},
		{`= for x in`, `missing operand`, 10},
		{`= x between 1 and 2`, `unsupported FEEL construct "between"`, 4},
		{`= [1..5]`, `unsupported FEEL range ".."`, 4},
		{`= (1..5)`, `unsupported FEEL range ".."`, 4},
		{`= x in [1, 2]`, `unsupported FEEL construct "in"`, 4},
		{`= x instance of number`, `unsupported FEEL construct "instance of"`, 4},
		{`= function(x) x`, `unsupported FEEL construct "function"`, 2},
		{`= {a: 1, a: 2}`, `duplicate FEEL context key "a"`, 9},
		{`= {a 1}`, `expected ":" after context key "a", found number 1`, 5},
		{`= {a: 1`, `missing closing "}" for "{"`, 2},
		{`= {1: 2}`, `expected a context key (a name or a string), found number 1`, 3},
		{`= {order total: 2}`, `unsupported FEEL name with spaces "order total"`, 3},
		{"= `a b` > 1", `unsupported FEEL backquoted name`, 2},
		{`= @"2020-01-01"`, `unsupported FEEL temporal literal "@"`, 2},
		{`= > 5`, `unsupported FEEL unary test ">"`, 2},
		{`= ?`, `unsupported FEEL unary test "?"`, 2},
		{`= order total > 5`, `unsupported FEEL name with spaces "order total"`, 2},
		{`= date("2020-01-01")`, `unsupported FEEL function "date(...)"`, 2},
		{`= a.b(1)`, `unsupported FEEL method call "b(...)"`, 4},
		{`= sum(x: 1)`, `unsupported FEEL construct ":" (contexts, named parameters)`, 7},
		{`= not(x: 1)`, `unsupported FEEL construct ":"`, 7},
		{`= not(a, b)`, `FEEL function "not" takes 1 argument(s), got 2`, 2},
		{`= not a`, `FEEL "not" needs parentheses`, 2},
		{`= string join(a, ",", "[")`, `FEEL function "string join" takes (list), (list, delimiter) or (list, delimiter, prefix, suffix), got 3`, 2},
		{`= string join()`, `FEEL function "string join" takes (list)`, 2},
		{`= bpmnError("E")`, `FEEL function "bpmnError" takes 2 to 3 arguments, got 1`, 2},
		{`= a[i]`, `unsupported FEEL filter expression "[...]"`, 3},
		{`= a[x + 1]`, `unsupported FEEL filter expression "[...]"`, 3},
		{`= a[0]`, `FEEL list index 0 is invalid`, 4},
		{`= a == b`, `unsupported FEEL operator "=="`, 4},
		{`= a && b`, `unsupported FEEL operator "&&"`, 4},
		{`= !a`, `unsupported FEEL operator "!"`, 2},
		{`= 'a'`, `unsupported FEEL single-quoted string`, 2},
		{`= "abc`, `unterminated string literal`, 2},
		{`= "\q"`, `invalid escape sequence "\\q"`, 3},
		{`= "\u12"`, `invalid unicode escape`, 3},
		{`= (a`, `missing closing ")" for "("`, 2},
		{`= a)`, `unbalanced ")"`, 3},
		{`= [1, 2`, `missing closing "]" for "["`, 2},
		{`= some x in y`, `missing "satisfies" in "some" expression`, 2},
		{`= some 1 in y satisfies true`, `expected variable name in "some" expression, found number 1`, 7},
		{`= some x of y satisfies true`, `expected "in" after "x"`, 9},
		{`= if a then b`, `missing "else" in "if" expression`, 2},
		{`= a +`, `missing operand at end of expression`, 5},
		{`=`, `empty expression`, 1},
		{`  = `, `empty expression`, 3},

		{``, `empty expression`, -1},
		{" \t\n", `empty expression`, -1},
		{`price >`, `unexpected token EOF`, 6},
		{`price > "a`, `literal not terminated`, 10},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := Compile(tt.src)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Compile error = %v (%T), want *Error", err, err)
			}
			if !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("Msg = %q, want it to contain %q", e.Msg, tt.msg)
			}
			if e.Offset != tt.offset {
				t.Errorf("Offset = %d, want %d (%v)", e.Offset, tt.offset, e)
			}
			if e.Source != tt.src {
				t.Errorf("Source = %q, want %q", e.Source, tt.src)
			}
			if DialectOf(tt.src) != Expr {
				if _, err := Translate(tt.src); err == nil {
					t.Errorf("Translate accepted %q", tt.src)
				}
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	_, err := Translate("${a eqq b}")
	want := `expression "${a eqq b}": unsupported JUEL operator "eqq" at offset 4`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	e := &Error{Source: strings.Repeat("é", 300), Offset: -1, Msg: "m"}
	if s := e.Error(); !strings.HasSuffix(s, `...": m`) || len(s) > 250 {
		t.Errorf("long source not shortened: %q", s)
	}
}

func TestDialectOf(t *testing.T) {
	tests := []struct {
		src  string
		want Dialect
	}{
		{"${a}", JUEL},
		{"  #{a}  ", JUEL},
		{"${a", JUEL},
		{"= a", FEEL},
		{"=a=1", FEEL},
		{"a == 1", Expr},
		{"a ${b}", Expr},
		{"", Expr},
	}
	for _, tt := range tests {
		if got := DialectOf(tt.src); got != tt.want {
			t.Errorf("DialectOf(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
	for d, want := range map[Dialect]string{Expr: "expr", JUEL: "JUEL", FEEL: "FEEL", 7: "Dialect(7)"} {
		if d.String() != want {
			t.Errorf("String() = %q, want %q", d.String(), want)
		}
	}
}

func TestLiteral(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "new\nline\r\n\ttab", "\x00\x1f\x7f", "ünï😀", "${x}", "= a", "bad\xffutf8"} {
		e, err := Compile(Literal(s))
		if err != nil {
			t.Fatalf("Compile(Literal(%q)): %v", s, err)
		}
		v, err := e.Eval(nil)
		if want := strings.ToValidUTF8(s, "\uFFFD"); err != nil || v != want {
			t.Errorf("Literal(%q) evaluates to %#v, %v; want %q", s, v, err, want)
		}
	}
}

func TestLimits(t *testing.T) {
	deep := strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000)
	for _, src := range []string{
		"${" + deep + "}",
		"= " + deep,
		deep,
		"${" + strings.Repeat("!", 1000) + "a}",
		"= " + strings.Repeat("-", 1000) + "1",
		"${" + strings.Repeat("a + ", maxTokens) + "a}",
		strings.Repeat(" ", maxSourceLen+1) + "a",
	} {
		if _, err := Compile(src); err == nil {
			t.Errorf("Compile accepted a %d-byte hostile input", len(src))
		}
	}
	// Long but flat chains stay well within limits.
	if _, err := Compile("${" + strings.Repeat("a + ", 500) + "a}"); err != nil {
		t.Errorf("500-term sum: %v", err)
	}
}

// The Go functions behind FEEL's are no way to crash an expr-lang
// expression that calls them directly.
func TestFEELFunctionsCalledDirectly(t *testing.T) {
	for _, src := range []string{`_feelSubstring()`, `_feelAppend()`, `_feelReplace("a")`, `_feelSum()`} {
		e, err := Compile(src)
		if err != nil {
			continue
		}
		if _, err := e.Eval(nil); err == nil {
			t.Errorf("%s: no error", src)
		}
	}
}
