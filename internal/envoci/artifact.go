// Package envoci ships environments between machines as OCI artifacts:
// cwm env push and pull through any OCI registry, cwm env export and
// import as one file (an OCI image layout in a tar) for shared file
// systems.
//
// An environment's artifact is an OCI image manifest whose config blob is
// its env.json (media type ConfigMediaType, at most env.MaxManifest) and
// whose layers are one gzip-compressed tar per top-level directory of its
// layer (repo/, venv/; standard OCI layer blobs, which unpacked at / give
// the paths the sandboxes see), plus its baseline, coverage map and (when
// asked) build log as blobs of their own. What env.json says of the
// sandbox's base and limits is the sender's word: the receiving machine
// grants its own (env.Grant, env.Origin), except that an environment on a
// stored base brings that base as an image of its own and runs on it
// (carrybase.go). Blobs are content-addressed: a registry stores a layer two
// environments share once, and cwm's blob cache ($CWM_HOME/blobcache.Cache) fetches
// it once. Every blob is checked against its digest before it is used,
// and an environment appears in the store only once all of it is there
// (it is unpacked into a stage of the store, published at the end).
//
// The registry protocol is google/go-containerregistry's (the well-kept
// standard in Go, used by ko, crane and Tekton): authentication from the
// Docker config (docker login, or a Kubernetes pull secret mounted as
// $DOCKER_CONFIG/config.json), token and basic auth, retries, the
// distribution API's blob mounting and existence checks.
package envoci

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"cwm/internal/blobcache"
	"cwm/internal/env"
)

// The media types of an environment's artifact.
const (
	ArtifactType      = "application/vnd.cwm.env.v1"
	ConfigMediaType   = "application/vnd.cwm.env.config.v1+json"
	LayerMediaType    = string(types.OCILayer) // tar+gzip
	CoverageMediaType = "application/vnd.cwm.env.coverage.v1+json"
	BuildLogMediaType = "application/vnd.cwm.env.buildlog.v1+text"
	BaselineMediaType = "application/vnd.cwm.env.baseline.v1+json"
)

// Annotations of the manifest and its layers.
const (
	annEnvID   = "cwm.env.id"
	annEnvName = "cwm.env.name"
	annPath    = "cwm.layer.path"    // the layer's top-level directory
	annDiffID  = "cwm.layer.diff_id" // sha256 of the tar inside
	annTarSize = "cwm.layer.size"    // bytes of the tar inside
	annTitle   = "org.opencontainers.image.title"
	annCreated = "org.opencontainers.image.created"
)

// Limits on what is read into memory from a registry or an archive.
const (
	maxManifest = 4 << 20
	maxConfig   = env.MaxManifest // the baseline, which grows with the suite, is a blob apart
	// maxBuildLog bounds a shipped build log: the builder keeps 16 MiB of
	// it (envbuild), and the rest of a larger one is not a log.
	maxBuildLog = 17 << 20
)

// artifact is an environment's manifest, parsed and checked.
type artifact struct {
	raw    []byte
	digest string
	m      *v1.Manifest
	id     string
	layers []layerDesc
	files  []fileDesc // baseline.json, coverage.json, build.log
	// base is the digest of the stored base the environment came with
	// (annBase), "" for one on the host's or a directory.
	base    string
	carried *carriedBase // the base's blobs, on the machine that ships it
}

type layerDesc struct {
	v1.Descriptor
	top, diffID string
	tarSize     int64
}

type fileDesc struct {
	v1.Descriptor
	name string
}

// files an artifact may carry beside the layer, by media type, and the
// largest each may be (0: no bound of its own).
var (
	fileNames = map[string]string{CoverageMediaType: env.CoverageFile, BuildLogMediaType: env.BuildLog, BaselineMediaType: env.BaselineFile}
	fileMax   = map[string]int64{BuildLogMediaType: maxBuildLog, BaselineMediaType: env.MaxBaseline}
)

// parseArtifact checks that raw is the manifest of an environment. where
// names it in errors (a reference, a file).
func parseArtifact(raw []byte, where string) (*artifact, error) {
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, corrupt("%s: not an OCI manifest: %v", where, err)
	}
	if m.MediaType != "" && m.MediaType != types.OCIManifestSchema1 {
		return nil, corrupt("%s is a %s, not an OCI image manifest: not a cwm environment", where, m.MediaType)
	}
	if string(m.Config.MediaType) != ConfigMediaType {
		return nil, corrupt("%s is not a cwm environment (its config is %s, not %s)", where, m.Config.MediaType, ConfigMediaType)
	}
	a := &artifact{raw: raw, digest: blobcache.Digest(raw), m: m, id: m.Annotations[annEnvID], base: m.Annotations[annBase]}
	if a.base != "" && blobcache.CheckDigest(a.base) != nil {
		return nil, corrupt("%s: %s %q is not a digest", where, annBase, a.base)
	}
	if err := blobcache.CheckDigest(m.Config.Digest.String()); err != nil {
		return nil, corrupt("%s: config: %v", where, err)
	}
	if m.Config.Size > maxConfig || m.Config.Size < 0 {
		return nil, corrupt("%s: its env.json (config blob) is %d bytes, past the %d MiB a manifest may have: not fetched; an environment of this cwm keeps its baseline apart (rebuild or export it again with this cwm)", where, m.Config.Size, maxConfig>>20)
	}
	seen := map[string]bool{}
	for i, l := range m.Layers {
		if err := blobcache.CheckDigest(l.Digest.String()); err != nil {
			return nil, corrupt("%s: layer %d: %v", where, i, err)
		}
		if l.Size < 0 {
			return nil, corrupt("%s: layer %d has a negative size", where, i)
		}
		if name, ok := fileNames[string(l.MediaType)]; ok {
			if max := fileMax[string(l.MediaType)]; max > 0 && l.Size > max {
				return nil, corrupt("%s: its %s is %d bytes, past the %d MiB it may have: not fetched", where, name, l.Size, max>>20)
			}
			a.files = append(a.files, fileDesc{l, name})
			continue
		}
		if string(l.MediaType) != LayerMediaType {
			return nil, corrupt("%s: layer %d is a %s: cwm environments have %s layers", where, i, l.MediaType, LayerMediaType)
		}
		top := l.Annotations[annPath]
		tarSize, err := strconv.ParseInt(l.Annotations[annTarSize], 10, 64)
		switch {
		case top == "" || top != path.Clean(top) || path.Base(top) != top || top == "." || top == "..":
			return nil, corrupt("%s: layer %d: %s %q is not a directory name", where, i, annPath, top)
		case seen[top]:
			return nil, corrupt("%s: two layers are %s/", where, top)
		case err != nil || tarSize < 0:
			return nil, corrupt("%s: layer %s: %s %q is not a size", where, top, annTarSize, l.Annotations[annTarSize])
		case blobcache.CheckDigest(l.Annotations[annDiffID]) != nil:
			return nil, corrupt("%s: layer %s: %s %q is not a digest", where, top, annDiffID, l.Annotations[annDiffID])
		}
		seen[top] = true
		a.layers = append(a.layers, layerDesc{l, top, l.Annotations[annDiffID], tarSize})
	}
	if len(a.layers) == 0 {
		return nil, corrupt("%s: an environment without a layer", where)
	}
	return a, nil
}

// blobsOf lists the artifact's blobs: its config, layers and files.
func (a *artifact) blobsOf() []v1.Descriptor {
	out := []v1.Descriptor{a.m.Config}
	for _, l := range a.layers {
		out = append(out, l.Descriptor)
	}
	for _, f := range a.files {
		out = append(out, f.Descriptor)
	}
	return out
}

// size is the bytes of the artifact's blobs.
func (a *artifact) size() int64 {
	var n int64
	for _, d := range a.blobsOf() {
		n += d.Size
	}
	return n
}

// newManifest writes an environment's manifest; baseDigest names the
// stored base it comes with ("" for none).
func newManifest(id, name, created, baseDigest string, config v1.Descriptor, layers []v1.Descriptor) ([]byte, error) {
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: ArtifactType,
		Config: config, Layers: layers,
		Annotations: map[string]string{annEnvID: id, annEnvName: name, annCreated: created}}
	if baseDigest != "" {
		m.Annotations[annBase] = baseDigest
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("write manifest: %w", err)
	}
	return raw, nil
}
