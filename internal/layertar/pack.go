package layertar

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"cwm/internal/blobcache"
)

// Packed is a layer's blob as written: its digest and size compressed,
// and the digest and size of the tar inside (OCI's diff_id).
type Packed struct {
	Digest, DiffID string // "sha256:<hex>"
	Size, TarSize  int64
}

// Pack writes the tree root/top (top is "repo", "venv": a top-level
// directory of an environment's layer) to w as a gzip-compressed tar whose
// names start with top/, so that the union of an environment's layer blobs
// unpacked in one directory is its layer, and unpacked at / gives the
// paths its sandboxes see (/repo, /venv). With top empty the whole of root
// is packed, names relative to it (a base's root filesystem), without its
// devices, FIFOs and sockets, which a layer cannot carry.
//
// The tar is a function of the tree alone: entries in lexical order,
// owners as numbers, modes, modification times in whole seconds (what
// Python compares a .pyc with), no access or change times, no user
// names, hard links as links; gzip without a name or a time. The same tree
// gives the same blob, which is what lets a registry and cwm's blob cache
// keep a layer two environments share once.
func Pack(w io.Writer, root, top string) (Packed, error) {
	return PackTrees(w, []Tree{{Root: root, Top: top}})
}

// Tree is a directory tree PackTrees packs: Root/Top, named as Pack
// names it.
type Tree struct{ Root, Top string }

// PackTrees is Pack of several trees into one tar, in order (a name in a
// later tree comes after, and so wins over, the same name in an earlier
// one, as a later layer's would), then extra entries without content
// (symbolic links, directories). It flattens a base's root filesystem and
// an environment's layer into one image layer.
func PackTrees(w io.Writer, trees []Tree, extra ...*tar.Header) (Packed, error) {
	var p Packed
	zh := blobcache.NewHash()
	gz, err := gzip.NewWriterLevel(io.MultiWriter(w, zh), gzip.DefaultCompression)
	if err != nil {
		return p, err
	}
	th := blobcache.NewHash()
	tw := tar.NewWriter(io.MultiWriter(gz, th))
	links := map[[2]uint64]string{} // device and inode -> first name
	for _, t := range trees {
		if err := packTree(tw, t.Root, t.Top, links); err != nil {
			return p, err
		}
	}
	for _, h := range extra {
		if err := tw.WriteHeader(h); err != nil {
			return p, fmt.Errorf("%s: %w", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return p, err
	}
	if err := gz.Close(); err != nil {
		return p, err
	}
	return Packed{Digest: zh.Digest(), Size: zh.N, DiffID: th.Digest(), TarSize: th.N}, nil
}

// packTree writes the entries of root/top to tw; links holds the first
// name of each inode with more than one link written so far.
func packTree(tw *tar.Writer, root, top string, links map[[2]uint64]string) error {
	err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if rel == "." && top == "" {
			return nil // the destination itself, which an unpack never makes
		}
		name := filepath.ToSlash(rel)
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return err
		}
		hdr := &tar.Header{Name: name, Mode: int64(st.Mode & 0o7777), Uid: int(st.Uid), Gid: int(st.Gid),
			ModTime: time.Unix(st.Mtim.Sec, 0), Format: tar.FormatPAX}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		case unix.S_IFLNK:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		case unix.S_IFREG:
			key := [2]uint64{uint64(st.Dev), st.Ino}
			if first, ok := links[key]; ok && st.Nlink > 1 {
				hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
				break
			}
			if st.Nlink > 1 {
				links[key] = name
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size
		default:
			if top == "" {
				return nil // a device of a root filesystem: sandboxes mount their own /dev
			}
			return fmt.Errorf("%s is not a file, directory or symbolic link (mode %o): a layer cannot carry it", name, st.Mode)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		// A file that changes while it is read would make a blob whose
		// header lies: copy exactly the size the header says.
		if n, err := io.Copy(tw, io.LimitReader(f, hdr.Size)); err != nil || n != hdr.Size {
			return fmt.Errorf("%s changed while it was packed (%d of %d bytes): %v", name, n, hdr.Size, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pack layer %s: %w", cmp.Or(top, root), err)
	}
	return nil
}

// Compress gzips the tar r holds into w, as Pack compresses its tars,
// and returns its digests and sizes.
func Compress(w io.Writer, r io.Reader) (Packed, error) {
	zh := blobcache.NewHash()
	gz, err := gzip.NewWriterLevel(io.MultiWriter(w, zh), gzip.DefaultCompression)
	if err != nil {
		return Packed{}, err
	}
	th := blobcache.NewHash()
	if _, err := io.Copy(io.MultiWriter(gz, th), r); err != nil {
		return Packed{}, err
	}
	if err := gz.Close(); err != nil {
		return Packed{}, err
	}
	return Packed{Digest: zh.Digest(), Size: zh.N, DiffID: th.Digest(), TarSize: th.N}, nil
}
