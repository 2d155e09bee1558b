package taskimport

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/env"
	"cwm/internal/logparse"
	"cwm/internal/reward"
	"cwm/internal/task"
)

// BenchmarkGoldRun measures one gold run of one imported instance the
// way cwm does it, against the way a user without Docker does it today,
// alternating, on the same image (the SWE-bench test image of TestImport,
// already on disk as an OCI layout):
//
//   - cwm: cwm base import of the layout (the image is already pulled:
//     the store has it, so this checks and finds it), then the grading
//     run in a fresh sandbox on the base (patches, test files restored,
//     tests, log parsed);
//
//   - umoci unpack of the layout into a bundle, its config.json given the
//     same eval script (and without the rlimits runc refuses here), and
//     runc run of it.
//
//     go test -run '^$' -bench BenchmarkGoldRun -benchtime 3x ./internal/taskimport/
func BenchmarkGoldRun(b *testing.B) {
	for _, tool := range []string{"umoci", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s is not installed (make setup installs it)", tool)
		}
	}
	r := makeRepo(b)
	site := pytestSite(b)
	img := sweBenchTestImage(b, r, site)
	work := b.TempDir()
	oci := filepath.Join(work, "oci")
	p, err := layout.Write(oci, empty.Index)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "bench"})); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	home := filepath.Join(work, "home")
	sbs := Sandboxes{Runtime: rt, Store: base.NewStore(home), Envs: env.NewStore(home)}
	bs, err := basebuild.Import(ctx, sbs.Store, oci, basebuild.Options{Runtime: rt})
	if err != nil {
		b.Fatal(err)
	}
	k := task.Task{InstanceID: "cwm-test__calc-1", BaseCommit: r.base, Patch: r.patch, TestPatch: r.testPatch,
		FailToPass: []string{"tests/test_calc.py::test_add_negative"},
		Imported: &task.Imported{Format: "swebench", Base: bs.Digest, Workdir: testbed, Path: []string{condaBin},
			LogParser: "parse_log_pytest", TestFiles: []string{"tests/test_calc.py"}, TestCommand: testCommand("parse_log_pytest", []string{"tests/test_calc.py"})}}
	want := "tests/test_calc.py::test_add_negative"

	var cwm, ref []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := basebuild.Import(ctx, sbs.Store, oci, basebuild.Options{Runtime: rt}); err != nil {
			b.Fatal(err)
		}
		if err := sbs.record(ctx, &k); err != nil {
			b.Fatal(err)
		}
		run, err := sbs.grade(ctx, &k, k.Patch)
		if err != nil || run.Status[want] != logparse.Passed {
			b.Fatalf("cwm's gold run: %v, %s is %q\n%s", err, want, run.Status[want], run.Log)
		}
		cwm = append(cwm, time.Since(start))

		bundle := filepath.Join(work, "bundle")
		exec.Command("rm", "-rf", bundle).Run()
		start = time.Now()
		out, err := exec.Command("umoci", "unpack", "--image", oci+":bench", bundle).CombinedOutput()
		if err != nil {
			b.Fatalf("umoci unpack: %v: %s", err, out)
		}
		runcBundle(b, bundle, &k)
		out, err = exec.Command("runc", "run", "--bundle", bundle, "cwm-bench-"+strings.TrimPrefix(bs.Short(), "sha256:")).CombinedOutput()
		if st := logparse.Pytest(string(out))[want]; err != nil || st != logparse.Passed {
			b.Fatalf("runc run: %v, %s is %q\n%s", err, want, st, out)
		}
		ref = append(ref, time.Since(start))
		exec.Command("rm", "-rf", bundle).Run()
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		s := append([]time.Duration{}, d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2].Seconds()
	}
	b.ReportMetric(med(cwm), "cwm-s")
	b.ReportMetric(med(ref), "umoci+runc-s")
	b.ReportMetric(med(cwm)/med(ref), "ratio")
	b.ReportMetric(0, "ns/op")
}

// runcBundle gives the bundle umoci made the same grading run: the
// patches and test command in its /tmp, the eval script as the process,
// the PATH the dataset's table gives, no rlimits (runc refuses umoci's
// default here) and no terminal.
func runcBundle(b *testing.B, bundle string, k *task.Task) {
	rootfs := filepath.Join(bundle, "rootfs")
	for name, text := range map[string]string{"bug.diff": k.BugPatch, "candidate.diff": k.Patch, "test.diff": k.TestPatch, "test.sh": k.Imported.TestCommand + "\n"} {
		if err := os.WriteFile(filepath.Join(rootfs, "tmp", "cwm-import-"+name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfgPath := filepath.Join(bundle, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		b.Fatal(err)
	}
	proc := cfg["process"].(map[string]any)
	delete(proc, "rlimits")
	proc["terminal"] = false
	proc["cwd"] = "/"
	proc["args"] = append([]any{"bash", "-c", reward.HarnessScript, "grade", k.Imported.Workdir, k.BaseCommit, "0", ""}, anyList(k.Imported.TestFiles)...)
	proc["env"] = []any{"PATH=" + condaBin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}
	raw, _ = json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		b.Fatal(err)
	}
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}
