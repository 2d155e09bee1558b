package tasks

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
	"cwm/internal/testtime"
)

// timeoutFactor is f, the factor of the baseline's durations a test run may
// take before it counts as hanging, widened under emulation
// (CWM_TEST_TIME_SCALE), where one run's speed swings far more than on the
// host.
func timeoutFactor(f float64) float64 {
	return f * float64(testtime.Scale(time.Second)) / float64(time.Second)
}

// The tests share one runtime and one $CWM_HOME; each environment is built
// once for the whole package.
var (
	testSandboxes *env.Sandboxes
	testHome      string
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "tasks", func(rt *sandbox.Runtime, home string) {
		testSandboxes, testHome = env.NewSandboxes(rt), home
	})
}

// atParent builds the environments of issue-fix tasks, as cwm tasks
// commits does.
func atParent(ctx context.Context, e *env.Env, rev string) (*env.Env, error) {
	return envbuild.AtRevision(ctx, testSandboxes, e, rev, envbuild.Options{Home: testHome, Runs: 2})
}

type onceEnv struct {
	once sync.Once
	env  *env.Env
	err  error
}

var envs sync.Map // source -> *onceEnv

// buildEnv builds the environment of a source once per package run.
func buildEnv(t testing.TB, opts envbuild.Options) *env.Env {
	t.Helper()
	v, _ := envs.LoadOrStore(opts.Source, &onceEnv{})
	o := v.(*onceEnv)
	o.once.Do(func() {
		opts.Home = testHome
		if opts.Runs == 0 {
			opts.Runs = 2
		}
		opts.Limits = env.RunLimits{Timeout: 5 * time.Minute}
		o.env, o.err = envbuild.Build(context.Background(), testSandboxes, opts)
		if o.err == nil && !o.env.Usable {
			o.err = fmt.Errorf("environment of %s is not usable: %s", opts.Source, o.env.Reason)
		}
	})
	if o.err != nil {
		t.Fatalf("build %s: %v", opts.Source, o.err)
	}
	return o.env
}

func textkitEnv(t testing.TB) *env.Env {
	return buildEnv(t, envbuild.Options{Source: "../../examples/textkit"})
}

// git runs git in dir with a fixed identity and dates, so commit hashes
// are the same on every run.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := osexec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=cwm", "GIT_AUTHOR_EMAIL=cwm@example.com",
		"GIT_COMMITTER_NAME=cwm", "GIT_COMMITTER_EMAIL=cwm@example.com",
		"GIT_AUTHOR_DATE=2024-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2024-01-02T03:04:05Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
