// The test of deploy/Dockerfile: no container engine builds it here, so
// it is parsed with BuildKit's own Dockerfile parser and checked: every
// path it copies from the build context (the repository's root) exists
// and is not left out by its .dockerignore, the Go of its build stage is
// go.mod's, the binary is static, and the image has what environments run
// on (Python, venv, pytest, git) with cwm as its entrypoint.
package deploy_test

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

const root = ".."

func TestDockerfile(t *testing.T) {
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("BuildKit does not parse deploy/Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("BuildKit warns: %s", w.Short)
	}
	ignore := dockerignore(t)
	gomod, _ := os.ReadFile(filepath.Join(root, "go.mod"))
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	var froms, runs []string
	var entrypoint string
	copies := 0
	for _, n := range res.AST.Children {
		var args []string
		for a := n.Next; a != nil; a = a.Next {
			args = append(args, a.Value)
		}
		switch strings.ToLower(n.Value) {
		case "from":
			froms = append(froms, args[0])
		case "run":
			runs = append(runs, strings.Join(args, " "))
		case "entrypoint":
			entrypoint = strings.Join(args, " ")
		case "copy", "add":
			if hasFlag(n.Flags, "--from") {
				continue
			}
			for _, src := range args[:len(args)-1] {
				copies++
				matches, _ := filepath.Glob(filepath.Join(root, src))
				if len(matches) == 0 {
					t.Errorf("line %d: %s copies %s, which is not in the repository", n.StartLine, strings.ToUpper(n.Value), src)
				}
				for _, m := range matches {
					rel, _ := filepath.Rel(root, m)
					if pat := ignored(ignore, rel); pat != "" {
						t.Errorf("line %d: %s is left out of the build context by %q", n.StartLine, rel, pat)
					}
				}
			}
		}
	}
	if copies < 4 {
		t.Errorf("found %d paths copied from the context", copies)
	}
	if len(froms) != 2 || !strings.HasPrefix(froms[0], "golang:"+string(goVersion[1])) || !strings.HasPrefix(froms[1], "debian:bookworm") {
		t.Errorf("stages %v: want golang:%s (go.mod's) and Debian 12", froms, goVersion[1])
	}
	all := strings.Join(runs, "\n")
	for _, want := range []string{"CGO_ENABLED=0", "python3", "python3-venv", "python3-pytest", "git", "patch"} {
		if !strings.Contains(all, want) {
			t.Errorf("no RUN mentions %s", want)
		}
	}
	if !strings.Contains(entrypoint, "/usr/local/bin/cwm") {
		t.Errorf("ENTRYPOINT %q is not cwm", entrypoint)
	}
}

func hasFlag(flags []string, name string) bool {
	for _, f := range flags {
		if f == name || strings.HasPrefix(f, name+"=") {
			return true
		}
	}
	return false
}

// dockerignore reads the patterns of deploy/Dockerfile.dockerignore.
func dockerignore(t *testing.T) []string {
	data, err := os.ReadFile("Dockerfile.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			pats = append(pats, l)
		}
	}
	return pats
}

// ignored returns the pattern that leaves rel out, or "" (the patterns
// used here: names, and **/ in front of a name or glob).
func ignored(pats []string, rel string) string {
	rel = filepath.ToSlash(rel)
	parts := strings.Split(rel, "/")
	for _, p := range pats {
		if name, ok := strings.CutPrefix(p, "**/"); ok {
			for _, part := range parts {
				if m, _ := path.Match(name, part); m {
					return p
				}
			}
			continue
		}
		if m, _ := path.Match(p, parts[0]); m || rel == p || strings.HasPrefix(rel, p+"/") {
			return p
		}
	}
	return ""
}
