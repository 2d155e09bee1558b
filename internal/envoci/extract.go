package envoci

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"cwm/internal/errkind"
)

// unpackLayer unpacks a layer blob read from r (gzip-compressed tar) into
// dst, which holds the environment's layer being made. The blob is not
// trusted (a registry, a file someone handed over): every name must lie
// under top/ (a layer writes its own directory and nothing else), no name
// may go through a symbolic link or up with "..", only files, directories
// and links are made, set-user-id and set-group-id bits are dropped (the
// store is the host's), the tar must end where its manifest says it does
// (tarSize bytes) and its digest must be diffID. Owners are kept when cwm
// runs as root (the layer's files are owned as the sandbox sees them),
// otherwise the files are the user's.
func unpackLayer(r io.Reader, dst, top, diffID string, tarSize int64) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return corrupt("layer %s is not gzip-compressed: %v", top, err)
	}
	defer gz.Close()
	th := newCountingHash()
	// One byte more than the manifest says, to tell a longer tar.
	tr := tar.NewReader(io.TeeReader(io.LimitReader(gz, tarSize+1), th))
	u := &unpacker{dst: dst, top: top, root: os.Geteuid() == 0, dirs: map[string]*tar.Header{}, made: map[string]bool{}}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err == nil {
			err = u.entry(hdr, tr)
		} else {
			err = corrupt("layer %s: %v", top, err)
		}
		if err != nil && th.n > tarSize {
			return corrupt("layer %s holds more than the %d bytes of tar its manifest says", top, tarSize)
		}
		if err != nil {
			return err
		}
	}
	// Whatever follows the tar's end marker is part of the blob too.
	if _, err := io.Copy(io.Discard, io.TeeReader(io.LimitReader(gz, tarSize+1-th.n), th)); err != nil {
		return corrupt("layer %s: %v", top, err)
	}
	if th.n != tarSize {
		return corrupt("layer %s holds %d bytes of tar, its manifest says %d", top, th.n, tarSize)
	}
	if got := th.digest(); got != diffID {
		return corrupt("layer %s: its tar's digest is %s, its manifest says %s", top, got, diffID)
	}
	return u.finish()
}

// corrupt is the error of a blob that is not what its manifest says.
func corrupt(format string, args ...any) error {
	return errkind.Errorf(errkind.Input, format, args...)
}

type unpacker struct {
	dst, top string
	root     bool
	// dirs holds the directories' headers, applied once their content is
	// in (a read-only directory, or its time, would not survive it).
	dirs map[string]*tar.Header
	// made holds the directories known to be real ones under dst (made
	// here, or checked): nothing else writes under dst, so they stay so.
	made map[string]bool
}

// entry makes one tar entry under dst.
func (u *unpacker) entry(hdr *tar.Header, r io.Reader) error {
	name, err := u.clean(hdr.Name)
	if err != nil {
		return err
	}
	if err := u.parents(name); err != nil {
		return err
	}
	p := filepath.Join(u.dst, filepath.FromSlash(name))
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(p, 0o755); err != nil && !isDir(p) {
			return corrupt("layer %s: directory %s: %v", u.top, name, err)
		}
		u.dirs[p] = hdr
		return nil
	case tar.TypeReg, tar.TypeRegA:
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return corrupt("layer %s: file %s: %v", u.top, name, err)
		}
		n, err := io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil || n != hdr.Size {
			return corrupt("layer %s: file %s: %d of %d bytes: %v", u.top, name, n, hdr.Size, err)
		}
		if err := chmod(p, hdr); err != nil {
			return err
		}
	case tar.TypeSymlink:
		// The target is resolved inside the sandbox, never by cwm.
		if err := os.Symlink(hdr.Linkname, p); err != nil {
			return corrupt("layer %s: link %s: %v", u.top, name, err)
		}
	case tar.TypeLink:
		target, err := u.clean(hdr.Linkname)
		if err != nil {
			return err
		}
		tp := filepath.Join(u.dst, filepath.FromSlash(target))
		if fi, err := os.Lstat(tp); err != nil || !fi.Mode().IsRegular() {
			return corrupt("layer %s: hard link %s to %s, which is not a file of the layer", u.top, name, hdr.Linkname)
		}
		if err := os.Link(tp, p); err != nil {
			return corrupt("layer %s: hard link %s: %v", u.top, name, err)
		}
		return nil // a link shares its target's owner, mode and time
	default:
		return corrupt("layer %s: %s is of tar type %q: a layer holds files, directories and links only", u.top, name, hdr.Typeflag)
	}
	return u.own(p, hdr)
}

// clean checks a name of the tar and returns it relative to dst.
func (u *unpacker) clean(name string) (string, error) {
	c := path.Clean(strings.TrimSuffix(name, "/"))
	if path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") || (c != u.top && !strings.HasPrefix(c, u.top+"/")) {
		return "", corrupt("layer %s holds %q, outside its directory %s/", u.top, name, u.top)
	}
	return c, nil
}

// parents makes sure every directory above name is a directory the layer
// made (or makes it), never a symbolic link: nothing is written through
// one.
func (u *unpacker) parents(name string) error {
	dir := u.dst
	parts := strings.Split(name, "/")
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		if u.made[dir] {
			continue
		}
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case !fi.IsDir():
			return corrupt("layer %s: %s goes through %s, which is not a directory", u.top, name, dir)
		}
		u.made[dir] = true
	}
	return nil
}

// own gives p the header's owner (as root) and modification time.
func (u *unpacker) own(p string, hdr *tar.Header) error {
	if u.root {
		if err := os.Lchown(p, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
	}
	t := unix.NsecToTimespec(hdr.ModTime.UnixNano())
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW)
}

// finish applies the directories' modes, owners and times, deepest first
// so that a parent's time is set after its children are in.
func (u *unpacker) finish() error {
	var ps []string
	for p := range u.dirs {
		ps = append(ps, p)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ps)))
	for _, p := range ps {
		hdr := u.dirs[p]
		if err := chmod(p, hdr); err != nil {
			return err
		}
		if err := u.own(p, hdr); err != nil {
			return err
		}
	}
	return nil
}

// chmod gives p the header's permissions and sticky bit; never set-user-id
// or set-group-id, which would let a blob plant a privileged program on
// the host.
func chmod(p string, hdr *tar.Header) error {
	return unix.Chmod(p, uint32(hdr.Mode)&0o1777)
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}
