package envoci

import (
	"bytes"
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/blobcache"
	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/sandbox"
)

// An environment built on a stored base travels with it. The base goes
// as the OCI image it is, its own manifest, configuration and layers,
// pushed by digest into the environment's repository (and written into
// an exported file beside the environment's blobs), and the
// environment's manifest names it by the annotation annBase. The base is
// not folded into the environment's manifest: a registry stores its
// layers and its manifest once for every environment on it, a pull of a
// second such environment finds it in the base store, and the base is an
// image any OCI tool (or cwm base import REPO@DIGEST) reads.
const annBase = "cwm.base.digest"

// carriedBase is a stored base as shipped: its manifest and the
// descriptors of its configuration and layers, all in the blob cache.
type carriedBase struct {
	digest string
	raw    []byte
	mt     types.MediaType
	blobs  []v1.Descriptor // configuration, then layers
}

// baseOf is the base e is built on, when it is a stored one (nil for the
// host's or a directory): read from home's base store, its blobs checked
// to be in the cache.
func baseOf(e *env.Env, home string, b blobcache.Cache) (*carriedBase, error) {
	if !env.IsBaseDigest(e.Base) {
		return nil, nil
	}
	bs := base.NewStore(home).Get(e.Base)
	if bs == nil {
		return nil, errkind.Errorf(errkind.NotFound, "environment %s is built on base %s, which is not in %s: it cannot be shipped without it (cwm base import or cwm base build makes it)", e.ID, base.ShortDigest(e.Base), base.NewStore(home).Dir())
	}
	raw, err := b.ReadSmall(bs.Digest, maxManifest)
	if err != nil {
		return nil, fmt.Errorf("environment %s: the manifest of its base %s: %w", e.ID, bs.Short(), err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("environment %s: the manifest of its base %s: %w", e.ID, bs.Short(), err)
	}
	c := &carriedBase{digest: bs.Digest, raw: raw, mt: m.MediaType, blobs: append([]v1.Descriptor{m.Config}, m.Layers...)}
	if c.mt == "" {
		c.mt = types.OCIManifestSchema1
	}
	for _, d := range c.blobs {
		if !b.Has(d.Digest.String(), d.Size) {
			return nil, errkind.Errorf(errkind.NotFound, "environment %s: blob %s of its base %s is not in the blob cache %s (removed by hand?): import the base again", e.ID, blobcache.Short(d.Digest.String()), bs.Short(), b.Dir())
		}
	}
	return c, nil
}

// size is the bytes of the base's blobs (0 for none).
func (c *carriedBase) size() int64 {
	if c == nil {
		return 0
	}
	n := int64(len(c.raw))
	for _, d := range c.blobs {
		n += d.Size
	}
	return n
}

// RawManifest and MediaType make a carried base's manifest what
// go-containerregistry puts.
func (c *carriedBase) RawManifest() ([]byte, error)        { return c.raw, nil }
func (c *carriedBase) MediaType() (types.MediaType, error) { return c.mt, nil }

// BaseResult says what a pull or an import did with the base the
// environment came with.
type BaseResult struct {
	Digest string `json:"digest"`
	// Present is set when the base store had it already.
	Present bool `json:"present"`
	// Fetched is how many of its blobs came from the registry (the others
	// were in the blob cache), Bytes their size.
	Fetched int   `json:"fetched"`
	Bytes   int64 `json:"bytes"`
}

// ensureBase puts the base digest names into home's base store, unless it
// is there: img is the image (from the registry or the blob cache), read
// only when needed, and imported as cwm base import does (each layer
// checked against its digest, unpacked with whiteouts honoured, the
// Python found in a sandbox); src is where it comes from, as base.json
// records it. An image that is not the base asked for is
// refused; a refused import stores no base (ImportImage publishes only a
// base whose every layer was checked).
func ensureBase(ctx context.Context, o Options, digest string, src base.Source, img func() (v1.Image, error)) (*BaseResult, error) {
	where := src.Ref
	st := base.NewStore(o.Home)
	res := &BaseResult{Digest: digest}
	if st.Get(digest) != nil {
		res.Present = true
		return res, nil
	}
	im, err := img()
	if err != nil {
		return nil, err
	}
	m, err := im.Manifest()
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "%s: the manifest of base %s: %v", where, base.ShortDigest(digest), err)
	}
	cache := blobcache.New(o.Home)
	for _, d := range m.Layers {
		if !cache.Has(d.Digest.String(), d.Size) {
			res.Fetched++
			res.Bytes += d.Size
		}
	}
	rt := o.Runtime
	if rt == nil {
		if rt, err = sandbox.NewRuntime(sandbox.Options{Home: o.Home}); err != nil {
			return nil, fmt.Errorf("start a sandbox runtime to find the Python of base %s: %w", base.ShortDigest(digest), err)
		}
		defer rt.Close()
	}
	b, err := basebuild.ImportImage(ctx, st, im, src, basebuild.Options{Runtime: rt, MaxUnpacked: o.MaxUnpacked, MaxEntries: o.MaxEntries})
	if err != nil {
		return nil, fmt.Errorf("import the base %s the environment is built on: %w", base.ShortDigest(digest), err)
	}
	if b.Digest != digest { // not removed: it may be a base the store had
		return nil, corrupt("%s: the base it names is %s, the image read is %s: refused", where, base.ShortDigest(digest), b.Short())
	}
	return res, nil
}

// remoteBase is the base digest names in repo.
func remoteBase(ctx context.Context, o Options, repo name.Repository, digest string) func() (v1.Image, error) {
	return func() (v1.Image, error) {
		ref := repo.Digest(digest)
		img, err := remote.Image(ref, o.remote(ctx)...)
		if err != nil {
			return nil, registryError("read base "+ref.String(), err)
		}
		return img, nil
	}
}

// cachedBase is the base digest names as the blob cache holds it (an
// exported file's blobs, imported): a file lacking one of its blobs fails
// naming it.
func cachedBase(b blobcache.Cache, digest, where string) func() (v1.Image, error) {
	return func() (v1.Image, error) {
		raw, err := b.ReadSmall(digest, maxManifest)
		if err != nil {
			return nil, corrupt("%s lacks the manifest of base %s the environment is built on: %v", where, base.ShortDigest(digest), err)
		}
		m, err := v1.ParseManifest(bytes.NewReader(raw))
		if err != nil {
			return nil, corrupt("%s: the manifest of base %s: %v", where, base.ShortDigest(digest), err)
		}
		cfg, err := b.ReadSmall(m.Config.Digest.String(), maxManifest)
		if err != nil {
			return nil, corrupt("%s lacks the configuration of base %s: %v", where, base.ShortDigest(digest), err)
		}
		return partial.CompressedToImage(&cacheImage{b: b, raw: raw, cfg: cfg, m: m})
	}
}

// cacheImage is an image whose blobs are in the blob cache.
type cacheImage struct {
	b        blobcache.Cache
	raw, cfg []byte
	m        *v1.Manifest
}

func (c *cacheImage) RawConfigFile() ([]byte, error) { return c.cfg, nil }
func (c *cacheImage) RawManifest() ([]byte, error)   { return c.raw, nil }
func (c *cacheImage) MediaType() (types.MediaType, error) {
	if c.m.MediaType == "" {
		return types.OCIManifestSchema1, nil
	}
	return c.m.MediaType, nil
}

func (c *cacheImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, d := range c.m.Layers {
		if d.Digest == h {
			return blobLayer{c.b, d}, nil
		}
	}
	if c.m.Config.Digest == h {
		return blobLayer{c.b, c.m.Config}, nil
	}
	return nil, fmt.Errorf("no blob %s in the image", h)
}

// grantBase is the grant of an environment that came with base digest:
// the operator's when it names one (--base), else that base, which the
// pull or import has just put in the store (an artifact may name the base
// it brought: a stored base is content-addressed and was imported
// through the same checks as cwm base import, so naming one chooses no
// directory of this machine).
func grantBase(g env.Grant, digest string) env.Grant {
	if g.Base == "" && digest != "" {
		g.Base = digest
	}
	return g
}
