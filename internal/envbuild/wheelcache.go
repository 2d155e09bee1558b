package envbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"cwm/internal/env"
)

// The wheel cache ($CWM_HOME/cache/wheels) keeps the artifacts online
// builds downloaded, as SHA256/FILE-NAME (a lock read from a file names
// each by its digest only), so that a --locked rebuild installs
// them from disk: pip's own cache lives in the install sandbox's
// /root/.cache, which is dropped with it. Only files whose sha256 a lock
// names are kept, and pip checks them against the lock again.

func wheelCacheDir(home string) string { return filepath.Join(home, "cache", "wheels") }

// keepWheels copies, from an install sandbox's upper layer, the bodies
// of pip's HTTP cache whose digest is one of lock's into the wheel cache,
// named as their URL names them.
func keepWheels(upper, home string, lock []env.LockedPackage) error {
	want := map[string]string{} // sha256 -> file name
	for _, p := range lock {
		if remote(p) {
			want[p.SHA256] = path.Base(p.URL)
		}
	}
	root := filepath.Join(upper, "root", ".cache", "pip", "http-v2")
	if len(want) == 0 {
		return nil
	}
	dst := wheelCacheDir(home)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return filepath.SkipAll
			}
			return err
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(p, ".body") {
			return nil
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		name, ok := want[sum]
		if !ok || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
			return nil
		}
		dir := filepath.Join(dst, sum)
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		tmp := filepath.Join(dir, "."+name+".tmp")
		os.Remove(tmp) // an interrupted copy's
		if err := copyFile(p, tmp); err != nil {
			return err
		}
		return os.Rename(tmp, filepath.Join(dir, name))
	})
}

// cachedWheels lists the wheel cache's files a lock names with their
// digest checked: what a --locked build stages beside the index.
func cachedWheels(home string, lock []env.LockedPackage) []string {
	var out []string
	for _, p := range lock {
		if !remote(p) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(wheelCacheDir(home), p.SHA256, "*"))
		for _, f := range files {
			if sum, err := fileSHA256(f); err == nil && sum == p.SHA256 && !strings.HasPrefix(filepath.Base(f), ".") {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// remote tells a lock's artifact fetched from an index (or named by its
// digest in a lock file), not a local path.
func remote(p env.LockedPackage) bool {
	return p.SHA256 != "" && !p.Local && !strings.HasPrefix(p.URL, "file:")
}

func remoteCount(lock []env.LockedPackage) int {
	n := 0
	for _, p := range lock {
		if remote(p) {
			n++
		}
	}
	return n
}
