package envbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cwm/internal/env"
)

// The editable cache ($CWM_HOME/cache/editable/KEY) keeps what pip's
// editable install of a local project wrote into site-packages (its
// dist-info with direct_url.json, its .pth or import finder), laid out
// as an unpacked wheel with a RECORD, so that a --locked rebuild links it
// as it links the lock's wheels (linkLocked) instead of running the
// project's isolated PEP 517 build again: with the lock's packages
// linked, that build was most of what remained of a rebuild's install.
// The key (editableKey) covers everything the build's output depends on;
// the files' scripts are made again from entry_points.txt on linking.

func editableCacheDir(home string) string { return filepath.Join(home, "cache", "editable") }

// editableKey names the editable install of the local project at path
// (in the sandbox): the repository's commit and tree (its metadata, and
// the version a setuptools_scm build reads from git), the base and its
// Python, pip, and the build's own packages (the lock's build entries:
// the backend and its version).
func editableKey(commit, tree, base, python string, lock []env.LockedPackage, path string) string {
	var build []env.LockedPackage
	for _, p := range lock {
		if p.Build {
			build = append(build, p)
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "cwm editable v1\ncommit %s\ntree %s\nbase %s\npython %s\npip %s\npath %s\n%s",
		commit, tree, base, python, pipWheelSHA256, path, env.LockRequirements(build))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// cachedEditable returns the editable cache's entry for key as a wheel to
// link, if it is there and its files match its RECORD (an entry that does
// not is removed: pip builds the project again).
func cachedEditable(home, key string, p env.LockedPackage) (linkedWheel, bool) {
	w := linkedWheel{pkg: p, dir: filepath.Join(editableCacheDir(home), key)}
	infos, _ := filepath.Glob(filepath.Join(w.dir, "*.dist-info", "RECORD"))
	if len(infos) != 1 {
		return w, false
	}
	w.distInfo = filepath.Base(filepath.Dir(infos[0]))
	data, err := os.ReadFile(infos[0])
	if err == nil {
		w.record, err = parseRecord(bytes.NewReader(data), w.distInfo+"/RECORD")
	}
	if err != nil || checkTree(w.dir, w.record) != "" {
		os.RemoveAll(w.dir)
		return w, false
	}
	return w, true
}

// keepEditables puts into the editable cache each editable install of a
// local project that an install's upper layer holds (a dist-info whose
// direct_url.json names a directory under env.RepoRoot, editable): the
// files its RECORD lists inside site-packages, less what an installer
// writes (INSTALLER, REQUESTED, RECORD, scripts, bytecode), which
// linking writes again. key gives the entry's key for the project's path.
func keepEditables(home, upper, python string, key func(path string) string) error {
	site := filepath.Join(upper, strings.TrimPrefix(env.VenvRoot, "/"), "lib", "python"+python, "site-packages")
	urls, _ := filepath.Glob(filepath.Join(site, "*.dist-info", "direct_url.json"))
	for _, u := range urls {
		var du struct {
			URL     string `json:"url"`
			DirInfo *struct {
				Editable bool `json:"editable"`
			} `json:"dir_info"`
		}
		data, err := os.ReadFile(u)
		if err != nil || json.Unmarshal(data, &du) != nil || du.DirInfo == nil || !du.DirInfo.Editable {
			continue
		}
		path := strings.TrimPrefix(du.URL, "file://")
		if !strings.HasPrefix(path, env.RepoRoot) {
			continue
		}
		dir := filepath.Join(editableCacheDir(home), key(path))
		if _, err := os.Stat(dir); err == nil {
			continue
		}
		if err := keepEditable(site, filepath.Base(filepath.Dir(u)), dir); err != nil {
			return fmt.Errorf("editable cache: keep %s: %w", filepath.Base(filepath.Dir(u)), err)
		}
	}
	return nil
}

func keepEditable(site, distInfo, dir string) error {
	f, err := os.Open(filepath.Join(site, distInfo, "RECORD"))
	if err != nil {
		return err
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		return err
	}
	return replaceDir(dir, func(tmp string) error {
		var record [][]string
		for _, row := range rows {
			if len(row) < 3 || row[1] == "" || !filepath.IsLocal(filepath.FromSlash(row[0])) || strings.Contains(row[0], "__pycache__/") {
				continue // scripts (../../../bin), bytecode, RECORD itself
			}
			switch strings.TrimPrefix(row[0], distInfo+"/") {
			case "INSTALLER", "REQUESTED":
				continue
			}
			dst := filepath.Join(tmp, filepath.FromSlash(row[0]))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := copyFile(filepath.Join(site, filepath.FromSlash(row[0])), dst); err != nil {
				return err
			}
			record = append(record, row[:3])
		}
		record = append(record, []string{distInfo + "/RECORD", "", ""})
		var b bytes.Buffer
		cw := csv.NewWriter(&b)
		cw.WriteAll(record)
		return os.WriteFile(filepath.Join(tmp, distInfo, "RECORD"), b.Bytes(), 0o644)
	})
}
