package basebuild_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"cwm/internal/base"
	"cwm/internal/base/basetest"
	"cwm/internal/basebuild"
	"cwm/internal/envoci/ocitest"
	"cwm/internal/layertar"
	"cwm/internal/sandbox"
)

// layerGroups split the Debian base's top-level directories into the
// layers of the benchmark's image: the bulk of /usr in two, the rest of
// /usr, and everything else.
var layerGroups = [][]string{{"usr/lib"}, {"usr/share"}, {"usr/bin", "usr/sbin", "usr/include", "usr/libexec", "usr/local", "usr/games", "usr/src", "usr/lib64"}, {"etc", "var", "root", "home", "opt", "srv", "mnt", "media", "run", "tmp", "proc", "sys", "boot", "bin", "sbin", "lib", "lib64"}}

// pushDebianImage pushes the Debian bookworm test base to reg as a
// four-layer image, each layer a group of its directories (hard-linked
// into a tree of their own, packed by layertar.Pack).
func pushDebianImage(b *testing.B, reg *ocitest.Registry) string {
	deb := basetest.Debian(b, "bookworm")
	work := b.TempDir()
	var layers []v1.Layer
	for i, g := range layerGroups {
		tree := filepath.Join(work, "tree", string(rune('a'+i)))
		for _, top := range g {
			src := filepath.Join(deb.Rootfs(), top)
			if _, err := os.Lstat(src); err != nil {
				continue
			}
			os.MkdirAll(filepath.Dir(filepath.Join(tree, top)), 0o755)
			if out, err := exec.Command("cp", "-a", "--link", src, filepath.Join(tree, top)).CombinedOutput(); err != nil {
				b.Fatalf("cp %s: %v: %s", top, err, out)
			}
		}
		file := filepath.Join(work, string(rune('a'+i))+".tar.gz")
		f, err := os.Create(file)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := layertar.Pack(f, tree, ""); err != nil {
			b.Fatal(err)
		}
		f.Close()
		l, err := tarball.LayerFromFile(file)
		if err != nil {
			b.Fatal(err)
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		b.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		b.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", "amd64", v1.Config{Env: deb.Env}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		b.Fatal(err)
	}
	ref := reg.Host + "/cwm/debian:bookworm"
	r, _ := name.ParseReference(ref)
	if err := remote.Write(r, img); err != nil {
		b.Fatal(err)
	}
	return ref
}

// BenchmarkImport measures cwm base import (in process) of a four-layer
// Debian bookworm image (110 MiB compressed, 280 MiB unpacked) from the
// CNCF Distribution registry on loopback, against skopeo copy to an OCI
// layout plus umoci unpack of the same image, alternating, each from an
// empty directory: both fetch every blob, check it and unpack it. cwm's
// time includes finding the Python (a sandbox on the base).
//
//	go test -run '^$' -bench BenchmarkImport -benchtime 3x ./internal/base/
func BenchmarkImport(b *testing.B) {
	for _, tool := range []string{"skopeo", "umoci"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s is not installed (make setup installs it)", tool)
		}
	}
	reg := ocitest.Start(b, "", "")
	ref := pushDebianImage(b, reg)
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: b.TempDir(), Warm: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	work := b.TempDir()
	var cwm, ref2 []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		home := filepath.Join(work, "home")
		sandbox.RemoveAll(home)
		start := time.Now()
		bs, err := basebuild.Import(ctx, base.NewStore(home), ref, basebuild.Options{Runtime: rt})
		if err != nil {
			b.Fatal(err)
		}
		cwm = append(cwm, time.Since(start))
		if len(bs.Layers) != 4 || bs.Py == nil {
			b.Fatalf("imported %d layers, Python %v; want 4 and 3.11", len(bs.Layers), bs.Py)
		}
		sandbox.RemoveAll(home)

		oci, bundle := filepath.Join(work, "oci"), filepath.Join(work, "bundle")
		sandbox.RemoveAll(oci)
		sandbox.RemoveAll(bundle)
		start = time.Now()
		for _, args := range [][]string{
			{"skopeo", "copy", "--quiet", "--src-tls-verify=false", "docker://" + ref, "oci:" + oci + ":bench"},
			{"umoci", "unpack", "--image", oci + ":bench", bundle},
		} {
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				b.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
			}
		}
		ref2 = append(ref2, time.Since(start))
		sandbox.RemoveAll(oci)
		sandbox.RemoveAll(bundle)
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		s := append([]time.Duration{}, d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2].Seconds()
	}
	b.ReportMetric(med(cwm), "cwm-s")
	b.ReportMetric(med(ref2), "skopeo+umoci-s")
	b.ReportMetric(med(cwm)/med(ref2), "ratio")
	b.ReportMetric(0, "ns/op")
}
