package basebuild

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"cwm/internal/base"
	"cwm/internal/blobcache"
	"cwm/internal/errkind"
	"cwm/internal/layertar"
)

// defaultPath is the PATH of a base cwm makes from a tree (Debian's).
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ImportDir stores the root filesystem in dir as a base: packed into one
// layer blob (a tar made deterministically: sorted entries, numeric
// owners, whole-second times; devices left out, sandboxes mount their
// own /dev), which is unpacked into the store, under an OCI manifest cwm
// writes, whose digest is the base's.
func ImportDir(ctx context.Context, s *base.Store, dir string, o Options) (*base.Base, error) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil, errkind.Errorf(errkind.Input, "%s is not a directory", dir)
	}
	st, err := s.NewStage()
	if err != nil {
		return nil, err
	}
	return fromTree(ctx, s, st, dir, base.Source{Kind: base.KindDir, Ref: abs(dir)}, o)
}

// fromTree makes the base of the tree in dir (the stage's own rootfs for
// a Debian base, already in place; a directory elsewhere otherwise,
// unpacked from the blob into the stage): one layer, its configuration
// and manifest in the blob cache.
func fromTree(ctx context.Context, s *base.Store, st *base.Stage, dir string, src base.Source, o Options) (*base.Base, error) {
	cache := blobcache.New(s.Home)
	var p layertar.Packed
	err := cache.Write(func(w io.Writer) (string, error) {
		var err error
		p, err = layertar.Pack(w, dir, "")
		return p.Digest, err
	})
	if err != nil {
		st.Discard()
		return nil, fmt.Errorf("pack %s into a layer: %w", src.Ref, err)
	}
	what := "layer 1 of 1 (" + blobcache.Short(p.Digest) + ")"
	layerHash, _ := v1.NewHash(p.Digest)
	diffHash, _ := v1.NewHash(p.DiffID)
	layer := v1.Descriptor{MediaType: types.OCILayer, Size: p.Size, Digest: layerHash}
	if dir != st.Rootfs() {
		u, err := layertar.New(st.Rootfs(), layertar.Options{MaxBytes: o.MaxUnpacked, MaxEntries: o.MaxEntries})
		if err == nil {
			err = unpackBlob(cache, layer, p.DiffID, what, u)
			if err == nil {
				err = u.Finish()
			}
			u.Close()
		}
		if err != nil {
			st.Discard()
			return nil, err
		}
	}
	cfg := v1.ConfigFile{Architecture: "amd64", OS: "linux",
		Config: v1.Config{Env: []string{defaultPath}},
		RootFS: v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{diffHash}}}
	rawCfg, err := json.Marshal(cfg)
	if err != nil {
		st.Discard()
		return nil, err
	}
	cfgDigest := blobcache.Digest(rawCfg)
	cfgHash, _ := v1.NewHash(cfgDigest)
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1,
		Config: v1.Descriptor{MediaType: types.OCIConfigJSON, Size: int64(len(rawCfg)), Digest: cfgHash},
		Layers: []v1.Descriptor{layer}}
	raw, err := json.Marshal(m)
	if err != nil {
		st.Discard()
		return nil, err
	}
	digest := blobcache.Digest(raw)
	for d, data := range map[string][]byte{cfgDigest: rawCfg, digest: raw} {
		if err := cache.PutBytes(d, data); err != nil {
			st.Discard()
			return nil, err
		}
	}
	if old := s.Get(digest); old != nil {
		st.Discard()
		return old, nil
	}
	b := &base.Base{Digest: digest, Config: cfgDigest, Env: cfg.Config.Env, Source: src,
		Layers: []base.Layer{{Digest: p.Digest, DiffID: p.DiffID, Size: p.Size, MediaType: string(types.OCILayer)}}}
	return finish(ctx, s, st, b, o)
}
