package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// compact merges frozen layers (topmost first) into one new layer, a tmpfs
// of size bytes (0: as much as the layers hold, and 64 MiB more) that
// hides and shows of the environment's layers exactly what the stack did.
// It copies everything the layers hold, once every CompactDepth
// checkpoints.
func (rt *Runtime) compact(stack []*layer, size int64) (_ *layer, err error) {
	var held int64
	for _, l := range stack {
		held += l.bytes
	}
	size = max(size, held+64<<20)
	l, err := rt.newLayerDir(randomHex(8))
	if err != nil {
		return nil, err
	}
	if err := unix.Mount("tmpfs", l.path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
		fmt.Sprintf("mode=0755,size=%d,nr_inodes=%d", size, inodes(size))); err != nil {
		os.Remove(l.path)
		return nil, fmt.Errorf("mount merged layer: %w", err)
	}
	defer func() {
		if err != nil {
			dropLayer(l.path)
		}
	}()
	var st unix.Stat_t
	top := stack[0].path + "/upper"
	if err := unix.Stat(top, &st); err != nil {
		return nil, fmt.Errorf("stat frozen layer: %w", err)
	}
	if err := os.Mkdir(l.path+"/upper", 0o755); err != nil {
		return nil, fmt.Errorf("create merged layer: %w", err)
	}
	if err := os.Lchown(l.path+"/upper", int(st.Uid), int(st.Gid)); err != nil {
		return nil, fmt.Errorf("create merged layer: %w", err)
	}
	dst, err := unix.Open(l.path+"/upper", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open merged layer: %w", err)
	}
	defer unix.Close(dst)
	for i := len(stack) - 1; i >= 0; i-- {
		src, err := unix.Open(stack[i].path+"/upper", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("open frozen layer %s: %w", stack[i].id, err)
		}
		err = applyLayer(src, dst)
		unix.Close(src)
		if err != nil {
			return nil, fmt.Errorf("merge frozen layer %s: %w", stack[i].id, err)
		}
	}
	rt.register(l)
	return l, nil
}

// applyLayer lays the layer in directory src over the merged layer in
// directory dst, as overlayfs would show src over it: an entry of src
// replaces dst's (a whiteout stays a whiteout, hiding the environment's
// layers below), a directory that is not opaque merges with dst's
// directory, and one that replaces anything else becomes opaque, since
// what it replaced hid the layers below.
func applyLayer(src, dst int) error {
	names, err := dirNames(src)
	if err != nil {
		return err
	}
	for _, name := range names {
		var st, dt unix.Stat_t
		if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		have := unix.Fstatat(dst, name, &dt, unix.AT_SYMLINK_NOFOLLOW) == nil
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if isDir && have && dt.Mode&unix.S_IFMT == unix.S_IFDIR {
			if err := mergeDir(src, dst, name, &st); err != errOpaque {
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				continue
			}
		}
		if have {
			if err := os.RemoveAll(fmt.Sprintf("/proc/self/fd/%d/%s", dst, name)); err != nil {
				return err
			}
		}
		if err := copyEntry(src, dst, name, &st, nil); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if isDir && have {
			if err := unix.Setxattr(fmt.Sprintf("/proc/self/fd/%d/%s", dst, name), "user.overlay.opaque", []byte("y"), 0); err != nil {
				return fmt.Errorf("%s: mark opaque: %w", name, err)
			}
		}
	}
	return nil
}

// errOpaque says a directory is opaque: it replaces, not merges.
var errOpaque = fmt.Errorf("opaque directory")

// mergeDir merges directory name of src into the same of dst, unless it
// is opaque (errOpaque).
func mergeDir(src, dst int, name string, st *unix.Stat_t) error {
	s, err := openDir(src, name)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	if isOpaqueFD(s) {
		return errOpaque
	}
	d, err := openDir(dst, name)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	if err := applyLayer(s, d); err != nil {
		return err
	}
	return finishCopy(s, d, int(st.Uid), int(st.Gid), st.Mode&0o7777)
}

// ApplyLayer lays the layer directory src (a Snapshot of an upper layer)
// over the layer directory dst as overlayfs would show src over it, so
// that dst then stands for both: an entry of src replaces dst's (a
// whiteout stays one, hiding what lies below dst), a directory that is
// not opaque merges, one that replaces anything else becomes opaque.
// Files of dst are never written through: a replaced entry is removed
// first, so dst may be a hard-linked copy of another layer.
func ApplyLayer(src, dst string) error {
	s, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open layer %s: %w", src, err)
	}
	defer unix.Close(s)
	d, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open layer %s: %w", dst, err)
	}
	defer unix.Close(d)
	if err := applyLayer(s, d); err != nil {
		return fmt.Errorf("lay %s over %s: %w", src, dst, err)
	}
	return nil
}
