package envoci

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"cwm/internal/errkind"
	"cwm/internal/lazyre"
)

// blobs is cwm's cache of content-addressed blobs, $CWM_HOME/blobs/sha256:
// the manifests, configurations and compressed layers of the environments
// pushed, pulled or imported. A blob is there under its digest only once
// its bytes were checked against it; so a layer two environments share is
// fetched once, and pulling an environment again needs one request (its
// manifest), or none for a reference by digest.
type blobs struct{ dir string }

func newBlobs(home string) blobs { return blobs{dir: filepath.Join(home, "blobs", "sha256")} }

var digestRE = lazyre.New(`^sha256:[0-9a-f]{64}$`)

// checkDigest refuses what is not a sha256 digest: a digest names a file.
func checkDigest(d string) error {
	if !digestRE().MatchString(d) {
		return errkind.Errorf(errkind.Input, "%q is not a sha256 digest", d)
	}
	return nil
}

func (b blobs) path(d string) string { return filepath.Join(b.dir, strings.TrimPrefix(d, "sha256:")) }

// has reports whether the blob is in the cache with its size.
func (b blobs) has(d string, size int64) bool {
	fi, err := os.Stat(b.path(d))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

// open opens a cached blob.
func (b blobs) open(d string) (*os.File, error) { return os.Open(b.path(d)) }

// put stores the blob r holds as d, which must be size bytes: the bytes go
// to a temporary file, are hashed on the way, and the file takes the
// digest's name only if they match. Nothing else is left behind.
func (b blobs) put(d string, size int64, r io.Reader) error {
	if err := checkDigest(d); err != nil {
		return err
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return err
	}
	// The size is the artifact's word: it must fit before a byte is
	// written, or a blob declaring a TiB fills the disk on its way to
	// being refused.
	var st unix.Statfs_t
	if err := unix.Statfs(b.dir, &st); err == nil && size > int64(st.Bavail)*st.Bsize {
		return corrupt("blob %s declares %d bytes; the blob cache %s has %d bytes free", short(d), size, b.dir, int64(st.Bavail)*st.Bsize)
	}
	f, err := os.CreateTemp(b.dir, ".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails once renamed
	h := newCountingHash()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("blob %s: %w", short(d), err)
	}
	if n != size {
		return corrupt("blob %s has %d bytes, its descriptor says %d", short(d), n, size)
	}
	if got := h.digest(); got != d {
		return corrupt("blob %s: the bytes received hash to %s: refused", short(d), short(got))
	}
	os.Chmod(f.Name(), 0o644)
	return os.Rename(f.Name(), b.path(d))
}

// putBytes stores a small blob held in memory.
func (b blobs) putBytes(d string, data []byte) error {
	return b.put(d, int64(len(data)), strings.NewReader(string(data)))
}

// readSmall reads a cached blob that is known to be small (a manifest, a
// configuration), checking its digest again.
func (b blobs) readSmall(d string, limit int64) ([]byte, error) {
	f, err := b.open(d)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, corrupt("blob %s is larger than %d bytes", short(d), limit)
	}
	if got := digestOf(data); got != d {
		os.Remove(b.path(d)) // damaged on disk: fetched again next time
		return nil, corrupt("cached blob %s hashes to %s (damaged on disk; removed)", short(d), short(got))
	}
	return data, nil
}

// prune removes the blobs not in keep, and temporary files left by
// killed runs. It returns how many bytes it freed.
func (b blobs) prune(keep map[string]bool) (int64, error) {
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
		if strings.HasPrefix(e.Name(), ".tmp-") && !oldEnough(fi) {
			continue // another pull is writing it
		}
		if os.Remove(filepath.Join(b.dir, e.Name())) == nil {
			freed += fi.Size()
		}
	}
	return freed, nil
}

func digestOf(data []byte) string {
	h := newCountingHash()
	h.Write(data)
	return h.digest()
}

// short is a digest as people read it: sha256: and 12 digits.
func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
