package layertar

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"cwm/internal/layertar/layertartest"
)

// ent is a tar entry of a test: a header and, for a file, its content.
type ent struct {
	hdr  tar.Header
	body string
}

func dir(name string) ent {
	return ent{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}
func file(name, body string) ent {
	return ent{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644}, body: body}
}
func symlink(name, to string) ent {
	return ent{hdr: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: to}}
}
func hardlink(name, to string) ent {
	return ent{hdr: tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: to}}
}

// tarOf writes the entries as a tar.
func tarOf(t *testing.T, ents ...ent) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range ents {
		h := e.hdr
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(e.body))
		}
		if h.ModTime.IsZero() {
			h.ModTime = time.Unix(1714564800, 0)
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("tar header %s: %v", h.Name, err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatalf("tar body %s: %v", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// canary is a file outside the destination that no layer may reach.
type canary struct {
	path string
	st   unix.Stat_t
}

func newCanary(t *testing.T, dir string) *canary {
	t.Helper()
	c := &canary{path: filepath.Join(dir, "canary")}
	if err := os.WriteFile(c.path, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Unix(1600000000, 0)
	os.Chtimes(c.path, old, old)
	if err := unix.Lstat(c.path, &c.st); err != nil {
		t.Fatal(err)
	}
	return c
}

// check fails the test if the canary was linked, changed or touched, or
// if anything appeared beside it.
func (c *canary) check(t *testing.T) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(c.path, &st); err != nil {
		t.Fatalf("canary: %v", err)
	}
	data, _ := os.ReadFile(c.path)
	if st.Nlink != c.st.Nlink || st.Mtim != c.st.Mtim || st.Mode != c.st.Mode || string(data) != "secret" {
		t.Errorf("the canary changed: links %d (was %d), mtime %v (was %v), mode %o, content %q", st.Nlink, c.st.Nlink, st.Mtim, c.st.Mtim, st.Mode, data)
	}
	ents, _ := os.ReadDir(filepath.Dir(c.path))
	for _, e := range ents {
		if e.Name() != "canary" && e.Name() != "dst" {
			t.Errorf("%s appeared beside the canary", e.Name())
		}
	}
}

// bothWays runs f with openat2, and with the walk that stands in for it
// on kernels without.
func bothWays(t *testing.T, f func(t *testing.T)) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "openat2", true: "walk"}[walk], func(t *testing.T) {
			noOpenat2.Store(walk)
			defer noOpenat2.Store(false)
			f(t)
		})
	}
}

func unpack(t *testing.T, dst string, o Options, l Layer, tars ...[]byte) error {
	t.Helper()
	u, err := New(dst, o)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	for _, data := range tars {
		if l.Size == 0 {
			l.Size = int64(len(data))
		}
		if err := u.Layer(bytes.NewReader(data), l); err != nil {
			return err
		}
	}
	return u.Finish()
}

func TestRefused(t *testing.T) {
	type tc struct {
		name string
		tar  func(outside string) []byte
		o    Options
		l    Layer
		want string
	}
	cases := []tc{
		{"hard link through the layer's own symlink", func(out string) []byte {
			return tarOf(t, dir("repo/"), symlink("repo/s", out), hardlink("repo/h", "repo/s/canary"))
		}, Options{}, Layer{Top: "repo"}, `entry "repo/h" (a hard link to repo/s/canary) goes through a symbolic link`},
		{"up and out", func(string) []byte { return tarOf(t, file("repo/../../canary", "x")) }, Options{}, Layer{}, "lies outside the destination"},
		{"absolute", func(out string) []byte { return tarOf(t, file(out+"/canary", "x")) }, Options{}, Layer{}, "lies outside the destination"},
		{"outside its top", func(string) []byte { return tarOf(t, file("venv/x", "x")) }, Options{}, Layer{Top: "repo"}, "outside its directory repo/"},
		{"a file through a symlink", func(out string) []byte {
			return tarOf(t, symlink("repo/s", out), file("repo/s/canary", "owned"))
		}, Options{}, Layer{}, `entry "repo/s/canary" goes through a symbolic link`},
		{"a directory through a symlink", func(out string) []byte {
			return tarOf(t, symlink("s", out), dir("s/d/"))
		}, Options{}, Layer{}, "goes through a symbolic link"},
		{"hard link to an absolute path", func(out string) []byte {
			return tarOf(t, hardlink("h", out+"/canary"))
		}, Options{}, Layer{}, "lies outside the destination"},
		{"hard link up and out", func(string) []byte { return tarOf(t, hardlink("h", "../canary")) }, Options{}, Layer{}, "lies outside the destination"},
		{"hard link to a symlink", func(out string) []byte {
			return tarOf(t, symlink("s", out+"/canary"), hardlink("h", "s"))
		}, Options{}, Layer{}, "not a regular file this unpack extracted"},
		{"hard link to a file it did not extract", func(string) []byte { return tarOf(t, hardlink("h", "old")) }, Options{}, Layer{}, "not a regular file this unpack extracted"},
		{"a symlink loop", func(string) []byte {
			return tarOf(t, symlink("a", "b"), symlink("b", "a"), file("a/x", "x"))
		}, Options{}, Layer{}, "goes through a symbolic link"},
		{"a character device", func(string) []byte {
			return tarOf(t, ent{hdr: tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}})
		}, Options{}, Layer{}, `entry "null" is a device`},
		{"a block device", func(string) []byte {
			return tarOf(t, ent{hdr: tar.Header{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8}})
		}, Options{}, Layer{}, "is a device"},
		{"a FIFO", func(string) []byte { return tarOf(t, ent{hdr: tar.Header{Name: "p", Typeflag: tar.TypeFifo}}) }, Options{}, Layer{}, "is a FIFO"},
		{"GNU sparse", func(string) []byte { return layertartest.GNUSparse("big", 3<<30) }, Options{}, Layer{}, `entry "big" is a sparse file (GNU)`},
		{"PAX sparse", func(string) []byte { return layertartest.PAXSparse("big", 3<<30) }, Options{}, Layer{}, "is a sparse file (PAX GNU.sparse."},
		{"a whiteout in an environment", func(string) []byte { return tarOf(t, file("repo/.wh.x", "")) }, Options{}, Layer{}, "is an OCI whiteout"},
		{"a whiteout aimed outside", func(string) []byte { return tarOf(t, file("../.wh.canary", "")) }, Options{Whiteouts: true}, Layer{}, "lies outside the destination"},
		{"a whiteout through a symlink", func(out string) []byte {
			return tarOf(t, symlink("s", out), file("s/.wh.canary", ""))
		}, Options{Whiteouts: true}, Layer{}, "goes through a symbolic link"},
		{"larger than its descriptor", func(string) []byte { return tarOf(t, file("big", strings.Repeat("x", 4096))) }, Options{}, Layer{Size: 2048},
			`entry "big" declares 4096 bytes, more than the 1536 left of the 2048 bytes of tar its descriptor declares`},
		{"past the entry cap", func(string) []byte { return tarOf(t, dir("a/"), file("a/1", ""), file("a/2", ""), file("a/3", "")) }, Options{MaxEntries: 3}, Layer{},
			`entry "a/3": more than 3 entries`},
		{"past the unpacked ceiling", func(string) []byte {
			return tarOf(t, file("a", strings.Repeat("x", 5000)), file("b", strings.Repeat("x", 5000)))
		}, Options{MaxBytes: 10000}, Layer{}, `entry "b" declares 8192 bytes, past the ceiling of 10000 bytes unpacked (--max-unpacked) with the 8192 before it`},
		{"a name past PATH_MAX", func(string) []byte {
			return tarOf(t, file(strings.Repeat("d/", 2100)+"x", ""))
		}, Options{}, Layer{}, "past PATH_MAX"},
		{"a component past NAME_MAX", func(string) []byte { return tarOf(t, file(strings.Repeat("n", 300), "")) }, Options{}, Layer{}, "past NAME_MAX"},
		{"twice the same file", func(string) []byte { return tarOf(t, file("a", "1"), file("a", "2")) }, Options{}, Layer{}, "file exists"},
		{"a file where a directory is", func(string) []byte { return tarOf(t, file("a", "1"), file("a/b", "2")) }, Options{}, Layer{}, "which is not a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bothWays(t, func(t *testing.T) {
				outside := t.TempDir()
				can := newCanary(t, outside)
				dst := filepath.Join(outside, "dst")
				os.Mkdir(dst, 0o755)
				if c.name == "hard link to a file it did not extract" {
					os.WriteFile(filepath.Join(dst, "old"), []byte("x"), 0o644)
				}
				l := c.l
				l.Name = "L"
				err := unpack(t, dst, c.o, l, c.tar(outside))
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "layer L: ") {
					t.Fatalf("unpack = %v, want an error naming the layer and containing %q", err, c.want)
				}
				can.check(t)
			})
		})
	}
}

// tree is what a directory holds, as compared here.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st unix.Stat_t
		unix.Lstat(p, &st)
		desc := fmt.Sprintf("%v links=%d mtime=%d", fi.Mode(), st.Nlink, fi.ModTime().Unix())
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			desc += " -> " + l
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			desc += " " + string(b)
		}
		out[rel] = desc
		return nil
	})
	return out
}

func TestUnpacks(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		dst := t.TempDir()
		ro := dir("repo/ro/")
		ro.hdr.Mode = 0o555
		suid := file("repo/suid", "#!/bin/sh\n")
		suid.hdr.Mode = 0o6755
		data := tarOf(t, dir("repo/"), file("repo/a", "A"), symlink("repo/s", "/etc"), hardlink("repo/h", "repo/a"),
			file("repo/deep/er/f", "F"), ro, file("repo/ro/x", "X"), suid)
		if err := unpack(t, dst, Options{}, Layer{Name: "repo/", Top: "repo"}, data); err != nil {
			t.Fatal(err)
		}
		const m = " mtime=1714564800"
		want := map[string]string{
			"repo":           "drwxr-xr-x links=4" + m,
			"repo/a":         "-rw-r--r-- links=2" + m + " A",
			"repo/h":         "-rw-r--r-- links=2" + m + " A",
			"repo/s":         "Lrwxrwxrwx links=1" + m + " -> /etc",
			"repo/suid":      "-rwxr-xr-x links=1" + m + " #!/bin/sh\n",
			"repo/ro":        "dr-xr-xr-x links=2" + m,
			"repo/ro/x":      "-rw-r--r-- links=1" + m + " X",
			"repo/deep":      "drwxr-xr-x links=3",
			"repo/deep/er":   "drwxr-xr-x links=2",
			"repo/deep/er/f": "-rw-r--r-- links=1" + m + " F",
		}
		got := tree(t, dst)
		// Directories the tar does not list get the time they were made.
		for _, d := range []string{"repo/deep", "repo/deep/er"} {
			got[d] = got[d][:strings.Index(got[d], " mtime=")]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("unpacked tree (-want +got):\n%s", diff)
		}
		os.Chmod(filepath.Join(dst, "repo/ro"), 0o755)
	})
}

func TestWhiteouts(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		dst := t.TempDir()
		lower := tarOf(t, dir("a/"), file("a/x", "1"), file("a/y", "2"), dir("b/"), file("b/old", "3"), dir("c/"), file("c/z", "4"))
		upper := tarOf(t, file("a/.wh.x", ""), file("b/new", "5"), file("b/.wh..wh..opq", ""), file(".wh.c", ""), file(".wh.nothing", ""))
		stack(t, dst, lower, upper)
		var got []string
		for n := range tree(t, dst) {
			got = append(got, n)
		}
		want := []string{"a", "a/y", "b", "b/new"}
		if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
			t.Errorf("after the whiteouts (-want +got):\n%s", diff)
		}
	})
}

// TestLayersReplace: an image's layer replaces what a lower one put at the
// same name (a file rewritten, a link made a file, a directory made a
// file), as OCI layers stack; a directory over a directory merges.
func TestLayersReplace(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		dst := t.TempDir()
		lower := tarOf(t, dir("a/"), file("a/x", "1"), symlink("a/l", "x"), dir("d/"), file("d/y", "2"), dir("m/"), file("m/old", "3"))
		upper := tarOf(t, file("a/x", "new"), file("a/l", "file"), file("d", "was a directory"), dir("m/"), file("m/new", "4"))
		stack(t, dst, lower, upper)
		for name, want := range map[string]string{"a/x": "new", "a/l": "file", "d": "was a directory", "m/old": "3", "m/new": "4"} {
			fi, err := os.Lstat(filepath.Join(dst, name))
			b, _ := os.ReadFile(filepath.Join(dst, name))
			if err != nil || !fi.Mode().IsRegular() || string(b) != want {
				t.Errorf("%s: %v, %v, %q; want the file %q", name, fi, err, b, want)
			}
		}
	})
}

// stack unpacks an image's layers into dst, lowest first.
func stack(t *testing.T, dst string, layers ...[]byte) {
	t.Helper()
	u, err := New(dst, Options{Whiteouts: true})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	for i, data := range layers {
		if err := u.Layer(bytes.NewReader(data), Layer{Name: fmt.Sprint(i), Size: int64(len(data))}); err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
	}
	if err := u.Finish(); err != nil {
		t.Fatal(err)
	}
}

var cmpSorted = cmp.Transformer("sort", func(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
})
