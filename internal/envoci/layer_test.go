package envoci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"cwm/internal/env"
	"cwm/internal/env/envtest"
	"cwm/internal/layertar"
)

// fixed is the modification time of the fixture's files.
var fixed = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// writeTree writes files (name -> content; "->target" makes a symbolic
// link) under dir, with the fixed time.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		c := files[n]
		if target, ok := strings.CutPrefix(c, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	touchAll(t, dir)
}

// touchAll gives every file under dir the fixed time, as a build that
// made them at the same moment would.
func touchAll(t *testing.T, dir string) {
	t.Helper()
	ts := unix.NsecToTimespec(fixed.UnixNano())
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	})
	for i := len(paths) - 1; i >= 0; i-- {
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, paths[i], []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
	}
}

// venvFiles is a virtual environment two fixtures share byte for byte.
var venvFiles = map[string]string{
	"venv/pyvenv.cfg":          "home = /usr/bin\nversion = 3.11.2\n",
	"venv/bin/python":          "->/usr/bin/python3",
	"venv/bin/python3":         "->python",
	"venv/lib/site.pth":        "/repo\n",
	"venv/lib/pkg/__init__.py": "VERSION = '1.0'\n",
}

// putEnv makes a usable environment id in home's store: a repository
// with src (its files), the shared venv, a baseline, a coverage map and a
// build log.
// testBaseline is putEnv's baseline.json.
const testBaseline = `[{"id":"tests/test_a.py::test_a","status":"pass","outcomes":["pass"],"seconds":[0.1]}]` + "\n"

func putEnv(t *testing.T, home, id string, src map[string]string) *env.Env {
	t.Helper()
	layer := filepath.Join(t.TempDir(), "layer")
	files := map[string]string{"repo/.git/HEAD": "ref: refs/heads/main\n", "repo/link": "->pkg/mod.py"}
	for n, c := range src {
		files["repo/"+n] = c
	}
	for n, c := range venvFiles {
		files[n] = c
	}
	writeTree(t, layer, files)
	// A hard link, a read-only directory and an executable, as installs
	// leave them.
	if err := os.Link(filepath.Join(layer, "repo/pkg/mod.py"), filepath.Join(layer, "repo/pkg/mod_alias.py")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(layer, "venv/lib/pkg/__init__.py"), 0o755)
	os.Chmod(filepath.Join(layer, "repo/.git"), 0o555)
	touchAll(t, layer)
	e := envtest.Put(t, home, id, layer)
	// An ordinary user cannot remove what a read-only directory holds.
	t.Cleanup(func() { os.Chmod(filepath.Join(e.LayerDir(), "repo/.git"), 0o755) })
	if err := os.WriteFile(e.File(env.CoverageFile), []byte(`{"tests":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.File(env.BuildLog), []byte("$ pip install -e .\nok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.File(env.BaselineFile), []byte(testBaseline), 0o644); err != nil {
		t.Fatal(err)
	}
	return env.NewStore(home).Get(id)
}

// entry is what a tree holds at one path, as compared across machines.
type entry struct {
	Mode  fs.FileMode
	Uid   uint32
	Mtime int64
	Data  string // content or link target
	Links uint64
}

func snapshot(t *testing.T, root string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil // the layer's own directory is the store's business
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fi, _ := d.Info()
		e := entry{Mode: fi.Mode(), Uid: st.Uid, Mtime: st.Mtim.Sec, Links: uint64(st.Nlink)}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Data, _ = os.Readlink(p)
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			e.Data = string(b)
		default:
			e.Links = 0 // a directory's count depends on its subdirectories only
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPackIsATreeRoundTrip(t *testing.T) {
	e := putEnv(t, t.TempDir(), "aaaa", map[string]string{"pkg/mod.py": "def f():\n    return 1\n"})
	for _, top := range []string{"repo", "venv"} {
		var a, b bytes.Buffer
		pa, err := layertar.Pack(&a, e.LayerDir(), top)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := layertar.Pack(&b, e.LayerDir(), top)
		if err != nil {
			t.Fatal(err)
		}
		if pa != pb || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("layertar.Pack(%s) twice = %+v and %+v: the same tree must give the same blob", top, pa, pb)
		}
		if got := fmt.Sprintf("sha256:%x", sha256.Sum256(a.Bytes())); got != pa.Digest || int64(a.Len()) != pa.Size {
			t.Errorf("layertar.Pack(%s) digest %s size %d, the bytes are %s, %d", top, pa.Digest, pa.Size, got, a.Len())
		}
		dst := t.TempDir()
		if err := unpackInto(t, &a, dst, top, pa.DiffID, pa.TarSize); err != nil {
			t.Fatalf("unpackLayer(%s): %v", top, err)
		}
		want := snapshot(t, filepath.Join(e.LayerDir(), top))
		if diff := cmp.Diff(want, snapshot(t, filepath.Join(dst, top))); diff != "" {
			t.Errorf("%s after pack and unpack (-before +after):\n%s", top, diff)
		}
	}
}

// unpackInto unpacks one layer blob into dst, as install does.
func unpackInto(t *testing.T, r io.Reader, dst, top, diffID string, size int64) error {
	t.Helper()
	u, err := layertar.New(dst, layertar.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if err := unpackLayer(r, u, top, diffID, size); err != nil {
		return err
	}
	return u.Finish()
}

// hostileTar is a layer blob of the given entries.
func hostileTar(t *testing.T, hdrs []*tar.Header, bodies []string, trailer string) ([]byte, string, int64) {
	t.Helper()
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for i, h := range hdrs {
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(bodies[i]))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(bodies[i]))
	}
	tw.Close()
	tarBuf.WriteString(trailer)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(tarBuf.Bytes())
	zw.Close()
	return gz.Bytes(), fmt.Sprintf("sha256:%x", sha256.Sum256(tarBuf.Bytes())), int64(tarBuf.Len())
}

func TestUnpackRefusesHostileLayers(t *testing.T) {
	reg := func(name string) *tar.Header { return &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg} }
	cases := []struct {
		name   string
		hdrs   []*tar.Header
		bodies []string
		want   string
	}{
		{"up and out", []*tar.Header{reg("repo/../../escape")}, []string{"x"}, "outside the destination"},
		{"absolute", []*tar.Header{reg("/etc/escape")}, []string{"x"}, "outside the destination"},
		{"another layer's directory", []*tar.Header{reg("venv/bin/python")}, []string{"x"}, "outside its directory repo/"},
		{"through a symbolic link", []*tar.Header{
			{Name: "repo/l", Typeflag: tar.TypeSymlink, Linkname: "/tmp"}, reg("repo/l/escape")},
			[]string{"", "x"}, "goes through a symbolic link"},
		{"hard link outside", []*tar.Header{{Name: "repo/h", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}}, []string{""}, "outside the destination"},
		{"hard link to a link", []*tar.Header{
			{Name: "repo/l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, {Name: "repo/h", Typeflag: tar.TypeLink, Linkname: "repo/l"}},
			[]string{"", ""}, "not a regular file this unpack extracted"},
		{"device", []*tar.Header{{Name: "repo/null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}, []string{""}, "is a device"},
		{"twice", []*tar.Header{reg("repo/a"), reg("repo/a")}, []string{"1", "2"}, "file exists"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			outside := t.TempDir()
			dst := filepath.Join(outside, "layer")
			os.Mkdir(dst, 0o755)
			blob, diffID, size := hostileTar(t, c.hdrs, c.bodies, "")
			err := unpackInto(t, bytes.NewReader(blob), dst, "repo", diffID, size)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("unpackLayer = %v, want an error containing %q", err, c.want)
			}
			if _, err := os.Stat(filepath.Join(outside, "escape")); err == nil {
				t.Errorf("a file was written outside the layer")
			}
		})
	}
	// What the manifest says of the tar holds.
	blob, diffID, size := hostileTar(t, []*tar.Header{reg("repo/a")}, []string{"hello"}, "")
	for _, c := range []struct {
		name   string
		diffID string
		size   int64
		want   string
	}{
		{"longer than said", diffID, size - 512, "holds"},
		{"shorter than said", diffID, size + 1, "holds"},
		{"another digest", "sha256:" + strings.Repeat("0", 64), size, "its tar's digest is"},
	} {
		err := unpackInto(t, bytes.NewReader(blob), t.TempDir(), "repo", c.diffID, c.size)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: unpackLayer = %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// Set-user-id and set-group-id bits are dropped; the rest is kept.
	blob, diffID, size = hostileTar(t, []*tar.Header{{Name: "repo/suid", Mode: 0o6755, Typeflag: tar.TypeReg}}, []string{"#!/bin/sh\n"}, "")
	dst := t.TempDir()
	if err := unpackInto(t, bytes.NewReader(blob), dst, "repo", diffID, size); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dst, "repo/suid"))
	if err != nil || fi.Mode() != 0o755 {
		t.Errorf("a set-user-id file unpacked with mode %v (%v), want 0755", fi.Mode(), err)
	}
}
