package layertar

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// dirMeta is what Finish gives a directory.
type dirMeta struct {
	mode     uint32
	uid, gid int
	mtime    unix.Timespec
}

// layerRun is one layer's unpacking: its reader and the directory its
// last entry went into (tars list a directory's entries together).
type layerRun struct {
	u      *Unpacker
	l      Layer
	read   *countingReader
	parent string
	pdir   dirOf
	// made holds the names this layer made, which an opaque whiteout of
	// the same layer keeps (only with Whiteouts).
	made map[string]bool
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Layer unpacks the tar r holds. It reads r up to the tar's end marker;
// what follows (and the tar's digest) is the caller's to check.
func (u *Unpacker) Layer(r io.Reader, l Layer) error {
	run := &layerRun{u: u, l: l, read: &countingReader{r: r}, pdir: dirOf{fd: -1}}
	if u.opts.Whiteouts {
		run.made = map[string]bool{}
	}
	defer run.pdir.close()
	tr := tar.NewReader(run.read)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return refused(l, "not a tar (after %d bytes): %v", run.read.n, err)
		}
		if err := run.entry(hdr, tr); err != nil {
			return err
		}
	}
}

// entry makes one entry of the tar.
func (run *layerRun) entry(hdr *tar.Header, r io.Reader) error {
	l, u := run.l, run.u
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil // PAX defaults for what follows, already applied by the reader
	}
	name, err := checkName(l, hdr.Name, "entry")
	if err != nil {
		return err
	}
	what := fmt.Sprintf("entry %q", hdr.Name)
	if err := checkType(l, what, hdr); err != nil {
		return err
	}
	if left := l.Size - run.read.n; l.Size >= 0 && hdr.Size > left {
		return refused(l, "%s declares %d bytes, more than the %d left of the %d bytes of tar its descriptor declares", what, hdr.Size, max(left, 0), l.Size)
	}
	size := int64(0)
	if hdr.Typeflag == tar.TypeReg || hdr.Typeflag == tar.TypeRegA {
		size = hdr.Size
	}
	if err := u.charge(l, what, size); err != nil {
		return err
	}
	if name == "." {
		return nil // the destination itself, which is the caller's
	}
	dir, base := split(name)
	if strings.HasPrefix(base, ".wh.") {
		return run.whiteout(what, dir, base)
	}
	pfd, err := run.parentDir(what, dir)
	if err != nil {
		return err
	}
	if u.opts.Whiteouts {
		if err := run.replace(what, name, pfd, base, hdr.Typeflag == tar.TypeDir); err != nil {
			return err
		}
	}
	if run.made != nil {
		run.made[name] = true
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return run.dir(what, name, pfd, base, hdr)
	case tar.TypeReg, tar.TypeRegA:
		return run.file(what, pfd, base, hdr, r)
	case tar.TypeSymlink:
		// The target is resolved inside the sandbox, never by cwm.
		if err := unix.Symlinkat(hdr.Linkname, pfd, base); err != nil {
			return refused(l, "%s: symbolic link: %v", what, err)
		}
		return run.own(what, pfd, base, hdr)
	case tar.TypeLink:
		return run.link(what, pfd, base, hdr)
	}
	return nil
}

// replace removes what a lower layer (or an earlier entry) left where an
// entry of an image's layer goes, as a layer's entry replaces it: all
// but a directory where a directory goes, which the entry merges into.
// It acts beneath the destination only and never follows a link.
func (run *layerRun) replace(what, name string, pfd int, base string, isDir bool) error {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil // nothing there (or nothing cwm can see, which the create reports)
	}
	wasDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if wasDir && isDir {
		return nil
	}
	if err := removeAt(pfd, base); err != nil && !errors.Is(err, unix.ENOENT) {
		return refused(run.l, "%s: replace what a lower layer put there: %v", what, err)
	}
	if wasDir {
		u := run.u
		u.mu.Lock()
		for d := range u.dirs {
			if d == name || strings.HasPrefix(d, name+"/") {
				delete(u.dirs, d)
			}
		}
		u.mu.Unlock()
	}
	return nil
}

// checkType refuses what is not a directory, a regular file or a link.
func checkType(l Layer, what string, hdr *tar.Header) error {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return refused(l, "%s is a sparse file (PAX %s): a layer holds no sparse files", what, k)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir, tar.TypeReg, tar.TypeRegA, tar.TypeSymlink, tar.TypeLink:
		return nil
	case tar.TypeGNUSparse:
		return refused(l, "%s is a sparse file (GNU): a layer holds no sparse files", what)
	case tar.TypeChar, tar.TypeBlock:
		return refused(l, "%s is a device: a layer holds files, directories and links only", what)
	case tar.TypeFifo:
		return refused(l, "%s is a FIFO: a layer holds files, directories and links only", what)
	}
	return refused(l, "%s is of tar type %q: a layer holds files, directories and links only", what, hdr.Typeflag)
}

// parentDir opens the directory an entry goes into, keeping the last one
// open for the next entry.
func (run *layerRun) parentDir(what, dir string) (int, error) {
	if run.pdir.fd >= 0 && run.parent == dir {
		return run.pdir.fd, nil
	}
	run.pdir.close()
	run.pdir = dirOf{fd: -1}
	d, err := run.u.openDir(run.l, what, dir, true)
	if err != nil {
		return -1, err
	}
	run.pdir, run.parent = d, dir
	return d.fd, nil
}

func (run *layerRun) dir(what, name string, pfd int, base string, hdr *tar.Header) error {
	if err := unix.Mkdirat(pfd, base, 0o755); err != nil {
		var st unix.Stat_t
		if !errors.Is(err, unix.EEXIST) || unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return refused(run.l, "%s: directory: %v", what, err)
		}
	}
	u := run.u
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.dirs[name]; !ok {
		u.dirNames += len(name)
		if u.dirNames > maxDirNames {
			return refused(run.l, "%s: the directories' names pass %d bytes", what, maxDirNames)
		}
	}
	u.dirs[name] = dirMeta{mode: uint32(hdr.Mode) & 0o1777, uid: hdr.Uid, gid: hdr.Gid, mtime: unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	return nil
}

func (run *layerRun) file(what string, pfd int, base string, hdr *tar.Header, r io.Reader) error {
	fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return refused(run.l, "%s: file: %v", what, err)
	}
	f := os.NewFile(uintptr(fd), base)
	n, err := io.Copy(f, r)
	if err == nil && n != hdr.Size {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && run.u.owners {
		err = f.Chown(hdr.Uid, hdr.Gid)
	}
	if err == nil {
		// Never set-user-id or set-group-id, which would let a layer
		// plant a privileged program on the host.
		err = unix.Fchmod(fd, uint32(hdr.Mode)&0o1777)
	}
	var st unix.Stat_t
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return refused(run.l, "%s: file: %d of %d bytes: %v", what, n, hdr.Size, err)
	}
	run.u.mu.Lock()
	run.u.files[st.Ino] = struct{}{}
	run.u.mu.Unlock()
	return setTime(run.l, what, pfd, base, hdr)
}

// link makes a hard link to a regular file this unpack extracted,
// reached without following a symbolic link.
func (run *layerRun) link(what string, pfd int, base string, hdr *tar.Header) error {
	l := run.l
	target, err := checkName(l, hdr.Linkname, "the target of hard link "+what+",")
	if err != nil {
		return err
	}
	tdir, tbase := split(target)
	td, err := run.u.openDir(l, what+" (a hard link to "+hdr.Linkname+")", tdir, false)
	if err != nil {
		return err
	}
	defer td.close()
	var st unix.Stat_t
	err = unix.Fstatat(td.fd, tbase, &st, unix.AT_SYMLINK_NOFOLLOW)
	run.u.mu.Lock()
	_, ours := run.u.files[st.Ino]
	run.u.mu.Unlock()
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !ours {
		return refused(l, "%s is a hard link to %q, which is not a regular file this unpack extracted", what, hdr.Linkname)
	}
	if err := unix.Linkat(td.fd, tbase, pfd, base, 0); err != nil {
		return refused(l, "%s: hard link: %v", what, err)
	}
	return nil // a link shares its target's owner, mode and time
}

// own gives a link the header's owner (as root) and time.
func (run *layerRun) own(what string, pfd int, base string, hdr *tar.Header) error {
	if run.u.owners {
		if err := unix.Fchownat(pfd, base, hdr.Uid, hdr.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return refused(run.l, "%s: owner: %v", what, err)
		}
	}
	return setTime(run.l, what, pfd, base, hdr)
}

func setTime(l Layer, what string, pfd int, base string, hdr *tar.Header) error {
	t := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	if err := unix.UtimesNanoAt(pfd, base, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return refused(l, "%s: time: %v", what, err)
	}
	return nil
}

// Finish gives the directories their modes, owners and times, deepest
// first so that a parent's time is set after its children are in. A
// directory a whiteout removed since is skipped.
func (u *Unpacker) Finish() error {
	names := make([]string, 0, len(u.dirs))
	for n := range u.dirs {
		names = append(names, n)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	l := Layer{Name: "directories"}
	for _, name := range names {
		m := u.dirs[name]
		dir, base := split(name)
		pd, err := u.openDir(l, name, dir, false)
		if err != nil {
			if isGone(err) {
				continue
			}
			return err
		}
		err = u.applyDir(pd.fd, base, m)
		pd.close()
		if err != nil && !isGone(err) {
			return fmt.Errorf("directory %s: %w", name, err)
		}
	}
	return nil
}

func (u *Unpacker) applyDir(pfd int, base string, m dirMeta) error {
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if u.owners {
		if err := unix.Fchown(fd, m.uid, m.gid); err != nil {
			return err
		}
	}
	if err := unix.Fchmod(fd, m.mode); err != nil {
		return err
	}
	return unix.UtimesNanoAt(pfd, base, []unix.Timespec{m.mtime, m.mtime}, unix.AT_SYMLINK_NOFOLLOW)
}

// isGone tells a directory a later whiteout removed (or replaced).
func isGone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)
}
