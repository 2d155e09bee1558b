package taskimport

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"cwm/internal/base/basetest"
	"cwm/internal/pytestenv"
)

// calcRepo is the repository of the test images, at its base commit: add
// is wrong for a negative second argument.
var calcRepo = map[string]string{
	"calc/__init__.py":   "def add(a, b):\n    return a + abs(b)\n\n\ndef mul(a, b):\n    return a * b\n",
	"tests/__init__.py":  "",
	"tests/test_calc.py": "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
}

// The fix, the test the dataset adds, a test file R2E-Gym hides.
const (
	calcFix     = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
	calcNewTest = "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_add_negative():\n    assert add(2, -3) == -1\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
)

// repo is the test repository made with git: its base commit, the gold
// patch and the test patch as git writes them, and its directory.
type repo struct {
	dir, base, patch, testPatch string
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func makeRepo(t testing.TB) repo {
	t.Helper()
	dir := gitRepo(t, calcRepo)
	r := repo{dir: dir, base: strings.TrimSpace(git(t, dir, "rev-parse", "HEAD"))}
	r.patch = change(t, dir, "calc/__init__.py", calcFix)
	r.testPatch = change(t, dir, "tests/test_calc.py", calcNewTest)
	return r
}

// makeSmithRepo is the test repository as SWE-smith's images hold it:
// the clean tree (fixed, with the test that finds the bug); its patch
// makes the bug.
func makeSmithRepo(t testing.TB) repo {
	t.Helper()
	files := map[string]string{}
	for n, text := range calcRepo {
		files[n] = text
	}
	files["calc/__init__.py"], files["tests/test_calc.py"] = calcFix, calcNewTest
	dir := gitRepo(t, files)
	r := repo{dir: dir, base: strings.TrimSpace(git(t, dir, "rev-parse", "HEAD"))}
	r.patch = change(t, dir, "calc/__init__.py", calcRepo["calc/__init__.py"])
	return r
}

// gitRepo is a git repository of one commit holding files.
func gitRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for n, text := range files {
		writeFile(t, filepath.Join(dir, n), text)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "calc")
	return dir
}

// change is the diff git writes for name given text, left undone.
func change(t testing.TB, dir, name, text string) string {
	t.Helper()
	writeFile(t, filepath.Join(dir, name), text)
	d := git(t, dir, "diff")
	git(t, dir, "checkout", "-q", "--", ".")
	return d
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// layer is a tar layer made of files (image path -> content; a content
// starting with "->" is a symbolic link) and host directories copied
// under an image path.
type layer struct {
	files map[string]string
	modes map[string]int64
	dirs  map[string]string // image path -> host directory
}

func (l layer) v1(t testing.TB) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(1767225600, 0)
	made := map[string]bool{}
	mkdirs := func(p string) {
		var parts []string
		for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
			parts = append([]string{d}, parts...)
		}
		for _, d := range parts {
			if !made[d] {
				made[d] = true
				tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(d, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime})
			}
		}
	}
	for p, text := range l.files {
		mkdirs(p)
		h := &tar.Header{Name: strings.TrimPrefix(p, "/"), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(text)), ModTime: mtime}
		if m, ok := l.modes[p]; ok {
			h.Mode = m
		}
		if target, ok := strings.CutPrefix(text, "->"); ok {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, target, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(text))
		}
	}
	for at, host := range l.dirs {
		err := filepath.WalkDir(host, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(host, p)
			dst := filepath.Join(at, rel)
			mkdirs(dst)
			info, err := d.Info()
			if err != nil {
				return err
			}
			h := &tar.Header{Name: strings.TrimPrefix(dst, "/"), Mode: int64(info.Mode().Perm()), ModTime: mtime}
			switch {
			case d.IsDir():
				if made[dst] {
					return nil
				}
				made[dst] = true
				h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
				return tw.WriteHeader(h)
			case info.Mode()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				h.Typeflag, h.Linkname = tar.TypeSymlink, target
				return tw.WriteHeader(h)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(b))
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		})
		if err != nil {
			t.Fatalf("pack %s as %s: %v", host, at, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	v, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// pytestSite is the site-packages of a venv holding pinned pytest and
// its dependencies (pure Python: they run on the Debian base's 3.11 as on
// the host's), for the images' environments.
func pytestSite(t testing.TB) string {
	t.Helper()
	venv := pytestenv.Venv(t, filepath.Join("testdata", "pyreq", "pytest.txt"))
	sites, _ := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if len(sites) != 1 {
		t.Fatalf("no site-packages in %s", venv)
	}
	// A copy without pip and setuptools, which the images do not need.
	dst := t.TempDir()
	ents, err := os.ReadDir(sites[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, "pip") || strings.HasPrefix(n, "setuptools") || strings.HasPrefix(n, "_distutils") || strings.HasPrefix(n, "distutils-") {
			continue
		}
		if out, err := exec.Command("cp", "-a", filepath.Join(sites[0], n), dst).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", n, err, out)
		}
	}
	return dst
}

// venvFiles are a virtual environment at dir on the Debian base's
// Python: pyvenv.cfg and bin/python, its packages being the site
// directory the caller adds under dir/lib/python3.11/site-packages.
func venvFiles(dir string) map[string]string {
	return map[string]string{
		dir + "/pyvenv.cfg":  "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n",
		dir + "/bin/python":  "->/usr/bin/python3",
		dir + "/bin/python3": "->python",
	}
}

// debianImage is the Debian bookworm test base as an image, from its
// blobs, with layers on top and config's Env and WorkingDir.
func debianImage(t testing.TB, workdir string, layers ...v1.Layer) v1.Image {
	t.Helper()
	b := basetest.Debian(t, "bookworm")
	blobs := filepath.Join(filepath.Dir(filepath.Dir(b.Dir())), "blobs", "sha256")
	var ls []v1.Layer
	for _, l := range b.Layers {
		bl, err := tarball.LayerFromFile(filepath.Join(blobs, strings.TrimPrefix(l.Digest, "sha256:")), tarball.WithMediaType(types.OCILayer))
		if err != nil {
			t.Fatalf("layer %s of %s: %v", l.Digest, b.Short(), err)
		}
		ls = append(ls, bl)
	}
	// OCI media types throughout, which umoci (the benchmark) reads.
	img, err := mutate.AppendLayers(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), append(ls, layers...)...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config = v1.Config{Env: append([]string{}, b.Env...), WorkingDir: workdir}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func push(t testing.TB, img v1.Image, ref string) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// sweBenchImage is an image in SWE-bench's layout: the repository at
// /testbed at its base commit, its environment the conda env "testbed"
// at /opt/miniconda3/envs/testbed (here a venv there, with pytest), which
// the harness activates: only the PATH the import adds finds pytest.
func sweBenchTestImage(t testing.TB, r repo, site string) v1.Image {
	env := "/opt/miniconda3/envs/testbed"
	files := venvFiles(env)
	files[env+"/bin/pytest"] = "#!" + env + "/bin/python\nimport sys\nfrom pytest import console_main\nsys.exit(console_main())\n"
	l := layer{files: files, modes: map[string]int64{env + "/bin/pytest": 0o755},
		dirs: map[string]string{"/testbed": r.dir, env + "/lib/python3.11/site-packages": site}}
	return debianImage(t, "/testbed", l.v1(t))
}

// smithTestImage is an image in SWE-smith's layout: SWE-bench's, the
// repository's tree clean (the row's patch makes the bug).
func smithTestImage(t testing.TB, r repo, site string) v1.Image { return sweBenchTestImage(t, r, site) }

// rebenchTestImage is an image in SWE-rebench V2's layout: the repository
// at /{name}, pytest in the image's own Python (no PATH added).
func rebenchTestImage(t testing.TB, r repo, site string) v1.Image {
	l := layer{dirs: map[string]string{"/calc": r.dir, "/usr/local/lib/python3.11/dist-packages": site}}
	return debianImage(t, "/calc", l.v1(t))
}

// r2eTestImage is an image in R2E-Gym's layout: the repository at
// /testbed with its venv at /testbed/.venv and run_tests.sh, the tests
// that grade it at /r2e_tests, outside the repository.
func r2eTestImage(t testing.TB, r repo, site string) v1.Image {
	files := venvFiles("/testbed/.venv")
	files["/testbed/run_tests.sh"] = ".venv/bin/python -W ignore -m pytest -rA r2e_tests\n"
	files["/r2e_tests/__init__.py"] = ""
	files["/r2e_tests/test_calc.py"] = calcNewTest
	l := layer{files: files, dirs: map[string]string{"/testbed": r.dir, "/testbed/.venv/lib/python3.11/site-packages": site}}
	return debianImage(t, "/testbed", l.v1(t))
}
