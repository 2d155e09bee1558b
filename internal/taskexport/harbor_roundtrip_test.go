package taskexport

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/env"
	"cwm/internal/envoci/ocitest"
	"cwm/internal/task"
	"cwm/internal/taskimport"
)

// roundTripHarbor imports up to n of the Harbor directories exported to
// out with cwm tasks import --format harbor: the export's images pushed
// to a local registry under the names task.toml gives (cwm/ENV:TAG,
// pulled through the mirror), each task validated by its own
// solution/solve.sh and tests/test.sh (reward 1, then 0 without it). The
// imported task has the exported one's instruction, and its gold patch
// (what solve.sh changed) touches the exported gold patch's files.
func roundTripHarbor(t *testing.T, out string, ts []task.Task, n int) {
	t.Helper()
	if ocitest.Binary() == "" {
		t.Log("harbor round trip skipped: docker-registry (Debian's CNCF Distribution registry) is not installed")
		return
	}
	reg := ocitest.Start(t, "", "")
	pushLayouts(t, filepath.Join(out, ImagesDir), reg.Host)
	byDir := map[string]task.Task{}
	for _, tk := range ts {
		byDir[HarborDir(tk.InstanceID)] = tk
	}
	tomls, _ := filepath.Glob(filepath.Join(out, "*", "task.toml"))
	sort.Strings(tomls)
	if len(tomls) > n {
		tomls = tomls[:n]
	}
	in := t.TempDir()
	for _, p := range tomls {
		if b, err := exec.Command("cp", "-a", filepath.Dir(p), in).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", filepath.Dir(p), err, b)
		}
	}
	home := t.TempDir()
	o := taskimport.Options{Format: "harbor", Mirror: reg.Host, Runs: 1,
		Sandboxes: taskimport.Sandboxes{Runtime: testRuntime, Store: base.NewStore(home), Envs: env.NewStore(home)},
		Base:      basebuild.Options{Runtime: testRuntime}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	t0 := time.Now()
	got, rep, err := taskimport.Import(ctx, in, o)
	if err != nil {
		t.Fatalf("import the Harbor export: %v", err)
	}
	t.Logf("harbor round trip: %s in %.0fs", rep.Summary(), time.Since(t0).Seconds())
	if len(got) != len(tomls) {
		t.Fatalf("imported %d of %d exported Harbor tasks: %+v", len(got), len(tomls), rep.Left)
	}
	for _, k := range got {
		orig := byDir[HarborDir(k.InstanceID)]
		if k.ProblemStatement != orig.ProblemStatement {
			t.Errorf("%s: instruction %q, exported %q", k.InstanceID, k.ProblemStatement, orig.ProblemStatement)
		}
		if d := cmp.Diff(patchFilesOf(orig.Patch), patchFilesOf(k.Patch)); d != "" || k.Validation == nil {
			t.Errorf("%s: the imported gold patch's files differ from the exported one's (-exported +imported):\n%s", k.InstanceID, d)
		}
	}
}

// pushLayouts pushes every tagged image of the OCI layouts under dir
// (images/ENV) to host as cwm/ENV:TAG, the name task.toml gives.
func pushLayouts(t *testing.T, dir, host string) {
	t.Helper()
	envs, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range envs {
		p, err := layout.FromPath(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		idx, err := p.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range m.Manifests {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := name.ParseReference(host + "/cwm/" + e.Name() + ":" + d.Annotations["org.opencontainers.image.ref.name"])
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(ref, img); err != nil {
				t.Fatalf("push %s: %v", ref, err)
			}
		}
	}
}

// patchFilesOf are the files a patch's diff headers name.
func patchFilesOf(p string) []string {
	var out []string
	for _, l := range strings.Split(p, "\n") {
		if f, ok := strings.CutPrefix(l, "diff --git a/"); ok {
			out = append(out, strings.SplitN(f, " ", 2)[0])
		}
	}
	sort.Strings(out)
	return out
}
