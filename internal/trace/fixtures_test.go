package trace

// L builds locals from name, value pairs.
func L(kv ...string) []Local {
	if len(kv) == 0 {
		return nil
	}
	locals := make([]Local, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		locals = append(locals, Local{Name: kv[i], Value: kv[i+1]})
	}
	return locals
}

func call(depth int, src string, kv ...string) Frame {
	return Frame{Event: Call, Locals: L(kv...), Source: src, Depth: depth}
}

func line(depth int, src string, kv ...string) Frame {
	return Frame{Event: Line, Locals: L(kv...), Source: src, Depth: depth}
}

func ret(depth int, src, arg string) Frame {
	return Frame{Event: Return, Source: src, Arg: arg, Depth: depth}
}

func exc(depth int, src, arg string) Frame {
	return Frame{Event: Exception, Source: src, Arg: arg, Depth: depth}
}

const paperContext = `def f(a,b):
    y = a
    for i in range(b):
        y += y * i
    return y

def main(): # << START_OF_TRACE
    return f(1,3)
`

const (
	mainDef = "def main(): # << START_OF_TRACE"
	fDef    = "def f(a,b):"
	fYA     = "    y = a"
	fFor    = "    for i in range(b):"
	fBody   = "        y += y * i"
	fRet    = "    return y"
	mainRet = "    return f(1,3)"
)

// paperFull is the worked example of CWM-SPEC 1.4 with every value written
// out, as a tracer records it.
func paperFull() Trace {
	return Trace{Context: paperContext, Frames: []Frame{
		call(0, mainDef),
		line(0, mainRet),
		call(1, fDef, "a", "1", "b", "3"),
		line(1, fYA, "a", "1", "b", "3"),
		line(1, fFor, "a", "1", "b", "3", "y", "1"),
		line(1, fBody, "a", "1", "b", "3", "y", "1", "i", "0"),
		line(1, fFor, "a", "1", "b", "3", "y", "1", "i", "0"),
		line(1, fBody, "a", "1", "b", "3", "y", "1", "i", "1"),
		line(1, fFor, "a", "1", "b", "3", "y", "2", "i", "1"),
		line(1, fBody, "a", "1", "b", "3", "y", "2", "i", "2"),
		line(1, fFor, "a", "1", "b", "3", "y", "6", "i", "2"),
		line(1, fRet, "a", "1", "b", "3", "y", "6", "i", "2"),
		ret(1, fRet, "6"),
		ret(0, mainRet, "6"),
	}}
}

// paperTrace is the worked example exactly as CWM-SPEC 1.4 prints it.
func paperTrace() Trace {
	return Trace{Context: paperContext, Frames: []Frame{
		call(0, mainDef),
		line(0, mainRet),
		call(1, fDef, "a", "1", "b", "3"),
		line(1, fYA, "a", "..", "b", ".."),
		line(1, fFor, "a", "..", "b", "..", "y", "1"),
		line(1, fBody, "a", "..", "b", "..", "y", "..", "i", "0"),
		line(1, fFor, "a", "..", "b", "..", "y", "..", "i", ".."),
		line(1, fBody, "a", "..", "b", "..", "y", "..", "i", "1"),
		line(1, fFor, "a", "..", "b", "..", "y", "2", "i", ".."),
		line(1, fBody, "a", "..", "b", "..", "y", "..", "i", "2"),
		line(1, fFor, "a", "..", "b", "..", "y", "6", "i", ".."),
		line(1, fRet, "a", "..", "b", "..", "y", "..", "i", ".."),
		ret(1, fRet, "6"),
		ret(0, mainRet, "6"),
	}}
}

// excContext is a callee raising ValueError inside a caller that catches
// it; the frames below are what CPython 3.11's settrace reports for it.
const excContext = `def find(s, sub):
    return s.index(sub)

def main(): # << START_OF_TRACE
    s = 'abc'
    try:
        return find(s, 'z')
    except ValueError:
        return -1
`

const valueError = "(<class 'ValueError'>, ValueError('substring not found'), <traceback object>)"

func excFull() Trace {
	return Trace{Context: excContext, Frames: []Frame{
		call(0, mainDef),
		line(0, "    s = 'abc'"),
		line(0, "    try:", "s", "'abc'"),
		line(0, "        return find(s, 'z')", "s", "'abc'"),
		call(1, "def find(s, sub):", "s", "'abc'", "sub", "'z'"),
		line(1, "    return s.index(sub)", "s", "'abc'", "sub", "'z'"),
		exc(1, "    return s.index(sub)", valueError),
		ret(1, "    return s.index(sub)", "None"),
		exc(0, "        return find(s, 'z')", valueError),
		line(0, "    except ValueError:", "s", "'abc'"),
		line(0, "        return -1", "s", "'abc'"),
		ret(0, "        return -1", "-1"),
	}}
}

// excTrace is excFull compressed by hand: after find returns, main's next
// frame restates s in full.
func excTrace() Trace {
	return Trace{Context: excContext, Frames: []Frame{
		call(0, mainDef),
		line(0, "    s = 'abc'"),
		line(0, "    try:", "s", "'abc'"),
		line(0, "        return find(s, 'z')", "s", ".."),
		call(1, "def find(s, sub):", "s", "'abc'", "sub", "'z'"),
		line(1, "    return s.index(sub)", "s", "..", "sub", ".."),
		exc(1, "    return s.index(sub)", valueError),
		ret(1, "    return s.index(sub)", "None"),
		exc(0, "        return find(s, 'z')", valueError),
		line(0, "    except ValueError:", "s", "'abc'"),
		line(0, "        return -1", "s", ".."),
		ret(0, "        return -1", "-1"),
	}}
}
