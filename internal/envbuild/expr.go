package envbuild

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// exprContext holds the values GitHub Actions expressions see in a
// workflow that cwm replays: the matrix collapsed to one entry, env,
// inputs with their defaults, and a Linux runner. Anything else (github.*,
// steps.*, secrets.*) is null.
type exprContext struct {
	matrix map[string]any
	env    map[string]any
	inputs map[string]any
}

// evalExpression evaluates one expression (the inside of ${{ }}, or an
// if: condition) in ctx. An expression it cannot parse is an error.
func evalExpression(src string, ctx exprContext) (any, error) {
	p := &exprParser{src: src, ctx: ctx}
	p.next()
	v, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, fmt.Errorf("expression %q: unexpected %q", src, p.tok.text)
	}
	return v, nil
}

// exprString renders a value as GitHub does when it is substituted into a
// run: script (null is empty, objects and arrays are JSON).
func exprString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// truthy is GitHub's coercion to boolean: null, false, 0, "" are false.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case float64:
		return x != 0
	case int:
		return x != 0
	}
	return true
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokString
	tokNumber
	tokOp
)

type token struct {
	kind tokKind
	text string
}

type exprParser struct {
	src string
	pos int
	tok token
	ctx exprContext
}

func (p *exprParser) next() {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
	if p.pos >= len(p.src) {
		p.tok = token{kind: tokEOF}
		return
	}
	c := p.src[p.pos]
	start := p.pos
	switch {
	case c == '\'':
		var b strings.Builder
		p.pos++
		for p.pos < len(p.src) {
			if p.src[p.pos] == '\'' {
				if p.pos+1 < len(p.src) && p.src[p.pos+1] == '\'' {
					b.WriteByte('\'')
					p.pos += 2
					continue
				}
				break
			}
			b.WriteByte(p.src[p.pos])
			p.pos++
		}
		p.pos++
		p.tok = token{tokString, b.String()}
	case c >= '0' && c <= '9' || c == '-' && p.pos+1 < len(p.src) && p.src[p.pos+1] >= '0' && p.src[p.pos+1] <= '9':
		p.pos++
		for p.pos < len(p.src) && strings.ContainsRune("0123456789.xXabcdefABCDEF", rune(p.src[p.pos])) {
			p.pos++
		}
		p.tok = token{tokNumber, p.src[start:p.pos]}
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		for p.pos < len(p.src) {
			d := p.src[p.pos]
			if d == '_' || d == '-' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d >= '0' && d <= '9' {
				p.pos++
				continue
			}
			break
		}
		p.tok = token{tokIdent, p.src[start:p.pos]}
	default:
		for _, op := range []string{"||", "&&", "==", "!=", "<=", ">=", "<", ">", "!", "(", ")", "[", "]", ".", ",", "*"} {
			if strings.HasPrefix(p.src[p.pos:], op) {
				p.pos += len(op)
				p.tok = token{tokOp, op}
				return
			}
		}
		p.tok = token{tokOp, string(c)}
		p.pos++
	}
}

func (p *exprParser) isOp(op string) bool { return p.tok.kind == tokOp && p.tok.text == op }

func (p *exprParser) expect(op string) error {
	if !p.isOp(op) {
		return fmt.Errorf("expression %q: want %q at %d", p.src, op, p.pos)
	}
	p.next()
	return nil
}

// or and and return the deciding operand, as GitHub does
// (matrix.tox || 'py311' is matrix.tox when it is set).
func (p *exprParser) or() (any, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.isOp("||") {
		p.next()
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		if !truthy(l) {
			l = r
		}
	}
	return l, nil
}

func (p *exprParser) and() (any, error) {
	l, err := p.cmp()
	if err != nil {
		return nil, err
	}
	for p.isOp("&&") {
		p.next()
		r, err := p.cmp()
		if err != nil {
			return nil, err
		}
		if truthy(l) {
			l = r
		}
	}
	return l, nil
}

func (p *exprParser) cmp() (any, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tokOp && strings.Contains(" == != < > <= >= ", " "+p.tok.text+" ") {
		op := p.tok.text
		p.next()
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = compare(op, l, r)
	}
	return l, nil
}

// compare follows GitHub's loose equality: strings compare ignoring case,
// mixed types compare as numbers.
func compare(op string, l, r any) bool {
	ls, lok := l.(string)
	rs, rok := r.(string)
	var c int
	if lok && rok {
		c = strings.Compare(strings.ToLower(ls), strings.ToLower(rs))
	} else {
		a, b := number(l), number(r)
		switch {
		case a < b:
			c = -1
		case a > b:
			c = 1
		case a != b: // NaN
			return op == "!="
		}
	}
	switch op {
	case "==":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case ">":
		return c > 0
	case "<=":
		return c <= 0
	}
	return c >= 0
}

func number(v any) float64 {
	switch x := v.(type) {
	case nil:
		return 0
	case bool:
		if x {
			return 1
		}
		return 0
	case float64:
		return x
	case int:
		return float64(x)
	case string:
		if strings.TrimSpace(x) == "" {
			return 0
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return nan()
		}
		return f
	}
	return nan()
}

func nan() float64 { z := 0.0; return z / z }

func (p *exprParser) unary() (any, error) {
	if p.isOp("!") {
		p.next()
		v, err := p.unary()
		if err != nil {
			return nil, err
		}
		return !truthy(v), nil
	}
	return p.postfix()
}

func (p *exprParser) postfix() (any, error) {
	v, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.isOp("."):
			p.next()
			if p.isOp("*") {
				p.next()
				v = values(v)
				continue
			}
			if p.tok.kind != tokIdent {
				return nil, fmt.Errorf("expression %q: want a property name at %d", p.src, p.pos)
			}
			v = property(v, p.tok.text)
			p.next()
		case p.isOp("["):
			p.next()
			k, err := p.or()
			if err != nil {
				return nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			if a, ok := v.([]any); ok {
				i := int(number(k))
				if i >= 0 && i < len(a) {
					v = a[i]
				} else {
					v = nil
				}
				continue
			}
			v = property(v, exprString(k))
		default:
			return v, nil
		}
	}
}

// property looks a key up case-insensitively, as GitHub does.
func property(v any, key string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if x, ok := m[key]; ok {
		return x
	}
	for k, x := range m {
		if strings.EqualFold(k, key) {
			return x
		}
	}
	return nil
}

func values(v any) []any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

func (p *exprParser) primary() (any, error) {
	t := p.tok
	switch t.kind {
	case tokString:
		p.next()
		return t.text, nil
	case tokNumber:
		p.next()
		if n, err := strconv.ParseInt(t.text, 0, 64); err == nil {
			return float64(n), nil
		}
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return nil, fmt.Errorf("expression %q: bad number %q", p.src, t.text)
		}
		return f, nil
	case tokOp:
		if t.text == "(" {
			p.next()
			v, err := p.or()
			if err != nil {
				return nil, err
			}
			return v, p.expect(")")
		}
		return nil, fmt.Errorf("expression %q: unexpected %q", p.src, t.text)
	case tokIdent:
		p.next()
		if p.isOp("(") {
			return p.call(t.text)
		}
		switch strings.ToLower(t.text) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return nil, nil
		case "matrix":
			return anyMap(p.ctx.matrix), nil
		case "env":
			return anyMap(p.ctx.env), nil
		case "inputs":
			return anyMap(p.ctx.inputs), nil
		case "runner":
			return map[string]any{"os": "Linux", "arch": "X64", "temp": "/tmp"}, nil
		case "github":
			return map[string]any{"event_name": "push", "ref": "refs/heads/main", "ref_name": "main",
				"workspace": ".", "repository_owner": "", "event": map[string]any{}}, nil
		}
		return nil, nil // steps, needs, secrets, vars, job: nothing known
	}
	return nil, fmt.Errorf("expression %q: unexpected end", p.src)
}

func anyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func (p *exprParser) call(name string) (any, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var args []any
	for !p.isOp(")") {
		v, err := p.or()
		if err != nil {
			return nil, err
		}
		args = append(args, v)
		if p.isOp(",") {
			p.next()
			continue
		}
		if !p.isOp(")") {
			return nil, fmt.Errorf("expression %q: want , or ) at %d", p.src, p.pos)
		}
	}
	p.next()
	arg := func(i int) any {
		if i < len(args) {
			return args[i]
		}
		return nil
	}
	switch strings.ToLower(name) {
	case "format":
		f := exprString(arg(0))
		for i := 1; i < len(args); i++ {
			f = strings.ReplaceAll(f, "{"+strconv.Itoa(i-1)+"}", exprString(args[i]))
		}
		return strings.ReplaceAll(strings.ReplaceAll(f, "{{", "{"), "}}", "}"), nil
	case "contains":
		if a, ok := arg(0).([]any); ok {
			for _, x := range a {
				if compare("==", x, arg(1)) {
					return true, nil
				}
			}
			return false, nil
		}
		return strings.Contains(strings.ToLower(exprString(arg(0))), strings.ToLower(exprString(arg(1)))), nil
	case "startswith":
		return strings.HasPrefix(strings.ToLower(exprString(arg(0))), strings.ToLower(exprString(arg(1)))), nil
	case "endswith":
		return strings.HasSuffix(strings.ToLower(exprString(arg(0))), strings.ToLower(exprString(arg(1)))), nil
	case "join":
		sep := ","
		if len(args) > 1 {
			sep = exprString(arg(1))
		}
		a, ok := arg(0).([]any)
		if !ok {
			return exprString(arg(0)), nil
		}
		parts := make([]string, len(a))
		for i, x := range a {
			parts[i] = exprString(x)
		}
		return strings.Join(parts, sep), nil
	case "tojson":
		b, err := json.MarshalIndent(arg(0), "", "  ")
		if err != nil {
			return nil, err
		}
		return string(b), nil
	case "fromjson":
		var v any
		if err := json.Unmarshal([]byte(exprString(arg(0))), &v); err != nil {
			return nil, fmt.Errorf("expression %q: fromJSON: %v", p.src, err)
		}
		return v, nil
	case "success", "always":
		return true, nil
	case "failure", "cancelled":
		return false, nil
	case "hashfiles":
		return "", nil
	}
	return nil, fmt.Errorf("expression %q: unknown function %s", p.src, name)
}
