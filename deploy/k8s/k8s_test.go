// The tests of deploy/k8s decode every manifest strictly into the
// Kubernetes API's types (an unknown or misspelt field is an error, as
// kubectl apply --validate=strict makes it), check the kustomizations'
// references, and check what matters of each object: an Indexed Job's
// index reaches cwm's --shard, its flags are cwm's, the server's probes,
// resources and termination grace fit its drain.
package k8s_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"cwm/internal/cli"
	"cwm/internal/command"
)

// decodeStrict decodes a YAML document into v, refusing unknown fields
// and duplicate keys.
func decodeStrict(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// kustomization is what the kustomizations of deploy/k8s use of
// kustomize's schema.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Components []string `json:"components,omitempty"`
	Patches    []struct {
		Path   string `json:"path"`
		Target struct {
			Kind          string `json:"kind,omitempty"`
			Name          string `json:"name,omitempty"`
			LabelSelector string `json:"labelSelector,omitempty"`
		} `json:"target"`
	} `json:"patches,omitempty"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
}

// manifests are the objects of deploy/k8s by kind, with their files.
type manifests struct {
	jobs        map[string]*batchv1.Job
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	pdbs        map[string]*policyv1.PodDisruptionBudget
	// patches are the strategic merge patches of components, decoded as
	// the kind of their target.
	patches map[string]*appsv1.Deployment
}

// load decodes every YAML file under the directory.
func load(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{jobs: map[string]*batchv1.Job{}, deployments: map[string]*appsv1.Deployment{},
		services: map[string]*corev1.Service{}, pdbs: map[string]*policyv1.PodDisruptionBudget{}, patches: map[string]*appsv1.Deployment{}}
	patchFiles := map[string]bool{}
	var files []string
	filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if len(files) < 10 {
		t.Fatalf("found %d manifests", len(files))
	}
	// Kustomizations first: they say which files are patches.
	for _, p := range files {
		if filepath.Base(p) != "kustomization.yaml" {
			continue
		}
		data, _ := os.ReadFile(p)
		var k kustomization
		if err := decodeStrict(data, &k); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		dir := filepath.Dir(p)
		for _, r := range append(append([]string{}, k.Resources...), k.Components...) {
			if _, err := os.Stat(filepath.Join(dir, r)); err != nil {
				t.Errorf("%s names %s, which does not exist", p, r)
			}
		}
		for _, pt := range k.Patches {
			if _, err := os.Stat(filepath.Join(dir, pt.Path)); err != nil {
				t.Errorf("%s: patch %s does not exist", p, pt.Path)
			}
			patchFiles[filepath.Join(dir, pt.Path)] = true
		}
		want := map[string]string{"Kustomization": "kustomize.config.k8s.io/v1beta1", "Component": "kustomize.config.k8s.io/v1alpha1"}
		if want[k.Kind] != k.APIVersion {
			t.Errorf("%s: kind %s, apiVersion %s", p, k.Kind, k.APIVersion)
		}
	}
	for _, p := range files {
		if filepath.Base(p) == "kustomization.yaml" {
			continue
		}
		data, _ := os.ReadFile(p)
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &meta); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if patchFiles[p] {
			d := &appsv1.Deployment{}
			m.patches[p] = d
			if err := decodeStrict(data, d); err != nil {
				t.Errorf("%s does not decode strictly as a Deployment patch: %v", p, err)
			}
			continue
		}
		obj, err := decodeKind(meta.Kind, data)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		switch o := obj.(type) {
		case *batchv1.Job:
			m.jobs[p] = o
		case *appsv1.Deployment:
			m.deployments[p] = o
		case *corev1.Service:
			m.services[p] = o
		case *policyv1.PodDisruptionBudget:
			m.pdbs[p] = o
		}
	}
	return m
}

// decodeKind decodes a manifest strictly into the k8s.io/api type of
// its kind, one of those deploy/k8s uses.
func decodeKind(kind string, data []byte) (any, error) {
	var obj any
	switch kind {
	case "Job":
		obj = &batchv1.Job{}
	case "Deployment":
		obj = &appsv1.Deployment{}
	case "Service":
		obj = &corev1.Service{}
	case "PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	default:
		return nil, fmt.Errorf("kind %q is not one the tests know", kind)
	}
	if err := decodeStrict(data, obj); err != nil {
		return nil, fmt.Errorf("does not decode strictly as a %s: %v", kind, err)
	}
	return obj, nil
}

func TestManifestsDecodeStrictly(t *testing.T) {
	m := load(t)
	if len(m.jobs) != 8 || len(m.deployments) != 1 || len(m.services) != 1 || len(m.pdbs) != 1 || len(m.patches) != 1 {
		t.Errorf("found %d jobs, %d deployments, %d services, %d PDBs, %d patches; want 8, 1, 1, 1, 1",
			len(m.jobs), len(m.deployments), len(m.services), len(m.pdbs), len(m.patches))
	}
	// The strict decoder is strict: a misspelt field is refused.
	bad := []byte("apiVersion: batch/v1\nkind: Job\nspec:\n  completionMod: Indexed\n")
	if err := decodeStrict(bad, &batchv1.Job{}); err == nil || !strings.Contains(err.Error(), "completionMod") {
		t.Errorf("a misspelt field decoded: %v", err)
	}
}

// cwmArgs is the command line a container gives cwm: its args (the
// image's entrypoint is cwm), or the cwm command of a bash -c script.
func cwmArgs(t *testing.T, where string, c corev1.Container) []string {
	t.Helper()
	if len(c.Command) == 0 {
		return c.Args
	}
	if len(c.Command) < 2 || c.Command[0] != "/bin/bash" || c.Command[len(c.Command)-1] != "-c" || len(c.Args) != 1 {
		t.Fatalf("%s: command %q: want cwm's entrypoint or /bin/bash -c", where, c.Command)
	}
	words := shellWords(c.Args[0])
	i := slices.Index(words, "cwm")
	if i < 0 {
		t.Fatalf("%s: the script %q does not run cwm", where, c.Args[0])
	}
	var out []string
	for _, w := range words[i+1:] {
		if w == "||" || w == "|" || w == "&&" || w == ";" {
			break
		}
		out = append(out, w)
	}
	return out
}

// shellWords splits a script into words, quotes removed (enough for the
// manifests' one-line scripts).
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	in := byte(0)
	has := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in != 0 && c == in:
			in = 0
		case in != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			in, has = c, true
		case c == ' ' || c == '\t':
			if has || cur.Len() > 0 {
				words = append(words, cur.String())
			}
			cur.Reset()
			has = false
		default:
			cur.WriteByte(c)
		}
	}
	if has || cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words
}

// parseCwm checks args against cwm's own command line: the command
// exists and takes every flag given. It returns the flags' values.
func parseCwm(t *testing.T, where string, args []string) map[string]string {
	t.Helper()
	var cmd command.Command
	var rest []string
	for n := min(2, len(args)); n >= 1 && cmd == nil; n-- {
		name := strings.Join(args[:n], " ")
		for _, mk := range cli.Program.Commands {
			if c := mk(); c.Name() == name {
				cmd, rest = c, args[n:]
			}
		}
	}
	if cmd == nil {
		t.Errorf("%s: cwm has no command %q", where, args)
		return nil
	}
	fs := flag.NewFlagSet(cmd.Name(), flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	cmd.Flags(fs)
	if err := fs.Parse(rest); err != nil {
		t.Errorf("%s: cwm %s %q: %v", where, cmd.Name(), rest, err)
		return nil
	}
	vals := map[string]string{}
	fs.Visit(func(f *flag.Flag) { vals[f.Name] = f.Value.String() })
	return vals
}

func envOf(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// varRef matches $(VAR) references Kubernetes expands in args.
var varRef = regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)

func TestIndexedJobs(t *testing.T) {
	m := load(t)
	stages := 0
	for p, j := range m.jobs {
		if !checkStageJob(t, p, j) {
			continue
		}
		stages++
		c := j.Spec.Template.Spec.Containers[0]
		if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
			t.Errorf("%s: the stage's container is not privileged (the base's fallback; components/userns is the other way)", p)
		}
	}
	if stages != 7 {
		t.Errorf("found %d stage jobs, want 7 (trace func, trace repo, tasks mutate, commits, validate, reward, forage)", stages)
	}
}

// checkStageJob checks a stage's Indexed Job: the index reaches cwm's
// --shard, each index writes its own file, the command line is cwm's,
// an environment by reference is pulled first. It reports whether j is
// a stage's Job (false for the merge Job, which it leaves alone).
func checkStageJob(t *testing.T, p string, j *batchv1.Job) bool {
	t.Helper()
	spec := j.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Errorf("%s: %d containers, want cwm's one", p, len(spec.Containers))
		return false
	}
	c := spec.Containers[0]
	if c.Name == "merge" {
		return false
	}
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("%s: completionMode is not Indexed", p)
	}
	if j.Spec.Completions == nil || j.Spec.Parallelism == nil || *j.Spec.Parallelism < 1 || *j.Spec.Parallelism > *j.Spec.Completions {
		t.Errorf("%s: completions %v, parallelism %v", p, j.Spec.Completions, j.Spec.Parallelism)
		return true
	}
	if j.Spec.BackoffLimitPerIndex == nil || *j.Spec.BackoffLimitPerIndex < 1 {
		t.Errorf("%s: no backoffLimitPerIndex: a failed index would fail them all", p)
	}
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %s, want Never (backoffLimitPerIndex and podFailurePolicy need it)", p, spec.RestartPolicy)
	}
	// The index reaches --shard: cwm reads JOB_COMPLETION_INDEX and
	// JOB_COMPLETIONS, the latter equal to completions.
	idx := envOf(c, "JOB_COMPLETION_INDEX")
	if idx == nil || idx.ValueFrom == nil || idx.ValueFrom.FieldRef == nil ||
		idx.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("%s: JOB_COMPLETION_INDEX is not the pod's completion index", p)
	}
	n := envOf(c, "JOB_COMPLETIONS")
	if n == nil || n.Value != strconv.Itoa(int(*j.Spec.Completions)) {
		t.Errorf("%s: JOB_COMPLETIONS %v, want spec.completions %d: the shards would not cover the run", p, n, *j.Spec.Completions)
	}
	args := cwmArgs(t, p, c)
	vals := parseCwm(t, p, args)
	if s, ok := vals["shard"]; ok {
		t.Errorf("%s: --shard %s given: the index decides it", p, s)
	}
	if _, ok := vals["shard"]; !ok && vals != nil {
		if out := vals["out"]; !strings.Contains(out, "JOB_COMPLETION_INDEX") {
			t.Errorf("%s: --out %q is the same file for every index", p, out)
		}
	}
	// Every $(VAR) of the args is a variable of the container.
	for _, a := range c.Args {
		for _, mm := range varRef.FindAllStringSubmatch(a, -1) {
			if envOf(c, mm[1]) == nil {
				t.Errorf("%s: %s refers to $(%s), which the container does not set", p, a, mm[1])
			}
		}
	}
	// An environment given by reference is pulled by the init
	// container into the store the stage reads.
	if strings.Contains(strings.Join(c.Args, " "), "CWM_ENV") || envOf(c, "CWM_ENV") != nil {
		if len(spec.InitContainers) != 1 {
			t.Errorf("%s: no init container pulls the environment", p)
		} else {
			ic := spec.InitContainers[0]
			if got := parseCwm(t, p+" (init)", ic.Args); got == nil || !slices.Equal(ic.Args, []string{"env", "pull", "$(CWM_ENV)"}) {
				t.Errorf("%s: init container runs %q, want env pull $(CWM_ENV)", p, ic.Args)
			}
			if envOf(ic, "CWM_HOME").Value != envOf(c, "CWM_HOME").Value {
				t.Errorf("%s: the init container pulls into another CWM_HOME", p)
			}
		}
	}
	checkResources(t, p, c)
	return true
}

func checkResources(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() {
		t.Errorf("%s: container %s requests no CPU or memory", where, c.Name)
	}
	if lim.Memory().IsZero() || lim.Memory().Cmp(*req.Memory()) < 0 {
		t.Errorf("%s: container %s's memory limit %v is below its request %v", where, c.Name, lim.Memory(), req.Memory())
	}
}

func TestServe(t *testing.T) {
	m := load(t)
	var d *appsv1.Deployment
	for _, v := range m.deployments {
		d = v
	}
	if d == nil {
		t.Fatal("no Deployment")
	}
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	if c.Args[0] != "serve" {
		t.Fatalf("the Deployment runs cwm %q", c.Args)
	}
	vals := serveFlags(t, c.Args)
	_, port, _ := strings.Cut(vals["listen"], ":")
	if len(c.Ports) != 1 || strconv.Itoa(int(c.Ports[0].ContainerPort)) != port {
		t.Errorf("container port %v, cwm serve listens on %q", c.Ports, vals["listen"])
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Port.String() != c.Ports[0].Name {
			t.Errorf("%s probe %+v, want GET /health on the port %s", name, p, c.Ports[0].Name)
		}
	}
	drain, err := time.ParseDuration(vals["drain-grace"])
	if err != nil {
		t.Fatalf("--drain-grace %q: %v", vals["drain-grace"], err)
	}
	if spec.TerminationGracePeriodSeconds == nil || time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second < drain+10*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v is not longer than --drain-grace %v and the time to close what is left", spec.TerminationGracePeriodSeconds, drain)
	}
	checkResources(t, "the Deployment", c)
	if *d.Spec.Replicas < 2 {
		t.Errorf("%d replicas: a drain would leave no server", *d.Spec.Replicas)
	}
	labels := d.Spec.Template.Labels
	for _, s := range m.services {
		for k, v := range s.Spec.Selector {
			if labels[k] != v {
				t.Errorf("the Service selects %s=%s, the pods are %v", k, v, labels)
			}
		}
		if s.Spec.Ports[0].TargetPort.String() != c.Ports[0].Name {
			t.Errorf("the Service targets %v, the container's port is %s", s.Spec.Ports[0].TargetPort, c.Ports[0].Name)
		}
	}
	for _, b := range m.pdbs {
		for k, v := range b.Spec.Selector.MatchLabels {
			if labels[k] != v {
				t.Errorf("the PodDisruptionBudget selects %s=%s, the pods are %v", k, v, labels)
			}
		}
		if b.Spec.MinAvailable == nil || b.Spec.MinAvailable.IntValue() < 1 || b.Spec.MinAvailable.IntValue() >= int(*d.Spec.Replicas) {
			t.Errorf("PodDisruptionBudget minAvailable %v with %d replicas: a drain must be possible and leave a server", b.Spec.MinAvailable, *d.Spec.Replicas)
		}
	}
}

// serveFlags checks cwm serve's flags against its command, or, where
// this tree has no cwm serve yet, against the flags its design names.
func serveFlags(t *testing.T, args []string) map[string]string {
	t.Helper()
	for _, mk := range cli.Program.Commands {
		if mk().Name() == "serve" {
			return parseCwm(t, "the Deployment", args)
		}
	}
	t.Logf("this tree has no cwm serve: its flags are checked against the names of its design")
	known := []string{"listen", "token-file", "tasks", "max-sessions", "idle-timeout", "drain-grace", "log-format"}
	vals := map[string]string{}
	for _, a := range args[1:] {
		name, val, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok || !slices.Contains(known, name) {
			t.Errorf("cwm serve flag %q is not one of %v", a, known)
		}
		vals[name] = val
	}
	return vals
}

// TestUsernsComponent checks the component for clusters with user
// namespaces: the pod gets one (hostUsers: false), is not privileged on
// the node, and has inside it what the sandbox needs.
func TestUsernsComponent(t *testing.T) {
	m := load(t)
	for p, d := range m.patches {
		checkUsernsPod(t, p, d.Spec.Template.Spec)
	}
	// Every container the component patches is named cwm.
	for p, j := range m.jobs {
		if c := j.Spec.Template.Spec.Containers[0]; c.Name != "cwm" && c.Name != "merge" {
			t.Errorf("%s: container %q: components/userns patches the container named cwm", p, c.Name)
		}
	}
}

// checkUsernsPod checks a pod template (the component's patch or what it
// patched) for what the sandbox needs in a user namespace of its own.
func checkUsernsPod(t *testing.T, p string, spec corev1.PodSpec) {
	t.Helper()
	if spec.HostUsers == nil || *spec.HostUsers {
		t.Errorf("%s: hostUsers is not false", p)
	}
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == "cwm" })
	if i < 0 {
		t.Errorf("%s: no container named cwm, the one components/userns patches", p)
		return
	}
	c := spec.Containers[i]
	sc := c.SecurityContext
	switch {
	case sc == nil || sc.Privileged == nil || *sc.Privileged:
		t.Errorf("%s: privileged is not false", p)
	case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Add, "SYS_ADMIN"):
		t.Errorf("%s: no CAP_SYS_ADMIN (in the pod's user namespace) to mount", p)
	case sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined:
		t.Errorf("%s: the runtime's seccomp profile would refuse unshare", p)
	case sc.ProcMount == nil || *sc.ProcMount != corev1.UnmaskedProcMount:
		t.Errorf("%s: /proc stays masked", p)
	}
	if e := envOf(c, "CWM_LIMITS"); e == nil || e.Value != "rlimits" {
		t.Errorf("%s: CWM_LIMITS is not rlimits: the pod's cgroup is read-only in a user namespace", p)
	}
}
