package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// copyTree copies an overlay upper layer: regular files, directories,
// symlinks and whiteouts (0/0 character devices), with modes, owners and
// extended attributes (overlayfs keeps opaque-directory marks in xattrs).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		mode := st.Mode & 0o7777
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if rel != "." {
				if err := os.Mkdir(target, 0o700); err != nil {
					return err
				}
			}
		case unix.S_IFREG:
			if err := copyFile(p, target); err != nil {
				return err
			}
		case unix.S_IFLNK:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case unix.S_IFCHR:
			if err := unix.Mknod(target, unix.S_IFCHR|mode, int(st.Rdev)); err != nil {
				return fmt.Errorf("whiteout %s: %w", rel, err)
			}
		default:
			return nil // fifos and sockets are not worth carrying over
		}
		if err := unix.Lchown(target, int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, unix.EPERM) {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			if err := unix.Chmod(target, mode); err != nil {
				return err
			}
		}
		return copyXattrs(p, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func copyXattrs(src, dst string) error {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(src, buf)
	if err != nil || n == 0 {
		return nil
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		val := make([]byte, 4096)
		m, err := unix.Lgetxattr(src, name, val)
		if err != nil {
			continue
		}
		if err := unix.Lsetxattr(dst, name, val[:m], 0); err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("set %s on %s: %w", name, dst, err)
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
	return diffUpper(s.upperDir(), s.lowerDirs())
}

func diffUpper(upper string, lowers []string) ([]Change, error) {
	var out []Change
	err := filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(upper, p)
		if rel == "." {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		sp := "/" + filepath.ToSlash(rel)
		lower, lst, found := lookupLower(lowers, rel)
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0:
			if found {
				out = append(out, Change{sp, Deleted})
			}
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			if !found || lst.Mode&unix.S_IFMT != unix.S_IFDIR {
				if found {
					out = append(out, Change{sp, Modified})
				} else {
					out = append(out, Change{sp, Added})
				}
				return nil
			}
			if IsOpaque(p) {
				// Everything the lowers had below here is gone unless
				// the upper has it again.
				for _, name := range lowerNames(lowers, rel) {
					if _, err := os.Lstat(filepath.Join(p, name)); err != nil {
						out = append(out, Change{sp + "/" + name, Deleted})
					}
				}
			}
		default:
			if !found {
				out = append(out, Change{sp, Added})
			} else if !sameFile(p, &st, lower, lst) {
				out = append(out, Change{sp, Modified})
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// lookupLower finds rel in the topmost lower layer that has it, honouring
// whiteouts and opaque directories on the way down.
func lookupLower(lowers []string, rel string) (string, *unix.Stat_t, bool) {
	for _, l := range lowers {
		p := filepath.Join(l, rel)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0 {
				return "", nil, false
			}
			return p, &st, true
		}
		if dirOpaqueIn(l, rel) {
			return "", nil, false
		}
	}
	return "", nil, false
}

// dirOpaqueIn reports whether a parent of rel is an opaque directory in
// layer l, which hides deeper layers.
func dirOpaqueIn(l, rel string) bool {
	for dir := filepath.Dir(rel); dir != "." && dir != "/"; dir = filepath.Dir(dir) {
		if IsOpaque(filepath.Join(l, dir)) {
			return true
		}
	}
	return false
}

// IsOpaque reports whether directory p of an upper layer is marked opaque:
// it hides what the layers below hold at the same path.
func IsOpaque(p string) bool {
	for _, name := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		buf := make([]byte, 8)
		if n, err := unix.Lgetxattr(p, name, buf); err == nil && n > 0 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

func lowerNames(lowers []string, rel string) []string {
	seen := map[string]bool{}
	var names []string
	for _, l := range lowers {
		ents, err := os.ReadDir(filepath.Join(l, rel))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !seen[e.Name()] {
				seen[e.Name()] = true
				names = append(names, e.Name())
			}
		}
		if IsOpaque(filepath.Join(l, rel)) {
			break
		}
	}
	sort.Strings(names)
	return names
}

func sameFile(a string, ast *unix.Stat_t, b string, bst *unix.Stat_t) bool {
	if ast.Mode != bst.Mode {
		return false
	}
	switch ast.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		la, _ := os.Readlink(a)
		lb, _ := os.Readlink(b)
		return la == lb
	case unix.S_IFREG:
		if ast.Size != bst.Size {
			return false
		}
		return sameContent(a, b)
	}
	return true
}

func sameContent(a, b string) bool {
	fa, err := os.Open(a)
	if err != nil {
		return false
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false
	}
	defer fb.Close()
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

// Snapshot copies the sandbox's upper layer (everything written since it
// was created or last reset) to dst, a directory that must not exist yet.
// dst can then be used as a read-only layer of other sandboxes: whiteouts
// and opaque directories in it keep hiding what they hid.
func (s *Sandbox) Snapshot(dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	return copyTree(s.upperDir(), dst)
}
