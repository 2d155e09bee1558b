package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// The sandbox's users are never the host's. Run as root, cwm maps sandbox
// ids 0-65535 to a block of host ids that no host user or group has
// (IDBlock); files of the read-only layers are shown inside through an
// idmapped mount, so that what belongs to host root on disk belongs to the
// sandbox's root inside and nothing on disk changes. Run as an ordinary
// user, the kernel lets cwm map only that user (to sandbox root).

// DefaultIDBlock is the first host id of the block root's sandboxes use
// when /etc/subuid and /etc/subgid give root no range and CWM_IDS is not
// set: above systemd's ranges for users, dynamic users and nspawn
// containers, below 2^31.
const DefaultIDBlock = 0x70000000

// IDCount is how many sandbox ids are mapped: 0-65535.
const IDCount = 65536

// IDBlock is the host ids sandbox ids 0..Count-1 map to.
type IDBlock struct {
	UID, GID int // first host uid and gid
	Count    int
	Source   string // where the block came from: "CWM_IDS", "/etc/subuid", "default", "self"
}

// hostIDBlock chooses the ids sandboxes of this process use. As root:
// $CWM_IDS (START, the same for uids and gids), else root's first range of
// at least IDCount ids in /etc/subuid and /etc/subgid, else
// DefaultIDBlock. As another user: that user alone. A block must not hold
// the id of any user or group of /etc/passwd or /etc/group, nor 0.
func hostIDBlock(uid, gid int) (IDBlock, error) {
	if uid != 0 {
		return IDBlock{UID: uid, GID: gid, Count: 1, Source: "self"}, nil
	}
	b := IDBlock{UID: DefaultIDBlock, GID: DefaultIDBlock, Count: IDCount, Source: "default"}
	if v := os.Getenv("CWM_IDS"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 || n+IDCount > 1<<32-1 {
			return b, fmt.Errorf("CWM_IDS=%q: want the first of %d free host ids, a number from 1 to %d", v, IDCount, uint64(1<<32-1-IDCount))
		}
		b = IDBlock{UID: int(n), GID: int(n), Count: IDCount, Source: "CWM_IDS"}
	} else if u, ok := subIDRange("/etc/subuid"); ok {
		if g, ok := subIDRange("/etc/subgid"); ok {
			b = IDBlock{UID: u, GID: g, Count: IDCount, Source: "/etc/subuid"}
		}
	}
	if err := b.checkFree(); err != nil {
		return b, err
	}
	return b, nil
}

// subIDRange returns the start of root's first range of at least IDCount
// ids in a subordinate id file (lines "user:start:count").
func subIDRange(path string) (int, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(f) != 3 || (f[0] != "root" && f[0] != "0") {
			continue
		}
		start, err1 := strconv.Atoi(f[1])
		count, err2 := strconv.Atoi(f[2])
		if err1 == nil && err2 == nil && start > 0 && count >= IDCount {
			return start, true
		}
	}
	return 0, false
}

// checkFree refuses a block that holds an id a host user or group has:
// such an id may own files on the host.
func (b IDBlock) checkFree() error {
	for _, f := range []struct {
		path  string
		first int
	}{{"/etc/passwd", b.UID}, {"/etc/group", b.GID}} {
		data, err := os.ReadFile(f.path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			p := strings.Split(line, ":")
			if len(p) < 3 {
				continue
			}
			id, err := strconv.Atoi(p[2])
			if err == nil && id >= f.first && id < f.first+b.Count {
				return fmt.Errorf("host ids %d-%d (%s) for sandboxes include %s's id %d in %s: give root a free range in /etc/subuid and /etc/subgid, or set CWM_IDS",
					f.first, f.first+b.Count-1, b.Source, p[0], id, f.path)
			}
		}
	}
	return nil
}

// idMap maps sandbox ids 0..Count-1 to the block (first is the block's
// first uid or gid).
func (b IDBlock) idMap(first int) []syscall.SysProcIDMap {
	return []syscall.SysProcIDMap{{ContainerID: 0, HostID: first, Size: b.Count}}
}

// mapped reports whether sandboxes run as host ids other than the
// caller's, which needs the sandbox's processes to switch to its root
// (setresuid) and layers shown through idmapped mounts.
func (b IDBlock) mapped() bool { return b.Source != "self" }

// HostUID is the host uid of sandbox uid id, or -1 if it is not mapped.
func (b IDBlock) HostUID(id int) int {
	if id < 0 || id >= b.Count {
		return -1
	}
	return b.UID + id
}

// SandboxUID is the sandbox uid of host uid id, or -1 if it is not mapped.
func (b IDBlock) SandboxUID(id int) int {
	if id < b.UID || id >= b.UID+b.Count {
		return -1
	}
	return id - b.UID
}

// SandboxGID is the sandbox gid of host gid id, or -1 if it is not mapped.
func (b IDBlock) SandboxGID(id int) int {
	if id < b.GID || id >= b.GID+b.Count {
		return -1
	}
	return id - b.GID
}
