package sandbox

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mountSrc is a read-only directory of the sandbox's filesystem: a lower
// layer, or a host directory bound at Dst. The process that builds the
// sandbox either moves a detached mount it was passed (FD, an idmapped
// copy made by the host, which only a privileged cwm can make) or binds
// Path itself.
type mountSrc struct {
	Path string `json:"path"`          // host path
	Dst  string `json:"dst,omitempty"` // where inside the sandbox (host directories)
	// FD is the descriptor of a detached mount of Path in the process that
	// builds the sandbox, or -1 to bind Path. In a setup message it is an
	// index into the descriptors passed with it.
	FD int `json:"fd"`
	// RW makes the directory writable (the upper layers' directory),
	// shown with its owners on disk.
	RW bool `json:"rw,omitempty"`
}

// detachedMounts makes, for each directory, a detached read-only copy of
// its mount tree (open_tree) for the sandbox whose first process is pid.
// With idmap the copy shows the directory through the sandbox's user
// namespace, so that a file host uid N owns on disk belongs to sandbox uid
// N inside (host root's files to the sandbox's root) while the disk is not
// touched. A directory whose filesystem cannot be idmapped is still passed,
// as a plain copy (its files then appear to belong to nobody inside); the
// returned flags say which were idmapped.
func detachedMounts(pid int, srcs []*mountSrc, idmap bool) (files []*os.File, idmapped []bool, err error) {
	defer func() {
		if err != nil {
			closeAll(files)
			files = nil
		}
	}()
	ns := -1
	if idmap {
		if ns, err = unix.Open(fmt.Sprintf("/proc/%d/ns/user", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return nil, nil, fmt.Errorf("open the sandbox's user namespace: %w", err)
		}
		defer unix.Close(ns)
	}
	for _, src := range srcs {
		d := src.Path
		fd, err := unix.OpenTree(unix.AT_FDCWD, d, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return files, idmapped, fmt.Errorf("copy the mount of %s: %w", d, err)
		}
		f := os.NewFile(uintptr(fd), d)
		files = append(files, f)
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
			Propagation: unix.MS_PRIVATE}
		if src.RW {
			attr.Attr_set &^= unix.MOUNT_ATTR_RDONLY
		}
		mapped := false
		if idmap && !src.RW {
			a := attr
			a.Attr_set |= unix.MOUNT_ATTR_IDMAP
			a.Userns_fd = uint64(ns)
			err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &a)
			switch {
			case err == nil:
				mapped = true
			case errors.Is(err, unix.EINVAL), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EPERM):
				// This filesystem (or one mounted below d) cannot be
				// idmapped: fall back to a plain copy.
			default:
				return files, idmapped, fmt.Errorf("idmap the mount of %s: %w", d, err)
			}
		}
		if !mapped {
			if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
				return files, idmapped, fmt.Errorf("make the mount of %s read-only: %w", d, err)
			}
		}
		idmapped = append(idmapped, mapped)
	}
	return files, idmapped, nil
}
