// Package lazyre compiles a program's fixed regular expressions the first
// time they are used instead of when the program starts. A package-level
// regexp.MustCompile runs in the package's initialiser, in every cwm
// process, whether or not the command uses it; cwm links many, and their
// compilation was a measurable part of every command's start-up (see
// docs/benchmarks.md, "cwm's start-up").
package lazyre

import (
	"regexp"
	"sync"
)

// all holds every expression New and List were given, for CompileAll.
var (
	mu  sync.Mutex
	all []func()
)

// New returns a function that compiles expr on its first call and
// returns the same *regexp.Regexp on every call, from any goroutine. As
// with regexp.MustCompile, an invalid expr panics, on first use rather
// than at start-up: CompileAll, which a test calls, finds it first.
func New(expr string) func() *regexp.Regexp {
	f := sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
	register(func() { f() })
	return f
}

// List is New for a list of expressions, compiled together on first use
// and returned in their order.
func List(exprs ...string) func() []*regexp.Regexp {
	f := sync.OnceValue(func() []*regexp.Regexp {
		res := make([]*regexp.Regexp, len(exprs))
		for i, e := range exprs {
			res[i] = regexp.MustCompile(e)
		}
		return res
	})
	register(func() { f() })
	return f
}

func register(compile func()) {
	mu.Lock()
	all = append(all, compile)
	mu.Unlock()
}

// CompileAll compiles every expression given to New and List so far (in
// the packages linked into the program that calls it) and returns the
// number of them; an invalid one panics. Tests call it so that a bad
// expression fails a test rather than a command.
func CompileAll() int {
	mu.Lock()
	fs := append([]func(){}, all...)
	mu.Unlock()
	for _, f := range fs {
		f()
	}
	return len(fs)
}
