package layertar

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 turned out to be missing (a kernel before
// 5.6, a seccomp filter that refuses it): the walk does its work.
var noOpenat2 atomic.Bool

// checkName cleans a name of the tar and checks it lies beneath the
// destination (and under l.Top when set). It returns "." for the
// destination itself.
func checkName(l Layer, name, what string) (string, error) {
	if len(name) >= unix.PathMax {
		return "", refused(l, "%s %.64q... is %d bytes long, past PATH_MAX (%d)", what, name, len(name), unix.PathMax)
	}
	c := path.Clean(strings.TrimSuffix(name, "/"))
	if path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", refused(l, "%s %q lies outside the destination", what, name)
	}
	if l.Top != "" && c != l.Top && !strings.HasPrefix(c, l.Top+"/") {
		return "", refused(l, "%s %q lies outside its directory %s/", what, name, l.Top)
	}
	for _, part := range strings.Split(c, "/") {
		if len(part) > 255 {
			return "", refused(l, "%s %.64q... has a component of %d bytes, past NAME_MAX (255)", what, name, len(part))
		}
	}
	return c, nil
}

// dirOf is an open directory beneath the destination: an O_PATH
// descriptor, or the destination's own (not to be closed).
type dirOf struct {
	fd    int
	owned bool
}

func (d dirOf) close() {
	if d.owned {
		unix.Close(d.fd)
	}
}

// openDir opens the directory name (clean, relative to the destination)
// without following a symbolic link in any component; with create, the
// missing components are made (0755, given their headers' modes by
// Finish when the tar has them).
func (u *Unpacker) openDir(l Layer, entry, name string, create bool) (dirOf, error) {
	if name == "." {
		return dirOf{fd: u.root}, nil
	}
	if !noOpenat2.Load() {
		how := &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		fd, err := unix.Openat2(u.root, name, how)
		for i := 0; i < 8 && errors.Is(err, unix.EAGAIN); i++ {
			// A rename elsewhere on the system raced the lookup: the
			// kernel asks to try again.
			fd, err = unix.Openat2(u.root, name, how)
		}
		switch {
		case err == nil:
			return dirOf{fd, true}, nil
		case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
			noOpenat2.Store(true)
		case errors.Is(err, unix.ENOENT) && create:
			// The walk makes what is missing.
		default:
			return dirOf{}, u.walkError(l, entry, name, err)
		}
	}
	return u.walk(l, entry, name, create)
}

// walk opens name one component at a time with O_NOFOLLOW, making the
// missing ones with create.
func (u *Unpacker) walk(l Layer, entry, name string, create bool) (dirOf, error) {
	cur := dirOf{fd: u.root}
	parts := strings.Split(name, "/")
	for i, part := range parts {
		fd, err := unix.Openat(cur.fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(cur.fd, part, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				fd, err = unix.Openat(cur.fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		var st unix.Stat_t
		if errors.Is(err, unix.ENOTDIR) && unix.Fstatat(cur.fd, part, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP // as openat2 says it
		}
		cur.close()
		if err != nil {
			return dirOf{}, u.walkError(l, entry, strings.Join(parts[:i+1], "/"), err)
		}
		cur = dirOf{fd, true}
	}
	return cur, nil
}

// walkError says why a directory could not be reached.
func (u *Unpacker) walkError(l Layer, entry, name string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return refused(l, "%s goes through a symbolic link (in %s), and nothing is reached through one: %w", entry, name, err)
	case errors.Is(err, unix.ENOTDIR):
		return refused(l, "%s goes through %s, which is not a directory: %w", entry, name, err)
	case errors.Is(err, unix.EXDEV):
		return refused(l, "%s leads outside the destination (through %s): %w", entry, name, err)
	case errors.Is(err, unix.ENOENT):
		return refused(l, "%s: %s: %w", entry, name, err)
	}
	return fmt.Errorf("layer %s: %s: open %s: %w", l.Name, entry, name, err)
}

// split is a clean name's directory and last component.
func split(name string) (string, string) {
	dir, base := path.Split(name)
	if dir == "" {
		return ".", base
	}
	return strings.TrimSuffix(dir, "/"), base
}
