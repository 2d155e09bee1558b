package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSandboxRootIsNotHostRoot: the sandbox's ids map to a block of host
// ids no host user has; layer files host root owns belong to the
// sandbox's root inside, through an idmapped mount, and the disk is not
// touched; files the sandbox writes belong to the block on the host.
func TestSandboxRootIsNotHostRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("as an ordinary user the sandbox's root is that user")
	}
	layer := t.TempDir()
	os.Mkdir(filepath.Join(layer, "private"), 0o700)
	os.WriteFile(filepath.Join(layer, "private", "f"), []byte("layer\n"), 0o600)
	rt := newRuntime(t, Options{})
	ids := rt.IDs()
	if ids.UID == 0 || ids.GID == 0 || ids.Count != IDCount {
		t.Fatalf("IDs() = %+v, want a block of %d ids above 0", ids, IDCount)
	}
	want := fmt.Sprintf("0 %d %d\n", ids.UID, IDCount)
	for _, run := range []func(cmd string) Result{
		func(cmd string) Result { return sh(t, newSandbox(t, rt, Config{Layers: []string{layer}}), cmd) },
		func(cmd string) Result { return runOnce(t, rt, Config{Layers: []string{layer}}, Cmd{Shell: cmd}) },
	} {
		r := run("tr -s ' ' < /proc/self/uid_map | sed 's/^ //'; stat -c '%u %g' /private/f /usr/bin/python3.11; cat /private/f; echo new > /private/g && stat -c %u /private/g")
		if got := string(r.Stdout); got != want+"0 0\n0 0\nlayer\n0\n" {
			t.Errorf("inside: %q, want uid_map %q, layer and /usr files of the sandbox's root, a private layer file readable and writable", got, want)
		}
	}
	s := newSandbox(t, rt, Config{})
	sh(t, s, "echo x > /tmp/mine")
	var st unix.Stat_t
	if err := unix.Stat(s.upperDir()+"/tmp/mine", &st); err != nil || int(st.Uid) != ids.UID || int(st.Gid) != ids.GID {
		t.Errorf("a file the sandbox's root wrote is owned by %d:%d on the host (%v), want %d:%d", st.Uid, st.Gid, err, ids.UID, ids.GID)
	}
	if err := unix.Stat(filepath.Join(layer, "private", "f"), &st); err != nil || st.Uid != 0 {
		t.Errorf("the layer's file changed owner on disk: %d (%v)", st.Uid, err)
	}
	// A snapshot stores owners as the sandbox sees them (as an image
	// does), so that the next sandbox's idmapped mount shows them right.
	snap := filepath.Join(t.TempDir(), "snap")
	sh(t, s, "useradd -u 1000 -M u 2>/dev/null || true; echo y > /tmp/theirs && chown 1000:1000 /tmp/theirs")
	if err := s.Snapshot(snap); err != nil {
		t.Fatal(err)
	}
	for name, uid := range map[string]uint32{"mine": 0, "theirs": 1000} {
		if err := unix.Stat(filepath.Join(snap, "tmp", name), &st); err != nil || st.Uid != uid {
			t.Errorf("snapshot of /tmp/%s owned by %d (%v), want %d", name, st.Uid, err, uid)
		}
	}
	if r := sh(t, newSandbox(t, rt, Config{Layers: []string{snap}}), "stat -c %u /tmp/mine /tmp/theirs"); string(r.Stdout) != "0\n1000\n" {
		t.Errorf("a sandbox on the snapshot sees owners %q, want 0 and 1000", r.Stdout)
	}
}

func TestHostIDBlock(t *testing.T) {
	b, err := hostIDBlock(1000, 1000)
	if err != nil || b.mapped() || b.UID != 1000 || b.Count != 1 {
		t.Errorf("hostIDBlock(1000) = %+v, %v; want the user alone", b, err)
	}
	t.Setenv("CWM_IDS", "200000")
	if b, err := hostIDBlock(0, 0); err != nil || b.UID != 200000 || b.GID != 200000 || b.Source != "CWM_IDS" {
		t.Errorf("with CWM_IDS=200000: %+v, %v", b, err)
	}
	for _, bad := range []string{"x", "0", "4294967295"} {
		t.Setenv("CWM_IDS", bad)
		if _, err := hostIDBlock(0, 0); err == nil || !strings.Contains(err.Error(), "CWM_IDS") {
			t.Errorf("CWM_IDS=%q: error %v, want one naming CWM_IDS", bad, err)
		}
	}
	// A block holding a host user's id is refused: that id may own files.
	t.Setenv("CWM_IDS", "1")
	if _, err := hostIDBlock(0, 0); err == nil || !strings.Contains(err.Error(), "/etc/passwd") {
		t.Errorf("a block over /etc/passwd's ids: error %v, want one naming the user and the file", err)
	}
}

// TestGeneratedEtc: the default base has cwm's own /etc: what programs
// need, none of the host's secrets or credentials.
func TestGeneratedEtc(t *testing.T) {
	rt := newRuntime(t, Options{})
	r := sh(t, newSandbox(t, rt, Config{}), `
ls /etc/shadow /etc/gshadow /etc/pip.conf /etc/npmrc /etc/machine-id /etc/ssh 2>&1 | grep -vc 'No such file'
getent passwd root | cut -d: -f1,6
getent hosts localhost >/dev/null && echo localhost
python3 -c 'import ssl; c = ssl.create_default_context(); print(len(c.get_ca_certs()) > 0 or c.cert_store_stats()["x509_ca"] > 0)'
python3 -c 'import locale, time; locale.setlocale(locale.LC_ALL, ""); print(time.tzname[0] != "")'
git config --system --get safe.directory
ls -A /root /home | grep -v ':$' | grep -c .`)
	want := "0\nroot:/root\nlocalhost\nTrue\nTrue\n*\n0\n"
	if string(r.Stdout) != want {
		t.Errorf("generated /etc: %q (stderr %q), want %q", r.Stdout, r.Stderr, want)
	}
}

// TestCommandsAreOOMsFirstChoice: commands have the highest OOM score;
// cwm keeps its own.
func TestCommandsAreOOMsFirstChoice(t *testing.T) {
	before, _ := os.ReadFile("/proc/self/oom_score_adj")
	rt := newRuntime(t, Options{})
	// Init's forking thread raises a command's score once its exec has
	// succeeded, pid 1 a one-shot command's just after its exec: what the
	// command starts a moment later inherits it.
	if r := sh(t, newSandbox(t, rt, Config{}), "sleep 0.1; cat /proc/self/oom_score_adj"); string(r.Stdout) != "1000\n" {
		t.Errorf("a command's oom_score_adj is %q, want 1000", r.Stdout)
	}
	if r := runOnce(t, rt, Config{}, Cmd{Shell: "sleep 0.1; cat /proc/self/oom_score_adj"}); string(r.Stdout) != "1000\n" {
		t.Errorf("a one-shot command's oom_score_adj is %q, want 1000", r.Stdout)
	}
	if after, _ := os.ReadFile("/proc/self/oom_score_adj"); string(after) != string(before) {
		t.Errorf("cwm's oom_score_adj changed from %q to %q", before, after)
	}
}

// TestDiskLimit: writes past the disk limit fail inside with ENOSPC, the
// result says disk, and the host's disk does not fill: the upper layer is
// a tmpfs.
func TestDiskLimit(t *testing.T) {
	home := t.TempDir()
	rt := newRuntime(t, Options{Home: home})
	if rt.upperOnDisk {
		t.Skip("upper layers are on disk here (Linux before 6.6, whose tmpfs lacks user xattrs): no disk limit")
	}
	// What the runtime's home holds on disk is measured, not the free
	// space of its file system, which others share (tests, builds).
	before := diskBytes(t, home)
	for _, oneShot := range []bool{false, true} {
		cfg := Config{Limits: Limits{Disk: 32 << 20}}
		cmd := Cmd{Shell: "dd if=/dev/zero of=/tmp/big bs=1M count=200 2>&1 | grep space; df -k / | tail -1"}
		var r Result
		if oneShot {
			r = runOnce(t, rt, cfg, cmd)
		} else {
			r = sh(t, newSandbox(t, rt, cfg), cmd.Shell)
		}
		if !strings.Contains(string(r.Stdout), "No space left on device") {
			t.Errorf("one-shot %v: dd past the limit says %q, want ENOSPC", oneShot, r.Stdout)
		}
		if f := strings.Fields(string(r.Stdout)); len(f) < 2 || f[len(f)-5] != strconv.Itoa(32<<10) {
			t.Errorf("one-shot %v: df inside %q, want a 32 MiB file system", oneShot, r.Stdout)
		}
		r = sh(t, newSandbox(t, rt, cfg), "dd if=/dev/zero of=/tmp/big bs=1M count=200 2>/dev/null")
		if r.Reason != ReasonDisk {
			t.Errorf("one-shot %v: reason %q, want disk", oneShot, r.Reason)
		}
	}
	if used := diskBytes(t, home) - before; used > 16<<20 {
		t.Errorf("the runtime's home grew by %d MiB on disk while sandboxes wrote 400 MiB", used>>20)
	}
	if r, err := rt.Run(context.Background(), Config{Limits: Limits{Disk: 1000}}, Cmd{Args: []string{"true"}}); err == nil {
		t.Errorf("a disk limit of 1000 bytes was accepted: %+v", r)
	}
}

// TestUpperOnDisk runs the basics with upper layers kept on disk, as on
// kernels before 6.6, whose tmpfs cannot hold overlayfs's attributes.
func TestUpperOnDisk(t *testing.T) {
	rt := newRuntime(t, Options{})
	rt.upperOnDisk = true
	ctx := context.Background()
	layer := t.TempDir()
	os.MkdirAll(filepath.Join(layer, "repo", "d"), 0o755)
	os.WriteFile(filepath.Join(layer, "repo", "d", "x"), []byte("x\n"), 0o644)
	s := newSandbox(t, rt, Config{Layers: []string{layer}, Workdir: "/repo"})
	sh(t, s, "rm -r d; mkdir d; echo y > d/y; echo n > n")
	if ch, err := s.Changes(); err != nil || len(ch) != 3 {
		t.Errorf("Changes() = %v, %v; want d/x deleted, d/y and n added", ch, err)
	}
	c, err := s.Clone(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := sh(t, c, "ls d; cat n"); string(r.Stdout) != "y\nn\n" {
		t.Errorf("clone sees %q", r.Stdout)
	}
	c.Close()
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if r := sh(t, s, "ls d"); string(r.Stdout) != "x\n" {
		t.Errorf("after Reset: %q", r.Stdout)
	}
	if r := runOnce(t, rt, Config{}, Cmd{Shell: "echo ok > /tmp/f && cat /tmp/f"}); string(r.Stdout) != "ok\n" {
		t.Errorf("one-shot: %q %q", r.Stdout, r.Stderr)
	}
	s.Close()
	rt.Close()
	assertNothingLeft(t, rt.home)
}

// TestMasksReadOnly: the masks over /proc files and the device nodes of
// /dev are the host's nodes bound read-only: touching, writing, chmod-ing
// them in a sandbox (long-lived and one-shot) leaves the host's
// /dev/null's times and mode as they were, while a masked file still
// reads empty and /dev/null still takes writes.
func TestMasksReadOnly(t *testing.T) {
	var before unix.Stat_t
	if err := unix.Stat("/dev/null", &before); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, Options{})
	cmd := `for f in /proc/keys /proc/kallsyms /proc/timer_list /dev/null /dev/zero; do
  touch "$f" 2>/dev/null && echo "touched $f"
  touch -d 2001-01-01 "$f" 2>/dev/null && echo "dated $f"
  chmod 0600 "$f" 2>/dev/null && echo "chmod $f"
  echo x 2>/dev/null > "$f" && echo "wrote $f"
done
echo "keys: $(wc -c < /proc/keys)"`
	// Writes reach the device (the masks are /dev/null), which needs no
	// writable mount and changes nothing of the host's inode.
	want := "wrote /proc/keys\nwrote /proc/kallsyms\nwrote /proc/timer_list\nwrote /dev/null\nwrote /dev/zero\nkeys: 0\n"
	for name, run := range map[string]func() Result{
		"sandbox":  func() Result { return sh(t, newSandbox(t, rt, Config{}), cmd) },
		"one-shot": func() Result { return runOnce(t, rt, Config{}, Cmd{Shell: cmd}) },
	} {
		if got := string(run().Stdout); got != want {
			t.Errorf("%s: %q, want only the writes to succeed and /proc/keys empty", name, got)
		}
	}
	var after unix.Stat_t
	if err := unix.Stat("/dev/null", &after); err != nil {
		t.Fatal(err)
	}
	if after.Mtim != before.Mtim || after.Atim != before.Atim || after.Mode != before.Mode {
		t.Errorf("the host's /dev/null: mtime %v atime %v mode %o after the sandboxes, %v %v %o before",
			after.Mtim, after.Atim, after.Mode, before.Mtim, before.Atim, before.Mode)
	}
}

// diskBytes is the disk space the files under dir take (allocated
// blocks), skipping what vanishes during the walk and what it may not
// read.
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}
