// Package layertar unpacks layer tars that nobody vouches for (a
// registry's, a file someone handed over) into a directory, and nowhere
// else: it is the one extraction path of cwm env pull and import, and of
// anything that later unpacks image layers.
//
// Every name of an entry, and of a hard link's target, is resolved inside
// the destination without following a symbolic link: openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS on a descriptor of the destination
// (or, where the kernel lacks openat2, a walk of openat O_NOFOLLOW per
// component), and every file is made relative to a descriptor of its
// directory, never by joining host paths: a symbolic link the layer
// planted is only ever a link, whatever it points at. Only directories,
// regular files, symbolic links and hard links to a regular file this
// unpack extracted are made; devices, FIFOs, sparse and other entries are
// refused; set-user-id and set-group-id bits are dropped. Sizes are
// checked before anything is written: an entry larger than what is left
// of the tar its descriptor declares, more than the ceiling on unpacked
// bytes, more than the free space of the destination's file system, or
// more entries than the cap, and the layer is refused.
package layertar

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"cwm/internal/errkind"
)

// Defaults of the caps: far above an environment's repository and virtual
// environment (a venv with torch holds some 20,000 files, 5 GiB), far
// below what fills a disk or a machine's memory.
const (
	DefaultMaxBytes   = 32 << 30
	DefaultMaxEntries = 1 << 20
)

// maxDirNames bounds the bytes of directory names kept until Finish.
const maxDirNames = 64 << 20

// Options say what an unpack allows.
type Options struct {
	// MaxBytes is the ceiling on the bytes of files unpacked, over all
	// the layers (0: DefaultMaxBytes).
	MaxBytes int64
	// MaxEntries caps the entries of all the layers (0:
	// DefaultMaxEntries).
	MaxEntries int
	// Whiteouts honours OCI whiteouts (.wh.NAME removes NAME of a lower
	// layer, .wh..wh..opq empties its directory of them), beneath the
	// destination. Without it, a whiteout is refused.
	Whiteouts bool
}

// Layer is one tar to unpack.
type Layer struct {
	// Name names the layer in errors ("repo/", a digest).
	Name string
	// Top, when set, is the one top-level directory every name must lie
	// under (Top itself included).
	Top string
	// Size is the bytes of tar its descriptor declares (<0: unknown).
	Size int64
}

// Unpacker unpacks layers into one directory. Its layers may unpack at
// once (disjoint tops) or one after the other (an image's, lowest first);
// Finish gives the directories their modes, owners and times once all are
// in.
type Unpacker struct {
	dir  string
	root int // O_PATH descriptor of dir
	opts Options
	// owners: cwm runs as root, so the files keep the layer's owners (as
	// the sandbox sees them); otherwise they are the user's.
	owners bool

	mu      sync.Mutex
	entries int   // entries so far
	bytes   int64 // bytes of files charged so far
	free    int64 // free bytes of dir's file system at the start
	// files holds the inodes of the regular files unpacked: the only
	// targets a hard link may have.
	files map[uint64]struct{}
	// dirs holds the directories' headers, applied by Finish (a
	// read-only directory, or its time, would not survive its content).
	dirs     map[string]dirMeta
	dirNames int
}

// New starts an unpack into dir, which exists.
func New(dir string, o Options) (*Unpacker, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s to unpack into: %w", dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return &Unpacker{dir: dir, root: fd, opts: o, owners: os.Geteuid() == 0,
		free: int64(st.Bavail) * st.Bsize, files: map[uint64]struct{}{}, dirs: map[string]dirMeta{}}, nil
}

// Close releases the unpacker's descriptor.
func (u *Unpacker) Close() error { return unix.Close(u.root) }

// refused is the error of a layer that breaks a rule.
func refused(l Layer, format string, args ...any) error {
	return errkind.Errorf(errkind.Input, "layer %s: "+format, append([]any{l.Name}, args...)...)
}

// charge counts an entry of size bytes against the caps and the free
// space, before it is written.
func (u *Unpacker) charge(l Layer, name string, size int64) error {
	// Files take whole pages, on tmpfs as on disk.
	size = (size + 4095) &^ 4095
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.entries >= u.opts.MaxEntries:
		return refused(l, "%s: more than %d entries, the cap on an unpack", name, u.opts.MaxEntries)
	case size > u.opts.MaxBytes-u.bytes:
		return refused(l, "%s declares %d bytes, past the ceiling of %d bytes unpacked (--max-unpacked) with the %d before it", name, size, u.opts.MaxBytes, u.bytes)
	case size > u.free-u.bytes:
		return refused(l, "%s declares %d bytes; %s has %d bytes free for it", name, size, u.dir, max(u.free-u.bytes, 0))
	}
	u.entries++
	u.bytes += size
	return nil
}
