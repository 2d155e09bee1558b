package sandboxcmd

import (
	"os"

	"cwm/internal/command"
)

// The fast path: 'cwm sandbox run' and 'cwm sandbox shell' run from this
// package's initialiser and exit there, so they never wait for the rest of
// cwm to initialise (the OpenAI client, net/http, crypto/tls and the
// regular expressions of cwm's other packages take most of cwm's start-up).
//
// Go initialises packages in dependency order and, among those ready, the
// one with the lexically smallest import path first. Once cwm/internal/sandbox
// has initialised, this package, cwm/internal/cli/sandboxcmd, is the smallest
// ready one, provided that all it imports is ready by then: light standard
// packages, golang.org/x, cwm/internal/command and cwm/internal/sandbox. An
// import of anything heavier (regexp, net, gopkg.in/..., github.com/...,
// cwm's other packages) would make this initialiser wait for it and undo
// the fast path; TestFastPath checks that nothing initialises after the
// sandbox. What initialises before the sandbox is decided by the sandbox's
// own imports: every ready package that sorts before its last one to be
// ready.
//
// Test binaries never take the fast path: their first argument is a
// -test.* flag.
func init() {
	if len(os.Args) < 3 || os.Args[1] != "sandbox" || (os.Args[2] != "run" && os.Args[2] != "shell") {
		return
	}
	command.Main(&command.Program{Commands: Commands})
}
