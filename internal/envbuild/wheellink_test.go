package envbuild

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/egress/indextest"
	"cwm/internal/env"
)

// linkDep is a dependency with what an installer must place: a console
// script (entry_points.txt), a script of the .data directory with a
// #!python line, and a module under .data/purelib.
var linkDep = indextest.Wheel{Name: "cwmdep", Version: "1.0",
	Module: "__version__ = '1.0'\n\n\ndef hi():\n    print('hi from cwmdep')\n",
	Files: map[string]string{
		"{info}/entry_points.txt":     "[console_scripts]\ncwmdep-hi = cwmdep:hi\n",
		"{data}/scripts/cwmdep-raw":   "#!python\nprint('raw from cwmdep')\n",
		"{data}/purelib/cwmextra.py":  "EXTRA = 'extra'\n",
		"{info}/licenses/LICENSE.txt": "a license\n",
	}}

// linkTests use the script, the extra module and the project through its
// editable install: the baseline passes only if the installer placed
// them all.
const linkTests = `import subprocess
import sys
import unittest

import cwmextra
import cwmproj


class TestLinked(unittest.TestCase):
    def test_project(self):
        self.assertEqual(cwmproj.VERSION, "1.0")
        self.assertEqual(cwmextra.EXTRA, "extra")

    def test_scripts(self):
        out = subprocess.run(["/venv/bin/cwmdep-hi"], capture_output=True, text=True, check=True).stdout
        self.assertEqual(out, "hi from cwmdep\n")
        # Not executable: the wheel's mode says so, and pip keeps it.
        out = subprocess.run([sys.executable, "/venv/bin/cwmdep-raw"], capture_output=True, text=True, check=True).stdout
        self.assertEqual(out, "raw from cwmdep\n")
`

// TestLockedRebuildLinks: a rebuild from the lock whose wheels are all in
// the wheel cache links them, and the project's editable install, into
// the venv instead of running pip, and gets the venv pip made: the same
// files with the same bytes (scripts included), the same distributions
// and versions, the same baseline. A file changed in the unpacked cache
// is unpacked again from the wheel (checked against its RECORD); a
// cached wheel that no longer matches the lock's sha256 is not used, and
// pip takes the file from the index with its hash required.
func TestLockedRebuildLinks(t *testing.T) {
	ix := indextest.Start(t, linkDep, indextest.Wheel{Name: "cwmbackend", Version: "0.3", Module: cwmBackend})
	opts, cold := backendProjectBuild(t, ix, "test_linked.py", linkTests)
	home := opts.Home

	locked := opts
	locked.Lock, locked.Force = cold.Lock, true
	before := len(ix.Requests())
	warm := mustBuild(t, locked)
	if !warm.Usable {
		t.Fatalf("Build(--locked) = unusable: %s\n%s", warm.Reason, readFile(t, warm.File(env.BuildLog)))
	}
	if reqs := ix.Requests()[before:]; len(reqs) > 0 {
		t.Errorf("Build(--locked) asked the index %v, want nothing", reqs)
	}
	for i, want := range []string{"wheels linked from the unpacked-wheel cache", "linked from the editable cache"} {
		if st := warm.Install[i+1]; st.Status != "ok" || !strings.Contains(st.Run, want) {
			t.Errorf("Build(--locked) step %q = %s, ran %q; want ok, %q", st.Command, st.Status, st.Run, want)
		}
	}
	if diff := cmp.Diff(cold.Baseline, warm.Baseline); diff != "" {
		t.Errorf("Build(--locked) baseline (-cold +warm):\n%s", diff)
	}
	if a, b := env.LockRequirements(warm.Lock), env.LockRequirements(cold.Lock); a != b {
		t.Errorf("Build(--locked) lock =\n%s\nwant\n%s", a, b)
	}
	if diff := cmp.Diff(venvFiles(t, cold), venvFiles(t, warm)); diff != "" {
		t.Errorf("the venv of Build(--locked) against pip's (-pip +linked):\n%s", diff)
	}

	// A file of the unpacked cache replaced: unpacked again, and the
	// layer gets the wheel's bytes.
	dep := lockEntry(t, cold.Lock, "cwmdep")
	planted := filepath.Join(unpackedCacheDir(home), dep.SHA256, "cwmdep.py")
	if err := os.Remove(planted); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, []byte("__version__ = '1.0'\nTAMPERED = True\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again := mustBuild(t, locked)
	if st := again.Install[1]; !again.Usable || !strings.Contains(st.Note, "unpacked again") || !strings.Contains(st.Note, "cwmdep") {
		t.Errorf("Build(--locked, a changed unpacked file) = usable %v, step note %q; want usable, cwmdep unpacked again", again.Usable, st.Note)
	}
	got := readFile(t, filepath.Join(again.LayerDir(), "venv/lib/python"+majorMinor(again.Python)+"/site-packages/cwmdep.py"))
	if bytes.Contains(got, []byte("TAMPERED")) {
		t.Errorf("Build(--locked, a changed unpacked file) installed it:\n%s", got)
	}

	// The cached wheel itself changed: not used; pip fetches the lock's
	// file from the index and checks its hash.
	cachedWheel := filepath.Join(wheelCacheDir(home), dep.SHA256, filepath.Base(dep.URL))
	data := readFile(t, cachedWheel)
	if err := os.Remove(cachedWheel); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cachedWheel, append(data, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	before = len(ix.Requests())
	fetched := mustBuild(t, locked)
	if st := fetched.Install[1]; !fetched.Usable || strings.Contains(st.Run, "linked") || len(ix.Requests()) == before {
		t.Errorf("Build(--locked, a changed cached wheel) = usable %v, ran %q, %d index requests; want usable, pip from the index", fetched.Usable, st.Run, len(ix.Requests())-before)
	}
}

// venvFiles maps each file of an environment's venv to its bytes (a
// symlink to its target), less what differs by design between installers:
// bytecode (compiled on import), INSTALLER (pip or cwm), REQUESTED (pip
// marks only what was asked for by name) and RECORD, whose paths are
// compared instead.
func venvFiles(t *testing.T, e *env.Env) map[string]string {
	t.Helper()
	root := filepath.Join(e.LayerDir(), "venv")
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir() && d.Name() == "__pycache__":
			return filepath.SkipDir
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			out[rel] = "-> " + link
			return err
		}
		switch d.Name() {
		case "INSTALLER", "REQUESTED":
			return nil
		case "RECORD":
			var paths []string
			for _, line := range strings.Split(string(readFile(t, p)), "\n") {
				if path, _, _ := strings.Cut(line, ","); path != "" && !strings.Contains(path, "__pycache__") &&
					!strings.HasSuffix(path, "/INSTALLER") && !strings.HasSuffix(path, "/REQUESTED") {
					paths = append(paths, path)
				}
			}
			slices.Sort(paths)
			out[rel] = strings.Join(paths, "\n")
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[rel] = info.Mode().String() + " " + string(readFile(t, p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func lockEntry(t *testing.T, lock []env.LockedPackage, name string) env.LockedPackage {
	t.Helper()
	for _, p := range lock {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("lock has no %s: %+v", name, lock)
	return env.LockedPackage{}
}

// TestWheelFits: the tags a linked wheel may have; anything else goes to
// pip.
func TestWheelFits(t *testing.T) {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	if arch == "" {
		t.Skipf("no Linux wheel tags for %s", runtime.GOARCH)
	}
	tests := []struct {
		file, python string
		want         bool
	}{
		{"click-8.3.2-py3-none-any.whl", "3.11", true},
		{"six-1.17.0-py2.py3-none-any.whl", "3.9", true},
		{"typing_extensions-4.0-py310-none-any.whl", "3.11", true},
		{"typing_extensions-4.0-py312-none-any.whl", "3.11", false},
		{"greenlet-3.4.0-cp311-cp311-manylinux_2_24_" + arch + ".manylinux_2_28_" + arch + ".whl", "3.11", true},
		{"greenlet-3.4.0-cp311-cp311-manylinux_2_24_" + arch + ".whl", "3.12", false},
		{"cryptography-46.0-cp39-abi3-manylinux_2_28_" + arch + ".whl", "3.11", true},
		{"cryptography-46.0-cp312-abi3-manylinux_2_28_" + arch + ".whl", "3.11", false},
		{"markupsafe-3.0.3-cp311-cp311-win_amd64.whl", "3.11", false},
		{"markupsafe-3.0.3-cp311-cp311-macosx_11_0_arm64.whl", "3.11", false},
		{"foo-1.0-py2-none-any.whl", "3.11", false},
		{"foo-1.0.tar.gz", "3.11", false},
		{"foo-1.0-1-py3-none-any.whl", "3.11", true}, // a build tag
	}
	for _, tt := range tests {
		if got := wheelFits(tt.file, tt.python); got != tt.want {
			t.Errorf("wheelFits(%q, %q) = %v, want %v", tt.file, tt.python, got, tt.want)
		}
	}
}

// TestUnpackWheelRecord: a wheel whose file does not match its own RECORD
// is not unpacked (the file named, the cache's tree left as it was); one
// that matches is, executables kept executable.
func TestUnpackWheelRecord(t *testing.T) {
	good := "m.py,sha256=" + b64sha("x = 1\n") + ",6\nbin/tool,sha256=" + b64sha("#!/bin/sh\n") + ",10\nm-1.dist-info/RECORD,,\n"
	bad := strings.Replace(good, b64sha("x = 1\n"), b64sha("x = 2\n"), 1)
	for _, tt := range []struct {
		name, record, wantBad string
	}{{"good", good, ""}, {"bad", bad, "m.py"}} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, f := range []struct {
			name, text string
			mode       os.FileMode
		}{{"m.py", "x = 1\n", 0o644}, {"bin/tool", "#!/bin/sh\n", 0o755}, {"m-1.dist-info/RECORD", tt.record, 0o644}} {
			h := &zip.FileHeader{Name: f.name, Method: zip.Deflate}
			h.SetMode(f.mode)
			w, err := zw.CreateHeader(h)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte(f.text))
		}
		zw.Close()
		zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		_, record, err := wheelRecord(zr)
		if err != nil {
			t.Fatalf("wheelRecord(%s) = %v", tt.name, err)
		}
		dir := filepath.Join(t.TempDir(), "tree")
		gotBad, err := unpackWheel(zr, dir, record)
		if err != nil || gotBad != tt.wantBad {
			t.Errorf("unpackWheel(%s) = %q, %v; want %q", tt.name, gotBad, err, tt.wantBad)
		}
		fi, err := os.Stat(filepath.Join(dir, "bin/tool"))
		switch {
		case tt.wantBad != "" && err == nil:
			t.Errorf("unpackWheel(%s) left a tree", tt.name)
		case tt.wantBad == "" && (err != nil || fi.Mode().Perm() != 0o755):
			t.Errorf("unpackWheel(%s): bin/tool = %v, %v; want mode 0755", tt.name, fi, err)
		}
	}
}

func b64sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
