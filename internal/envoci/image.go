package envoci

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/layertar"
)

// An environment's image is what anyone with Docker, runc or a harness
// built on them (SWE-bench's, Harbor's) runs: unlike the artifact, which
// only cwm reads, it is a standard OCI image whose one layer is the
// environment's base and layer flattened into one root filesystem, with
// a /testbed link to /repo (the working directory SWE-bench's harness
// applies patches in), and whose config sets the Env and WorkingDir the
// environment's sandboxes have.

// Testbed is the link to the repository an image carries.
const Testbed = "testbed"

// ImageResult is what WriteImage wrote.
type ImageResult struct {
	Dir    string `json:"dir"`
	Ref    string `json:"ref"`    // the tag in the layout's index
	Digest string `json:"digest"` // the manifest's
	Bytes  int64  `json:"bytes"`  // the layer's, compressed
}

// WriteImage writes e's image as an OCI image layout in dir (made if
// missing; an index.json already there gains the tag ref). An
// environment on the host's root filesystem has no image: that is an
// error of kind errkind.Input.
func WriteImage(e *env.Env, dir, ref string) (*ImageResult, error) {
	rootfs, vars, err := e.ImageRoot()
	if err != nil {
		return nil, err
	}
	if rootfs == "" {
		return nil, errkind.Errorf(errkind.Input, "environment %s stands on the host's root filesystem, which no image can carry: build it on a base (cwm env build --base) to export its image", e.ID)
	}
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return nil, err
	}
	trees := []layertar.Tree{{Root: rootfs}}
	tops, err := os.ReadDir(e.LayerDir())
	if err != nil {
		return nil, fmt.Errorf("read the layer of %s: %w", e.ID, err)
	}
	for _, t := range tops {
		trees = append(trees, layertar.Tree{Root: e.LayerDir(), Top: t.Name()})
	}
	link := &tar.Header{Name: Testbed, Typeflag: tar.TypeSymlink, Linkname: env.RepoRoot[1:], Mode: 0o777,
		ModTime: e.BuiltAt.Truncate(time.Second), Format: tar.FormatPAX}
	p, err := writeLayer(dir, func(w io.Writer) (layertar.Packed, error) { return layertar.PackTrees(w, trees, link) })
	if err != nil {
		return nil, fmt.Errorf("flatten the image of %s: %w", e.ID, err)
	}
	cfg := v1.ConfigFile{Architecture: runtime.GOARCH, OS: "linux", Created: v1.Time{Time: e.BuiltAt.UTC()},
		Config: v1.Config{Env: vars, WorkingDir: env.RepoRoot, Cmd: []string{"/bin/bash"},
			Labels: map[string]string{"org.cwm.env": e.ID, "org.cwm.commit": e.Commit}},
		RootFS: v1.RootFS{Type: "layers"}}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1}
	return addLayer(dir, ref, m, cfg, p, "cwm: environment "+e.ID+" on its base, flattened")
}

// writeLayer writes the layer pack makes as a blob of the layout in dir.
func writeLayer(dir string, pack func(io.Writer) (layertar.Packed, error)) (layertar.Packed, error) {
	tmp, err := os.CreateTemp(filepath.Join(dir, "blobs", "sha256"), ".layer-")
	if err != nil {
		return layertar.Packed{}, err
	}
	defer os.Remove(tmp.Name())
	p, err := pack(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return layertar.Packed{}, err
	}
	return p, os.Rename(tmp.Name(), filepath.Join(dir, blobName(p.Digest)))
}

// addLayer writes the image of m and cfg with the layer p on top (its
// config, manifest and the index's tag ref) to the layout in dir.
func addLayer(dir, ref string, m v1.Manifest, cfg v1.ConfigFile, p layertar.Packed, createdBy string) (*ImageResult, error) {
	diffID, err := v1.NewHash(p.DiffID)
	if err != nil {
		return nil, err
	}
	layerDigest, err := v1.NewHash(p.Digest)
	if err != nil {
		return nil, err
	}
	cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, diffID)
	cfg.History = append(cfg.History, v1.History{Created: cfg.Created, CreatedBy: createdBy})
	cfgRaw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if m.Config, err = putBlob(dir, cfgRaw, types.OCIConfigJSON); err != nil {
		return nil, err
	}
	m.Layers = append(m.Layers, v1.Descriptor{MediaType: types.OCILayer, Size: p.Size, Digest: layerDigest})
	mRaw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	mDesc, err := putBlob(dir, mRaw, types.OCIManifestSchema1)
	if err != nil {
		return nil, err
	}
	if err := addToIndex(dir, mDesc, ref); err != nil {
		return nil, err
	}
	return &ImageResult{Dir: dir, Ref: ref, Digest: mDesc.Digest.String(), Bytes: p.Size}, nil
}

// putBlob writes raw as a blob of the layout in dir.
func putBlob(dir string, raw []byte, mt types.MediaType) (v1.Descriptor, error) {
	sum := sha256.Sum256(raw)
	d := "sha256:" + hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(dir, blobName(d)), raw, 0o644); err != nil {
		return v1.Descriptor{}, err
	}
	h, _ := v1.NewHash(d)
	return v1.Descriptor{MediaType: mt, Size: int64(len(raw)), Digest: h}, nil
}

// addToIndex records m in dir's index.json under ref (replacing a
// manifest of that ref) and writes oci-layout.
func addToIndex(dir string, m v1.Descriptor, ref string) error {
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return err
	}
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	path := filepath.Join(dir, "index.json")
	if f, err := os.Open(path); err == nil {
		err = json.NewDecoder(io.LimitReader(f, 16<<20)).Decode(&idx)
		f.Close()
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	kept := idx.Manifests[:0]
	for _, d := range idx.Manifests {
		if d.Annotations[refNameAnnotation] != ref {
			kept = append(kept, d)
		}
	}
	m.Annotations = map[string]string{refNameAnnotation: ref}
	idx.Manifests = append(kept, m)
	raw, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// DeriveImage adds to the layout in dir the image ref: the image from
// (a ref of the same layout) with one more layer, the uncompressed tar
// in layerTar (a task's few files over its environment's image).
func DeriveImage(dir, from, ref, layerTar string) (*ImageResult, error) {
	idxRaw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, fmt.Errorf("read the image layout %s: %w", dir, err)
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(idxRaw, &idx); err != nil {
		return nil, fmt.Errorf("read the image layout %s: %w", dir, err)
	}
	var base *v1.Descriptor
	for i, d := range idx.Manifests {
		if d.Annotations[refNameAnnotation] == from {
			base = &idx.Manifests[i]
		}
	}
	if base == nil {
		return nil, fmt.Errorf("the image layout %s has no image %s", dir, from)
	}
	var m v1.Manifest
	var cfg v1.ConfigFile
	if err := readJSONBlob(dir, base.Digest.String(), &m); err != nil {
		return nil, err
	}
	if err := readJSONBlob(dir, m.Config.Digest.String(), &cfg); err != nil {
		return nil, err
	}
	src, err := os.Open(layerTar)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	p, err := writeLayer(dir, func(w io.Writer) (layertar.Packed, error) { return layertar.Compress(w, src) })
	if err != nil {
		return nil, fmt.Errorf("compress the layer of %s: %w", ref, err)
	}
	return addLayer(dir, ref, m, cfg, p, "cwm: "+ref)
}

// readJSONBlob decodes the blob d of the layout in dir.
func readJSONBlob(dir, d string, v any) error {
	raw, err := os.ReadFile(filepath.Join(dir, blobName(d)))
	if err != nil {
		return fmt.Errorf("read blob %s: %w", d, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("blob %s: %w", d, err)
	}
	return nil
}
