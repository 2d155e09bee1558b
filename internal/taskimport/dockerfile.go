package taskimport

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// A Harbor task without a docker_image describes its environment with a
// Dockerfile. cwm has no Docker: it carries out the instructions tasks
// use itself (FROM, RUN, COPY, ADD, WORKDIR, ENV, ARG, USER) and refuses
// the rest by instruction and line, since an environment built without
// one of them would not be the one the task was written for. The syntax
// (continuations, comments, JSON forms, flags) is BuildKit's own parser's,
// the variables its shell lexer's.

// dockerInstructions are the instructions cwm carries out.
var dockerInstructions = []string{"FROM", "RUN", "COPY", "ADD", "WORKDIR", "ENV", "ARG", "USER"}

// dockerStep is one instruction of a Dockerfile.
type dockerStep struct {
	// line is where it starts in the Dockerfile.
	line int
	// op is the instruction, lower case.
	op string
	// args are its words as written (variables not yet expanded); for a
	// RUN of shell form, the one command line.
	args []string
	// json says the instruction was written in JSON (exec) form.
	json bool
	// chown is COPY's and ADD's --chown.
	chown string
	// context is the directory COPY and ADD read from ("" for the
	// Dockerfile's own build context).
	context string
	// at names a step cwm adds (a Harbor task's tests) in messages, in
	// place of the Dockerfile's line.
	at string
}

// dockerPlan is a Dockerfile read: its FROM (the image, and the ARGs
// declared before it, which only FROM sees) and the steps after it.
type dockerPlan struct {
	// file names the Dockerfile in messages; path is where it is.
	file, path string
	from       dockerStep
	fromArgs   []dockerStep
	steps      []dockerStep
}

// readDockerfile reads and checks a Dockerfile: one stage, instructions
// of dockerInstructions only, no flags but COPY's and ADD's --chown, no
// heredocs. What is wrong is a *rowError naming the file and line.
func readDockerfile(path, name string) (*dockerPlan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, bad("%s: %v", name, err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		return nil, bad("%s: %v", name, err)
	}
	p := &dockerPlan{file: name, path: path}
	seenFrom := false
	for _, n := range res.AST.Children {
		op := strings.ToLower(n.Value)
		at := fmt.Sprintf("%s:%d", name, n.StartLine)
		if !knownInstruction(op) {
			return nil, bad("%s: %s is not supported (cwm carries out %s)", at, strings.ToUpper(op), strings.Join(dockerInstructions, ", "))
		}
		if len(n.Heredocs) > 0 {
			return nil, bad("%s: %s with a heredoc is not supported", at, strings.ToUpper(op))
		}
		st := dockerStep{line: n.StartLine, op: op, json: n.Attributes["json"]}
		for a := n.Next; a != nil; a = a.Next {
			st.args = append(st.args, a.Value)
		}
		for _, fl := range n.Flags {
			v, ok := strings.CutPrefix(fl, "--chown=")
			if !ok || (op != "copy" && op != "add") {
				return nil, bad("%s: %s %s is not supported", at, strings.ToUpper(op), fl)
			}
			st.chown = v
		}
		if err := checkStep(st, at); err != nil {
			return nil, err
		}
		switch {
		case op == "from" && seenFrom:
			return nil, bad("%s: a second FROM (a multi-stage build) is not supported", at)
		case op == "from":
			seenFrom, p.from = true, st
		case !seenFrom && op == "arg":
			p.fromArgs = append(p.fromArgs, st)
		case !seenFrom:
			return nil, bad("%s: %s before FROM", at, strings.ToUpper(op))
		default:
			p.steps = append(p.steps, st)
		}
	}
	if !seenFrom {
		return nil, bad("%s: no FROM", name)
	}
	return p, nil
}

func knownInstruction(op string) bool {
	for _, i := range dockerInstructions {
		if strings.EqualFold(i, op) {
			return true
		}
	}
	return false
}

// checkStep checks an instruction's words: how many, and the forms cwm
// does not carry out.
func checkStep(st dockerStep, at string) error {
	op := strings.ToUpper(st.op)
	switch st.op {
	case "from":
		if len(st.args) != 1 && !(len(st.args) == 3 && strings.EqualFold(st.args[1], "as")) {
			return bad("%s: FROM wants an image (and AS name)", at)
		}
		if st.args[0] == "scratch" {
			return bad("%s: FROM scratch is not supported (no base image)", at)
		}
	case "copy", "add":
		if len(st.args) < 2 {
			return bad("%s: %s wants a source and a destination", at, op)
		}
		if st.op == "add" {
			for _, src := range st.args[:len(st.args)-1] {
				if strings.Contains(src, "://") || strings.HasPrefix(src, "git@") {
					return bad("%s: ADD of a URL (%s) is not supported: the build reads only its context", at, src)
				}
				if isArchive(src) {
					return bad("%s: ADD of an archive (%s), which Docker unpacks, is not supported: COPY it and RUN tar", at, src)
				}
			}
		}
	case "run", "workdir", "user":
		if len(st.args) == 0 {
			return bad("%s: %s wants an argument", at, op)
		}
	case "env":
		if len(st.args) == 0 || len(st.args)%3 != 0 { // BuildKit's nodes: name, value, separator
			return bad("%s: ENV wants KEY=VALUE pairs", at)
		}
	case "arg":
		if len(st.args) == 0 {
			return bad("%s: ARG wants a name", at)
		}
	}
	return nil
}

func isArchive(src string) bool {
	for _, ext := range []string{".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst"} {
		if strings.HasSuffix(strings.ToLower(src), ext) {
			return true
		}
	}
	return false
}

// copySource resolves a COPY or ADD source (already expanded) in the
// build context dir: a path that leaves the context, lexically or through
// a symbolic link, is refused, as Docker refuses it. A pattern gives
// every match.
func copySource(dir, src, at string) ([]string, error) {
	clean := filepath.Clean(filepath.FromSlash(src))
	if filepath.IsAbs(clean) {
		clean = strings.TrimPrefix(clean, string(filepath.Separator))
	}
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return nil, bad("%s: source %s is outside the build context", at, src)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, bad("%s: the build context %s: %v", at, dir, err)
	}
	matches := []string{filepath.Join(root, clean)}
	if strings.ContainsAny(clean, "*?[") {
		if matches, err = filepath.Glob(filepath.Join(root, clean)); err != nil {
			return nil, bad("%s: source pattern %s: %v", at, src, err)
		}
		if len(matches) == 0 {
			return nil, bad("%s: source %s matches nothing in the build context", at, src)
		}
	}
	for i, m := range matches {
		real, err := filepath.EvalSymlinks(m)
		if err != nil {
			return nil, bad("%s: source %s is not in the build context", at, src)
		}
		if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
			return nil, bad("%s: source %s leads outside the build context (to %s)", at, src, real)
		}
		matches[i] = real
	}
	return matches, nil
}
