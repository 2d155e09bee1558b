// Package base is cwm's store of bases: the root filesystems sandboxes
// start on, as OCI images addressed by digest, in $CWM_HOME/bases/<hex>/:
// a root filesystem (rootfs/, never written once published; sandboxes
// mount it read-only) and base.json (what the image's configuration says,
// where it came from, the Python in it). Their blobs (manifest,
// configuration, compressed layers) are in the blob cache env push and
// pull use (internal/blobcache), so that a base travels as an image does.
// internal/basebuild imports and builds them.
//
// The digest of a base is the digest of its OCI manifest: the registry's
// for an imported image, the one cwm writes for a Debian or a directory
// base (one layer, a tar made deterministically). Same content, same
// digest: bases are immutable, and importing one twice finds it.
//
// The package has no package-level state to initialise: the sandbox
// commands' fast path resolves --base DIGEST through it.
package base

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"cwm/internal/errkind"
	"cwm/internal/sandbox"
)

// Kinds of source.
const (
	KindRegistry = "registry"
	KindLayout   = "layout"
	KindArchive  = "archive"
	KindDebian   = "debian"
	KindDir      = "dir"
	// KindDockerfile is a base cwm built from a Dockerfile (a Harbor
	// task's environment): Ref is the Dockerfile.
	KindDockerfile = "dockerfile"
)

// FileName is a base's manifest in its directory.
const FileName = "base.json"

// Base is a stored base: base.json, and where it is.
type Base struct {
	// Digest is the digest of the base's OCI manifest, "sha256:<hex>".
	Digest string `json:"digest"`
	// Config is the digest of its image configuration.
	Config string `json:"config"`
	// Env, WorkingDir and User are the image configuration's: the
	// defaults of the sandboxes on the base (User is recorded only:
	// sandboxes run as root in their own user namespace).
	Env        []string `json:"env"`
	WorkingDir string   `json:"working_dir"`
	User       string   `json:"user"`
	// Layers are the image's layers, lowest first.
	Layers []Layer `json:"layers"`
	// Py is the Python found in the base by running it in a sandbox
	// there; nil when there is none.
	Py *Python `json:"python"`
	// Source is where the base came from.
	Source Source `json:"source"`
	// Bytes is the size of the unpacked root filesystem.
	Bytes     int64     `json:"bytes"`
	CreatedAt time.Time `json:"created_at"`

	dir string
}

// Layer is one layer of a base's image.
type Layer struct {
	Digest    string `json:"digest"`
	DiffID    string `json:"diff_id"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
}

// Python is the interpreter of a base.
type Python struct {
	// Path is where python3 is, inside the base.
	Path string `json:"path"`
	// Version is its X.Y.Z version.
	Version string `json:"version"`
}

// MinorVersion is X.Y of the version.
func (p Python) MinorVersion() string {
	parts := strings.SplitN(p.Version, ".", 3)
	if len(parts) < 2 {
		return p.Version
	}
	return parts[0] + "." + parts[1]
}

// Source says where a base came from.
type Source struct {
	// Kind is KindRegistry, KindLayout, KindArchive, KindDebian or KindDir.
	Kind string `json:"kind"`
	// Ref is the registry reference, the layout or archive file, the
	// directory, or for a Debian base the mirror.
	Ref string `json:"ref,omitempty"`
	// Platform is the platform picked from an index (os/arch).
	Platform string `json:"platform,omitempty"`
	// Suite, Packages and Tool describe a Debian base: the suite, the
	// packages asked for beyond cwm's own, the tool that made the tree
	// (mmdebstrap or debootstrap, and its version).
	Suite    string   `json:"suite,omitempty"`
	Packages []string `json:"packages,omitempty"`
	Tool     string   `json:"tool,omitempty"`
}

// Rootfs is the base's root filesystem: a sandbox's Config.Base.
func (b *Base) Rootfs() string { return filepath.Join(b.dir, "rootfs") }

// Dir is the base's directory in the store.
func (b *Base) Dir() string { return b.dir }

// Short is the base's digest as people read it (12 hex digits).
func (b *Base) Short() string { return ShortDigest(b.Digest) }

// ShortDigest is a digest's first 12 hex digits.
func ShortDigest(d string) string {
	h := strings.TrimPrefix(d, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Python is the base's interpreter, or an error that says the base has
// none (what a build on it fails with).
func (b *Base) Python() (Python, error) {
	if b.Py == nil {
		return Python{}, errkind.Errorf(errkind.Input, "base %s (%s) has no Python: python3 was not found on its PATH; build on a base with Python (cwm base build --debian bookworm, or an image that has it)", b.Short(), b.Describe())
	}
	return *b.Py, nil
}

// Describe is where the base came from, in a few words.
func (b *Base) Describe() string {
	s := b.Source
	switch s.Kind {
	case KindDebian:
		d := "debian " + s.Suite
		if len(s.Packages) > 0 {
			d += " +" + strings.Join(s.Packages, ",")
		}
		return d
	case "":
		return "unknown"
	}
	return s.Kind + " " + s.Ref
}

// Path is the image's PATH ("" when its Env has none).
func (b *Base) Path() string {
	for _, kv := range b.Env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			return p
		}
	}
	return ""
}

// SandboxEnv is the environment sandboxes on the base start with: the
// image's Env; a PATH first in over says where the rest goes (its entries
// before the image's, the image's kept after).
func (b *Base) SandboxEnv(over []string) []string {
	var imgPath string
	out := make([]string, 0, len(b.Env)+len(over))
	for _, kv := range b.Env {
		if strings.HasPrefix(kv, "PATH=") {
			imgPath = strings.TrimPrefix(kv, "PATH=")
			continue
		}
		out = append(out, kv)
	}
	havePath := false
	for _, kv := range over {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			havePath = true
			if imgPath != "" {
				kv = "PATH=" + mergePath(p, imgPath)
			}
		}
		out = append(out, kv)
	}
	if !havePath && imgPath != "" {
		out = append(out, "PATH="+imgPath)
	}
	return out
}

// mergePath is first's entries, then those of second that first lacks.
func mergePath(first, second string) string {
	seen := map[string]bool{}
	var out []string
	for _, p := range append(strings.Split(first, ":"), strings.Split(second, ":")...) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return strings.Join(out, ":")
}

func (b *Base) String() string { return fmt.Sprintf("base %s (%s)", b.Short(), b.Describe()) }

// SandboxConfig is the configuration of a sandbox on the base alone: its
// root filesystem, its Env and its WorkingDir. The image's User is not
// applied: sandboxes run as root in their own user namespace.
func (b *Base) SandboxConfig() sandbox.Config {
	return sandbox.Config{Base: b.Rootfs(), Env: b.SandboxEnv(nil), Workdir: b.WorkingDir}
}
