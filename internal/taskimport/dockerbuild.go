package taskimport

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/shell"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/egress"
	"cwm/internal/sandbox"
)

// buildTimeout bounds one RUN of a Dockerfile.
const buildTimeout = 30 * time.Minute

// stepCA is where a RUN step finds the host's certificate bundle.
const stepCA = "/tmp/cwm-ca-bundle.pem"

// buildFailed is a Dockerfile that does not build: the reason, for the
// report.
type buildFailed struct {
	class, msg string
}

func (e *buildFailed) Error() string { return e.msg }

// dockerState is what the steps so far have made of the image's
// configuration, and the ARGs in scope.
type dockerState struct {
	env     []string // the image's Env with ENV's
	args    []string // ARG values, seen by RUN and expansions, not kept
	workdir string
	user    string
}

func (d *dockerState) expand(word, at string) (string, error) {
	lex := shell.NewLex('\\')
	out, _, err := lex.ProcessWord(word, shell.EnvsFromSlice(mergeVars(d.args, d.env)))
	if err != nil {
		return "", bad("%s: %q: %v", at, word, err)
	}
	return out, nil
}

// mergeVars is base with over's entries added or replacing those of the
// same name.
func mergeVars(base, over []string) []string {
	out := append([]string{}, base...)
	for _, kv := range over {
		k, _, _ := strings.Cut(kv, "=")
		replaced := false
		for i, o := range out {
			if ok, _, _ := strings.Cut(o, "="); ok == k {
				out[i], replaced = kv, true
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return out
}

// buildDockerfile makes the base plan describes: its FROM imported as a
// base (on the mirror when one is given), then its steps carried out in
// one sandbox on it (RUN through the egress relay when o.Egress allows
// the network, as the install steps of cwm env build run), and what they
// wrote stored as one more layer over the FROM's, with the configuration
// the ENV, WORKDIR and USER steps made. A Dockerfile that does not build
// is a *buildFailed; a wrong one a *rowError.
func buildDockerfile(ctx context.Context, o Options, p *dockerPlan, contextDir string) (*base.Base, error) {
	pre := &dockerState{}
	for _, st := range p.fromArgs {
		if err := pre.arg(st, fmt.Sprintf("%s:%d", p.file, st.line)); err != nil {
			return nil, err
		}
	}
	at := fmt.Sprintf("%s:%d", p.file, p.from.line)
	ref, err := pre.expand(p.from.args[0], at)
	if err != nil {
		return nil, err
	}
	if ref, err = mirrored(ref, o.Mirror); err != nil {
		return nil, bad("%s: FROM %v", at, err)
	}
	from, err := basebuild.Import(ctx, o.Sandboxes.Store, ref, o.Base)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &buildFailed{ReasonImageMissing, fmt.Sprintf("%s: FROM %s: %v", at, ref, err)}
	}
	if len(p.steps) == 0 {
		return from, nil
	}
	d := &dockerState{env: append([]string{}, from.Env...), workdir: from.WorkingDir, user: from.User}
	if d.workdir == "" {
		d.workdir = "/"
	}
	sb, err := o.Sandboxes.Runtime.New(ctx, sandbox.Config{Base: from.Rootfs(), Env: from.SandboxEnv(nil), Workdir: "/",
		Limits: sandbox.Limits{Timeout: buildTimeout}})
	if err != nil {
		return nil, fmt.Errorf("start a sandbox on %s to build %s: %w", from.Short(), p.file, err)
	}
	defer sb.Close()
	for _, st := range p.steps {
		if err := d.step(ctx, sb, o.Egress, st, p.file, contextDir); err != nil {
			return nil, err
		}
	}
	return storeBuild(ctx, o, sb, from, d, p.file, p.path)
}

// step carries out one instruction in sb.
func (d *dockerState) step(ctx context.Context, sb *sandbox.Sandbox, pol *egress.Policy, st dockerStep, file, contextDir string) error {
	at := fmt.Sprintf("%s:%d", file, st.line)
	if st.at != "" {
		at = st.at
	}
	switch st.op {
	case "arg":
		return d.arg(st, at)
	case "env":
		for i := 0; i+1 < len(st.args); i += 3 {
			v, err := d.expand(st.args[i+1], at)
			if err != nil {
				return err
			}
			d.env = mergeVars(d.env, []string{st.args[i] + "=" + v})
		}
	case "user":
		u, err := d.expand(st.args[0], at)
		if err != nil {
			return err
		}
		d.user = u
	case "workdir":
		w, err := d.expand(st.args[0], at)
		if err != nil {
			return err
		}
		d.workdir = d.abs(w)
		return d.run(ctx, sb, nil, []string{"mkdir", "-p", "--", d.workdir}, "/", at)
	case "run":
		argv := st.args
		if !st.json {
			argv = []string{"/bin/sh", "-c", strings.Join(st.args, " ")}
		}
		return d.run(ctx, sb, pol, argv, d.workdir, at)
	case "copy", "add":
		ctxDir := contextDir
		if st.context != "" {
			ctxDir = st.context
		}
		return d.copy(ctx, sb, st, ctxDir, at)
	}
	return nil
}

func (d *dockerState) arg(st dockerStep, at string) error {
	for _, a := range st.args {
		name, def, _ := strings.Cut(a, "=")
		v, err := d.expand(def, at)
		if err != nil {
			return err
		}
		d.args = mergeVars(d.args, []string{name + "=" + v})
	}
	return nil
}

// abs is p taken from the working directory.
func (d *dockerState) abs(p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(d.workdir, p)
}

// run runs argv in sb in dir as RUN does: with the Env and ARGs so far,
// through a relay when pol allows the network (pip pointed at the host's
// index, as env build's install steps are).
func (d *dockerState) run(ctx context.Context, sb *sandbox.Sandbox, pol *egress.Policy, argv []string, dir, at string) error {
	env := mergeVars(d.args, d.env)
	if pol != nil {
		r, err := egress.Start(ctx, sb, *pol)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		defer r.Close()
		env = append(append(env, r.Env()...), pol.IndexEnv()...)
		if pol.CABundle != "" {
			// What the host's pip trusts (a TLS-inspecting proxy's
			// authority among it), there for this step only: it is
			// removed before the layer is taken.
			ca, err := os.ReadFile(pol.CABundle)
			if err != nil {
				return fmt.Errorf("%s: read the host's certificate bundle: %w", at, err)
			}
			if err := sb.WriteFile(ctx, stepCA, ca, 0o644); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			defer sb.Exec(context.WithoutCancel(ctx), sandbox.Cmd{Args: []string{"rm", "-f", stepCA}})
			env = append(env, "PIP_CERT="+stepCA, "SSL_CERT_FILE="+stepCA, "REQUESTS_CA_BUNDLE="+stepCA)
		}
	}
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: argv, Env: env, Dir: dir, Capture: 64 << 10})
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	if !res.Success() {
		return &buildFailed{ReasonBuild, fmt.Sprintf("%s: %s: %s (%s)", at, strings.Join(argv, " "), res.Describe(), tail(string(res.Stdout)+string(res.Stderr)))}
	}
	return nil
}

// copy copies COPY's or ADD's sources from the build context into sb, as
// Docker does: a directory's contents into the destination, a file to it
// (or into it, when it ends in / or there are several sources), owned
// by root or by --chown.
func (d *dockerState) copy(ctx context.Context, sb *sandbox.Sandbox, st dockerStep, contextDir, at string) error {
	words := make([]string, len(st.args))
	for i, w := range st.args {
		v, err := d.expand(w, at)
		if err != nil {
			return err
		}
		words[i] = v
	}
	srcs, dst := words[:len(words)-1], words[len(words)-1]
	intoDir := strings.HasSuffix(dst, "/") || len(srcs) > 1
	dst = d.abs(dst)
	var all []string
	for _, s := range srcs {
		m, err := copySource(contextDir, s, at)
		if err != nil {
			return err
		}
		all = append(all, m...)
	}
	if len(all) > 1 {
		intoDir = true
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarSources(pw, all, dst, intoDir)) }()
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"tar", "-x", "-p", "-C", "/", "-f", "-"}, Stdin: pr, Capture: 64 << 10})
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return fmt.Errorf("%s: copy into the image: %w", at, err)
	}
	if !res.Success() {
		return &buildFailed{ReasonBuild, fmt.Sprintf("%s: %s: unpacking in the image: %s (%s)", at, strings.ToUpper(st.op), res.Describe(), tail(string(res.Stderr)))}
	}
	if st.chown != "" {
		owner, err := d.expand(st.chown, at)
		if err != nil {
			return err
		}
		return d.run(ctx, sb, nil, []string{"chown", "-R", "--", owner, dst}, "/", at)
	}
	return nil
}

// tarSources writes srcs (host paths) as a tar whose names are where
// they go under dst, owned by root.
func tarSources(w io.Writer, srcs []string, dst string, intoDir bool) error {
	tw := tar.NewWriter(w)
	for _, src := range srcs {
		fi, err := os.Stat(src)
		if err != nil {
			return err
		}
		to := dst
		if intoDir && !fi.IsDir() {
			to = path.Join(dst, filepath.Base(src))
		}
		err = filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			info, err := e.Info()
			if err != nil {
				return err
			}
			link := ""
			if info.Mode()&fs.ModeSymlink != 0 {
				if link, err = os.Readlink(p); err != nil {
					return err
				}
			}
			h, err := tar.FileInfoHeader(info, link)
			if err != nil {
				return err
			}
			h.Name = strings.TrimPrefix(path.Join(to, filepath.ToSlash(rel)), "/")
			if h.Name == "" {
				return nil // the root itself
			}
			h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if !info.Mode().IsRegular() {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		})
		if err != nil {
			return err
		}
	}
	return tw.Close()
}
