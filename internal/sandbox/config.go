package sandbox

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Config describes the filesystem and limits of a sandbox.
type Config struct {
	// Base is a root filesystem directory (for example a debootstrap tree)
	// used as the lowest read-only layer. Empty means the host's system
	// directories (/usr, /etc and the /bin, /lib, /sbin links), read-only.
	Base string
	// Layers are read-only directories stacked over the base, topmost first
	// (overlayfs lowerdir order).
	Layers []string
	// Workdir is the default working directory of commands (default "/").
	Workdir string
	// Env is the default environment of commands, as KEY=VALUE. PATH, HOME
	// and LANG have defaults when absent.
	Env []string
	// Hostname inside the sandbox (default "cwm").
	Hostname string
	// Limits bound what commands may use.
	Limits Limits
}

// Limits bound a sandbox's commands. Zero fields take the defaults in
// DefaultLimits. Memory and Pids apply to the whole sandbox (a cgroup when
// the host offers one, rlimits per process otherwise); the others apply to
// each process.
type Limits struct {
	// Timeout is the wall clock allowed to one command (Exec or Shell run).
	Timeout time.Duration
	// CPU is the CPU time allowed to each process (RLIMIT_CPU).
	CPU time.Duration
	// Memory is the memory of the whole sandbox in bytes.
	Memory int64
	// Pids is the number of processes (tasks) of the whole sandbox.
	Pids int64
	// FileSize is the largest file a process may write (RLIMIT_FSIZE).
	FileSize int64
	// OpenFiles is the number of open files per process (RLIMIT_NOFILE).
	OpenFiles int64
	// Output is how many bytes one command may write to stdout and stderr
	// together before it is killed.
	Output int64
	// Disk is how many bytes the sandbox may write to its filesystem (its
	// upper layer, a tmpfs: what is written counts against Memory too).
	// Past it, writes fail with ENOSPC.
	Disk int64
}

// DefaultLimits are the limits used for zero fields of Limits.
var DefaultLimits = Limits{
	Timeout:   10 * time.Minute,
	CPU:       30 * time.Minute,
	Memory:    4 << 30,
	Pids:      1024,
	FileSize:  1 << 30,
	OpenFiles: 4096,
	Output:    256 << 20,
	Disk:      2 << 30,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	if l.CPU == 0 {
		l.CPU = d.CPU
	}
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	if l.FileSize == 0 {
		l.FileSize = d.FileSize
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.Output == 0 {
		l.Output = d.Output
	}
	if l.Disk == 0 {
		l.Disk = d.Disk
	}
	return l
}

// Validate reports the first invalid limit.
func (l Limits) Validate() error {
	switch {
	case l.Timeout < 0:
		return fmt.Errorf("invalid timeout %v: must be positive", l.Timeout)
	case l.CPU < 0:
		return fmt.Errorf("invalid CPU limit %v: must be positive", l.CPU)
	case l.Memory < 0 || (l.Memory > 0 && l.Memory < 8<<20):
		return fmt.Errorf("invalid memory limit %d bytes: must be at least 8 MiB", l.Memory)
	case l.Pids < 0 || (l.Pids > 0 && l.Pids < 8):
		return fmt.Errorf("invalid process limit %d: must be at least 8", l.Pids)
	case l.FileSize < 0:
		return fmt.Errorf("invalid file size limit %d: must be positive", l.FileSize)
	case l.OpenFiles < 0 || (l.OpenFiles > 0 && l.OpenFiles < 16):
		return fmt.Errorf("invalid open files limit %d: must be at least 16", l.OpenFiles)
	case l.Output < 0:
		return fmt.Errorf("invalid output limit %d: must be positive", l.Output)
	case l.Disk < 0 || (l.Disk > 0 && l.Disk < 1<<20):
		return fmt.Errorf("invalid disk limit %d bytes: must be at least 1 MiB", l.Disk)
	}
	return nil
}

// normalize checks the configuration and fills in defaults. Layer and base
// paths become absolute, symlinks resolved, so that what is mounted is what
// was checked.
func (c Config) normalize() (Config, error) {
	if err := c.Limits.Validate(); err != nil {
		return c, err
	}
	c.Limits = c.Limits.withDefaults()
	if c.Base != "" {
		p, err := checkDir(c.Base)
		if err != nil {
			return c, fmt.Errorf("base: %w", err)
		}
		c.Base = p
	}
	layers := make([]string, len(c.Layers))
	for i, l := range c.Layers {
		p, err := checkDir(l)
		if err != nil {
			return c, fmt.Errorf("layer: %w", err)
		}
		layers[i] = p
	}
	c.Layers = layers
	if c.Workdir == "" {
		c.Workdir = "/"
	}
	if !strings.HasPrefix(c.Workdir, "/") {
		return c, fmt.Errorf("workdir %q: must be an absolute path inside the sandbox", c.Workdir)
	}
	if c.Hostname == "" {
		c.Hostname = "cwm"
	}
	for _, kv := range c.Env {
		if !strings.Contains(kv, "=") || strings.HasPrefix(kv, "=") {
			return c, fmt.Errorf("environment entry %q: want KEY=VALUE", kv)
		}
	}
	c.Env = mergeEnv(defaultEnv, c.Env)
	return c, nil
}

func checkDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if os.IsNotExist(err) {
			return "", fmt.Errorf("%s: no such directory", p)
		}
		return "", fmt.Errorf("%s: %w", p, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s: not a directory", p)
	}
	return real, nil
}

var defaultEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	"LANG=C.UTF-8",
	"TERM=dumb",
}

// mergeEnv returns base with the entries of over added or replacing those of
// the same key, keeping first-seen order.
func mergeEnv(base, over []string) []string {
	out := make([]string, 0, len(base)+len(over))
	idx := map[string]int{}
	for _, list := range [][]string{base, over} {
		for _, kv := range list {
			k, _, _ := strings.Cut(kv, "=")
			if i, ok := idx[k]; ok {
				out[i] = kv
				continue
			}
			idx[k] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

// key identifies the filesystem and limits of a configuration; sandboxes
// with the same key are interchangeable once reset, which is what the warm
// pool relies on.
func (c Config) key() string {
	b, _ := json.Marshal(struct {
		Base   string
		Layers []string
		Limits Limits
		Host   string
	}{c.Base, c.Layers, c.Limits, c.Hostname})
	h := fnv.New128a()
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}
