package envbuild

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/lazyre"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// The pip of online and wheelhouse builds. 26.0 is the first release with
// --uploaded-prior-to (the date bound of resolution); --report (the lock)
// and PEP 517 builds with isolation are older. It runs from its wheel,
// unpacked into the build's tools directory (pipTree), so no environment's
// layer holds a pip of its own (about 14 MB installed); the digest pins
// the file whatever index served it.
const (
	pipWheelName   = "pip-26.0.1-py3-none-any.whl"
	pipWheelSHA256 = "bdb1b08f4274833d62c1aa29e20907365a2ceb950410df15fc9521bad440122b"
)

// cwmPip is the launcher online builds run pip with (python
// /cwm-tools/cwm-pip.py): pip from its wheel, keeping a copy of what it
// downloads in downloadsDir for the wheel cache and the lock's build
// entries (keepDownloads).
//
//go:embed cwmpip.py
var cwmPip string

// downloadsDir is where, inside the install sandbox, the launcher keeps
// pip's downloads: under /root, which the sandbox's upper layer holds and
// the layer leaves out (layerRoots).
const downloadsDir = "/root/.cache/cwm-downloads"

func pipLauncher() string {
	return strings.NewReplacer("@WHEEL@", toolsPipLib, "@DOWNLOADS@", downloadsDir).Replace(cwmPip)
}

// toolsRoot is where a build's install sandbox sees cwm's tools (the pip
// wheel) and the --wheelhouse, read-only: a directory of the layer while
// the install steps run, removed before the layer is kept.
const (
	toolsRoot     = "/cwm-tools"
	toolsPipLib   = toolsRoot + "/pip-lib" // the wheel unpacked: pip imports from here
	toolsPipMain  = toolsRoot + "/cwm-pip.py"
	toolsWheels   = toolsRoot + "/wheelhouse"
	toolsCA       = toolsRoot + "/ca-bundle.pem"
	toolsLayerDir = "cwm-tools"
)

// GraceAfterCommit is how long after its commit's date a build's
// resolution still takes releases: a commit is usually tested against
// what the index had in the days after it.
const GraceAfterCommit = 7 * 24 * time.Hour

// EnsurePip returns the path of the pip wheel online builds run, in
// home's tool cache ($CWM_HOME/tools), fetching it once with the host's
// own pip and its index configuration (or taking it from wheelhouse, when
// it holds it) and checking its digest.
func EnsurePip(ctx context.Context, home, wheelhouse string) (string, error) {
	dir := filepath.Join(home, "tools")
	dst := filepath.Join(dir, pipWheelName)
	if digestOK(dst) {
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("tool cache: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".fetch-*")
	if err != nil {
		return "", fmt.Errorf("tool cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	got := filepath.Join(tmp, pipWheelName)
	if wheelhouse != "" && digestOK(filepath.Join(wheelhouse, pipWheelName)) {
		if err := copyFile(filepath.Join(wheelhouse, pipWheelName), got); err != nil {
			return "", fmt.Errorf("copy %s from the wheelhouse: %w", pipWheelName, err)
		}
	} else {
		if wheelhouse != "" {
			return "", inputErrorf("--wheelhouse %s: no %s there, and cwm's tool cache (%s) lacks it; put that wheel (sha256 %s) in either", wheelhouse, pipWheelName, dir, pipWheelSHA256)
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "python3", "-m", "pip", "download", "--disable-pip-version-check", "--no-input",
			"--no-deps", "--only-binary=:all:", "--dest", tmp, "pip=="+strings.TrimSuffix(strings.TrimPrefix(pipWheelName, "pip-"), "-py3-none-any.whl"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("fetch %s into %s with the host's pip: %v: %s", pipWheelName, dir, err, testrun.LastLine(out))
		}
	}
	if !digestOK(got) {
		return "", fmt.Errorf("fetch %s: its sha256 is not %s", pipWheelName, pipWheelSHA256)
	}
	if err := os.Rename(got, dst); err != nil {
		return "", fmt.Errorf("tool cache: %w", err)
	}
	return dst, nil
}

func digestOK(path string) bool {
	sum, err := fileSHA256(path)
	return err == nil && sum == pipWheelSHA256
}

// copyFile links src to dst, or copies it (sandbox.CopyFile) when they
// are on different file systems. dst must not exist.
func copyFile(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	return sandbox.CopyFile(src, dst, 0o644)
}

// stageTools puts pip (unpacked from its wheel, pipTree), its launcher and the wheelhouse's files into the
// layer's tools directory, which the install sandbox sees at toolsRoot;
// the caller removes it (removeTools) before the layer is kept.
func stageTools(ctx context.Context, layer, pipWheel, wheelhouse, caBundle string, cached []string) error {
	dir := filepath.Join(layer, toolsLayerDir)
	if err := os.MkdirAll(filepath.Join(dir, "wheelhouse"), 0o755); err != nil {
		return err
	}
	if caBundle != "" {
		if err := copyFile(caBundle, filepath.Join(dir, filepath.Base(toolsCA))); err != nil {
			return fmt.Errorf("stage the host's certificate bundle: %w", err)
		}
	}
	tree, err := pipTree(ctx, pipWheel)
	if err != nil {
		return err
	}
	if err := linkTree(tree, filepath.Join(dir, filepath.Base(toolsPipLib))); err != nil {
		return fmt.Errorf("stage pip: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(toolsPipMain)), []byte(pipLauncher()), 0o644); err != nil {
		return fmt.Errorf("stage pip's launcher: %w", err)
	}
	for _, f := range cached {
		if err := copyFile(f, filepath.Join(dir, "wheelhouse", filepath.Base(f))); err != nil {
			return fmt.Errorf("stage the cached %s: %w", filepath.Base(f), err)
		}
	}
	if wheelhouse == "" {
		return nil
	}
	ents, err := os.ReadDir(wheelhouse)
	if err != nil {
		return inputErrorf("--wheelhouse %s: %v", wheelhouse, err)
	}
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && (strings.HasSuffix(n, ".whl") || strings.HasSuffix(n, ".tar.gz") || strings.HasSuffix(n, ".zip")) {
			if err := copyFile(filepath.Join(wheelhouse, n), filepath.Join(dir, "wheelhouse", n)); err != nil {
				return fmt.Errorf("stage the wheelhouse's %s: %w", n, err)
			}
		}
	}
	return nil
}

func removeTools(layer string) error { return os.RemoveAll(filepath.Join(layer, toolsLayerDir)) }

// excludeNewer is the date resolution is bounded by: --exclude-newer's
// (a date or an RFC 3339 time; "none" for no bound), else the commit's
// date plus GraceAfterCommit (a plain directory has no date: no bound).
func excludeNewer(flag string, commitDate time.Time) (string, error) {
	switch flag {
	case "none":
		return "", nil
	case "":
		if commitDate.IsZero() {
			return "", nil
		}
		return commitDate.Add(GraceAfterCommit).UTC().Format(time.RFC3339), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, flag); err == nil {
			return t.UTC().Format(time.RFC3339), nil
		}
	}
	return "", inputErrorf("--exclude-newer %s: want a date (2024-05-01), an RFC 3339 time or none", flag)
}

// pipReport is what cwm reads of pip install --report's JSON.
type pipReport struct {
	Install []struct {
		Metadata struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"metadata"`
		DownloadInfo struct {
			URL         string `json:"url"`
			ArchiveInfo *struct {
				Hash   string            `json:"hash"`
				Hashes map[string]string `json:"hashes"`
			} `json:"archive_info"`
			DirInfo *struct {
				Editable bool `json:"editable"`
			} `json:"dir_info"`
		} `json:"download_info"`
	} `json:"install"`
}

// addReport merges what one pip run installed into lock (a later install
// of a name replaces an earlier one, as in the venv).
func addReport(lock []env.LockedPackage, data []byte) ([]env.LockedPackage, error) {
	var r pipReport
	if err := json.Unmarshal(data, &r); err != nil {
		return lock, fmt.Errorf("read pip's report: %w", err)
	}
	for _, it := range r.Install {
		p := env.LockedPackage{Name: env.RequirementName(it.Metadata.Name), Version: it.Metadata.Version, URL: it.DownloadInfo.URL}
		switch ai := it.DownloadInfo.ArchiveInfo; {
		case it.DownloadInfo.DirInfo != nil:
			p.Local = true
		case ai != nil && ai.Hashes["sha256"] != "":
			p.SHA256 = ai.Hashes["sha256"]
		case ai != nil && strings.HasPrefix(ai.Hash, "sha256="):
			p.SHA256 = strings.TrimPrefix(ai.Hash, "sha256=")
		}
		replaced := false
		for i := range lock {
			if lock[i].Name == p.Name {
				lock[i], replaced = p, true
			}
		}
		if !replaced {
			lock = append(lock, p)
		}
	}
	return lock, nil
}

// lockDigest identifies a lock in the id of a --locked build.
func lockDigest(lock []env.LockedPackage) string {
	sum := sha256.Sum256([]byte(env.LockRequirements(lock)))
	return hex.EncodeToString(sum[:8])
}

// lockSteps are the install steps of a --locked build: the lock's
// packages with their hashes required and no resolution, then each local
// project (the repository itself) editable without its dependencies.
func lockSteps(lock []env.LockedPackage) []env.Step {
	n := 0
	var local []string
	for _, p := range lock {
		if p.Build {
			continue // staged for the project's build, not installed
		}
		if path, ok := localPath(p); ok {
			local = append(local, path)
			continue
		}
		if !p.Local {
			n++
		}
	}
	// The packages' step comes first even when there are none: run knows
	// a --locked build's packages step by its command.
	steps := []env.Step{{Command: "pip install --require-hashes --no-deps -r " + lockFile, Provenance: fmt.Sprintf("--locked (%d packages)", n)}}
	for _, l := range local {
		steps = append(steps, localStep(l))
	}
	return steps
}

// localPath is where a lock's local project is in the sandbox (under
// env.RepoRoot), if p is one.
func localPath(p env.LockedPackage) (string, bool) {
	path := strings.TrimPrefix(p.URL, "file://")
	return path, p.Local && strings.HasPrefix(path, env.RepoRoot)
}

// localStep is a --locked build's editable install of the local project
// at path.
func localStep(path string) env.Step {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, env.RepoRoot), "/")
	if rel == "" {
		rel = "."
	} else {
		rel = "./" + rel
	}
	return env.Step{Command: "pip install --no-deps -e " + testrun.Join([]string{rel}), Provenance: "--locked (local project)"}
}

// lockFile is where a --locked build's requirements are inside the install
// sandbox.
const (
	lockFile      = "/tmp/cwm-lock.txt"
	lockFetchFile = "/tmp/cwm-lock-fetch.txt" // the part the wheel cache lacks
)

// ReadLock reads a lock: an environment's (its manifest's lock) is the
// caller's business; this reads a requirements file with hashes as
// env.LockRequirements writes it (name==version --hash=sha256:...).
func ReadLock(path string) ([]env.LockedPackage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, inputErrorf("--locked %s: %v", path, err)
	}
	var lock []env.LockedPackage
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if m := lockLocal().FindStringSubmatch(line); m != nil {
			lock = append(lock, env.LockedPackage{Name: env.RequirementName(m[1]), Version: m[2], URL: m[3], Local: true})
			continue
		}
		if m := lockBuild().FindStringSubmatch(line); m != nil {
			lock = append(lock, env.LockedPackage{Name: env.RequirementName(m[1]), Version: m[2], SHA256: m[3], Build: true})
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := lockLine().FindStringSubmatch(line)
		if m == nil {
			return nil, inputErrorf("--locked %s:%d: want name==version --hash=sha256:HEX, got %q", path, i+1, line)
		}
		lock = append(lock, env.LockedPackage{Name: env.RequirementName(m[1]), Version: m[2], SHA256: m[3]})
	}
	if len(lock) == 0 {
		return nil, inputErrorf("--locked %s: no pinned package in it", path)
	}
	return lock, nil
}

var lockLocal = lazyre.New(`^# ([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) local (file://\S+)$`)

var lockBuild = lazyre.New(`^# build: ([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s+--hash=sha256:([0-9a-f]{64})$`)

var lockLine = lazyre.New(`^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s+--hash=sha256:([0-9a-f]{64})$`)

// hashMismatch finds, in pip's output under --require-hashes, the
// package whose artifact does not match the lock.
var hashMismatch = lazyre.New(`(?s)DO NOT MATCH THE HASHES.*?\n\s+([A-Za-z0-9._-]+==\S+) from (\S+?):?(?: \([^\n]*)?\n\s+Expected sha256 (\S+)\n\s+Got\s+(\S+)`)
