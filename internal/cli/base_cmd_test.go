package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/base/basetest"
)

// TestBaseCommands drives the base commands on the Debian bookworm test
// base (built once per machine) linked into a fresh CWM_HOME, and on a
// directory imported as a base: ls, sandbox run --base by prefix, rm
// refused while an environment names the base, rm --force, gc.
func TestBaseCommands(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CWM_HOME", home)
	b := basetest.Link(t, basetest.Debian(t, "bookworm"), home)
	prefix := b.Short()[:8]

	tree := t.TempDir()
	os.MkdirAll(filepath.Join(tree, "etc"), 0o755)
	os.WriteFile(filepath.Join(tree, "etc", "motd"), []byte("hi\n"), 0o644)
	code, out, errOut := runCLI(t, "", "base", "import", tree)
	if code != 0 || !strings.HasPrefix(out, "sha256:") || !strings.Contains(errOut, "no Python") {
		t.Fatalf("base import DIR = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	dirDigest := strings.TrimSpace(out)

	// An environment naming the Debian base by digest.
	envDir := filepath.Join(home, "envs", "0123456789abcdef")
	os.MkdirAll(envDir, 0o755)
	os.WriteFile(filepath.Join(envDir, "env.json"), []byte(`{"version": 3, "id": "0123456789abcdef", "base": "`+b.Digest+`"}`), 0o644)
	// What an import killed half way leaves.
	os.MkdirAll(filepath.Join(home, "bases", ".stage-dead", "rootfs"), 0o755)

	steps := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"ls", []string{"base", "ls"}, 0, []string{b.Short(), "debian bookworm", "3.11.", "dir", tree, "none"}},
		{"run on a base by prefix", []string{"sandbox", "run", "--base", prefix, "--", "python3", "--version"}, 0, []string{"Python 3.11."}},
		{"run on an unknown base", []string{"sandbox", "run", "--base", "ffffffff", "--", "true"}, 1, []string{"--base: no base ffffffff"}},
		{"env show names the base", []string{"env", "show", "0123456789abcdef"}, 0, []string{"base:        " + b.Short() + " (debian bookworm)"}},
		{"rm in use", []string{"base", "rm", prefix}, 1, []string{"is used by 1 environment(s) (0123456789abcdef)"}},
		{"rm too short", []string{"base", "rm", "ab"}, 2, []string{"at least 4 of its first hex digits"}},
		{"gc", []string{"base", "gc"}, 0, []string{"removed " + filepath.Join(home, "bases", ".stage-dead")}},
		{"gc unused", []string{"base", "gc", "--unused"}, 0, []string{"removed " + dirDigest[7:19]}},
		{"rm --force", []string{"base", "rm", "--force", b.Digest}, 0, []string{"removed " + b.Short()}},
		{"ls empty", []string{"base", "ls"}, 0, []string{"no bases"}},
	}
	for _, st := range steps {
		code, out, errOut := runCLI(t, "", st.args...)
		all := out + errOut
		if code != st.code {
			t.Errorf("%s: cwm %s = %d, want %d\n%s", st.name, strings.Join(st.args, " "), code, st.code, all)
			continue
		}
		for _, w := range st.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: cwm %s printed\n%s\nwant it to contain %q", st.name, strings.Join(st.args, " "), all, w)
			}
		}
		if st.name == "ls" {
			_, js, _ := runCLI(t, "", "base", "ls", "--json")
			var got []struct {
				Digest string   `json:"digest"`
				UsedBy []string `json:"used_by"`
			}
			if err := json.Unmarshal([]byte(js), &got); err != nil || len(got) != 2 {
				t.Errorf("base ls --json = %s, %v; want two bases", js, err)
			}
		}
	}
}
