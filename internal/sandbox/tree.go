package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// An upper layer holds what sandboxed commands wrote: its names, symlinks
// and directories are theirs, and a command may still be changing them
// while cwm reads them. Upper layers are therefore read through
// descriptors only: every entry is opened relative to its directory's
// descriptor with O_NOFOLLOW, and lookups into the lower layers go through
// openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, so that neither a
// symlink nor ".." put in place while cwm reads can take it outside the
// tree it reads.

// dirNames lists the names in the directory dir (a descriptor), sorted.
func dirNames(dir int) ([]string, error) {
	fd, err := unix.Openat(dir, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "dir")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// openDir opens the directory name in dir without following a symlink.
func openDir(dir int, name string) (int, error) {
	return unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// changedUnder reports whether err means an entry changed while it was
// read (removed, or replaced by another kind): the reader skips it.
func changedUnder(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)
}

// copyUpper copies the upper layer in the directory src into the
// directory dst: files, directories, symlinks and whiteouts (0/0
// character devices), with modes, owners and extended attributes
// (overlayfs keeps opaque-directory marks there). owner, when set, maps
// each entry's owner to the one its copy gets.
func copyUpper(src, dst int, owner func(uid, gid uint32) (int, int)) error {
	names, err := dirNames(src)
	if err != nil {
		return err
	}
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if changedUnder(err) {
				continue
			}
			return err
		}
		if err := copyEntry(src, dst, name, &st, owner); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func copyEntry(src, dst int, name string, st *unix.Stat_t, owner func(uid, gid uint32) (int, int)) error {
	uid, gid := int(st.Uid), int(st.Gid)
	if owner != nil {
		uid, gid = owner(st.Uid, st.Gid)
	}
	mode := st.Mode & 0o7777
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dst, name, 0o700); err != nil {
			return err
		}
		s, err := openDir(src, name)
		if err != nil {
			if changedUnder(err) {
				return nil
			}
			return err
		}
		defer unix.Close(s)
		d, err := openDir(dst, name)
		if err != nil {
			return err
		}
		defer unix.Close(d)
		if err := copyUpper(s, d, owner); err != nil {
			return err
		}
		return finishCopy(s, d, uid, gid, mode)
	case unix.S_IFREG:
		s, err := unix.Openat(src, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if changedUnder(err) {
				return nil
			}
			return err
		}
		defer unix.Close(s)
		d, err := unix.Openat(dst, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		defer unix.Close(d)
		if err := copyData(s, d); err != nil {
			return err
		}
		if err := finishCopy(s, d, uid, gid, mode); err != nil {
			return err
		}
		// The file's times too: Python's bytecode caches name their
		// source by its mtime, and a snapshot that moved it would have
		// every import compile again (with warnings-as-errors suites
		// failing on a library's old escapes).
		return unix.UtimesNanoAt(dst, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
	case unix.S_IFLNK:
		target, err := readlinkat(src, name)
		if err != nil {
			if changedUnder(err) {
				return nil
			}
			return err
		}
		if err := unix.Symlinkat(target, dst, name); err != nil {
			return err
		}
		return chownAt(dst, name, uid, gid)
	case unix.S_IFCHR:
		if st.Rdev != 0 {
			return nil // only whiteouts are carried over
		}
		if err := unix.Mknodat(dst, name, unix.S_IFCHR|mode, 0); err != nil {
			return fmt.Errorf("whiteout: %w", err)
		}
		return chownAt(dst, name, uid, gid)
	}
	return nil // fifos and sockets are not worth carrying over
}

// copyBuf is the buffer copyData reads into. Upper layers are mostly
// small files on tmpfs, often of another tmpfs than the copy's (another
// sandbox's), where copy_file_range refuses to cross and io.Copy's
// fallbacks (splice through a pipe, sendfile) cost several system calls
// a file: plain reads and writes through one buffer cost two.
var copyBuf = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// copyData copies the file s to d, both descriptors, through copyBuf.
func copyData(s, d int) error {
	bp := copyBuf.Get().(*[]byte)
	defer copyBuf.Put(bp)
	buf := *bp
	for {
		n, err := unix.Read(s, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		for w := buf[:n]; len(w) > 0; {
			m, err := unix.Write(d, w)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return err
			}
			w = w[m:]
		}
	}
}

// finishCopy gives the copy d of s its owner, mode and extended
// attributes.
func finishCopy(s, d, uid, gid int, mode uint32) error {
	if err := unix.Fchown(d, uid, gid); err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
		return err
	}
	if err := unix.Fchmod(d, mode); err != nil {
		return err
	}
	return copyXattrs(s, d)
}

func chownAt(dir int, name string, uid, gid int) error {
	err := unix.Fchownat(dir, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
		return nil // an owner this process cannot give: keep its own
	}
	return err
}

func readlinkat(dir int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		m, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if m < n {
			return string(buf[:m]), nil
		}
	}
}

func copyXattrs(src, dst int) error {
	buf := make([]byte, 4096)
	n, err := unix.Flistxattr(src, buf)
	if err != nil || n == 0 {
		return nil
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		val := make([]byte, 4096)
		m, err := unix.Fgetxattr(src, name, val)
		if err != nil {
			continue
		}
		if err := unix.Fsetxattr(dst, name, val[:m], 0); err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	return nil
}

// ChangeKind says how a path differs from the lower layers.
type ChangeKind string

const (
	Added    ChangeKind = "added"
	Modified ChangeKind = "modified"
	Deleted  ChangeKind = "deleted"
)

// Change is one path that differs from the sandbox's lower layers.
type Change struct {
	Path string     `json:"path"` // absolute, inside the sandbox
	Kind ChangeKind `json:"kind"`
}

// Changes lists the paths added, modified or deleted relative to the lower
// layers, sorted by path. A file counts as modified when its content, mode
// or link target differs; a directory only when it is added or deleted.
func (s *Sandbox) Changes() ([]Change, error) {
	if !s.alive() {
		return nil, ErrDead
	}
	if err := s.noStack("list the changes"); err != nil {
		return nil, err
	}
	upper, err := unix.Open(s.upperDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open upper layer: %w", err)
	}
	defer unix.Close(upper)
	lowers, err := openLowers(s.lowerDirs())
	if err != nil {
		return nil, err
	}
	defer lowers.close()
	d := &differ{lowers: lowers}
	if err := d.dir(upper, ""); err != nil {
		return nil, err
	}
	sort.Slice(d.out, func(i, j int) bool { return d.out[i].Path < d.out[j].Path })
	return d.out, nil
}

// lowerSet is the read-only layers, topmost first, as directory
// descriptors.
type lowerSet []int

func openLowers(dirs []string) (lowerSet, error) {
	var l lowerSet
	for _, d := range dirs {
		fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("open layer: %w", err)
		}
		l = append(l, fd)
	}
	return l, nil
}

func (l lowerSet) close() {
	for _, fd := range l {
		unix.Close(fd)
	}
}

// openBeneath opens rel below the directory dir; no symlink on the way,
// nor at the end, is followed.
func openBeneath(dir int, rel string, flags int) (int, error) {
	return unix.Openat2(dir, rel, &unix.OpenHow{Flags: uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
}

// lookup finds rel in the topmost lower layer that has it, honouring
// whiteouts, opaque directories and non-directories on the way down. It
// returns a descriptor (O_PATH) of what it found.
func (l lowerSet) lookup(rel string) (int, unix.Stat_t, bool) {
	var st unix.Stat_t
	for _, dir := range l {
		fd, err := openBeneath(dir, rel, unix.O_PATH)
		if err == nil {
			if unix.Fstat(fd, &st) == nil && !(st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0) {
				return fd, st, true
			}
			unix.Close(fd)
			return -1, st, false // a whiteout hides the layers below
		}
		if !errors.Is(err, unix.ENOENT) || l.hidesBelow(dir, rel) {
			// ELOOP or ENOTDIR: a parent is a symlink or a file here,
			// which hides what the layers below hold under it.
			return -1, st, false
		}
	}
	return -1, st, false
}

// hidesBelow reports whether a parent of rel is an opaque directory in the
// layer dir, which hides the layers below.
func (l lowerSet) hidesBelow(dir int, rel string) bool {
	for p := path.Dir(rel); p != "." && p != "/"; p = path.Dir(p) {
		if fd, err := openBeneath(dir, p, unix.O_RDONLY|unix.O_DIRECTORY); err == nil {
			opaque := isOpaqueFD(fd)
			unix.Close(fd)
			if opaque {
				return true
			}
		}
	}
	return false
}

// names lists what the lower layers hold in directory rel.
func (l lowerSet) names(rel string) []string {
	seen := map[string]bool{}
	var out []string
	for _, dir := range l {
		fd, err := openBeneath(dir, rel, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			continue
		}
		names, _ := dirNames(fd)
		opaque := isOpaqueFD(fd)
		unix.Close(fd)
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
		if opaque {
			break
		}
	}
	sort.Strings(out)
	return out
}

// differ collects the changes of an upper layer against its lowers.
type differ struct {
	lowers lowerSet
	out    []Change
}

func (d *differ) dir(dir int, rel string) error {
	names, err := dirNames(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := d.entry(dir, rel, name); err != nil {
			return err
		}
	}
	return nil
}

func (d *differ) entry(dir int, parent, name string) error {
	rel := path.Join(parent, name)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if changedUnder(err) {
			return nil
		}
		return err
	}
	sp := "/" + rel
	lower, lst, found := d.lowers.lookup(rel)
	if found {
		defer unix.Close(lower)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0:
		if found {
			d.out = append(d.out, Change{sp, Deleted})
		}
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		if !found || lst.Mode&unix.S_IFMT != unix.S_IFDIR {
			if found {
				d.out = append(d.out, Change{sp, Modified})
			} else {
				d.out = append(d.out, Change{sp, Added})
			}
			return nil
		}
		sub, err := openDir(dir, name)
		if err != nil {
			if changedUnder(err) {
				return nil
			}
			return err
		}
		defer unix.Close(sub)
		if isOpaqueFD(sub) {
			// Everything the lowers had below here is gone unless the
			// upper has it again.
			for _, n := range d.lowers.names(rel) {
				var est unix.Stat_t
				if unix.Fstatat(sub, n, &est, unix.AT_SYMLINK_NOFOLLOW) != nil {
					d.out = append(d.out, Change{sp + "/" + n, Deleted})
				}
			}
		}
		return d.dir(sub, rel)
	default:
		if !found {
			d.out = append(d.out, Change{sp, Added})
		} else if !sameEntry(dir, name, &st, lower, &lst) {
			d.out = append(d.out, Change{sp, Modified})
		}
	}
	return nil
}

// sameEntry compares the entry name of dir with the lower layer's lower
// (an O_PATH descriptor).
func sameEntry(dir int, name string, st *unix.Stat_t, lower int, lst *unix.Stat_t) bool {
	if st.Mode != lst.Mode {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		a, err1 := readlinkat(dir, name)
		b, err2 := readlinkat(lower, "")
		return err1 == nil && err2 == nil && a == b
	case unix.S_IFREG:
		if st.Size != lst.Size {
			return false
		}
		a, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		fa := os.NewFile(uintptr(a), name)
		defer fa.Close()
		b, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", lower), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		fb := os.NewFile(uintptr(b), name)
		defer fb.Close()
		return sameContent(fa, fb)
	}
	return true
}

func sameContent(fa, fb io.Reader) bool {
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if ea != nil || eb != nil {
			return (ea == io.EOF || ea == io.ErrUnexpectedEOF) && (eb == io.EOF || eb == io.ErrUnexpectedEOF)
		}
	}
}

// isOpaqueFD reports whether the directory fd of an upper or lower layer
// is marked opaque: it hides what the layers below hold at the same path.
func isOpaqueFD(fd int) bool {
	for _, name := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		buf := make([]byte, 8)
		if n, err := unix.Fgetxattr(fd, name, buf); err == nil && n > 0 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

// IsOpaque reports whether directory p of an upper layer (a snapshot) is
// marked opaque.
func IsOpaque(p string) bool {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return isOpaqueFD(fd)
}

// Snapshot copies the sandbox's upper layer (everything written since it
// was created or last reset) to dst, a directory that must not exist yet.
// dst can then be used as a read-only layer of other sandboxes: whiteouts
// and opaque directories in it keep hiding what they hid, and files keep
// their owners as the sandbox sees them (a layer's files belong on disk to
// the sandbox ids they had, as in an image: sandboxes show them through an
// idmapped mount).
func (s *Sandbox) Snapshot(dst string) error {
	if !s.alive() {
		return ErrDead
	}
	if err := s.noStack("snapshot"); err != nil {
		return err
	}
	upper, err := unix.Open(s.upperDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open upper layer: %w", err)
	}
	defer unix.Close(upper)
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	out, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(out)
	var owner func(uid, gid uint32) (int, int)
	if ids := s.rt.ids; ids.mapped() {
		owner = func(uid, gid uint32) (int, int) {
			u, g := ids.SandboxUID(int(uid)), ids.SandboxGID(int(gid))
			if u < 0 || g < 0 {
				return int(uid), int(gid)
			}
			return u, g
		}
	}
	return copyUpper(upper, out, owner)
}
