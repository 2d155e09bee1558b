// Package blobcache is cwm's cache of content-addressed blobs,
// $CWM_HOME/blobs/sha256: the manifests, configurations and compressed
// layers of the environments pushed, pulled or imported (internal/envoci)
// and of the bases imported or built (internal/base). One cache for both,
// so that a layer an environment and a base share, or two environments
// share, is fetched and kept once, and env push finds a base's layers
// where it finds an environment's.
//
// A blob is there under its digest only once its bytes were checked
// against it; nothing partial is ever under a digest's name.
package blobcache

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"cwm/internal/errkind"
	"cwm/internal/lazyre"
)

// Cache is the blob cache of one $CWM_HOME.
type Cache struct{ dir string }

// New is the cache of home.
func New(home string) Cache { return Cache{dir: filepath.Join(home, "blobs", "sha256")} }

// Dir is the directory the blobs are in.
func (b Cache) Dir() string { return b.dir }

var digestRE = lazyre.New(`^sha256:[0-9a-f]{64}$`)

// CheckDigest refuses what is not a sha256 digest: a digest names a file.
func CheckDigest(d string) error {
	if !digestRE().MatchString(d) {
		return errkind.Errorf(errkind.Input, "%q is not a sha256 digest", d)
	}
	return nil
}

// Path is where the blob d is (or would be).
func (b Cache) Path(d string) string { return filepath.Join(b.dir, strings.TrimPrefix(d, "sha256:")) }

// Has reports whether the blob is in the cache with its size.
func (b Cache) Has(d string, size int64) bool {
	fi, err := os.Stat(b.Path(d))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

// Open opens a cached blob.
func (b Cache) Open(d string) (*os.File, error) { return os.Open(b.Path(d)) }

// corrupt is the error of bytes that are not what their digest says.
func corrupt(format string, args ...any) error {
	return errkind.Errorf(errkind.Input, format, args...)
}

// Put stores the blob r holds as d, which must be size bytes: the bytes go
// to a temporary file, are hashed on the way, and the file takes the
// digest's name only if they match. Nothing else is left behind.
func (b Cache) Put(d string, size int64, r io.Reader) error {
	if err := CheckDigest(d); err != nil {
		return err
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return err
	}
	// The size is the sender's word: it must fit before a byte is
	// written, or a blob declaring a TiB fills the disk on its way to
	// being refused.
	var st unix.Statfs_t
	if err := unix.Statfs(b.dir, &st); err == nil && size > int64(st.Bavail)*st.Bsize {
		return corrupt("blob %s declares %d bytes; the blob cache %s has %d bytes free", Short(d), size, b.dir, int64(st.Bavail)*st.Bsize)
	}
	f, err := os.CreateTemp(b.dir, ".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails once renamed
	h := NewHash()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("blob %s: %w", Short(d), err)
	}
	if n != size {
		return corrupt("blob %s has %d bytes, its descriptor says %d", Short(d), n, size)
	}
	if got := h.Digest(); got != d {
		return corrupt("blob %s: the bytes received hash to %s: refused", Short(d), Short(got))
	}
	os.Chmod(f.Name(), 0o644)
	return os.Rename(f.Name(), b.Path(d))
}

// PutBytes stores a small blob held in memory.
func (b Cache) PutBytes(d string, data []byte) error {
	return b.Put(d, int64(len(data)), strings.NewReader(string(data)))
}

// Write stores the blob write makes, whose digest write returns once it
// has written it all (a layer being packed, hashed as it goes).
func (b Cache) Write(write func(w io.Writer) (digest string, err error)) error {
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(b.dir, ".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails once renamed
	d, err := write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = CheckDigest(d)
	}
	if err != nil {
		return err
	}
	os.Chmod(f.Name(), 0o644)
	return os.Rename(f.Name(), b.Path(d))
}

// ReadSmall reads a cached blob that is known to be small (a manifest, a
// configuration), checking its digest again.
func (b Cache) ReadSmall(d string, limit int64) ([]byte, error) {
	f, err := b.Open(d)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, corrupt("blob %s is larger than %d bytes", Short(d), limit)
	}
	if got := Digest(data); got != d {
		os.Remove(b.Path(d)) // damaged on disk: fetched again next time
		return nil, corrupt("cached blob %s hashes to %s (damaged on disk; removed)", Short(d), Short(got))
	}
	return data, nil
}

// Prune removes the blobs not in keep, and temporary files left by
// killed runs. It returns how many bytes it freed.
func (b Cache) Prune(keep map[string]bool) (int64, error) {
	ents, err := os.ReadDir(b.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var freed int64
	for _, e := range ents {
		if keep["sha256:"+e.Name()] {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if strings.HasPrefix(e.Name(), ".tmp-") && !OldEnough(fi) {
			continue // another pull is writing it
		}
		if os.Remove(filepath.Join(b.dir, e.Name())) == nil {
			freed += fi.Size()
		}
	}
	return freed, nil
}

// OldEnough tells a temporary file a killed run left from one being
// written.
func OldEnough(fi fs.FileInfo) bool { return time.Since(fi.ModTime()) > time.Hour }

// Hash is a sha256 that counts what it is given.
type Hash struct {
	h hash.Hash
	// N is the bytes written so far.
	N int64
}

// NewHash is an empty Hash.
func NewHash() *Hash { return &Hash{h: sha256.New()} }

func (c *Hash) Write(p []byte) (int, error) {
	c.N += int64(len(p))
	return c.h.Write(p)
}

// Digest is the digest of what was written, "sha256:<hex>".
func (c *Hash) Digest() string { return fmt.Sprintf("sha256:%x", c.h.Sum(nil)) }

// Digest is the digest of data.
func Digest(data []byte) string {
	h := NewHash()
	h.Write(data)
	return h.Digest()
}

// Short is a digest as people read it: sha256: and 12 digits.
func Short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
