// Rendering: every kustomization of deploy/k8s is built with kustomize's
// own Go API (what kubectl apply -k builds), each resource of the result
// decoded strictly, and the result checked against what the manifests'
// comments and docs/scale.md say it is: a Job per stage directory, the
// component's patch on the server and on every stage's Job but not on
// the merge Job, the overlay's image.
package k8s_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// object is one resource of a rendered kustomization.
type object struct {
	kind, name, namespace string
	yaml                  []byte
	// obj is the resource decoded strictly into its k8s.io/api type.
	obj any
}

// render builds the kustomization in dir as kubectl apply -k does and
// decodes every resource strictly.
func render(t *testing.T, dir string) []object {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []object
	for _, r := range rm.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatalf("%s: %s/%s: %v", dir, r.GetKind(), r.GetName(), err)
		}
		o := object{kind: r.GetKind(), name: r.GetName(), namespace: r.GetNamespace(), yaml: data}
		if o.obj, err = decodeKind(o.kind, data); err != nil {
			t.Errorf("%s renders %s/%s, which %v", dir, o.kind, o.name, err)
		}
		out = append(out, o)
	}
	return out
}

// ofType is the rendered objects of type T, by name.
func ofType[T any](objs []object) map[string]*T {
	m := map[string]*T{}
	for _, o := range objs {
		if v, ok := o.obj.(*T); ok {
			m[o.name] = v
		}
	}
	return m
}

// kustomizations is the directories of deploy/k8s with a kustomization
// that kubectl apply -k takes (a Kustomization, not a Component).
func kustomizations(t *testing.T) []string {
	t.Helper()
	var dirs []string
	filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "kustomization.yaml" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var k kustomization
		if err := decodeStrict(data, &k); err != nil {
			t.Errorf("%s: %v", p, err)
		} else if k.Kind == "Kustomization" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	return dirs
}

// jobDirs is the directories under jobs/, one per Job.
func jobDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("jobs", "*", "kustomization.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no jobs/*/kustomization.yaml: %v", err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

func TestRenderEveryKustomization(t *testing.T) {
	dirs := kustomizations(t)
	if !slices.Contains(dirs, "base") || !slices.Contains(dirs, filepath.Join("overlays", "userns")) || len(dirs) != len(jobDirs(t))+2 {
		t.Errorf("kustomizations %v: want base, overlays/userns and every jobs/<stage>", dirs)
	}
	for _, dir := range dirs {
		objs := render(t, dir)
		if len(objs) == 0 {
			t.Errorf("%s renders nothing", dir)
		}
		for _, o := range objs {
			if o.namespace != "cwm" {
				t.Errorf("%s renders %s/%s in namespace %q, want cwm", dir, o.kind, o.name, o.namespace)
			}
		}
	}
}

func TestRenderedJobs(t *testing.T) {
	stages := 0
	for _, dir := range jobDirs(t) {
		objs := render(t, dir)
		jobs := ofType[batchv1.Job](objs)
		if len(objs) != 1 || len(jobs) != 1 {
			t.Errorf("%s renders %d objects, %d of them Jobs; want one Job", dir, len(objs), len(jobs))
			continue
		}
		for _, j := range jobs {
			if checkStageJob(t, dir, j) {
				stages++
			} else if j.Labels["app.kubernetes.io/component"] != "merge" || j.Spec.CompletionMode != nil {
				t.Errorf("%s: a Job that is not a stage's is the merge Job (component=merge, not Indexed); labels %v", dir, j.Labels)
			}
		}
	}
	if stages != 7 {
		t.Errorf("rendered %d stage jobs, want 7", stages)
	}
}

// usernsPatch is the component's patch, decoded as a Deployment.
func usernsPatch(t *testing.T) *appsv1.Deployment {
	t.Helper()
	p := filepath.Join("components", "userns", "pod-userns.yaml")
	d := load(t).patches[p]
	if d == nil {
		t.Fatalf("no patch %s", p)
	}
	return d
}

// TestRenderedUsernsOverlay builds overlays/userns: the base's server
// with the component's patch and the overlay's image, the base's other
// objects as they are.
func TestRenderedUsernsOverlay(t *testing.T) {
	dir := filepath.Join("overlays", "userns")
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := decodeStrict(data, &k); err != nil {
		t.Fatal(err)
	}
	if len(k.Images) != 1 {
		t.Fatalf("%s sets %d images, want cwm's", dir, len(k.Images))
	}
	base, objs := render(t, "base"), render(t, dir)
	kinds := map[string]bool{}
	for _, b := range base {
		kinds[b.kind] = true
		i := slices.IndexFunc(objs, func(o object) bool { return o.kind == b.kind && o.name == b.name })
		switch {
		case i < 0:
			t.Errorf("%s lacks the base's %s/%s", dir, b.kind, b.name)
		case b.kind != "Deployment" && string(objs[i].yaml) != string(b.yaml):
			t.Errorf("%s changes the base's %s/%s:\n%s", dir, b.kind, b.name, cmp.Diff(string(b.yaml), string(objs[i].yaml)))
		}
	}
	for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget", "ServiceAccount", "PersistentVolumeClaim"} {
		if !kinds[kind] {
			t.Errorf("the base renders no %s", kind)
		}
	}
	if len(objs) != len(base) {
		t.Errorf("%s renders %d objects, the base %d", dir, len(objs), len(base))
	}
	before, after := ofType[appsv1.Deployment](base)["cwm-serve"], ofType[appsv1.Deployment](objs)["cwm-serve"]
	if before == nil || after == nil {
		t.Fatalf("no Deployment cwm-serve in base (%v) or %s (%v)", before != nil, dir, after != nil)
	}
	img := k.Images[0]
	checkImages(t, dir, after.Spec.Template.Spec, before.Spec.Template.Spec, img.Name, img.NewName+":"+img.NewTag)
	checkPatched(t, dir, after.Spec.Template.Spec, before.Spec.Template.Spec, usernsPatch(t).Spec.Template.Spec)
}

// TestRenderedUsernsJobs builds, in a temporary directory, a
// kustomization of each jobs/<stage> with components/userns: the patch
// reaches every stage's Job (the component's labelSelector) and not the
// merge Job, which needs no privilege and has none.
func TestRenderedUsernsJobs(t *testing.T) {
	patch := usernsPatch(t).Spec.Template.Spec
	patched := 0
	for _, dir := range jobDirs(t) {
		// kustomize takes no absolute root: the paths are relative to tmp.
		tmp := t.TempDir()
		job, component := relTo(t, tmp, dir), relTo(t, tmp, filepath.Join("components", "userns"))
		kust := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%q]\ncomponents: [%q]\n", job, component)
		if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
			t.Fatal(err)
		}
		where := dir + " with components/userns"
		before, after := ofType[batchv1.Job](render(t, dir)), ofType[batchv1.Job](render(t, tmp))
		if len(before) != 1 || len(after) != 1 {
			t.Errorf("%s renders %d Jobs, %d without the component; want one", where, len(after), len(before))
			continue
		}
		for name, b := range before {
			a := after[name]
			if a == nil {
				t.Errorf("%s renders no Job %s", where, name)
				continue
			}
			if b.Labels["app.kubernetes.io/component"] == "merge" {
				if d := cmp.Diff(b, a); d != "" {
					t.Errorf("%s: the component changes the merge Job:\n%s", where, d)
				}
				continue
			}
			patched++
			if !checkStageJob(t, where, a) {
				t.Errorf("%s: not a stage's Job", where)
			}
			checkPatched(t, where, a.Spec.Template.Spec, b.Spec.Template.Spec, patch)
		}
	}
	if patched != 7 {
		t.Errorf("patched %d stage jobs, want 7", patched)
	}
}

// relTo is the path of p (relative to the working directory) from dir.
func relTo(t *testing.T, dir, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err == nil {
		p, err = filepath.Rel(dir, abs)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkPatched checks that got is before with the component's patch
// applied: the pod template and the cwm container have every field the
// patch sets, with the patch's value, and the rest of before (its
// environment included) as it was. Images are checkImages' concern.
func checkPatched(t *testing.T, where string, got, before, patch corev1.PodSpec) {
	t.Helper()
	checkUsernsPod(t, where, got)
	i := slices.IndexFunc(got.Containers, func(c corev1.Container) bool { return c.Name == "cwm" })
	if i < 0 || len(patch.Containers) != 1 {
		t.Errorf("%s: no container cwm, or the patch has %d containers", where, len(patch.Containers))
		return
	}
	c, pc := got.Containers[i], patch.Containers[0]
	if d := cmp.Diff(got.HostUsers, patch.HostUsers); d != "" {
		t.Errorf("%s: hostUsers is not the patch's:\n%s", where, d)
	}
	if c.SecurityContext == nil {
		t.Errorf("%s: the container cwm has no securityContext", where)
	} else {
		// Every field the patch's securityContext sets, compared as JSON.
		want, have := jsonFields(t, pc.SecurityContext), jsonFields(t, c.SecurityContext)
		for k, v := range want {
			if d := cmp.Diff(v, have[k]); d != "" {
				t.Errorf("%s: securityContext.%s is not the patch's:\n%s", where, k, d)
			}
		}
	}
	for _, e := range pc.Env {
		if g := envOf(c, e.Name); g == nil || g.Value != e.Value {
			t.Errorf("%s: %s is %v, the patch sets %q", where, e.Name, g, e.Value)
		}
	}
	// The rest is before's: the patch merges, it replaces no list.
	bi := slices.IndexFunc(before.Containers, func(c corev1.Container) bool { return c.Name == "cwm" })
	if bi < 0 {
		t.Errorf("%s: before the patch, no container cwm", where)
		return
	}
	g, b := got.DeepCopy(), before.DeepCopy()
	for _, s := range []*corev1.PodSpec{g, b} {
		s.HostUsers = nil
		for j := range s.InitContainers {
			s.InitContainers[j].Image = ""
		}
		for j := range s.Containers {
			s.Containers[j].Image = ""
		}
	}
	g.Containers[i].SecurityContext, b.Containers[bi].SecurityContext = nil, nil
	g.Containers[i].Env = slices.DeleteFunc(g.Containers[i].Env, func(e corev1.EnvVar) bool {
		return slices.ContainsFunc(pc.Env, func(p corev1.EnvVar) bool { return p.Name == e.Name })
	})
	if d := cmp.Diff(b, g); d != "" {
		t.Errorf("%s: the patch changes more than it sets (-before +after):\n%s", where, d)
	}
}

// jsonFields is v's JSON object, field by field.
func jsonFields(t *testing.T, v any) map[string]json.RawMessage {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkImages checks that every container of got whose image in before
// is name (any tag) now runs image, and that the others are unchanged.
func checkImages(t *testing.T, where string, got, before corev1.PodSpec, name, image string) {
	t.Helper()
	pairs := [][2][]corev1.Container{{got.InitContainers, before.InitContainers}, {got.Containers, before.Containers}}
	rewritten := 0
	for _, p := range pairs {
		if len(p[0]) != len(p[1]) {
			t.Errorf("%s: %d containers, %d before", where, len(p[0]), len(p[1]))
			continue
		}
		for i, c := range p[0] {
			old := p[1][i].Image
			repo, _, _ := strings.Cut(old, "@")
			if j := strings.LastIndex(repo, ":"); j > strings.LastIndex(repo, "/") {
				repo = repo[:j]
			}
			want := old
			if repo == name {
				want = image
				rewritten++
			}
			if c.Image != want {
				t.Errorf("%s: container %s runs %s, want %s (it was %s)", where, c.Name, c.Image, want, old)
			}
		}
	}
	if rewritten == 0 {
		t.Errorf("%s: no container ran %s, which the overlay rewrites", where, name)
	}
}
