package tasks

import (
	"bufio"
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/hostexec"
	"cwm/internal/lazyre"
	"cwm/internal/sandbox"
)

//go:embed swebench_repos.txt
var swebenchRepos string

// Exclusions are the repositories no task may come from: the evaluation
// set and its forks (CWM-SPEC section 3).
type Exclusions struct {
	entries []exclusion
}

type exclusion struct {
	entry       string // the line as written
	owner, name string // lower case; owner "" for a bare name
	roots       map[string]bool
}

var hashRE = lazyre.New(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// DefaultExclusions is the SWE-bench repository list cwm ships.
func DefaultExclusions() *Exclusions {
	// The embedded list names no local repository: nothing runs.
	x, err := parseExclusions(context.Background(), swebenchRepos, "swebench_repos.txt", "")
	if err != nil {
		panic(err) // the embedded list is part of the program
	}
	return x
}

// LoadExclusions reads an exclusion file: one repository per line, as
// owner/name, a URL or a local git repository's path (whose root commits
// are read), optionally followed by root commit hashes; "@swebench"
// includes the default list; # starts a comment. Reading a local
// repository runs git on the host, within ctx.
func LoadExclusions(ctx context.Context, path string) (*Exclusions, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read exclusion list: %w", err)
	}
	return parseExclusions(ctx, string(data), path, filepath.Dir(path))
}

func parseExclusions(ctx context.Context, text, origin, dir string) (*Exclusions, error) {
	x := &Exclusions{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if fields[0] == "@swebench" {
			x.entries = append(x.entries, DefaultExclusions().entries...)
			continue
		}
		e := exclusion{entry: strings.TrimSpace(line), roots: map[string]bool{}}
		for _, h := range fields[1:] {
			if !hashRE().MatchString(strings.ToLower(h)) {
				return nil, fmt.Errorf("%s:%d: %q is not a commit hash", origin, n, h)
			}
			e.roots[strings.ToLower(h)] = true
		}
		ref := fields[0]
		local := ref
		if dir != "" && !filepath.IsAbs(local) {
			local = filepath.Join(dir, local)
		}
		if st, err := os.Stat(local); err == nil && st.IsDir() && (strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, ".")) {
			roots, err := hostRoots(ctx, local)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", origin, n, err)
			}
			for _, r := range roots {
				e.roots[r] = true
			}
			for _, u := range hostRemotes(ctx, local) {
				if o, nm := ownerName(u); o != "" {
					x.entries = append(x.entries, exclusion{entry: e.entry, owner: o, name: nm})
				}
			}
		} else if o, nm := ownerName(ref); o != "" {
			e.owner, e.name = o, nm
		} else if !strings.ContainsAny(ref, "/:") {
			e.name = strings.ToLower(strings.TrimSuffix(ref, ".git"))
		} else {
			return nil, fmt.Errorf("%s:%d: %q is neither owner/name, a URL nor a local repository", origin, n, ref)
		}
		x.entries = append(x.entries, e)
	}
	return x, sc.Err()
}

// hostGitTimeout bounds each git command on a local repository the user
// named; reading its roots or its configuration takes well under that.
const hostGitTimeout = 2 * time.Minute

// hostRoots reads the root commits of a local repository the user named.
func hostRoots(ctx context.Context, dir string) ([]string, error) {
	out, err := hostexec.Output(ctx, hostexec.Cmd{Args: []string{"git", "-C", dir, "rev-list", "--max-parents=0", "--all"}, Timeout: hostGitTimeout})
	if err != nil {
		return nil, fmt.Errorf("root commits of %s: %w", dir, err)
	}
	return strings.Fields(string(out)), nil
}

// hostRemotes reads the remote URLs of a local repository (reading its
// configuration runs nothing from it). A repository without remotes, or
// one git cannot read, has none.
func hostRemotes(ctx context.Context, dir string) []string {
	out, _ := hostexec.Output(ctx, hostexec.Cmd{Args: []string{"git", "-C", dir, "config", "--get-regexp", `^remote\..*\.url$`}, Timeout: hostGitTimeout})
	var urls []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			urls = append(urls, f[1])
		}
	}
	return urls
}

// ExcludedError says an environment's repository is on the exclusion
// list, and why.
type ExcludedError struct {
	Repo  string // the environment's repository
	Entry string // the matching line of the list
	How   string
}

// Kind is errkind.Input: the environment asked for cannot be used.
func (e *ExcludedError) Kind() errkind.Kind { return errkind.Input }

// The message names the flag that overrides the refusal: the commands
// that check (tasks mutate, tasks commits) all take --exclude-repos.
func (e *ExcludedError) Error() string {
	return fmt.Sprintf("decontamination: %s is excluded: %s (list entry %q); --exclude-repos none skips the check, --exclude-repos FILE uses another list",
		e.Repo, e.How, e.Entry)
}

// Check returns an *ExcludedError when env's repository is on the list:
// the same owner/name (from its URL, its remotes, its name), the same
// base name as a listed repository, or a root commit in common with one
// (a fork or a copy). sb is a sandbox on env.
func (x *Exclusions) Check(ctx context.Context, sb *sandbox.Sandbox, e *env.Env) error {
	if x == nil || len(x.entries) == 0 {
		return nil
	}
	// A shallow layer (the commit back to its nearest tag) has its
	// source's root commits in .git/cwm-roots, written by the build;
	// an older layer has its whole history.
	out, err := execOut(ctx, sb, sandbox.Cmd{Dir: "/repo", Shell: `if [ "$(git rev-parse --is-shallow-repository)" = true ]; then cat .git/cwm-roots; else git rev-list --max-parents=0 HEAD; fi`})
	if err != nil {
		return fmt.Errorf("root commits of %s: %w", e.ID, err)
	}
	roots := strings.Fields(out)
	names := []string{e.Repository.Location, e.Name}
	if e.Repository.Kind == "git" {
		if st, err := os.Stat(e.Repository.Location); err == nil && st.IsDir() {
			names = append(names, hostRemotes(ctx, e.Repository.Location)...)
		}
	}
	return x.match(e.Repository.Location, roots, names)
}

// CheckName is Check for a repository known only by its name (owner/name,
// a URL or a bare name), as the records cwm export reads know theirs: the
// same owner/name or the same base name as a listed repository; there are
// no root commits to compare.
func (x *Exclusions) CheckName(repo string) error {
	if x == nil {
		return nil
	}
	return x.match(repo, nil, []string{repo})
}

// match is the decision of Check and CheckName: a listed root commit among
// roots, or a listed repository among names.
func (x *Exclusions) match(repo string, roots, names []string) error {
	for _, e := range x.entries {
		for _, r := range roots {
			if e.roots[r] {
				return &ExcludedError{Repo: repo, Entry: e.entry, How: "it shares root commit " + r + " with a listed repository (a fork or a copy)"}
			}
		}
		for _, n := range names {
			o, nm := ownerName(n)
			switch {
			case o != "" && o == e.owner && nm == e.name:
				return &ExcludedError{Repo: repo, Entry: e.entry, How: "it is " + o + "/" + nm}
			case e.name != "" && baseName(n) == e.name:
				return &ExcludedError{Repo: repo, Entry: e.entry, How: "its name " + baseName(n) + " is a listed repository's"}
			}
		}
	}
	return nil
}

// baseName is the last path element of a location or name, lower case,
// without .git.
func baseName(s string) string {
	s = strings.TrimRight(strings.ToLower(strings.TrimSpace(s)), "/")
	if i := strings.LastIndexAny(s, "/:"); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSuffix(s, ".git")
}
