package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The escape suite: attempts a hostile command makes to reach the host,
// cwm or another sandbox, each with the refusal it must meet. Every row
// has a control, the same attempt made where it must get through: on the
// host (as root, with arguments that make it harmless), in a sandbox with
// the measure under test turned off, or with limits that let it finish.
// A row whose control does not get through says nothing, and fails the
// test, unless it is optional (the host's kernel lacks the feature, as
// this one lacks kexec and /proc/kcore), when it is skipped.
//
// A new attempt is one row. Attempts print a line starting "ESCAPED" when
// they get through (testdata/escape/probe.py).

type control int

const (
	ctlHost   control = iota // the same probe on the host
	ctlWeak                  // the same probe in a sandbox with row.weak
	ctlLimits                // the same command with row.ctlLimits
	ctlInside                // row.ctlShell in a sandbox: the call works on a target it may reach
)

type escapeRow struct {
	name     string
	category string
	probe    []string // probe.py's arguments ({PORT}, {ABSTRACT}, {HOSTPID}, {HOME}, {WORK} filled in)
	shell    string   // instead of probe: a bash line, the same inside and for the control
	control  control
	weak     weakening
	ctlProbe []string // for ctlHost, when the attempt itself would disturb the host: the same call on a harmless target
	ctlShell string   // for ctlInside
	// attemptWeak, when set, weakens the attempt's sandbox too: the row
	// then shows that one measure holds when another is gone.
	attemptWeak weakening
	// Exhaustion rows: the attempt runs with limits and must end with
	// reason; the control, with ctlLimits, must succeed.
	limits, ctlLimits Limits
	reason            Reason
	want              string // what the refusal must say
	optional          bool   // the host may lack what the row attacks
	disk              bool   // the disk limit, which kernels before 6.6 cannot hold
	rootOnly          bool   // not in the unprivileged run
}

func sysRow(category, name string, args ...string) escapeRow {
	return escapeRow{name: name, category: category, probe: append([]string{"sys", name}, args...), want: "refused " + name}
}

var escapeRows = func() []escapeRow {
	var rows []escapeRow
	add := func(r ...escapeRow) { rows = append(rows, r...) }

	// Kernel settings: /proc/sys and friends are read-only.
	for _, p := range []string{"/proc/sys/vm/swappiness", "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/pid_max",
		"/proc/sys/fs/file-max", "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches", "/proc/sys/kernel/hostname"} {
		// The sandbox's root is not the host's (EACCES) and /proc/sys is
		// read-only besides (EROFS).
		add(escapeRow{name: "write " + p, category: "kernel settings", probe: []string{"write", p}, want: "refused open for writing", optional: p == "/proc/sys/kernel/modprobe"})
	}
	// A setting of the sandbox's own user namespace, which its root with
	// CAP_SYS_RESOURCE could write (commands lack it) but for the
	// read-only /proc/sys: it would allow nested user namespaces again.
	add(escapeRow{name: "raise user.max_user_namespaces with every capability", category: "kernel settings",
		probe: []string{"write", "/proc/sys/user/max_user_namespaces"}, attemptWeak: weakening{allCaps: true},
		control: ctlWeak, weak: weakening{allCaps: true, noMasks: true}, want: "EROFS"},
		escapeRow{name: "write /proc/sysrq-trigger", category: "kernel settings", probe: []string{"write", "/proc/sysrq-trigger"}, optional: true},
		escapeRow{name: "write /proc/irq", category: "kernel settings", probe: []string{"write", "/proc/irq/default_smp_affinity"}, want: "refused open for writing"})

	// Keyrings: the calls are refused, /proc/keys is empty.
	add(sysRow("keyrings", "add_key", "s:cwm-no-such-type", "s:x", "null", "0", "-2"),
		sysRow("keyrings", "request_key", "s:cwm-no-such-type", "s:x", "null", "0"),
		sysRow("keyrings", "keyctl", "0", "-4", "0"),
		escapeRow{name: "read /proc/keys", category: "keyrings", probe: []string{"read", "/proc/keys"}, want: "empty"},
		escapeRow{name: "read /proc/key-users", category: "keyrings", probe: []string{"read", "/proc/key-users"}, want: "empty"})

	// Masked /proc paths.
	for _, f := range []string{"kallsyms", "timer_list", "interrupts", "vmallocinfo", "softirqs", "kcore", "sched_debug", "timer_stats", "latency_stats"} {
		add(escapeRow{name: "read /proc/" + f, category: "masked /proc", probe: []string{"read", "/proc/" + f},
			optional: f == "kcore" || f == "sched_debug" || f == "timer_stats" || f == "latency_stats"})
	}
	for _, d := range []string{"acpi", "driver", "scsi", "asound"} {
		add(escapeRow{name: "list /proc/" + d, category: "masked /proc", probe: []string{"ls", "/proc/" + d}, optional: true})
	}

	// Devices: none of the host's beyond the harmless few, none made.
	add(escapeRow{name: "mknod a block device", category: "devices", probe: []string{"mknod", "/tmp/cwm-escape-sda", "8", "0"}, want: "EPERM"})
	for _, d := range []string{"/dev/mem", "/dev/kmem", "/dev/port", "/dev/vda", "/dev/sda", "/dev/kvm", "/dev/net/tun", "/dev/fuse", "/dev/kmsg",
		"/dev/loop0", "/dev/loop-control", "/dev/btrfs-control", "/dev/hwrng", "/dev/cpu_dma_latency"} {
		add(escapeRow{name: "open " + d, category: "devices", probe: []string{"open", d}, want: "ENOENT", optional: true})
	}

	// Mounts and namespaces: refused by the filter (and by missing
	// capabilities), nested user namespaces forbidden too.
	add(sysRow("mounts and namespaces", "mount", "s:none", "s:/nonexistent-cwm", "s:tmpfs", "0", "null"),
		sysRow("mounts and namespaces", "umount2", "s:/nonexistent-cwm", "0"),
		sysRow("mounts and namespaces", "pivot_root", "s:/nonexistent-a", "s:/nonexistent-b"),
		sysRow("mounts and namespaces", "open_tree", "-100", "s:/nonexistent-cwm", "0"),
		sysRow("mounts and namespaces", "move_mount", "-1", "s:", "-1", "s:", "0"),
		sysRow("mounts and namespaces", "fsopen", "s:cwm-no-such-fs", "0"),
		sysRow("mounts and namespaces", "fsmount", "-1", "0", "0"),
		sysRow("mounts and namespaces", "fspick", "-1", "s:", "0"),
		sysRow("mounts and namespaces", "mount_setattr", "-1", "s:", "0", "null", "0"),
		sysRow("mounts and namespaces", "setns", "-1", "0"))
	for _, ns := range []struct{ name, flag string }{{"user", "0x10000000"}, {"mount", "0x20000"}, {"pid", "0x20000000"},
		{"network", "0x40000000"}, {"ipc", "0x8000000"}, {"uts", "0x4000000"}, {"cgroup", "0x2000000"}} {
		r := sysRow("mounts and namespaces", "unshare", ns.flag)
		r.name = "unshare a " + ns.name + " namespace"
		add(r)
	}
	// CLONE_NEWUSER|CLONE_FS: the kernel refuses the pair with EINVAL once
	// past the filter, so the control makes no process.
	clone := sysRow("mounts and namespaces", "clone", "0x10000200", "0", "null", "null", "0")
	clone.name = "clone a user namespace"
	clone3 := sysRow("mounts and namespaces", "clone3", "null", "0")
	clone3.want = "refused clone3 ENOSYS"
	add(clone, clone3,
		escapeRow{name: "unshare(1) a user namespace", category: "mounts and namespaces", shell: "unshare -U true && echo ESCAPED"},
		escapeRow{name: "chroot out", category: "mounts and namespaces", shell: "mkdir -p /tmp/c && chroot /tmp/c /bin/true 2>&1; [ $? = 127 ] && echo ESCAPED; true"})

	// ptrace and other processes' memory.
	// pid 1 is init, or the one-shot pid 1 that shares cwm's memory; the
	// controls do the same to a child of the probe's own.
	add(escapeRow{name: "ptrace pid 1", category: "ptrace", probe: []string{"ptrace", "1"}, ctlProbe: []string{"ptrace", "child"}})
	for _, what := range []string{"mem", "environ", "maps", "root", "fdlinks"} {
		r := escapeRow{name: "pid 1's " + what, category: "ptrace", probe: []string{"proc", "1", what}, ctlProbe: []string{"proc", "child", what}}
		add(r)
	}
	add(sysRow("ptrace", "process_vm_readv", "1", "null", "0", "null", "0", "0"),
		sysRow("ptrace", "kcmp", "self", "self", "0", "0", "0"),
		sysRow("ptrace", "pidfd_getfd", "-1", "0", "0"))

	// Host files and secrets.
	for _, p := range []string{"/etc/shadow", "/etc/gshadow", "/etc/pip.conf", "/etc/npmrc", "/etc/machine-id", "/etc/ssh/ssh_host_rsa_key",
		"/etc/ssh/ssh_host_ed25519_key", "/etc/sudoers", "/root/.bashrc", "/root/.profile", "{WORK}/go.mod"} {
		add(escapeRow{name: "read " + p, category: "host files", probe: []string{"read", p}, optional: !strings.HasPrefix(p, "/etc/shadow") && !strings.HasPrefix(p, "{")})
	}
	add(escapeRow{name: "list /home", category: "host files", probe: []string{"ls", "/home"}, optional: true},
		escapeRow{name: "list $CWM_HOME", category: "host files", probe: []string{"ls", "{HOME}/run"}},
		escapeRow{name: "list /work", category: "host files", probe: []string{"ls", "{WORK}"}})

	// Host processes and signals.
	add(escapeRow{name: "signal the host's cwm", category: "host processes", probe: []string{"kill", "{HOSTPID}"}},
		escapeRow{name: "kill pid 1", category: "host processes", shell: "kill -9 1; kill -TERM 1; sleep 0.1; [ -d /proc/1 ] || echo ESCAPED",
			control: ctlInside, ctlShell: "sleep 100 & p=$!; kill -9 $p; sleep 0.1; [ -d /proc/$p ] || echo ESCAPED"})

	// Host loopback and abstract sockets.
	add(escapeRow{name: "connect to the host's 127.0.0.1", category: "host sockets", probe: []string{"connect", "127.0.0.1", "{PORT}"}},
		escapeRow{name: "connect to a host abstract socket", category: "host sockets", probe: []string{"abstract", "{ABSTRACT}"}})

	// Module loading and other machine-wide calls.
	add(sysRow("modules", "init_module", "null", "0", "s:"),
		sysRow("modules", "finit_module", "-1", "s:", "0"),
		sysRow("modules", "delete_module", "s:cwm_no_such_module", "0"),
		sysRow("kernel", "kexec_load", "0", "0", "null", "0xdead0000"),
		sysRow("kernel", "kexec_file_load", "-1", "-1", "0", "null", "0xdead0000"),
		sysRow("kernel", "bpf", "0xdead", "null", "0"),
		sysRow("kernel", "perf_event_open", "null", "0", "-1", "-1", "0"),
		sysRow("kernel", "userfaultfd", "0"),
		sysRow("kernel", "open_by_handle_at", "-1", "null", "0"),
		sysRow("kernel", "name_to_handle_at", "-100", "s:/", "null", "null", "0"),
		sysRow("kernel", "reboot", "0", "0", "0", "null"),
		sysRow("kernel", "swapon", "s:/nonexistent-cwm", "0"),
		sysRow("kernel", "swapoff", "s:/nonexistent-cwm"),
		sysRow("kernel", "acct", "s:/nonexistent-cwm"),
		sysRow("kernel", "quotactl", "0xdead", "s:/nonexistent-cwm", "0", "null"),
		sysRow("kernel", "iopl", "0"),
		sysRow("kernel", "ioperm", "0", "0", "0"),
		sysRow("kernel", "io_uring_setup", "0", "null"),
		sysRow("kernel", "syslog", "10", "null", "0"),
		sysRow("kernel", "settimeofday", "null", "null"),
		sysRow("kernel", "clock_settime", "0xdead", "null"),
		sysRow("kernel", "sethostname", "s:x", "1000"),
		sysRow("kernel", "lookup_dcookie", "0", "null", "0"),
		sysRow("kernel", "personality", "0x400000"))
	for i := range rows {
		switch rows[i].name {
		case "kexec_load", "kexec_file_load", "lookup_dcookie", "io_uring_setup", "userfaultfd", "perf_event_open", "quotactl",
			"init_module", "finit_module", "delete_module", "iopl", "ioperm":
			rows[i].optional = true // not every kernel has them
		}
	}

	// Exhaustion: the limit ends the command, cwm lives on, nothing stays.
	add(escapeRow{name: "memory hog", category: "exhaustion", shell: "python3 -c 'x = bytearray(512 << 20); x[::4096] = b\"x\" * len(x[::4096])' && echo ESCAPED",
		limits: Limits{Memory: 128 << 20}, ctlLimits: Limits{Memory: 2 << 30}, reason: ReasonMemory, control: ctlLimits, rootOnly: true},
		escapeRow{name: "/dev/shm hog", category: "exhaustion", shell: "dd if=/dev/zero of=/dev/shm/big bs=1M count=512 2>/dev/null && echo ESCAPED",
			limits: Limits{Memory: 128 << 20}, ctlLimits: Limits{Memory: 2 << 30}, reason: ReasonMemory, control: ctlLimits, rootOnly: true},
		escapeRow{name: "disk hog", category: "exhaustion", disk: true, shell: "dd if=/dev/zero of=/tmp/big bs=1M count=64 2>/dev/null && echo ESCAPED",
			limits: Limits{Disk: 16 << 20}, ctlLimits: Limits{Disk: 256 << 20}, reason: ReasonDisk, control: ctlLimits},
		escapeRow{name: "inode hog", category: "exhaustion", disk: true, shell: "mkdir /tmp/f && cd /tmp/f && python3 -c 'import os\nfor i in range(100000): open(str(i), \"w\").close()' && echo ESCAPED",
			limits: Limits{Disk: 16 << 20}, ctlLimits: Limits{Disk: 1 << 30}, reason: ReasonDisk, control: ctlLimits},
		escapeRow{name: "fork bomb", category: "exhaustion", shell: "for i in $(seq 200); do sleep 5 & done; wait; echo ESCAPED",
			limits: Limits{Pids: 64, Timeout: 20 * time.Second}, ctlLimits: Limits{Pids: 1024}, reason: ReasonPids, control: ctlLimits, rootOnly: true},
		escapeRow{name: "output flood", category: "exhaustion", shell: "head -c 64M /dev/zero && echo ESCAPED",
			limits: Limits{Output: 8 << 20}, ctlLimits: Limits{Output: 256 << 20}, reason: ReasonOutput, control: ctlLimits})
	return rows
}()

// escapeEnv is what the rows' placeholders stand for.
type escapeEnv struct {
	probeDir, home, work, abstract string
	port, pid                      int
}

func (e escapeEnv) args(r escapeRow, hostProbe string) []string {
	if r.shell != "" {
		return []string{"/bin/bash", "-c", r.shell}
	}
	rep := strings.NewReplacer("{PORT}", strconv.Itoa(e.port), "{ABSTRACT}", e.abstract,
		"{HOSTPID}", strconv.Itoa(e.pid), "{HOME}", e.home, "{WORK}", e.work)
	out := []string{"python3", hostProbe}
	for _, a := range r.probe {
		out = append(out, rep.Replace(a))
	}
	return out
}

// probeLayer makes a layer holding the probe at /probe/probe.py.
func probeLayer(t testing.TB) string {
	t.Helper()
	layer := t.TempDir()
	os.Mkdir(filepath.Join(layer, "probe"), 0o755)
	b, err := os.ReadFile("testdata/escape/probe.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(layer, "probe", "probe.py"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return layer
}

// escapeListeners starts what the host-socket rows try to reach: a TCP
// listener on the host's loopback and an abstract unix socket.
func escapeListeners(t testing.TB) (port int, abstract string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	abstract = fmt.Sprintf("cwm-escape-%d", os.Getpid())
	un, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); un.Close() })
	for _, l := range []net.Listener{ln, un} {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	return ln.Addr().(*net.TCPAddr).Port, abstract
}

func escaped(out string) bool { return strings.Contains(out, "ESCAPED") }

// attempt runs a row in a sandbox of rt, one-shot or in a sandbox with an
// init, and returns its output and result.
func attempt(ctx context.Context, rt *Runtime, layer string, r escapeRow, limits Limits, oneShot bool, e escapeEnv) (string, Result, error) {
	cfg := Config{Layers: []string{layer}, Workdir: "/tmp", Limits: limits}
	cmd := Cmd{Args: e.args(r, "/probe/probe.py"), Capture: 4096, Timeout: 30 * time.Second}
	if limits.Timeout != 0 {
		cmd.Timeout = limits.Timeout
	}
	var res Result
	var err error
	if oneShot {
		res, err = rt.Run(ctx, cfg, cmd)
	} else {
		var s *Sandbox
		if s, err = rt.New(ctx, cfg); err != nil {
			return "", res, err
		}
		res, err = s.Exec(ctx, cmd)
		s.Close()
	}
	return string(res.Stdout) + string(res.Stderr), res, err
}

// refusedAs says whether an attempt's outcome is the refusal the row
// wants, and why not.
func refusedAs(r escapeRow, out string, res Result) (bool, string) {
	if r.reason != "" {
		if res.Reason != r.reason || escaped(out) {
			return false, fmt.Sprintf("ended %s (reason %q), want reason %q; output %q", res.Describe(), res.Reason, r.reason, out)
		}
		return true, ""
	}
	if escaped(out) || !strings.Contains(out, r.want) {
		return false, fmt.Sprintf("output %q, want a refusal saying %q", out, r.want)
	}
	return true, ""
}

func TestEscapes(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the probe's system call numbers are x86-64's")
	}
	if os.Getuid() != 0 {
		t.Skip("the controls run as root on the host; TestEscapesUnprivileged covers ordinary users")
	}
	if len(escapeRows) < 60 {
		t.Fatalf("the escape suite has %d rows, want at least 60", len(escapeRows))
	}
	ctx := context.Background()
	layer := probeLayer(t)
	port, abstract := escapeListeners(t)
	work, _ := filepath.Abs("../..")
	rt := newRuntime(t, Options{Warm: -1})
	env := escapeEnv{home: rt.home, work: work, abstract: abstract, port: port, pid: os.Getpid()}
	hostProbe, _ := filepath.Abs("testdata/escape/probe.py")
	weak := map[weakening]*Runtime{}
	weakRuntime := func(w weakening) *Runtime {
		if weak[w] == nil {
			weak[w] = newRuntime(t, Options{Warm: -1})
			weak[w].weak = w
		}
		return weak[w]
	}
	for _, r := range escapeRows {
		t.Run(r.category+"/"+r.name, func(t *testing.T) {
			if r.disk && rt.upperOnDisk {
				t.Skip("upper layers are on disk here (Linux before 6.6): no disk limit")
			}
			// The control: the attempt must get through where the measure
			// under test is not.
			var ctlOut string
			switch r.control {
			case ctlHost:
				cr := r
				if r.ctlProbe != nil {
					cr.probe = r.ctlProbe
				}
				args := env.args(cr, hostProbe)
				b, _ := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
				ctlOut = string(b)
			case ctlWeak:
				out, _, err := attempt(ctx, weakRuntime(r.weak), layer, r, Limits{}, false, env)
				if err != nil {
					t.Fatal(err)
				}
				ctlOut = out
			case ctlInside:
				out, _, err := attempt(ctx, rt, layer, escapeRow{shell: r.ctlShell}, Limits{}, false, env)
				if err != nil {
					t.Fatal(err)
				}
				ctlOut = out
			case ctlLimits:
				out, res, err := attempt(ctx, rt, layer, r, r.ctlLimits, false, env)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Success() {
					ctlOut = "control ended " + res.Describe() + ": " + out
				} else {
					ctlOut = out
				}
			}
			if !escaped(ctlOut) {
				if r.optional {
					t.Skipf("control did not get through (this host lacks what the row attacks): %s", strings.TrimSpace(ctlOut))
				}
				t.Fatalf("control did not get through, so the row proves nothing: %s", strings.TrimSpace(ctlOut))
			}
			art := rt
			if r.attemptWeak != (weakening{}) {
				art = weakRuntime(r.attemptWeak)
			}
			for _, oneShot := range []bool{false, true} {
				out, res, err := attempt(ctx, art, layer, r, r.limits, oneShot, env)
				if err != nil {
					t.Fatalf("one-shot %v: %v", oneShot, err)
				}
				if ok, why := refusedAs(r, out, res); !ok {
					t.Errorf("one-shot %v: %s", oneShot, why)
				}
			}
		})
	}
	assertNoSandboxes(t, rt)
}

// TestEscapesUnprivileged makes the same attempts from a cwm run as an
// ordinary user (uid 65534): they must be refused there too.
func TestEscapesUnprivileged(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the probe's system call numbers are x86-64's")
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to switch to an unprivileged user")
	}
	// Not t.TempDir: its parent is not open to other users.
	dir, err := os.MkdirTemp("", "cwm-escape-")
	if err != nil {
		t.Fatal(err)
	}
	defer RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sandbox.test")
	if err := CopyFile(os.Args[0], bin, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	os.Mkdir(home, 0o755)
	os.Chown(home, 65534, 65534)
	probe := filepath.Join(dir, "probe.py")
	b, _ := os.ReadFile("testdata/escape/probe.py")
	os.WriteFile(probe, b, 0o644)
	port, abstract := escapeListeners(t)
	work, _ := filepath.Abs("../..")
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{childEnv + "=escape", "CWM_HOME=" + home, LimitsEnv + "=rlimits", "PATH=/usr/bin:/bin", "CWM_PROBE=" + probe,
		fmt.Sprintf("CWM_ESCAPE_ENV=%d:%s:%d:%s", port, abstract, os.Getpid(), work)}
	cmd.SysProcAttr = unprivileged()
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "user namespaces is not allowed") {
			t.Skipf("unprivileged user namespaces are disabled here: %s", out)
		}
		t.Fatalf("unprivileged run failed: %v\n%s", err, out)
	}
	results := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if name, rest, ok := strings.Cut(strings.TrimPrefix(line, "ROW "), "\t"); ok && strings.HasPrefix(line, "ROW ") {
			results[name] = rest
		}
	}
	n := 0
	for _, r := range escapeRows {
		if r.rootOnly || r.attemptWeak != (weakening{}) {
			continue
		}
		n++
		got, ok := results[r.name]
		switch {
		case !ok:
			t.Errorf("%s: no result from the unprivileged run", r.name)
		case strings.HasPrefix(got, "FAIL "):
			t.Errorf("%s as uid 65534: %s", r.name, strings.TrimPrefix(got, "FAIL "))
		}
	}
	t.Logf("%d attempts refused to an unprivileged cwm", n)
}

// escapeChild is the unprivileged side of TestEscapesUnprivileged: it
// makes every row's attempt and prints "ROW name\tok" or "ROW name\tFAIL why".
func escapeChild() {
	rt, err := NewRuntime(Options{Home: os.Getenv("CWM_HOME"), Warm: -1})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	defer rt.Close()
	var e escapeEnv
	f := strings.SplitN(os.Getenv("CWM_ESCAPE_ENV"), ":", 4)
	e.port, _ = strconv.Atoi(f[0])
	e.abstract = f[1]
	e.pid, _ = strconv.Atoi(f[2])
	e.work = f[3]
	e.home = os.Getenv("CWM_HOME")
	layer, err := os.MkdirTemp(os.Getenv("CWM_HOME"), "probe-")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	os.Mkdir(filepath.Join(layer, "probe"), 0o755)
	b, _ := os.ReadFile(os.Getenv("CWM_PROBE"))
	os.WriteFile(filepath.Join(layer, "probe", "probe.py"), b, 0o644)
	ctx := context.Background()
	for _, r := range escapeRows {
		if r.rootOnly || r.attemptWeak != (weakening{}) {
			continue
		}
		if r.disk && rt.upperOnDisk {
			fmt.Printf("ROW %s\tskip\n", r.name)
			continue
		}
		out, res, err := attempt(ctx, rt, layer, r, r.limits, false, e)
		if err != nil {
			fmt.Printf("ROW %s\tFAIL %v\n", r.name, err)
			continue
		}
		if ok, why := refusedAs(r, out, res); !ok {
			// Without cgroups the memory and process limits are rlimits,
			// which end a command differently: what matters is that it
			// did not get through.
			if r.reason == "" || escaped(out) {
				fmt.Printf("ROW %s\tFAIL %s\n", r.name, why)
				continue
			}
		}
		fmt.Printf("ROW %s\tok\n", r.name)
	}
	os.Exit(0)
}
