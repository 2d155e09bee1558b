package envbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"cwm/internal/env"
)

// The wheel cache ($CWM_HOME/cache/wheels) keeps the artifacts online
// builds downloaded, as SHA256/FILE-NAME (a lock read from a file names
// each by its digest only), so that a --locked rebuild installs
// them from disk: pip's own cache lives in the install sandbox's
// /root/.cache, which is dropped with it, and keeps only what the index
// marks cacheable. Only files whose sha256 a lock names are kept, and pip
// checks them against the lock again. cwm env gc drops the files no
// stored environment's lock names (PruneWheelCache).

func wheelCacheDir(home string) string { return filepath.Join(home, "cache", "wheels") }

// download is one line of the pip launcher's records (cwmpip.py).
type download struct {
	File  string `json:"file"`
	URL   string `json:"url"`
	Build bool   `json:"build"`
}

// keepDownloads reads, from an install sandbox's upper layer, the files
// the pip launcher kept of pip's downloads. Those an isolated build
// installed are added to the lock as build entries (unless the lock has
// that artifact already); then every file whose digest the lock names is
// put into the wheel cache. It returns the lock with its build entries.
func keepDownloads(upper, home string, lock []env.LockedPackage) ([]env.LockedPackage, error) {
	dir := filepath.Join(upper, strings.TrimPrefix(downloadsDir, "/"))
	data, err := os.ReadFile(filepath.Join(dir, "records.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return lock, nil
	}
	if err != nil {
		return lock, fmt.Errorf("read pip's downloads: %w", err)
	}
	sums := map[string]string{} // file name -> sha256
	var recs []download
	for _, line := range strings.Split(string(data), "\n") {
		var d download
		if line == "" || json.Unmarshal([]byte(line), &d) != nil || d.File != filepath.Base(d.File) || strings.HasPrefix(d.File, ".") {
			continue
		}
		if _, ok := sums[d.File]; !ok {
			sum, err := fileSHA256(filepath.Join(dir, "files", d.File))
			if err != nil {
				continue // not kept (the launcher could not copy it)
			}
			sums[d.File] = sum
		}
		recs = append(recs, d)
	}
	has := func(sum string) bool {
		for _, p := range lock {
			if p.SHA256 == sum {
				return true
			}
		}
		return false
	}
	for _, d := range recs {
		name, version, ok := artifactNameVersion(d.File)
		if d.Build && ok && !has(sums[d.File]) {
			lock = append(lock, env.LockedPackage{Name: env.RequirementName(name), Version: version, URL: d.URL, SHA256: sums[d.File], Build: true})
		}
	}
	for _, d := range recs {
		if has(sums[d.File]) {
			if err := cacheFile(home, filepath.Join(dir, "files", d.File), sums[d.File], d.File); err != nil {
				return lock, err
			}
		}
	}
	return lock, nil
}

// artifactNameVersion reads a distribution's name and version from its
// file name: a wheel's (NAME-VERSION-TAGS.whl, with NAME's dashes
// written as underscores) or an sdist's (NAME-VERSION.tar.gz or .zip).
func artifactNameVersion(file string) (name, version string, ok bool) {
	if base, isWheel := strings.CutSuffix(file, ".whl"); isWheel {
		parts := strings.Split(base, "-")
		if len(parts) < 5 {
			return "", "", false
		}
		return parts[0], parts[1], true
	}
	for _, ext := range []string{".tar.gz", ".zip"} {
		if base, ok := strings.CutSuffix(file, ext); ok {
			i := strings.LastIndex(base, "-")
			if i <= 0 {
				return "", "", false
			}
			return base[:i], base[i+1:], true
		}
	}
	return "", "", false
}

// cacheFile puts src, whose sha256 is sum, into the wheel cache as
// SUM/NAME, unless it is there.
func cacheFile(home, src, sum, name string) error {
	dir := filepath.Join(wheelCacheDir(home), sum)
	if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("wheel cache: %w", err)
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	os.Remove(tmp) // an interrupted copy's
	if err := copyFile(src, tmp); err != nil {
		return fmt.Errorf("wheel cache: keep %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("wheel cache: %w", err)
	}
	return nil
}

// cachedWheels finds, in the wheel cache, the files a lock names, with
// their digest checked: sha256 -> path. A --locked build stages them in
// the tools' wheelhouse and installs them with no index.
func cachedWheels(home string, lock []env.LockedPackage) map[string]string {
	out := map[string]string{}
	for _, p := range lock {
		if !remote(p) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(wheelCacheDir(home), p.SHA256, "*"))
		for _, f := range files {
			if sum, err := fileSHA256(f); err == nil && sum == p.SHA256 && !strings.HasPrefix(filepath.Base(f), ".") {
				out[p.SHA256] = f
				break
			}
		}
	}
	return out
}

// PruneWheelCache removes from home's wheel cache every file no stored
// environment's lock (of envs) names, with its unpacked tree, and the
// editable cache's entries no stored environment's local project has
// (its key, editableKey, from the environment's commit, tree, base,
// Python and lock); it returns the bytes freed: a file a stored layer
// still links is not counted, its blocks stay in use. A lock kept only
// as a file (cwm env lock > FILE) then fetches its artifacts again.
func PruneWheelCache(home string, envs []*env.Env) (int64, error) {
	keep := map[string]bool{}
	if _, sum, ok := uvWheel(); ok {
		keep[sum] = true // the uv of online builds (uvinstall.go), named by no lock
	}
	for _, e := range envs {
		for _, p := range e.Lock {
			keep[p.SHA256] = true
			if path, ok := localPath(p); ok {
				keep[editableKey(e.Commit, e.Tree, e.Base, e.Python, e.Lock, path)] = true
			}
		}
	}
	var freed int64
	for _, dir := range []string{wheelCacheDir(home), unpackedCacheDir(home), editableCacheDir(home)} {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return freed, fmt.Errorf("list the cache %s: %w", dir, err)
		}
		for _, d := range ents {
			if keep[d.Name()] {
				continue
			}
			p := filepath.Join(dir, d.Name())
			filepath.WalkDir(p, func(_ string, f fs.DirEntry, err error) error {
				if err == nil && f.Type().IsRegular() {
					if fi, err := f.Info(); err == nil && onlyLink(fi) {
						freed += fi.Size()
					}
				}
				return nil
			})
			if err := os.RemoveAll(p); err != nil {
				return freed, fmt.Errorf("prune the cache %s: %w", dir, err)
			}
		}
	}
	return freed, nil
}

// onlyLink tells a file no other directory entry (a layer's) links.
func onlyLink(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || st.Nlink <= 1
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
