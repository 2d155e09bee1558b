package envbuild

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"cwm/internal/env"
	"cwm/internal/lazyre"
	"cwm/internal/testrun"
)

// rustMissing matches what a Rust extension's build backend says when the
// base has no Rust toolchain: maturin's and setuptools-rust's words, and
// maturin's bootstrap (puccinialin), which fetches rustup from a host the
// relay does not allow.
var rustMissing = lazyre.New(`Do you have cargo in your PATH|can't find Rust compiler|Cargo, the Rust package manager, is not installed|Rust not found, installing into a temporary directory`)

// pinnedRustMember is a uv workspace member built with Rust that the
// project's own dependencies pin to one release (pydantic's pydantic-core,
// a source with workspace = true, named as pydantic-core==2.48.0).
type pinnedRustMember struct {
	name string // normalised distribution name
	req  string // the requirement as the project's dependencies write it
	dir  string // the member's directory, relative to the project
}

// pinnedRustMembers are the project's pinnedRustMember: the members of
// [tool.uv.workspace] that [tool.uv.sources] takes from the workspace,
// whose [build-system] is maturin or setuptools-rust, and which
// [project].dependencies pins with ==.
func pinnedRustMembers(project string) []pinnedRustMember {
	pp := readPyproject(project)
	pins := map[string]string{}
	for _, d := range pp.Project.Dependencies {
		if strings.Contains(strings.SplitN(d, ";", 2)[0], "==") {
			pins[env.RequirementName(d)] = strings.TrimSpace(d)
		}
	}
	var out []pinnedRustMember
	for _, pattern := range pp.Tool.UV.Workspace.Members {
		dirs, _ := filepath.Glob(filepath.Join(project, pattern))
		for _, dir := range dirs {
			m := readPyproject(dir)
			name := env.RequirementName(m.Project.Name)
			src, _ := pp.Tool.UV.Sources[name].(map[string]any)
			if src == nil {
				src, _ = pp.Tool.UV.Sources[m.Project.Name].(map[string]any)
			}
			if ws, _ := src["workspace"].(bool); !ws || pins[name] == "" || !rustBackend(m.BuildSystem) {
				continue
			}
			rel, err := filepath.Rel(project, dir)
			if err != nil {
				continue
			}
			out = append(out, pinnedRustMember{name: name, req: pins[name], dir: filepath.ToSlash(rel)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// rustBackend reports whether a build system compiles Rust.
func rustBackend(b buildSystem) bool {
	if strings.HasPrefix(b.Backend, "maturin") {
		return true
	}
	for _, r := range b.Requires {
		if n := env.RequirementName(r); n == "maturin" || n == "setuptools-rust" {
			return true
		}
	}
	return false
}

// syncWithoutRust runs a uv sync that failed because a Rust workspace member
// could not be built (the base has no Rust toolchain) again without that
// member (--no-install-package), then installs the release of it the project
// pins from the index: what pip, which knows no uv sources, installs for the
// same pyproject.toml, and what the project's own CI does where it tests
// prebuilt wheels. It reports whether that worked; the step's note (runUV's,
// naming uv) gets what was done and that the tests run against the release,
// not the member's source at this commit.
func (in *installer) syncWithoutRust(ctx context.Context, st *env.Step, line, dir, out string) (bool, error) {
	_, _, words := splitCd(line)
	if len(words) < 2 || words[1] != "sync" {
		return false, nil
	}
	evidence := rustMissing().FindString(out)
	if evidence == "" {
		return false, nil
	}
	members := pinnedRustMembers(filepath.Join(in.repo, dir))
	if len(members) == 0 {
		return false, nil
	}
	sync, install := line, []string{uvBin, "pip", "install"}
	var names, reqs []string
	for _, m := range members {
		sync += " --no-install-package " + m.name
		install = append(install, m.req)
		names = append(names, m.name+" ("+m.dir+")")
		reqs = append(reqs, m.req)
	}
	// One shell: a cd at the line's start holds for the install too.
	again := sync + " && " + testrun.Join(install)
	fmt.Fprintf(in.log, "\n(cwm: %s needs Rust (%q), which the base lacks: again without it, and its release the project pins from the index)\n$ %s\n", strings.Join(names, ", "), evidence, again)
	res, err := in.execEnv(ctx, again, "", in.uvEnv())
	if err != nil {
		return false, err
	}
	if !res.Success() {
		return false, nil
	}
	st.Run = again
	st.Status = "ok"
	st.Note = joinNote(st.Note, fmt.Sprintf("the workspace member %s needs Rust (%q), which the base lacks: installed the release the project pins (%s) from the index instead; the tests run against that release, not the member's source at this commit",
		strings.Join(names, ", "), evidence, strings.Join(reqs, ", ")))
	return true, nil
}
