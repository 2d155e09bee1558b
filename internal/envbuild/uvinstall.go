package envbuild

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// The uv of online builds whose install steps use uv (uv sync, uv pip
// install, and the sync uv run performs): one pinned release, a wheel per
// machine, checked by digest whatever index served it. It is fetched from
// the index through the relay during the build, inside the install
// sandbox (never run on the host), kept in cwm's wheel cache, and taken
// from there by later builds, so a rebuild needs no index for it. It lives
// under the sandbox's /root, which the layer leaves out: no environment
// holds it, and no test command sees it.
const uvVersion = "0.13.9"

var uvWheels = map[string]struct{ name, sha256 string }{
	"amd64": {"uv-0.13.9-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19"},
	"arm64": {"uv-0.13.9-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl", "5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe"},
}

// Where uv is inside the install sandbox: the wheel (fetched or staged),
// the program unpacked from it, and uv's cache.
const (
	uvHome     = "/root/.cache/cwm-uv"
	uvWheelDir = uvHome + "/wheel"
	uvBin      = uvHome + "/bin/uv"
	uvCacheDir = uvHome + "/cache"
	// toolsUV is where a build stages the wheel cache's copy (stageUV).
	toolsUV      = toolsRoot + "/uv"
	uvLockScript = "/tmp/cwm-uvlock.py"
	uvLockKnown  = "/tmp/cwm-uvlock-known.json"
)

// cwmUVLock reads what uv installed into the venv for the lock.
//
//go:embed cwmuvlock.py
var cwmUVLock string

// uvState is whether a build's uv steps run with uv: tried once, at the
// first such step.
type uvState struct {
	tried bool
	// why says why uv is not used (it could not be had); "" once it is
	// ready.
	why string
	// from is where the ready uv came from: the index or the wheel cache.
	from string
}

// uvWheel is the pinned uv wheel for this machine.
func uvWheel() (name, sha256 string, ok bool) {
	w, ok := uvWheels[runtime.GOARCH]
	return w.name, w.sha256, ok
}

// stageUV links the wheel cache's copy of uv's wheel, when it holds it,
// into the layer's tools directory (toolsUV): the build then takes uv
// from there, with no index.
func stageUV(layer, home string) error {
	name, sum, ok := uvWheel()
	if !ok {
		return nil
	}
	src := filepath.Join(wheelCacheDir(home), sum, name)
	if got, err := fileSHA256(src); err != nil || got != sum {
		return nil
	}
	dir := filepath.Join(layer, toolsLayerDir, filepath.Base(toolsUV))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("stage uv: %w", err)
	}
	if err := copyFile(src, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("stage uv: %w", err)
	}
	return nil
}

// keepUVWheel puts the uv wheel a build fetched (in its install
// sandbox's upper layer) into the wheel cache.
func keepUVWheel(upper, home string) error {
	name, sum, ok := uvWheel()
	if !ok {
		return nil
	}
	src := filepath.Join(upper, strings.TrimPrefix(uvWheelDir, "/"), name)
	if got, err := fileSHA256(src); err != nil || got != sum {
		return nil // not fetched by this build (or not the pinned file)
	}
	return cacheFile(home, src, sum, name)
}

// useUV reports whether the uv install line command runs with uv: in an
// online build (not --locked, whose steps are pip's), once uv is ready.
// Offline and --wheelhouse builds translate it to pip, as does an online
// build that could not have uv (in.uv.why says why).
func (in *installer) useUV(ctx context.Context, command string) (bool, error) {
	if in.mode != env.ModeOnline || in.locked || !isUVInstall(command) {
		return false, nil
	}
	if !in.uv.tried {
		in.uv.tried = true
		why, err := in.fetchUV(ctx)
		if err != nil {
			return false, err
		}
		in.uv.why = why
	}
	return in.uv.why == "", nil
}

// fetchUV makes uv ready in the install sandbox: its wheel from the
// tools directory (the wheel cache's copy) or from the index through the
// relay (with the build's pip), its digest checked, the program unpacked.
// It returns why uv cannot be used, or "".
func (in *installer) fetchUV(ctx context.Context) (string, error) {
	name, sum, ok := uvWheel()
	if !ok {
		return "no uv wheel is pinned for " + runtime.GOARCH, nil
	}
	var st env.Step // the relay's notes about the fetch
	done := in.relay(ctx, &st)
	download := testrun.Join([]string{env.VenvRoot + "/bin/python", toolsPipMain, "download", "--disable-pip-version-check", "--no-input",
		"--no-deps", "--only-binary=:all:", "--dest", uvWheelDir, "uv==" + uvVersion})
	unpack := testrun.Join([]string{env.VenvRoot + "/bin/python", "-I", "-c", `import hashlib, os, sys, zipfile
p, want, dst = sys.argv[1:]
got = hashlib.sha256(open(p, "rb").read()).hexdigest()
if got != want:
    sys.exit("%s has sha256 %s, not the pinned %s" % (os.path.basename(p), got, want))
os.makedirs(os.path.dirname(dst), exist_ok=True)
with zipfile.ZipFile(p) as z:
    data = z.read([n for n in z.namelist() if n.endswith(".data/scripts/uv")][0])
with open(dst, "wb") as f:
    f.write(data)
os.chmod(dst, 0o755)`, uvWheelDir + "/" + name, sum, uvBin})
	line := fmt.Sprintf("mkdir -p %s && if [ -f %s/%s ]; then cp %s/%s %s/ && echo %s; else %s; fi && %s && %s --version",
		uvWheelDir, toolsUV, name, toolsUV, name, uvWheelDir, uvCachedMark, download, unpack, uvBin)
	res, err := in.exec(ctx, line, "")
	done()
	if err != nil {
		return "", fmt.Errorf("fetch uv: %w", err)
	}
	if !res.Success() {
		why := fmt.Sprintf("uv %s could not be had: %s", uvVersion, firstError(string(res.Stdout)+"\n"+string(res.Stderr)))
		if st.Note != "" {
			why += " (" + st.Note + ")"
		}
		return why, nil
	}
	in.uv.from = "the index"
	if strings.Contains(string(res.Stdout), uvCachedMark) {
		in.uv.from = "the wheel cache"
	}
	return "", nil
}

// uvCachedMark is what fetchUV's line prints when it takes uv from the
// wheel cache's copy.
const uvCachedMark = "cwm: uv from the wheel cache"

// uvLine is a uv install line as an online build runs it: cwm's uv, no
// --python (UV_PYTHON is the venv's) nor --system, and for uv sync where
// the project has uv.lock, --frozen: the project's own lock wins, neither
// checked against nor updated from the index (--locked would fail on a
// lock resolved with another date bound).
func uvLine(command string, frozen bool) string {
	prefix, vars, words := splitCd(command)
	out := append(vars, uvBin)
	sync := len(words) > 1 && words[1] == "sync"
	for i := 1; i < len(words); i++ {
		name, _, hasVal := strings.Cut(words[i], "=")
		switch name {
		case "--python", "-p":
			if !hasVal {
				i++
			}
			continue
		case "--system", "--break-system-packages", "--managed-python":
			continue
		case "--locked", "--frozen":
			if sync && frozen {
				continue
			}
		}
		out = append(out, words[i])
	}
	if sync && frozen {
		out = append(out, "--frozen")
	}
	return prefix + strings.Join(out, " ")
}

// uvEnv is uv's environment in an install step: the venv's Python and the
// venv as the project environment, no Python downloads, uv's cache in
// the sandbox, the index of the build's relay policy, and the
// exclude-newer date pip steps get too.
func (in *installer) uvEnv() []string {
	vars := []string{
		"UV_PYTHON=" + env.VenvRoot + "/bin/python", "UV_PROJECT_ENVIRONMENT=" + env.VenvRoot,
		"VIRTUAL_ENV=" + env.VenvRoot, "UV_PYTHON_DOWNLOADS=never", "UV_PYTHON_PREFERENCE=only-system",
		"UV_CACHE_DIR=" + uvCacheDir, "UV_NO_PROGRESS=1", "UV_LINK_MODE=copy",
	}
	if in.exclude != "" {
		vars = append(vars, "UV_EXCLUDE_NEWER="+in.exclude)
	}
	if in.egress != nil {
		if in.egress.IndexURL != "" {
			vars = append(vars, "UV_DEFAULT_INDEX="+in.egress.IndexURL)
		}
		if len(in.egress.ExtraIndexURLs) > 0 {
			vars = append(vars, "UV_INDEX="+strings.Join(in.egress.ExtraIndexURLs, " "))
		}
		if hosts := in.egress.HTTPIndexHosts(); len(hosts) > 0 {
			vars = append(vars, "UV_INSECURE_HOST="+strings.Join(hosts, " "))
		}
	}
	return vars
}

// runUV runs a uv install line with uv, then reads what the venv holds
// into the lock. A uv.lock uv sync wrote where the project had none is
// removed: the repository stays as its commit has it.
func (in *installer) runUV(ctx context.Context, st *env.Step) error {
	prefix, _, _ := splitCd(st.Command)
	dir := strings.TrimSuffix(strings.TrimPrefix(prefix, "cd "), " && ")
	lockPath := filepath.Join(in.repo, dir, "uv.lock")
	_, err := os.Stat(lockPath)
	hadLock := err == nil
	line := uvLine(st.Command, hadLock)
	st.Run = line
	fmt.Fprintf(in.log, "\n$ %s\n", line)
	res, err := in.execEnv(ctx, line, "", in.uvEnv())
	if err != nil {
		return err
	}
	if !hadLock {
		rm := "rm -f " + testrun.Join([]string{filepath.Join(env.RepoRoot, dir, "uv.lock")})
		if _, err := in.s.Exec(ctx, sandbox.Cmd{Shell: rm, Timeout: time.Minute}); err != nil {
			return fmt.Errorf("remove the uv.lock uv wrote: %w", err)
		}
	}
	st.Status, st.Note = "ok", fmt.Sprintf("with uv %s (from %s)", uvVersion, in.uv.from)
	if !res.Success() {
		out := string(res.Stdout) + "\n" + string(res.Stderr)
		ok, err := in.syncWithoutRust(ctx, st, line, dir, out)
		if err != nil {
			return err
		}
		if ok {
			return in.readUVLock(ctx)
		}
		st.Status, st.Note = "failed", fmt.Sprintf("uv %s: %s: %s; %s", uvVersion, res.Describe(), firstError(out), in.failHint(out))
		return nil
	}
	return in.readUVLock(ctx)
}

// readUVLock replaces the lock with what the venv now holds (uv sync
// removes what its lock does not name), each with its source and digest
// (cwmuvlock.py).
func (in *installer) readUVLock(ctx context.Context) error {
	type known struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		URL     string `json:"url"`
		SHA256  string `json:"sha256"`
	}
	ks := []known{}
	for _, p := range in.lock {
		ks = append(ks, known{p.Name, p.Version, p.URL, p.SHA256})
	}
	data, err := json.Marshal(ks)
	if err != nil {
		return err
	}
	if err := in.s.WriteFile(ctx, uvLockKnown, data, 0o644); err != nil {
		return fmt.Errorf("write the lock into the sandbox: %w", err)
	}
	if err := in.s.WriteFile(ctx, uvLockScript, []byte(cwmUVLock), 0o644); err != nil {
		return fmt.Errorf("write the uv lock reader into the sandbox: %w", err)
	}
	args := []string{env.VenvRoot + "/bin/python", "-I", uvLockScript, toolsPipLib, uvLockKnown}
	if in.egress != nil && in.egress.IndexURL != "" {
		args = append(args, in.egress.IndexURL)
		args = append(args, in.egress.ExtraIndexURLs...)
	}
	res, err := in.s.Exec(ctx, sandbox.Cmd{Args: args, Dir: "/", Timeout: in.timeout, Env: in.proxyEnv, Stderr: in.log, Capture: 64 << 20})
	if err != nil {
		return fmt.Errorf("read what uv installed: %w", err)
	}
	if !res.Success() {
		return fmt.Errorf("read what uv installed: %s: %s", res.Describe(), testrun.LastLine(res.Stderr))
	}
	lock, err := addReport(nil, res.Stdout)
	if err != nil {
		return fmt.Errorf("read what uv installed: %w", err)
	}
	in.lock = lock
	return nil
}

// runTranslated runs a uv install line as pip steps (unwrapLine): what
// offline and --wheelhouse builds do, and online ones without uv, whose
// note says why.
func (in *installer) runTranslated(ctx context.Context, st *env.Step) error {
	start := time.Now()
	defer func() { st.Seconds = roundSeconds(time.Since(start)) }()
	lines := unwrapLine(st.Command, in.repo)
	if in.mode == env.ModeOnline && !in.locked && in.uv.why != "" {
		defer addNote(st, in.uv.why+"; translated to pip")
	}
	if len(lines) == 0 {
		st.Status, st.Note = "skipped", "installs only tooling"
		fmt.Fprintf(in.log, "\n$ %s\n(skipped: %s)\n", st.Command, st.Note)
		return nil
	}
	// The step's status is its worst line's: failed, partial, ok, then
	// skipped (every line skipped).
	rank := map[string]int{"skipped": 0, "ok": 1, "partial": 2, "failed": 3}
	var runs []string
	st.Status = "skipped"
	for _, l := range lines {
		if isUVInstall(l) {
			continue // not translated: never run as written
		}
		sub := env.Step{Command: l, Provenance: st.Provenance}
		if err := in.run(ctx, &sub); err != nil {
			return err
		}
		run := sub.Run
		if run == "" {
			run = sub.Command
		}
		runs = append(runs, run)
		if rank[sub.Status] > rank[st.Status] {
			st.Status = sub.Status
		}
		if sub.Note != "" {
			addNote(st, sub.Note)
		}
	}
	st.Run = strings.Join(runs, " && ")
	return nil
}
