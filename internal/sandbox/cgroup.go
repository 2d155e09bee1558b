package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroups locates the memory and pids controllers. On cgroup v1 each
// controller has its own hierarchy; on v2 both live in the unified one and
// cwm needs a delegated subtree. Without either, limits fall back to
// rlimits.
type cgroups struct {
	version int    // 1, 2, or 0 when unavailable
	memory  string // v1: dir under which sandbox cgroups are made
	pids    string // v1
	unified string // v2
	reason  string // why cgroups are unavailable
	v2      bool   // the host has a cgroup v2 hierarchy (usable or not)
}

func detectCgroups() cgroups {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return cgroups{reason: err.Error()}
	}
	paths := map[string]string{} // controller (or "" for v2) -> path of this process
	for _, line := range strings.Split(string(self), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			paths[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			paths[c] = f[2]
		}
	}
	v1mem, v1pids, v2 := cgroupMounts()
	if v1mem != "" && v1pids != "" {
		cg := cgroups{version: 1,
			memory: filepath.Join(v1mem, paths["memory"]),
			pids:   filepath.Join(v1pids, paths["pids"])}
		if err := probeDir(cg.memory); err != nil {
			return cgroups{reason: "memory cgroup " + cg.memory + " not writable: " + err.Error()}
		}
		if err := probeDir(cg.pids); err != nil {
			return cgroups{reason: "pids cgroup " + cg.pids + " not writable: " + err.Error()}
		}
		return cg
	}
	if v2 != "" {
		dir := v2Dir(v2, paths[""])
		// A subtree another user delegated (root's, with the controllers
		// on) is not this user's to fill.
		if err := probeDir(dir); err != nil {
			return cgroups{reason: "cgroup v2 at " + dir + " not writable: " + err.Error(), v2: true}
		}
		if err := delegateV2(dir); err != nil {
			return cgroups{reason: "cgroup v2 at " + dir + ": " + err.Error(), v2: true}
		}
		return cgroups{version: 2, unified: dir}
	}
	return cgroups{reason: "no memory and pids cgroup controllers mounted"}
}

// cgroupMounts finds where the v1 memory and pids hierarchies and the v2
// one are mounted: at their usual places when those are cgroup file
// systems (two statfs calls), otherwise wherever /proc/self/mountinfo says
// (which the kernel generates at some cost, for every mount).
func cgroupMounts() (v1mem, v1pids, v2 string) {
	var st unix.Statfs_t
	isFS := func(p string, magic int64) bool { return unix.Statfs(p, &st) == nil && int64(st.Type) == magic }
	if isFS("/sys/fs/cgroup/memory", unix.CGROUP_SUPER_MAGIC) && isFS("/sys/fs/cgroup/pids", unix.CGROUP_SUPER_MAGIC) {
		return "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", ""
	}
	if isFS("/sys/fs/cgroup", unix.CGROUP2_SUPER_MAGIC) {
		return "", "", "/sys/fs/cgroup"
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", ""
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		fields := strings.Fields(line)
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+4 {
			continue
		}
		mnt, fstype, opts := fields[4], fields[sep+1], fields[sep+3]
		switch fstype {
		case "cgroup":
			for _, o := range strings.Split(opts, ",") {
				switch o {
				case "memory":
					v1mem = mnt
				case "pids":
					v1pids = mnt
				}
			}
		case "cgroup2":
			v2 = mnt
		}
	}
	return v1mem, v1pids, v2
}

// probeDir checks that sandbox cgroups can be made in dir. access(2) is
// enough for the common refusals (permissions, a read-only mount) and costs
// far less than making a memory cgroup.
func probeDir(dir string) error {
	return unix.Access(dir, unix.W_OK)
}

// supervisorLeaf is the leaf of a delegated cgroup v2 subtree that cwm
// moves the subtree's processes into (itself among them): a v2 cgroup
// with processes cannot enable controllers for its children.
const supervisorLeaf = "cwm-supervisor"

// v2Dir is the cgroup under which sandbox cgroups are made: cwm's own,
// or its parent when cwm already sits in the leaf of an earlier runtime.
func v2Dir(mount, self string) string {
	dir := filepath.Join(mount, self)
	if filepath.Base(dir) == supervisorLeaf {
		dir = filepath.Dir(dir)
	}
	return dir
}

// delegateV2 makes dir able to hold sandbox cgroups with the memory and pids
// controllers: every process in dir (cwm and, in a delegated unit, those it
// shares it with) moves to the leaf, then dir enables the controllers for
// its children, as container engines do with a delegated cgroup.
func delegateV2(dir string) error {
	ctrl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(ctrl))
	for _, want := range []string{"memory", "pids"} {
		if !slices.Contains(have, want) {
			return fmt.Errorf("controller %s not delegated (have %q)", want, have)
		}
	}
	sub, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if strings.Contains(string(sub), "memory") && strings.Contains(string(sub), "pids") {
		return nil
	}
	leaf := filepath.Join(dir, supervisorLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	// Processes may start while they are moved: repeat until none is left.
	for round := 0; round < 20; round++ {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return err
		}
		pids := strings.Fields(string(b))
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(pid), 0)
			if err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("move process %s to %s: %w", pid, leaf, err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +pids"), 0); err != nil {
		return fmt.Errorf("enable the memory and pids controllers in %s: %w", dir, err)
	}
	return nil
}

// cgroupPrefix starts the names of this process's sandbox cgroups:
// "cwm-PID-START-", with this process's pid and start time, which tells
// them apart from those of other cwm processes sharing the parent and
// lets a later cwm remove them when this one has died (reapStaleCgroups).
func cgroupPrefix() string {
	selfOnce.Do(func() { selfStart = procStart(os.Getpid()) })
	return fmt.Sprintf("cwm-%d-%d-", os.Getpid(), selfStart)
}

var (
	selfOnce  sync.Once
	selfStart uint64
)

// reapStaleCgroups removes the sandbox cgroups of cwm processes that are
// gone, killing what is left in them. A one-shot sandbox leaves nothing
// else on disk: its pid 1 dies with cwm (a parent-death signal) and its
// processes with pid 1.
func reapStaleCgroups(cg cgroups, log *slog.Logger) { reapCgroupsOf(cg, staleCgroup, log) }

// reapCgroupsOf removes the sandbox cgroups whose names match.
func reapCgroupsOf(cg cgroups, match func(name string) bool, log *slog.Logger) {
	for _, parent := range []string{cg.memory, cg.pids, cg.unified} {
		if parent == "" {
			continue
		}
		ents, _ := os.ReadDir(parent)
		var dirs []string
		for _, e := range ents {
			if e.IsDir() && match(e.Name()) {
				dirs = append(dirs, filepath.Join(parent, e.Name()))
			}
		}
		if err := removeCgroups(dirs); err != nil {
			log.Warn("reap cgroup", "err", err)
		}
	}
}

// staleCgroup reports whether name is a sandbox cgroup whose cwm process
// no longer runs.
func staleCgroup(name string) bool {
	f := strings.Split(name, "-")
	if len(f) < 4 || f[0] != "cwm" {
		return false
	}
	pid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return procStart(pid) != start
}

// sandboxCgroup is the cgroup (one per controller on v1) of one sandbox.
type sandboxCgroup struct {
	version int
	dirs    []string // memory first, then pids (v1); the one dir (v2)
}

// create makes the cgroup of sandbox id with its limits; its process
// limit leaves room for extra tasks of cwm's own.
func (cg cgroups) create(id string, l Limits, extra int64) (*sandboxCgroup, error) {
	name := cgroupPrefix() + id
	sc := &sandboxCgroup{version: cg.version}
	switch cg.version {
	case 1:
		sc.dirs = []string{filepath.Join(cg.memory, name), filepath.Join(cg.pids, name)}
	case 2:
		sc.dirs = []string{filepath.Join(cg.unified, name)}
	default:
		return nil, nil
	}
	for _, d := range sc.dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			sc.destroy()
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
	}
	var writes [][2]string
	if cg.version == 1 {
		mem := strconv.FormatInt(l.Memory, 10)
		writes = [][2]string{
			{filepath.Join(sc.dirs[0], "memory.limit_in_bytes"), mem},
			{filepath.Join(sc.dirs[0], "memory.memsw.limit_in_bytes"), mem},
			{filepath.Join(sc.dirs[1], "pids.max"), strconv.FormatInt(l.Pids+extra, 10)},
		}
	} else {
		writes = [][2]string{
			{filepath.Join(sc.dirs[0], "memory.max"), strconv.FormatInt(l.Memory, 10)},
			{filepath.Join(sc.dirs[0], "memory.swap.max"), "0"},
			{filepath.Join(sc.dirs[0], "pids.max"), strconv.FormatInt(l.Pids+extra, 10)},
		}
	}
	for _, w := range writes {
		if err := os.WriteFile(w[0], []byte(w[1]), 0); err != nil {
			if strings.Contains(w[0], "swap") && errors.Is(err, os.ErrNotExist) {
				continue // no swap accounting on this host
			}
			sc.destroy()
			return nil, fmt.Errorf("set %s: %w", filepath.Base(w[0]), err)
		}
	}
	return sc, nil
}

// taskFiles opens, on cgroup v1, the task files of the sandbox's memory
// and pids cgroups for writing. A thread that writes "0" to them moves
// itself, and the processes it starts later, into the sandbox's cgroups.
// Moving oneself needs none of the global lock that moving another
// process takes (cgroup_threadgroup_rwsem, whose first writer waits for an
// RCU grace period: 8-16 ms here), and it leaves the rest of the process
// outside. The kernel checks the opener's credentials, cwm's, so the
// sandbox's root may use them. On v2, which has no per-thread cgroups,
// there are none.
func (sc *sandboxCgroup) taskFiles() ([]*os.File, error) {
	if sc == nil || sc.version != 1 {
		return nil, nil
	}
	var files []*os.File
	for _, d := range sc.dirs {
		f, err := os.OpenFile(filepath.Join(d, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("open cgroup %s: %w", d, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// entryFiles are the files through which a process moves itself into the
// sandbox's cgroups: v1's task files (one thread: no global lock), or
// v2's cgroup.procs, opened by cwm so that the kernel checks cwm's
// credentials, not those of the sandbox's root who writes "0" to it.
func (sc *sandboxCgroup) entryFiles() ([]*os.File, error) {
	if sc == nil || sc.version != 2 {
		return sc.taskFiles()
	}
	f, err := os.OpenFile(filepath.Join(sc.dirs[0], "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open cgroup %s: %w", sc.dirs[0], err)
	}
	return []*os.File{f}, nil
}

// add moves a process (and its future children) into the cgroup.
func (sc *sandboxCgroup) add(pid int) error {
	for _, d := range sc.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("add to cgroup %s: %w", d, err)
		}
	}
	return nil
}

// counters are the events cwm attributes limits from.
type counters struct{ oomKills, pidsMax int64 }

func (sc *sandboxCgroup) counters() counters {
	if sc == nil {
		return counters{}
	}
	if sc.version == 1 {
		return counters{
			oomKills: readKey(filepath.Join(sc.dirs[0], "memory.oom_control"), "oom_kill"),
			pidsMax:  readKey(filepath.Join(sc.dirs[1], "pids.events"), "max"),
		}
	}
	return counters{
		oomKills: readKey(filepath.Join(sc.dirs[0], "memory.events"), "oom_kill"),
		pidsMax:  readKey(filepath.Join(sc.dirs[0], "pids.events"), "max"),
	}
}

func (sc *sandboxCgroup) pidsEvents() int64 {
	if sc.version == 1 {
		return readKey(filepath.Join(sc.dirs[1], "pids.events"), "max")
	}
	return readKey(filepath.Join(sc.dirs[0], "pids.events"), "max")
}

// readKey reads "key value" lines and returns value for key, 0 if absent.
func readKey(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// destroy kills whatever is still in the cgroup and removes it. It is safe
// on a partly created cgroup and on one already gone.
func (sc *sandboxCgroup) destroy() error {
	if sc == nil {
		return nil
	}
	return removeCgroups(sc.dirs)
}

func removeCgroups(dirs []string) error {
	var last error
	for _, d := range dirs {
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline) {
				killCgroupProcs(d)
				time.Sleep(time.Millisecond)
				continue
			}
			last = fmt.Errorf("remove cgroup %s: %w", d, err)
			break
		}
	}
	return last
}

func killCgroupProcs(dir string) {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
