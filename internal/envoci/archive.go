package envoci

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"cwm/internal/base"
	"cwm/internal/blobcache"
	"cwm/internal/env"
	"cwm/internal/errkind"
)

// An exported environment is an OCI image layout (the OCI image spec's
// oci-layout, index.json and blobs/sha256/) in one tar file, the format
// skopeo and others call oci-archive: the entries come in the order
// oci-layout, index.json, the manifest, the config, the other blobs, so
// that an import can tell the environment from the first three and stop
// there when the store has it.

const refNameAnnotation = "org.opencontainers.image.ref.name"

// maxIndex caps the manifests of an exported file's index.json (cwm env
// export writes one).
const maxIndex = 256

// ExportResult is what an export wrote.
type ExportResult struct {
	EnvID  string `json:"env_id"`
	Digest string `json:"digest"` // the manifest's
	Blobs  int    `json:"blobs"`
	Bytes  int64  `json:"bytes"`
	// Base is the stored base written with the environment ("" for none).
	Base string `json:"base,omitempty"`
}

// Export writes e to file: its artifact (packed into the blob cache of
// home) as an OCI image layout in a tar, without its build log. The file
// appears complete or not at all.
func Export(e *env.Env, file, home string) (*ExportResult, error) {
	return ExportWith(e, file, Options{Home: home})
}

// ExportWith is Export with options: o.Home's blob cache, the build log
// when o.WithBuildLog is set.
func ExportWith(e *env.Env, file string, o Options) (*ExportResult, error) {
	b := blobcache.New(o.Home)
	a, err := prepare(e, o.Home, b, o.WithBuildLog)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", e.ID, err)
	}
	defer os.Remove(f.Name()) // fails once renamed
	h, _ := v1.NewHash(a.digest)
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{
		MediaType: types.OCIManifestSchema1, Size: int64(len(a.raw)), Digest: h, ArtifactType: ArtifactType,
		Annotations: map[string]string{refNameAnnotation: e.ID},
	}}}
	idx, err := json.Marshal(index)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(f)
	mtime := time.Unix(0, 0)
	put := func(name string, r io.Reader, size int64) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	err = put("oci-layout", strings.NewReader(`{"imageLayoutVersion":"1.0.0"}`), 30)
	if err == nil {
		err = put("index.json", strings.NewReader(string(idx)), int64(len(idx)))
	}
	if err == nil {
		err = put(blobName(a.digest), strings.NewReader(string(a.raw)), int64(len(a.raw)))
	}
	blobs := a.blobsOf()
	if c := a.carried; c != nil {
		// The base it is built on: its manifest (not in index.json, which
		// lists environments), configuration and layers, after the
		// environment's own blobs.
		h, _ := v1.NewHash(c.digest)
		blobs = append(append(blobs, v1.Descriptor{Digest: h, Size: int64(len(c.raw))}), c.blobs...)
	}
	for _, d := range blobs {
		if err != nil {
			break
		}
		var src *os.File
		if src, err = b.Open(d.Digest.String()); err == nil {
			err = put(blobName(d.Digest.String()), src, d.Size)
			src.Close()
		}
	}
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("export %s to %s: %w", e.ID, file, err)
	}
	os.Chmod(f.Name(), 0o644)
	if err := os.Rename(f.Name(), file); err != nil {
		return nil, fmt.Errorf("export %s: %w", e.ID, err)
	}
	return &ExportResult{EnvID: e.ID, Digest: a.digest, Blobs: len(blobs), Bytes: a.size() + a.carried.size(), Base: a.base}, nil
}

func blobName(d string) string { return "blobs/sha256/" + strings.TrimPrefix(d, "sha256:") }

// ImportResult is what an import did.
type ImportResult struct {
	Envs []*env.Env `json:"-"`
	IDs  []string   `json:"env_ids"`
	// Present counts the environments the store already had.
	Present int     `json:"present"`
	Seconds float64 `json:"seconds"`
}

// Import puts the environments of an exported file into st. Every blob is
// checked against its digest as it is read; a file cut short or damaged
// is refused and nothing is added to the store. o names the blob cache
// (o.Home), bounds the unpacking, and grants the environments imported
// (and, when set, those the store already had) their base and limits
// (o.Grant: the host's base and default limits when zero). The file's
// sha256 is recorded in their origin.
func Import(st *env.Store, file string, o Options) (res *ImportResult, err error) {
	start := time.Now()
	f, err := os.Open(file)
	if err != nil {
		return nil, errkind.Wrap(errkind.NotFound, fmt.Errorf("import: %w", err))
	}
	defer f.Close()
	b := blobcache.New(o.Home)
	// A refused import leaves none of the blobs it brought into the cache
	// (a crafted file may hold a large one that no environment uses).
	var added []string
	defer func() {
		if err != nil {
			for _, d := range added {
				os.Remove(b.Path(d))
			}
		}
	}()
	fh := blobcache.NewHash()
	tr := tar.NewReader(io.TeeReader(f, fh))
	var index *v1.IndexManifest
	res = &ImportResult{}
	pending := map[string]bool{} // manifests whose environment the store lacks
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, corrupt("%s is not an exported environment (a tar): %v", file, err)
		}
		switch name := strings.TrimPrefix(hdr.Name, "./"); {
		case name == "oci-layout" || hdr.Typeflag == tar.TypeDir:
		case name == "index.json":
			data, err := io.ReadAll(io.LimitReader(tr, maxManifest+1))
			if err != nil {
				return nil, corrupt("%s: index.json: %v", file, err)
			}
			if len(data) > maxManifest {
				return nil, corrupt("%s: index.json is larger than %d bytes: not an exported environment's", file, maxManifest)
			}
			index = &v1.IndexManifest{}
			if err := json.Unmarshal(data, index); err != nil {
				return nil, corrupt("%s: index.json: %v", file, err)
			}
			if len(index.Manifests) > maxIndex {
				return nil, corrupt("%s: index.json lists %d manifests; an exported file holds at most %d environments", file, len(index.Manifests), maxIndex)
			}
			for _, m := range index.Manifests {
				pending[m.Digest.String()] = true
			}
		case strings.HasPrefix(name, "blobs/sha256/"):
			d := "sha256:" + strings.TrimPrefix(name, "blobs/sha256/")
			if err := blobcache.CheckDigest(d); err != nil {
				return nil, corrupt("%s: %s: %v", file, name, err)
			}
			if !b.Has(d, hdr.Size) {
				if err := b.Put(d, hdr.Size, tr); err != nil {
					if errkind.Of(err) == errkind.Internal {
						err = corrupt("%v (the file is cut short or damaged)", err)
					}
					return nil, fmt.Errorf("%s: %w", file, err)
				}
				added = append(added, d)
			}
			if pending[d] {
				// A manifest: if the store has its environment, the
				// rest of the file is not needed for it.
				a, err := cachedArtifact(b, d, file)
				if err != nil {
					return nil, err // refused before its blobs are read
				}
				if e := st.Get(a.id); a.id != "" && e != nil {
					if o.Grant != (env.Grant{}) {
						if err := st.Regrant(e, o.Grant); err != nil {
							return nil, err
						}
					}
					delete(pending, d)
					res.Present++
					res.Envs = append(res.Envs, e)
					res.IDs = append(res.IDs, a.id)
					if len(pending) == 0 && index != nil {
						res.Seconds = time.Since(start).Seconds()
						return res, nil
					}
				}
			}
		default:
			return nil, corrupt("%s: unexpected entry %q (not an OCI image layout)", file, hdr.Name)
		}
	}
	if index == nil {
		return nil, corrupt("%s has no index.json: not an exported environment", file)
	}
	if _, err := io.Copy(fh, f); err != nil { // what follows the tar's end, for the file's digest
		return nil, fmt.Errorf("import %s: %w", file, err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", file, err)
	}
	origin := env.Origin{Kind: env.OriginImported, From: abs, FileDigest: fh.Digest(), Grant: o.Grant}
	for _, m := range index.Manifests {
		d := m.Digest.String()
		if !pending[d] {
			continue
		}
		a, err := cachedArtifact(b, d, file)
		if err != nil {
			return nil, err
		}
		for _, bd := range a.blobsOf() {
			if !b.Has(bd.Digest.String(), bd.Size) {
				return nil, corrupt("%s lacks blob %s (%s) of environment %s: the file is incomplete", file, blobcache.Short(bd.Digest.String()), blobWhat(bd), a.id)
			}
		}
		org := origin
		if a.base != "" && o.Grant.Base == "" {
			if _, err := ensureBase(context.Background(), o, a.base, base.Source{Kind: base.KindArchive, Ref: abs}, cachedBase(b, a.base, file)); err != nil {
				return nil, err
			}
			org.Grant = grantBase(o.Grant, a.base)
		}
		e, err := install(st, b, a, org, o)
		if err != nil {
			return nil, err
		}
		res.Envs = append(res.Envs, e)
		res.IDs = append(res.IDs, e.ID)
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// cachedArtifact reads and parses a manifest of the cache.
func cachedArtifact(b blobcache.Cache, d, where string) (*artifact, error) {
	raw, err := b.ReadSmall(d, maxManifest)
	if errors.Is(err, os.ErrNotExist) {
		return nil, corrupt("%s lacks the manifest %s its index names", where, blobcache.Short(d))
	}
	if err != nil {
		return nil, err
	}
	return parseArtifact(raw, where)
}
