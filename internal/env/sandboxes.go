package env

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"cwm/internal/base"
	"cwm/internal/errkind"
	"cwm/internal/sandbox"
)

// Sandboxes starts sandboxes on environments. Stages hold one rather than
// a *sandbox.Runtime: it is the one place where an environment becomes a
// sandbox configuration, so the stages never see where a layer is stored.
//
// What stages use of the sandboxes it starts is a small method set (Exec,
// Shell, ReadFile, WriteFile, Stat, Reset, Clone, Changes, Close; see
// docs/architecture.md), which a second backend will provide; the
// interface is declared by its consumers when that backend arrives.
type Sandboxes struct {
	rt *sandbox.Runtime
}

// NewSandboxes returns Sandboxes that start sandboxes in rt. The caller
// keeps rt and closes it after the last sandbox.
func NewSandboxes(rt *sandbox.Runtime) *Sandboxes { return &Sandboxes{rt: rt} }

// Open starts a sandbox on e under e's limits: its layer over its base,
// the repository at RepoRoot as the working directory, the virtual
// environment first on PATH. The base is the one this machine granted and
// the limits are clamped to its ceilings (Env.Ceilings), whatever env.json
// says: stores are shared, and hold environments made elsewhere.
func (s *Sandboxes) Open(ctx context.Context, e *Env) (*sandbox.Sandbox, error) {
	return s.OpenWith(ctx, e, e.Limits)
}

// OpenWith is Open under other limits (a build's install steps).
func (s *Sandboxes) OpenWith(ctx context.Context, e *Env, l RunLimits) (*sandbox.Sandbox, error) {
	cfg, err := config(e, l)
	if err != nil {
		return nil, fmt.Errorf("start sandbox on %s: %w", name(e), err)
	}
	sb, err := s.rt.New(ctx, cfg)
	if err != nil {
		var ce *sandbox.ConfigError
		if errors.As(err, &ce) {
			// The manifest describes a sandbox cwm cannot start: a layer
			// or a base that is gone, a limit the host refuses.
			err = errkind.Wrap(errkind.Input, err)
		}
		return nil, fmt.Errorf("start sandbox on %s: %w", name(e), err)
	}
	return sb, nil
}

// Prewarm makes sure the runtime's warm pool holds a sandbox of e (under
// e's limits), starting one when fewer than want are idle.
func (s *Sandboxes) Prewarm(ctx context.Context, e *Env, want int) error {
	cfg, err := config(e, e.Limits)
	if err != nil {
		return fmt.Errorf("start sandbox on %s: %w", name(e), err)
	}
	return s.rt.Prewarm(ctx, cfg, want)
}

func name(e *Env) string {
	if e.ID == "" {
		return "the environment being built"
	}
	return e.ID
}

// sandboxPath is PATH inside an environment's sandboxes: the venv first.
const sandboxPath = "PATH=" + VenvRoot + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// config is the configuration of a sandbox on e's layer (an image's
// environment has its own: ImageSpec.config).
func config(e *Env, l RunLimits) (sandbox.Config, error) {
	root, err := e.base()
	if err != nil {
		return sandbox.Config{}, err
	}
	l = e.clamp(l)
	if e.Image != nil {
		return e.Image.config(e, root, l)
	}
	env := []string{
		sandboxPath,
		"VIRTUAL_ENV=" + VenvRoot,
		// The layer already holds the bytecode; writing more would only
		// fill each sandbox's upper layer.
		"PYTHONDONTWRITEBYTECODE=1",
		"PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", "PIP_ROOT_USER_ACTION=ignore",
	}
	if IsBaseDigest(root) {
		b, err := e.storedBase(root)
		if err != nil {
			return sandbox.Config{}, err
		}
		// The image's Env under the environment's: the venv stays first
		// on PATH, the image's PATH (when it has one) after it.
		if p := b.Path(); p != "" {
			env[0] = "PATH=" + VenvRoot + "/bin:" + p
		}
		root, env = b.Rootfs(), b.SandboxEnv(env)
	}
	return sandbox.Config{Base: root, Layers: []string{e.LayerDir()}, Workdir: RepoRoot, Env: env, Limits: l.sandbox()}, nil
}

func (l RunLimits) sandbox() sandbox.Limits {
	return sandbox.Limits{Timeout: l.Timeout, Memory: l.Memory, Pids: l.Pids, Output: l.Output, Disk: l.Disk}
}

// IsBaseDigest reports whether an environment's base names a stored base
// (by the digest of its manifest) rather than "host" or a directory.
func IsBaseDigest(b string) bool { return strings.HasPrefix(b, "sha256:") }

// storedBase is the base of the store of e's $CWM_HOME that digest names.
// e's directory is $CWM_HOME/envs/<id>, or a build's stage beside it.
func (e *Env) storedBase(digest string) (*base.Base, error) {
	home := filepath.Dir(filepath.Dir(e.dir))
	b := base.NewStore(home).Get(digest)
	if b == nil {
		return nil, errkind.Errorf(errkind.NotFound, "environment %s is built on base %s, which is not in %s (cwm base import or cwm base build makes it)", name(e), base.ShortDigest(digest), base.NewStore(home).Dir())
	}
	return b, nil
}

// ImageRoot is what an image of e is made of: the root filesystem its
// sandboxes stand on (a stored base's rootfs, or a base directory; "" for
// the host's, which no image can carry) and the environment they start
// with (the venv first on PATH, over the base's Env).
func (e *Env) ImageRoot() (rootfs string, vars []string, err error) {
	cfg, err := config(e, e.Limits)
	if err != nil {
		return "", nil, err
	}
	return cfg.Base, cfg.Env, nil
}
