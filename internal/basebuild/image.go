package basebuild

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/klauspost/compress/zstd"

	"cwm/internal/base"
	"cwm/internal/blobcache"
	"cwm/internal/errkind"
	"cwm/internal/layertar"
	"cwm/internal/registryguard"
	"cwm/internal/sandbox"
)

// maxSmall bounds a manifest or a configuration read into memory.
const maxSmall = 4 << 20

// Options say how a base is imported or built.
type Options struct {
	// Runtime starts the sandbox that finds the base's Python.
	Runtime *sandbox.Runtime
	// Platform is the platform picked from an index (default linux/amd64).
	Platform string
	// MaxUnpacked and MaxEntries cap the unpacked root filesystem (default:
	// layertar's).
	MaxUnpacked int64
	MaxEntries  int
	// Transport is the HTTP transport to registries (default
	// go-containerregistry's); cwm's guard wraps it whatever it is.
	Transport http.RoundTripper
}

func (o Options) platform() (*v1.Platform, error) {
	p := o.Platform
	if p == "" {
		p = "linux/amd64"
	}
	plat, err := v1.ParsePlatform(p)
	if err != nil {
		return nil, errkind.Errorf(errkind.Usage, "--platform %q: %v (want os/arch, e.g. linux/amd64)", p, err)
	}
	return plat, nil
}

// Import stores the base ref names: a directory holding an OCI layout
// (an oci-layout file), a plain root filesystem directory, a docker-save
// archive (a file), or else a registry reference. A base the store has is
// returned as it is.
func Import(ctx context.Context, s *base.Store, ref string, o Options) (*base.Base, error) {
	fi, err := os.Stat(ref)
	switch {
	case err == nil && fi.IsDir():
		if _, err := os.Stat(filepath.Join(ref, "oci-layout")); err == nil {
			return importLayout(ctx, s, ref, o)
		}
		return ImportDir(ctx, s, ref, o)
	case err == nil:
		img, err := tarball.ImageFromPath(ref, nil)
		if err != nil {
			return nil, errkind.Errorf(errkind.Input, "%s is not a docker-save archive: %v", ref, err)
		}
		return ImportImage(ctx, s, img, base.Source{Kind: base.KindArchive, Ref: abs(ref)}, o)
	case strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "."):
		return nil, errkind.Errorf(errkind.NotFound, "%s: no such file or directory", ref)
	}
	return importRemote(ctx, s, ref, o)
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func importRemote(ctx context.Context, s *base.Store, ref string, o Options) (*base.Base, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, errkind.Errorf(errkind.Usage, "%q is neither a file, a directory nor a registry reference: %v", ref, err)
	}
	plat, err := o.platform()
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithPlatform(*plat),
		remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithUserAgent("cwm"),
		remote.WithTransport(registryguard.Transport(o.Transport, maxSmall)))
	if err != nil {
		return nil, errkind.Errorf(errkind.Unavailable, "read %s from its registry: %v", ref, err)
	}
	return ImportImage(ctx, s, img, base.Source{Kind: base.KindRegistry, Ref: r.String(), Platform: plat.String()}, o)
}

func importLayout(ctx context.Context, s *base.Store, dir string, o Options) (*base.Base, error) {
	plat, err := o.platform()
	if err != nil {
		return nil, err
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "%s is not an OCI layout: %v", dir, err)
	}
	img, err := pickImage(idx, plat)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return ImportImage(ctx, s, img, base.Source{Kind: base.KindLayout, Ref: abs(dir), Platform: plat.String()}, o)
}

// pickImage is the image of idx for plat: the one whose platform it
// satisfies, or the only image when none says its platform.
func pickImage(idx v1.ImageIndex, plat *v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "read the index: %v", err)
	}
	var unplatformed []v1.Hash
	var seen []string
	for _, d := range m.Manifests {
		switch {
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, errkind.Errorf(errkind.Input, "read the index %s: %v", d.Digest, err)
			}
			if img, err := pickImage(child, plat); err == nil {
				return img, nil
			}
		case !d.MediaType.IsImage():
		case d.Platform == nil:
			unplatformed = append(unplatformed, d.Digest)
		case d.Platform.Satisfies(*plat):
			return idx.Image(d.Digest)
		default:
			seen = append(seen, d.Platform.String())
		}
	}
	if len(unplatformed) == 1 {
		return idx.Image(unplatformed[0])
	}
	return nil, errkind.Errorf(errkind.Input, "no image for %s (it has %d without a platform and %s): give --platform", plat, len(unplatformed), strings.Join(seen, ", "))
}

// ImportImage stores img: its manifest and configuration read and
// checked, each layer's blob put in the cache (checked against its
// digest) unless there, then unpacked from the cache, lowest first, with
// whiteouts and opaque directories honoured, its tar checked against the
// configuration's diff_id; the Python found; the stage published. A layer
// that does not match is refused by its number and digest, and nothing is
// stored but the blobs already checked.
func ImportImage(ctx context.Context, s *base.Store, img v1.Image, src base.Source, o Options) (*base.Base, error) {
	raw, err := img.RawManifest()
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "read the manifest of %s: %v", src.Ref, err)
	}
	digest := blobcache.Digest(raw)
	if b := s.Get(digest); b != nil {
		return b, nil
	}
	m, err := v1.ParseManifest(strings.NewReader(string(raw)))
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "the manifest of %s: %v", src.Ref, err)
	}
	rawCfg, err := img.RawConfigFile()
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "read the configuration of %s: %v", src.Ref, err)
	}
	if got := blobcache.Digest(rawCfg); got != m.Config.Digest.String() {
		return nil, errkind.Errorf(errkind.Input, "the configuration of %s hashes to %s, its manifest says %s: refused", src.Ref, got, m.Config.Digest)
	}
	var cfg v1.ConfigFile
	if err := json.Unmarshal(rawCfg, &cfg); err != nil {
		return nil, errkind.Errorf(errkind.Input, "the configuration of %s: %v", src.Ref, err)
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return nil, errkind.Errorf(errkind.Input, "%s: its manifest has %d layers, its configuration %d diff_ids", src.Ref, len(m.Layers), len(cfg.RootFS.DiffIDs))
	}
	cache := blobcache.New(s.Home)
	layers, err := img.Layers()
	if err != nil {
		return nil, errkind.Errorf(errkind.Input, "the layers of %s: %v", src.Ref, err)
	}
	b := &base.Base{Digest: digest, Config: m.Config.Digest.String(), Env: cfg.Config.Env,
		WorkingDir: cfg.Config.WorkingDir, User: cfg.Config.User, Source: src}
	st, err := s.NewStage()
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*base.Base, error) { st.Discard(); return nil, err }
	u, err := layertar.New(st.Rootfs(), layertar.Options{MaxBytes: o.MaxUnpacked, MaxEntries: o.MaxEntries, Whiteouts: true})
	if err != nil {
		return fail(err)
	}
	defer u.Close()
	for i, d := range m.Layers {
		what := fmt.Sprintf("layer %d of %d (%s)", i+1, len(m.Layers), blobcache.Short(d.Digest.String()))
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if !cache.Has(d.Digest.String(), d.Size) {
			if err := fetch(cache, layers[i], d); err != nil {
				return fail(fmt.Errorf("%s of %s: %w", what, src.Ref, err))
			}
		}
		if err := unpackBlob(cache, d, cfg.RootFS.DiffIDs[i].String(), what, u); err != nil {
			return fail(fmt.Errorf("%s: %w", src.Ref, err))
		}
		b.Layers = append(b.Layers, base.Layer{Digest: d.Digest.String(), DiffID: cfg.RootFS.DiffIDs[i].String(), Size: d.Size, MediaType: string(d.MediaType)})
	}
	if err := u.Finish(); err != nil {
		return fail(err)
	}
	if err := cache.PutBytes(m.Config.Digest.String(), rawCfg); err != nil {
		return fail(err)
	}
	if err := cache.PutBytes(digest, raw); err != nil {
		return fail(err)
	}
	return finish(ctx, s, st, b, o)
}

// fetch puts a layer's compressed blob into the cache.
func fetch(cache blobcache.Cache, l v1.Layer, d v1.Descriptor) error {
	rc, err := l.Compressed()
	if err != nil {
		return errkind.Errorf(errkind.Input, "read: %v", err)
	}
	defer rc.Close()
	if err := cache.Put(d.Digest.String(), d.Size, rc); err != nil {
		if errkind.Of(err) == errkind.Internal && strings.Contains(err.Error(), "verifying") {
			err = errkind.Wrap(errkind.Input, err)
		}
		return err
	}
	return nil
}

// unpackBlob unpacks a cached layer blob (gzip, zstd or a plain tar) with
// u, and checks that its tar hashes to diffID.
func unpackBlob(cache blobcache.Cache, d v1.Descriptor, diffID, what string, u *layertar.Unpacker) error {
	f, err := cache.Open(d.Digest.String())
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	magic, _ := br.Peek(4)
	var r io.Reader = br
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		gz, err := gzip.NewReader(br)
		if err != nil {
			return errkind.Errorf(errkind.Input, "%s: %v", what, err)
		}
		defer gz.Close()
		r = gz
	case len(magic) == 4 && string(magic) == "\x28\xb5\x2f\xfd":
		zr, err := zstd.NewReader(br)
		if err != nil {
			return errkind.Errorf(errkind.Input, "%s: %v", what, err)
		}
		defer zr.Close()
		r = zr
	}
	h := blobcache.NewHash()
	tr := io.TeeReader(r, h)
	if err := u.Layer(tr, layertar.Layer{Name: what, Size: -1}); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, tr); err != nil {
		return errkind.Errorf(errkind.Input, "%s: %v", what, err)
	}
	if got := h.Digest(); got != diffID {
		return errkind.Errorf(errkind.Input, "%s: its tar hashes to %s, the configuration's diff_id is %s: refused", what, got, diffID)
	}
	return nil
}

// finish finds the Python of the staged base, its size, and publishes it.
func finish(ctx context.Context, s *base.Store, st *base.Stage, b *base.Base, o Options) (*base.Base, error) {
	b.Bytes = treeBytes(st.Rootfs())
	if o.Runtime == nil {
		st.Discard()
		return nil, fmt.Errorf("base %s: no sandbox runtime to find its Python with", b.Short())
	}
	py, err := findPython(ctx, o.Runtime, st.Rootfs(), b.SandboxEnv(nil))
	if err != nil {
		st.Discard()
		return nil, err
	}
	b.Py = py
	return s.Publish(st, b)
}

// treeBytes is the size of the files under dir.
func treeBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
