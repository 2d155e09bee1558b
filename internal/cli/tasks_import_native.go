package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"cwm/internal/base"
	"cwm/internal/command"
	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/swenative"
	"cwm/internal/task"
)

// nativeFlags are tasks import's flags for SWE-bench from source.
type nativeFlags struct {
	native  bool
	repos   string
	python  string
	timeout time.Duration
	priorTo string
}

// runNative is tasks import --native: the rows' environments built from
// their clones by SWE-bench's specifications, then each instance
// validated on its version's environment.
func (c *tasksImportCmd) runNative(ctx context.Context, e *command.Env, file, report string) error {
	if c.format != "swebench" {
		return command.Usagef("--native builds SWE-bench's rows: want --format swebench, got %s", c.format)
	}
	if c.repos == "" {
		return command.Usagef("--native needs --repos DIR, the directory of the repositories' clones")
	}
	if st, err := os.Stat(c.repos); err != nil || !st.IsDir() {
		return errkind.Errorf(errkind.Input, "--repos %s: no such directory", c.repos)
	}
	if c.timeout <= 0 {
		return command.Usagef("--timeout must be positive")
	}
	priorTo, err := uploadedPriorTo(c.priorTo)
	if err != nil {
		return err
	}
	py, err := swenative.FindPython(ctx, c.python)
	if err != nil {
		return err
	}
	var hosts []egress.Host
	for _, a := range c.allowHosts {
		h, err := egress.ParseAllowHost(a)
		if err != nil {
			return command.Usagef("--allow-host %s: %v", a, err)
		}
		hosts = append(hosts, h)
	}
	policy, err := egress.DefaultPolicy(ctx)
	if err != nil {
		return fmt.Errorf("find the package index the host's pip uses: %w", err)
	}
	policy.Allow(hosts...)
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return err
	}
	defer closeRT()
	_, bases, err := buildBases(ctx, e, "")
	if err != nil {
		return err
	}
	// The pip the builds run, which each instance's install runs too.
	pip, err := envbuild.EnsurePip(ctx, e.Home, "")
	if err != nil {
		return err
	}
	store := base.NewStore(e.Home)
	say := progressTo(e, c.quiet)
	// Each base's Python once (the first base of a version builds).
	var pythons []string
	roots := map[string]string{}
	for _, b := range bases {
		v := b.Python
		if f := strings.SplitN(v, ".", 3); len(f) > 1 {
			v = f[0] + "." + f[1]
		}
		if _, ok := roots[v]; !ok {
			pythons = append(pythons, v)
			roots[v] = b.Root
		}
	}
	o := swenative.Options{Repos: c.repos, Python: py, Envs: sbs, Store: env.NewStore(e.Home), Pythons: pythons, Egress: &policy, PipWheel: pip, UploadedPriorTo: priorTo,
		RootFS: func(python string) string {
			if b := store.Get(roots[python]); b != nil {
				return b.Rootfs()
			}
			return ""
		},
		Build: func(ctx context.Context, s swenative.BuildSpec) (*env.Env, error) {
			// As the harness builds: the newest releases (unless
			// --uploaded-prior-to bounds them), one baseline run, no
			// test-to-code map.
			return envbuild.Build(ctx, sbs, envbuild.Options{
				Home: e.Home, Source: s.Source, Rev: s.Rev, Name: s.Name, Install: s.Install, Test: s.Test,
				RecipeFrom: s.RecipeFrom, Python: s.Python, Bases: bases, Runs: 1, NoCoverage: true,
				Mode: env.ModeOnline, ExcludeNewer: c.priorTo, Egress: &policy, PipWheel: pip,
				InstallTimeout: 20 * time.Minute, Limits: env.RunLimits{Timeout: c.timeout},
				Progress: say, Log: e.Log,
			})
		},
		Runs: c.runs, Timeout: c.timeout, Say: say}
	if !c.quiet {
		o.Progress = c.progress(e)
	}
	ts, rep, err := swenative.Import(ctx, file, o)
	if err != nil {
		return err
	}
	if err := writeTasks(c.out, ts); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = os.WriteFile(report, append(b, '\n'), 0o644)
	}
	if err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	fmt.Fprintln(e.Stdout, rep.Summary())
	if len(ts) == 0 && rep.Rows > 0 {
		return errkind.Errorf(errkind.Input, "no task of %s holds (the reasons are in %s)", file, report)
	}
	return nil
}

// writeTasks writes the tasks that hold, one JSON line each.
func writeTasks(path string, ts []task.Task) error {
	return jsonl.Replace(path, func(w *bufio.Writer) error {
		for _, t := range ts {
			b, err := json.Marshal(t)
			if err != nil {
				return err
			}
			w.Write(append(b, '\n'))
		}
		return nil
	})
}

// uploadedPriorTo is --uploaded-prior-to as pip takes it (RFC 3339), ""
// for none.
func uploadedPriorTo(flag string) (string, error) {
	if flag == "none" {
		return "", nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, flag); err == nil {
			return t.UTC().Format(time.RFC3339), nil
		}
	}
	return "", command.Usagef("--uploaded-prior-to %s: want a date (2025-07-01), an RFC 3339 time or none", flag)
}
