package taskimport

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/blobcache"
	"cwm/internal/layertar"
	"cwm/internal/sandbox"
)

// storeBuild stores what the steps wrote in sb as a base: the FROM
// base's image with one more layer, the sandbox's upper layer (its
// deletions as OCI whiteouts, its opaque directories marked), and the
// configuration's Env, WorkingDir and User the steps made. It goes in
// through basebuild.ImportImage, the one way into the store, which
// checks and unpacks every layer as it does a registry's.
func storeBuild(ctx context.Context, o Options, sb *sandbox.Sandbox, from *base.Base, d *dockerState, file, path string) (*base.Base, error) {
	tmp, err := os.MkdirTemp(o.Sandboxes.Store.Home, ".dockerfile-")
	if err != nil {
		return nil, err
	}
	defer sandbox.RemoveAll(tmp)
	upper := filepath.Join(tmp, "upper")
	if err := sb.Snapshot(upper); err != nil {
		return nil, fmt.Errorf("snapshot the build of %s: %w", file, err)
	}
	changes, err := sb.Changes()
	if err != nil {
		return nil, fmt.Errorf("the changes of the build of %s: %w", file, err)
	}
	whiteouts, err := whiteoutHeaders(upper, changes)
	if err != nil {
		return nil, err
	}
	blob := filepath.Join(tmp, "layer.tar.gz")
	f, err := os.Create(blob)
	if err != nil {
		return nil, err
	}
	_, err = layertar.PackTrees(f, []layertar.Tree{{Root: upper}}, whiteouts...)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("pack the build of %s: %w", file, err)
	}
	img, err := fromBase(o.Sandboxes.Store, from)
	if err != nil {
		return nil, err
	}
	top, err := tarball.LayerFromFile(blob, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	if img, err = mutate.AppendLayers(img, top); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	c := cf.Config
	c.Env, c.WorkingDir, c.User = d.env, d.workdir, d.user
	if img, err = mutate.Config(img, c); err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path)
	b, err := basebuild.ImportImage(ctx, o.Sandboxes.Store, img, base.Source{Kind: base.KindDockerfile, Ref: abs}, o.Base)
	if err != nil {
		return nil, fmt.Errorf("store the build of %s: %w", file, err)
	}
	return b, nil
}

// whiteoutHeaders are the OCI whiteouts of what the build deleted from
// the lower layers, and the opaque markers of directories it replaced.
func whiteoutHeaders(upper string, changes []sandbox.Change) ([]*tar.Header, error) {
	mtime := time.Unix(0, 0)
	var hs []*tar.Header
	for _, c := range changes {
		if c.Kind != sandbox.Deleted {
			continue
		}
		p := strings.TrimPrefix(c.Path, "/")
		hs = append(hs, &tar.Header{Name: path.Join(path.Dir(p), ".wh."+path.Base(p)), Typeflag: tar.TypeReg, Mode: 0o644, ModTime: mtime, Format: tar.FormatPAX})
	}
	err := filepath.WalkDir(upper, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() || p == upper {
			return err
		}
		if sandbox.IsOpaque(p) {
			rel, _ := filepath.Rel(upper, p)
			hs = append(hs, &tar.Header{Name: filepath.ToSlash(rel) + "/.wh..wh..opq", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: mtime, Format: tar.FormatPAX})
		}
		return nil
	})
	return hs, err
}

// fromBase is the image of a stored base, read from the blob cache: its
// configuration and its layers' blobs as they were pulled.
func fromBase(s *base.Store, b *base.Base) (v1.Image, error) {
	cache := blobcache.New(s.Home)
	raw, err := cache.ReadSmall(b.Config, 4<<20)
	if err != nil {
		return nil, fmt.Errorf("the configuration of %s: %w", b, err)
	}
	var cf v1.ConfigFile
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&cf); err != nil {
		return nil, fmt.Errorf("the configuration of %s: %w", b, err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	var layers []v1.Layer
	for _, l := range b.Layers {
		p := cache.Path(l.Digest)
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return os.Open(p) }, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, fmt.Errorf("layer %s of %s: %w", l.Digest, b, err)
		}
		layers = append(layers, layer)
	}
	img, err = mutate.AppendLayers(img, layers...)
	if err != nil {
		return nil, err
	}
	cf2, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf2 = cf2.DeepCopy()
	cf2.Architecture, cf2.OS, cf2.Config = cf.Architecture, cf.OS, cf.Config
	return mutate.ConfigFile(img, cf2)
}
