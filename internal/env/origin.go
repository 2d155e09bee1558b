package env

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"cwm/internal/errkind"
	"cwm/internal/sandbox"
)

// OriginFile records where an environment came from. The store writes it
// (when a build publishes, when a pull or an import installs) and no
// artifact carries it: env.json travels with an environment, so what it
// says about the sandbox's root and limits is the sender's word; what
// this file grants is this machine's operator's.
const OriginFile = "origin.json"

// The kinds of origin.
const (
	OriginBuilt    = "built"    // built on this machine (env build)
	OriginPulled   = "registry" // pulled from an OCI registry
	OriginImported = "file"     // imported from an exported file
)

// Origin is where an environment came from, and what the operator of this
// machine granted it.
type Origin struct {
	// Kind is OriginBuilt, OriginPulled or OriginImported; empty in the
	// origin.json of pulls and imports of cwm before it had kinds (foreign
	// either way).
	Kind string `json:"kind,omitempty"`
	// From is the registry reference or the file.
	From string `json:"from,omitempty"`
	// Manifest is the digest of the artifact's OCI manifest.
	Manifest string `json:"manifest,omitempty"`
	// FileDigest is the sha256 of the imported file.
	FileDigest string    `json:"file_digest,omitempty"`
	At         time.Time `json:"at"`
	Grant
}

// Grant is what the operator of this machine allows an environment: the
// base its sandboxes start on and the ceilings of their limits. A build
// grants what its flags said; a pull or an import what its --base and
// limit flags said, the host's base and sandbox.DefaultLimits otherwise.
type Grant struct {
	// Base is "host" (or empty) or a directory the operator named.
	Base string `json:"base,omitempty"`
	// Limits are ceilings: zero fields are sandbox.DefaultLimits'.
	Limits RunLimits `json:"limits"`
}

// Foreign reports whether the environment was made elsewhere (or nobody
// knows where).
func (o *Origin) Foreign() bool { return o == nil || o.Kind != OriginBuilt }

func (o *Origin) String() string {
	switch {
	case o == nil:
		return "unknown (treated as foreign)"
	case o.Kind == OriginBuilt:
		return "built on this machine"
	case o.Kind == OriginPulled:
		return "pulled from " + o.From + " (manifest " + o.Manifest + ")"
	case o.Kind == OriginDataset:
		return "recorded for the image " + o.From + " by cwm tasks import"
	case o.Kind == OriginImported:
		return "imported from " + o.From + " (file " + o.FileDigest + ", manifest " + o.Manifest + ")"
	}
	return "pulled or imported from " + o.From + " (manifest " + o.Manifest + ")"
}

// Origin is where the environment came from; nil when unknown.
func (e *Env) Origin() *Origin { return e.origin }

func readOrigin(dir string) (*Origin, error) {
	data, err := os.ReadFile(filepath.Join(dir, OriginFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var o Origin
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, OriginFile), err)
	}
	return &o, nil
}

func writeOrigin(dir string, o *Origin) error {
	return writeJSONAtomic(filepath.Join(dir, OriginFile), o)
}

// base is the directory sandboxes on e start on ("" for the host's): the
// one the operator granted, never one env.json chose. An env.json naming
// another base than the granted one (a foreign artifact's, or a manifest
// edited in a shared store) is refused, so that the environment does not
// silently run on another root than it was built for.
func (e *Env) base() (string, error) {
	if e.building {
		return hostBase(e.Base), nil
	}
	var granted string
	if e.origin != nil {
		granted = hostBase(e.origin.Base)
	}
	if want := hostBase(e.Base); want != granted {
		return "", errkind.Errorf(errkind.Input,
			"environment %s (%s) names base %s, which this machine did not grant (it grants %s): an artifact does not choose the sandbox's root; pull or import it again with --base DIR naming the base on this machine",
			e.ID, e.origin, e.Base, baseName(granted))
	}
	return granted, nil
}

// hostBase is a base as sandbox.Config takes it: "" for the host's.
func hostBase(b string) string {
	if b == "host" {
		return ""
	}
	return b
}

func baseName(b string) string {
	if b == "" {
		return "the host's"
	}
	return b
}

// Ceilings are the largest limits sandboxes on e get: the granted ones,
// sandbox.DefaultLimits' where the grant says nothing.
func (e *Env) Ceilings() RunLimits {
	var g RunLimits
	if e.origin != nil {
		g = e.origin.Limits
	}
	d := sandbox.DefaultLimits
	pick := func(v, def int64) int64 {
		if v > 0 {
			return v
		}
		return def
	}
	c := RunLimits{Memory: pick(g.Memory, d.Memory), Pids: pick(g.Pids, d.Pids),
		Output: pick(g.Output, d.Output), Disk: pick(g.Disk, d.Disk), Timeout: d.Timeout}
	if g.Timeout > 0 {
		c.Timeout = g.Timeout
	}
	return c
}

// SandboxLimits are the limits sandboxes on e start under: env.json's,
// clamped to what this machine grants (Ceilings).
func (e *Env) SandboxLimits() RunLimits { return e.clamp(e.Limits) }

// clamp bounds l by e's ceilings, whatever env.json asked for; a build in
// progress runs under the builder's own limits. Zero fields of l, which
// take the sandbox's defaults, are bounded too (a ceiling may be lower).
func (e *Env) clamp(l RunLimits) RunLimits {
	if e.building {
		return l
	}
	c := e.Ceilings()
	d := sandbox.DefaultLimits
	min := func(v, def, ceil int64) int64 {
		if v <= 0 {
			v = def
		}
		if v > ceil {
			return ceil
		}
		return v
	}
	out := RunLimits{Memory: min(l.Memory, d.Memory, c.Memory), Pids: min(l.Pids, d.Pids, c.Pids),
		Output: min(l.Output, d.Output, c.Output), Disk: min(l.Disk, d.Disk, c.Disk)}
	out.Timeout = time.Duration(min(int64(l.Timeout), int64(d.Timeout), int64(c.Timeout)))
	return out
}

// Regrant records a new grant for e, an environment made elsewhere that
// the store already holds (pulled or imported again with --base or limit
// flags): its sandboxes start on g's base, env.json saying so, under g's
// ceilings. An environment built here keeps the grant of its build.
func (st *Store) Regrant(e *Env, g Grant) error {
	if !e.origin.Foreign() {
		return errkind.Errorf(errkind.Input, "environment %s was built on this machine: its base and limits are its build's (build it again to change them)", e.ID)
	}
	o := Origin{}
	if e.origin != nil {
		o = *e.origin
	}
	if g.Base == "" {
		g.Base = "host"
	}
	o.Grant = g
	if err := writeOrigin(e.dir, &o); err != nil {
		return fmt.Errorf("grant %s: %w", e.ID, err)
	}
	e.origin = &o
	e.Base = g.Base
	if err := e.save(); err != nil {
		return fmt.Errorf("grant %s: %w", e.ID, err)
	}
	return nil
}
