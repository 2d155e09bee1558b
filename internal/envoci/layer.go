package envoci

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// packed is a layer's blob as written: its digest and size compressed,
// and the digest and size of the tar inside (OCI's diff_id).
type packed struct {
	Digest, DiffID string // "sha256:<hex>"
	Size, TarSize  int64
}

// countingHash is a sha256 that counts what it is given.
type countingHash struct {
	h hash.Hash
	n int64
}

func newCountingHash() *countingHash { return &countingHash{h: sha256.New()} }

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

func (c *countingHash) digest() string { return fmt.Sprintf("sha256:%x", c.h.Sum(nil)) }

// packLayer writes the tree root/top (top is "repo", "venv": a top-level
// directory of an environment's layer) to w as a gzip-compressed tar whose
// names start with top/, so that the union of an environment's layer blobs
// unpacked in one directory is its layer, and unpacked at / gives the
// paths its sandboxes see (/repo, /venv).
//
// The tar is a function of the tree alone: entries in lexical order,
// owners as numbers, modes, modification times in whole seconds (what
// Python compares a .pyc with), no access or change times, no user
// names, hard links as links; gzip without a name or a time. The same tree
// gives the same blob, which is what lets a registry and cwm's blob cache
// keep a layer two environments share once.
func packLayer(w io.Writer, root, top string) (packed, error) {
	var p packed
	zh := newCountingHash()
	gz, err := gzip.NewWriterLevel(io.MultiWriter(w, zh), gzip.DefaultCompression)
	if err != nil {
		return p, err
	}
	th := newCountingHash()
	tw := tar.NewWriter(io.MultiWriter(gz, th))
	links := map[[2]uint64]string{} // device and inode -> first name
	err = filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
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
		return p, fmt.Errorf("pack layer %s: %w", top, err)
	}
	if err := tw.Close(); err != nil {
		return p, err
	}
	if err := gz.Close(); err != nil {
		return p, err
	}
	return packed{Digest: zh.digest(), Size: zh.n, DiffID: th.digest(), TarSize: th.n}, nil
}
