package swenative

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/hostexec"
	"cwm/internal/sandbox"
)

// findClone is repo's clone under dir: owner/name or owner+name, a work
// tree or bare, or a repo directory in one of those (a mirror's layout);
// "" when there is none.
func findClone(ctx context.Context, dir, repo string) string {
	if dir == "" {
		return ""
	}
	for _, name := range []string{repo, strings.Replace(repo, "/", "+", 1)} {
		for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, name, "repo"), filepath.Join(dir, name+".git")} {
			out, err := hostexec.Output(ctx, hostexec.Cmd{Args: []string{"git", "-C", p, "rev-parse", "--absolute-git-dir"}})
			if err == nil {
				// A directory inside some other repository is not a clone.
				if gd := strings.TrimSpace(string(out)); gd == p || gd == filepath.Join(p, ".git") {
					return p
				}
			}
		}
	}
	return ""
}

// maxPack bounds the objects of one base_commit's tree (sympy's is some
// tens of MiB).
const maxPack = 512 << 20

// basePack is a pack of base's commit and tree (not its history): what
// an environment's repository, whose history may stop short of it, needs
// to check it out.
func basePack(ctx context.Context, clone, base string) ([]byte, error) {
	out, err := hostexec.Output(ctx, hostexec.Cmd{
		Args:    []string{"sh", "-c", `git -C "$0" rev-list --objects --no-walk "$1^{commit}" | git -C "$0" pack-objects -q --stdout`, clone, base},
		Timeout: 10 * time.Minute, Capture: maxPack,
	})
	if err != nil || len(out) == 0 {
		return nil, fmt.Errorf("base_commit %s is not in the clone %s: %v", base, clone, err)
	}
	return out, nil
}

// addObjects gives the sandbox's repository base's objects when it lacks
// them.
func addObjects(ctx context.Context, sb *sandbox.Sandbox, base string, pack []byte) error {
	const file = "/tmp/cwm-base.pack"
	if err := sb.WriteFile(ctx, file, pack, 0o644); err != nil {
		return fmt.Errorf("write base_commit's objects: %w", err)
	}
	script := `cd "$1" && git config --global --add safe.directory '*' && { git cat-file -e "$2^{commit}" 2>/dev/null || git index-pack --stdin < "$3" >/dev/null; }; rc=$?; rm -f "$3"; exit $rc`
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"bash", "-c", script, "objects", env.RepoRoot, base, file}, Capture: 1 << 20})
	if err != nil {
		return fmt.Errorf("add base_commit's objects: %w", err)
	}
	if !res.Success() {
		return fmt.Errorf("add base_commit %s's objects: %s: %s", base, res.Describe(), strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}
