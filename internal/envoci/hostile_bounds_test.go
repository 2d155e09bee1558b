package envoci

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"cwm/internal/env"
	"cwm/internal/sandbox"
)

// Bounds of an import of a bomb or a sparse entry, asserted in a child
// process: its peak memory (rusage), and the bytes it wrote
// (/proc/self/io's wchar) before the refusal.
const (
	maxImportRSS     = 256 << 20
	maxWrittenBefore = 64 << 20
	boundedTmpfs     = 96 << 20
)

// childOut is what a child of the test binary did.
type childOut struct {
	stdout, stderr string
	maxRSS         int64 // bytes
	err            error
}

// runChild runs the test binary again with env, as uid 65534 with
// asUser (from a copy in dir, which that user can read).
func runChild(t *testing.T, dir string, env []string, asUser bool) childOut {
	t.Helper()
	bin := os.Args[0]
	if asUser {
		bin = filepath.Join(dir, "envoci.test")
		if _, err := os.Stat(bin); err != nil {
			if err := sandbox.CopyFile(os.Args[0], bin, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + dir}, env...)
	if asUser {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss << 10
	}
	return childOut{out.String(), errb.String(), rss, err}
}

// boundedChild is the child of TestHostileImportBounded: it imports file
// into $CWM_HOME with the default caps (or the ceiling
// ENVOCI_TEST_MAX_UNPACKED) and prints the error and the bytes it wrote.
func boundedChild(file string) {
	home := os.Getenv("CWM_HOME")
	ceiling, _ := strconv.ParseInt(os.Getenv("ENVOCI_TEST_MAX_UNPACKED"), 10, 64)
	_, err := Import(env.NewStore(home), file, Options{Home: home, MaxUnpacked: ceiling})
	io, _ := os.ReadFile("/proc/self/io")
	for _, line := range strings.Split(string(io), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			fmt.Printf("WCHAR %s\n", v)
		}
	}
	fmt.Printf("ERR %v\n", err)
	os.Exit(0)
}

// TestHostileImportBounded imports a decompression bomb and sparse
// entries declaring GiBs in a child process whose CWM_HOME is a 96 MiB
// tmpfs, as root and as an ordinary user: each is refused, with at most
// 64 MiB written before the refusal and a peak memory under 256 MiB, and
// the home is left empty of environments. The bomb stays within the
// default ceiling: what stops it is the tmpfs's free space. A regression
// fails here on a small file system instead of filling the disk. Run by
// an ordinary user, who cannot mount the tmpfs, the home is a temporary
// directory and the ceiling is set low (48 MiB) to stop the bomb.
func TestHostileImportBounded(t *testing.T) {
	dir, err := os.MkdirTemp("", "cwm-bounded-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	fs := filepath.Join(dir, "fs")
	os.Mkdir(fs, 0o755)
	bombWant, ceiling := "free for it", ""
	if os.Geteuid() != 0 {
		bombWant, ceiling = "past the ceiling of 50331648 bytes unpacked", fmt.Sprint(hostileMaxUnpacked)
	} else {
		if err := unix.Mount("tmpfs", fs, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", boundedTmpfs)); err != nil {
			t.Fatalf("mount a tmpfs for CWM_HOME: %v", err)
		}
		defer unix.Unmount(fs, unix.MNT_DETACH)
	}
	e := putEnv(t, t.TempDir(), "7777eeee7777eeee", map[string]string{"pkg/mod.py": "x = 1\n"})
	config, err := os.ReadFile(e.File(env.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	gnu, pax := sparseTars()
	cases := []struct {
		name  string
		layer craftLayer
		want  string
	}{
		{"bomb", bomb(), `layer repo/: entry "repo/zeros" declares 268435456 bytes`},
		{"gnu-sparse", craftLayer{top: "repo", tar: gnu}, `entry "repo/sparse" is a sparse file (GNU)`},
		{"pax-sparse", craftLayer{top: "repo", tar: pax}, `entry "repo/sparse" is a sparse file (PAX`},
	}
	users := []bool{false}
	if os.Geteuid() == 0 {
		users = append(users, true)
	}
	for _, c := range cases {
		file := filepath.Join(dir, c.name+".tar")
		craft(t, e.ID, config, c.layer).layout(t, file, nil, nil)
		os.Chmod(file, 0o644)
		for _, asUser := range users {
			who := map[bool]string{false: "as this user", true: "as uid 65534"}[asUser]
			t.Run(c.name+" "+who, func(t *testing.T) {
				home := filepath.Join(fs, fmt.Sprintf("%s-%v", c.name, asUser))
				os.Mkdir(home, 0o755)
				if asUser {
					os.Chown(home, 65534, 65534)
				}
				out := runChild(t, dir, []string{"ENVOCI_TEST_BOUNDED=" + file, "CWM_HOME=" + home, "ENVOCI_TEST_MAX_UNPACKED=" + ceiling}, asUser)
				if out.err != nil {
					t.Fatalf("child: %v\n%s%s", out.err, out.stdout, out.stderr)
				}
				var wchar int64 = -1
				var errLine string
				for _, line := range strings.Split(out.stdout, "\n") {
					if v, ok := strings.CutPrefix(line, "WCHAR "); ok {
						wchar, _ = strconv.ParseInt(v, 10, 64)
					}
					if v, ok := strings.CutPrefix(line, "ERR "); ok {
						errLine = v
					}
				}
				if !strings.Contains(errLine, c.want) || (c.name == "bomb" && !strings.Contains(errLine, bombWant)) {
					t.Errorf("import = %s, want an error containing %q", errLine, c.want)
				}
				if wchar < 0 || wchar > maxWrittenBefore {
					t.Errorf("the import wrote %d bytes before it was refused, want at most %d", wchar, maxWrittenBefore)
				}
				if out.maxRSS <= 0 || out.maxRSS > maxImportRSS {
					t.Errorf("the import's peak memory was %d bytes, want under %d", out.maxRSS, maxImportRSS)
				}
				if all, _ := env.NewStore(home).List(); len(all) > 0 {
					t.Errorf("the store holds %d environments", len(all))
				}
				if left, _ := filepath.Glob(filepath.Join(home, "envs", ".build-*")); len(left) > 0 {
					t.Errorf("left behind: %v", left)
				}
				t.Logf("refused after %d bytes written, peak memory %.1f MiB", wchar, float64(out.maxRSS)/(1<<20))
			})
		}
	}
}
