package basebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
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
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"cwm/internal/base"
	"cwm/internal/envoci/ocitest"
	"cwm/internal/errkind"
)

// tarLayer is a layer of the test's image: its entries, name -> content
// ("/" at the end of a name: a directory).
func tarLayer(t *testing.T, ents ...string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i < len(ents); i += 2 {
		n, body := ents[i], ents[i+1]
		h := &tar.Header{Name: n, Mode: 0o644, ModTime: time.Unix(1714564800, 0), Typeflag: tar.TypeReg, Size: int64(len(body))}
		if strings.HasSuffix(n, "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// testImage is a three-layer image without Python, /proc, /dev or /tmp:
// the second layer removes a file (a whiteout), empties a directory of
// what the first put there (an opaque directory) and removes a directory;
// the configuration sets Env, WorkingDir and User.
func testImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image,
		tarLayer(t, "etc/", "", "etc/passwd", "root:x:0:0::/root:/bin/sh\n", "a/", "", "a/x", "1", "a/y", "2",
			"b/", "", "b/old", "3", "c/", "", "c/z", "4", "work/", ""),
		tarLayer(t, "a/.wh.x", "", "b/", "", "b/.wh..wh..opq", "", "b/new", "5", ".wh.c", ""),
		tarLayer(t, "etc/motd", "hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config = v1.Config{Env: []string{"PATH=/opt/bin:/usr/bin", "FOO=bar"}, WorkingDir: "/work", User: "1000:1000"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// files lists a tree's regular files and directories with the content of
// the files.
func files(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel+"/"] = ""
		} else if data, err := os.ReadFile(p); err == nil {
			out[rel] = string(data)
		}
		return nil
	})
	return out
}

var wantTree = map[string]string{
	"etc/": "", "etc/passwd": "root:x:0:0::/root:/bin/sh\n", "etc/motd": "hello\n",
	"a/": "", "a/y": "2", "b/": "", "b/new": "5", "work/": "",
}

func writeLayout(t *testing.T, img v1.Image) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"})); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestImport(t *testing.T) {
	img := testImage(t)
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]func(t *testing.T) (string, string){
		base.KindLayout: func(t *testing.T) (string, string) { return writeLayout(t, img), digest.String() },
		base.KindArchive: func(t *testing.T) (string, string) {
			file := filepath.Join(t.TempDir(), "image.tar")
			tag, _ := name.NewTag("cwm.test/base:v1")
			if err := tarball.WriteToFile(file, tag, img); err != nil {
				t.Fatal(err)
			}
			return file, "" // docker save's manifest is go-containerregistry's own
		},
		base.KindRegistry: func(t *testing.T) (string, string) {
			reg := ocitest.Start(t, "", "")
			ref := reg.Host + "/cwm/base:v1"
			r, _ := name.ParseReference(ref)
			if err := remote.Write(r, img); err != nil {
				t.Fatal(err)
			}
			return ref, digest.String()
		},
	}
	for _, kind := range []string{base.KindLayout, base.KindArchive, base.KindRegistry} {
		t.Run(kind, func(t *testing.T) {
			ref, wantDigest := sources[kind](t)
			st := base.NewStore(t.TempDir())
			b, err := Import(context.Background(), st, ref, Options{Runtime: rt})
			if err != nil {
				t.Fatalf("Import(%s) = %v", ref, err)
			}
			if wantDigest != "" && b.Digest != wantDigest {
				t.Errorf("Import(%s).Digest = %s, want the image's %s", ref, b.Digest, wantDigest)
			}
			if diff := cmp.Diff(wantTree, files(t, b.Rootfs())); diff != "" {
				t.Errorf("Import(%s) rootfs (-want +got):\n%s", ref, diff)
			}
			got := struct {
				Env              []string
				WorkingDir, User string
				Layers           int
				Kind             string
				Py               *base.Python
			}{b.Env, b.WorkingDir, b.User, len(b.Layers), b.Source.Kind, b.Py}
			want := got
			want.Env, want.WorkingDir, want.User, want.Layers, want.Kind, want.Py = []string{"PATH=/opt/bin:/usr/bin", "FOO=bar"}, "/work", "1000:1000", 3, kind, nil
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Import(%s) base.json (-want +got):\n%s", ref, diff)
			}
			if _, err := b.Python(); err == nil || !strings.Contains(err.Error(), "has no Python") || errkind.Of(err) != errkind.Input {
				t.Errorf("Python() of a base without python3 = %v, want an input error saying it has no Python", err)
			}
			// Stored as read back: base.json and the blobs a push needs.
			again, err := st.Resolve(b.Short()[:8])
			if err != nil || again.Digest != b.Digest {
				t.Fatalf("Resolve(%s) = %v, %v", b.Short()[:8], again, err)
			}
			keep, err := st.Blobs()
			if err != nil {
				t.Fatal(err)
			}
			for d := range keep {
				if _, err := os.Stat(filepath.Join(st.Home, "blobs", "sha256", strings.TrimPrefix(d, "sha256:"))); err != nil {
					t.Errorf("blob %s of the base is not in the blob cache: %v", d, err)
				}
			}
			if len(keep) != 5 {
				t.Errorf("the base keeps %d blobs, want 5 (manifest, config, 3 layers)", len(keep))
			}
			// A second import finds it.
			b2, err := Import(context.Background(), st, ref, Options{Runtime: rt})
			if err != nil || b2.Digest != b.Digest || b2.CreatedAt != b.CreatedAt {
				t.Errorf("a second Import(%s) = %v, %v; want the stored base", ref, b2, err)
			}
		})
	}
}

// TestSandboxOnMinimalBase starts a sandbox on the imported image, which
// has no /proc, /dev or /tmp: the sandbox mounts its own there.
func TestSandboxOnMinimalBase(t *testing.T) {
	st := base.NewStore(t.TempDir())
	b, err := Import(context.Background(), st, writeLayout(t, testImage(t)), Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"proc", "dev", "tmp"} {
		if _, err := os.Lstat(filepath.Join(b.Rootfs(), d)); err == nil {
			t.Fatalf("the test image has /%s: it must not", d)
		}
	}
	ctx := context.Background()
	sb, err := rt.New(ctx, b.SandboxConfig())
	if err != nil {
		t.Fatalf("start a sandbox on a base without /proc, /dev, /tmp: %v", err)
	}
	defer sb.Close()
	for _, p := range []string{"/proc/self/status", "/dev/null", "/tmp", "/etc/motd"} {
		if _, err := sb.Stat(ctx, p); err != nil {
			t.Errorf("Stat(%s) in a sandbox on the base = %v", p, err)
		}
	}
	if err := sb.WriteFile(ctx, "/tmp/x", []byte("x"), 0o644); err != nil {
		t.Errorf("WriteFile(/tmp/x) = %v, want /tmp writable", err)
	}
	if got := sb.Config().Workdir; got != "/work" {
		t.Errorf("the sandbox's workdir = %q, want the image's /work", got)
	}
}

// TestCorruptLayerRefused flips a byte of the second layer's blob in a
// layout: the import names that layer and stores nothing.
func TestCorruptLayerRefused(t *testing.T) {
	img := testImage(t)
	dir := writeLayout(t, img)
	ls, _ := img.Layers()
	d, _ := ls[1].Digest()
	blob := filepath.Join(dir, "blobs", "sha256", d.Hex)
	data, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	os.WriteFile(blob, data, 0o644)
	st := base.NewStore(t.TempDir())
	_, err = Import(context.Background(), st, dir, Options{Runtime: rt})
	want := fmt.Sprintf("layer 2 of 3 (sha256:%s)", d.Hex[:12])
	if err == nil || !strings.Contains(err.Error(), want) || errkind.Of(err) != errkind.Input {
		t.Fatalf("Import of a corrupted layer = %v, want an input error naming %q", err, want)
	}
	if all, _ := st.List(); len(all) != 0 {
		t.Errorf("List after a refused import = %v, want nothing", all)
	}
	ents, _ := os.ReadDir(st.Dir())
	if len(ents) != 0 {
		t.Errorf("the store holds %v after a refused import, want nothing", ents)
	}
	if _, err := os.Stat(filepath.Join(st.Home, "blobs", "sha256", d.Hex)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the corrupted blob is in the cache (%v)", err)
	}
}

func TestImportDir(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "usr/bin"), 0o755)
	os.WriteFile(filepath.Join(src, "usr/bin/tool"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("usr/bin", filepath.Join(src, "bin"))
	os.Link(filepath.Join(src, "usr/bin/tool"), filepath.Join(src, "usr/bin/tool2"))
	st := base.NewStore(t.TempDir())
	b, err := Import(context.Background(), st, src, Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"usr/": "", "usr/bin/": "", "usr/bin/tool": "#!/bin/sh\n", "usr/bin/tool2": "#!/bin/sh\n", "bin": "#!/bin/sh\n"}
	got := files(t, b.Rootfs())
	delete(got, "bin") // a symlink to a directory: WalkDir does not follow it
	delete(want, "bin")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ImportDir rootfs (-want +got):\n%s", diff)
	}
	if l, err := os.Readlink(filepath.Join(b.Rootfs(), "bin")); err != nil || l != "usr/bin" {
		t.Errorf("rootfs/bin = %q, %v; want the link to usr/bin", l, err)
	}
	if b.Source.Kind != base.KindDir || len(b.Layers) != 1 {
		t.Errorf("ImportDir kind %s, %d layers; want dir, 1", b.Source.Kind, len(b.Layers))
	}
	// The same tree in another store gives the same digest.
	b2, err := ImportDir(context.Background(), base.NewStore(t.TempDir()), src, Options{Runtime: rt})
	if err != nil || b2.Digest != b.Digest {
		t.Errorf("ImportDir of the same tree = %v, %v; want digest %s", b2, err, b.Digest)
	}
}

func TestStoreRemoveAndGC(t *testing.T) {
	st := base.NewStore(t.TempDir())
	b, err := Import(context.Background(), st, writeLayout(t, testImage(t)), Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	// What an import killed half way leaves, a stage an import holds, a
	// directory whose base.json is gone.
	dead := filepath.Join(st.Dir(), ".stage-dead")
	os.MkdirAll(filepath.Join(dead, "rootfs/usr"), 0o755)
	live, err := st.NewStage()
	if err != nil {
		t.Fatal(err)
	}
	defer live.Discard()
	broken := filepath.Join(st.Dir(), strings.Repeat("ab", 32))
	os.MkdirAll(filepath.Join(broken, "rootfs"), 0o755)
	if all, _ := st.List(); len(all) != 1 {
		t.Errorf("List = %d bases, want 1 (stages and broken directories are not bases)", len(all))
	}
	removed, err := st.GC()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(removed)
	if diff := cmp.Diff([]string{dead, broken}, removed); diff != "" {
		t.Errorf("GC removed (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(live.Dir()); err != nil {
		t.Errorf("GC removed a stage an import holds: %v", err)
	}
	for _, arg := range []string{"zz", "abc", "sha256:" + strings.Repeat("0", 64)} {
		if _, err := st.Resolve(arg); err == nil {
			t.Errorf("Resolve(%q) = nil error, want one", arg)
		}
	}
	if err := st.Remove(b); err != nil {
		t.Fatal(err)
	}
	if all, _ := st.List(); len(all) != 0 {
		t.Errorf("List after Remove = %v", all)
	}
}
