package layertar

import (
	"errors"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

const opaque = ".wh..wh..opq"

// whiteout applies an OCI whiteout: .wh.NAME removes NAME from dir,
// .wh..wh..opq removes what lower layers put in dir. Both act beneath the
// destination only, through directories reached without following a
// symbolic link; what they remove is removed as it is, never followed.
func (run *layerRun) whiteout(what, dir, base string) error {
	l := run.l
	if !run.u.opts.Whiteouts {
		return refused(l, "%s is an OCI whiteout: an environment's layer carries none", what)
	}
	target := strings.TrimPrefix(base, ".wh.")
	if base != opaque && (target == "" || target == "." || target == ".." || strings.HasPrefix(target, ".wh.")) {
		return refused(l, "%s is a whiteout of nothing a layer can hold", what)
	}
	// What is removed may be the directory the last entry went into.
	run.pdir.close()
	run.pdir = dirOf{fd: -1}
	d, err := run.u.openDir(l, what, dir, false)
	if errors.Is(err, unix.ENOENT) {
		return nil // nothing below to hide
	}
	if err != nil {
		return err
	}
	defer d.close()
	if base != opaque {
		if err := removeAt(d.fd, target); err != nil && !errors.Is(err, unix.ENOENT) {
			return refused(l, "%s: remove %s: %w", what, path.Join(dir, target), err)
		}
		return nil
	}
	names, err := readNames(d.fd, ".")
	if err != nil {
		return refused(l, "%s: read %s: %w", what, dir, err)
	}
	for _, n := range names {
		if run.made[path.Join(dir, n)] {
			continue // this layer's own, which the whiteout does not hide
		}
		if err := removeAt(d.fd, n); err != nil && !errors.Is(err, unix.ENOENT) {
			return refused(l, "%s: remove %s: %w", what, path.Join(dir, n), err)
		}
	}
	return nil
}

// removeAt removes name from the directory dfd and, for a directory,
// everything in it, never following a symbolic link.
func removeAt(dfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(dfd, name, 0)
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	names, err := readNames(fd, ".")
	for _, n := range names {
		if err == nil {
			err = removeAt(fd, n)
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
}

// readNames lists the directory name of dfd.
func readNames(dfd int, name string) ([]string, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return f.Readdirnames(-1)
}
