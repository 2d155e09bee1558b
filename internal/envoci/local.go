package envoci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"

	"cwm/internal/base"
	"cwm/internal/blobcache"
	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/layertar"
)

// prepare packs an environment into the blob cache and returns its
// artifact: its layers (one per top-level directory of the layer), its
// env.json as config, its baseline and coverage map, and its build log
// when withLog is set (a log is for the machine that built it: it may hold
// what an install printed of that machine). An environment on a stored
// base of home's store names it (annBase), and the artifact carries it.
func prepare(e *env.Env, home string, b blobcache.Cache, withLog bool) (*artifact, error) {
	if !e.Usable {
		return nil, errkind.Errorf(errkind.Input, "environment %s is not usable (%s): it is not shipped", e.ID, e.Reason)
	}
	carried, err := baseOf(e, home, b)
	if err != nil {
		return nil, err
	}
	baseDigest := ""
	if carried != nil {
		baseDigest = carried.digest
	}
	if err := os.MkdirAll(b.Dir(), 0o755); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(e.LayerDir())
	if err != nil {
		return nil, fmt.Errorf("read the layer of %s: %w", e.ID, err)
	}
	var layers []v1.Descriptor
	for _, d := range ents { // sorted by name
		l, err := packInto(b, e.LayerDir(), d.Name())
		if err != nil {
			return nil, fmt.Errorf("environment %s: %w", e.ID, err)
		}
		layers = append(layers, l)
	}
	config, err := fileBlob(b, e.File(env.ManifestFile), ConfigMediaType, "")
	if err != nil {
		return nil, fmt.Errorf("environment %s: %w", e.ID, err)
	}
	files := []struct{ name, mt string }{{env.BaselineFile, BaselineMediaType}, {env.CoverageFile, CoverageMediaType}}
	if withLog {
		files = append(files, struct{ name, mt string }{env.BuildLog, BuildLogMediaType})
	}
	for _, f := range files {
		d, err := fileBlob(b, e.File(f.name), f.mt, f.name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("environment %s: %w", e.ID, err)
		}
		layers = append(layers, d)
	}
	raw, err := newManifest(e.ID, e.Name, e.BuiltAt.UTC().Format(time.RFC3339), baseDigest, config, layers)
	if err != nil {
		return nil, err
	}
	a, err := parseArtifact(raw, "environment "+e.ID)
	if err != nil {
		return nil, fmt.Errorf("internal: %w", err)
	}
	a.carried = carried
	if err := b.PutBytes(a.digest, raw); err != nil {
		return nil, err
	}
	return a, nil
}

// packInto packs layer directory top into the cache.
func packInto(b blobcache.Cache, root, top string) (v1.Descriptor, error) {
	var p layertar.Packed
	err := b.Write(func(w io.Writer) (string, error) {
		var err error
		p, err = layertar.Pack(w, root, top)
		return p.Digest, err
	})
	if err != nil {
		return v1.Descriptor{}, err
	}
	h, _ := v1.NewHash(p.Digest)
	return v1.Descriptor{MediaType: types.MediaType(LayerMediaType), Size: p.Size, Digest: h,
		Annotations: map[string]string{annPath: top, annDiffID: p.DiffID, annTarSize: fmt.Sprint(p.TarSize)}}, nil
}

// fileBlob puts a file of the environment's directory into the cache.
func fileBlob(b blobcache.Cache, path, mt, title string) (v1.Descriptor, error) {
	f, err := os.Open(path)
	if err != nil {
		return v1.Descriptor{}, err
	}
	defer f.Close()
	h := blobcache.NewHash()
	if _, err := io.Copy(h, f); err != nil {
		return v1.Descriptor{}, err
	}
	d := h.Digest()
	if !b.Has(d, h.N) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return v1.Descriptor{}, err
		}
		if err := b.Put(d, h.N, f); err != nil {
			return v1.Descriptor{}, err
		}
	}
	hash, _ := v1.NewHash(d)
	desc := v1.Descriptor{MediaType: types.MediaType(mt), Size: h.N, Digest: hash}
	if title != "" {
		desc.Annotations = map[string]string{annTitle: title}
	}
	return desc, nil
}

// install puts the environment of a, whose blobs are all in the cache,
// into the store: its layers are unpacked into a stage, its files and
// manifest written, and the stage published. Until then nothing is in the
// store but a hidden stage directory, which a failure removes (and env gc
// removes after a crash). org records where it came from and what this
// machine grants it: the base is the operator's (org.Grant.Base, the
// host's by default), never the one env.json names; an env.json naming
// another base than the host's is refused unless the operator named one.
// o bounds the unpacking.
func install(st *env.Store, b blobcache.Cache, a *artifact, org env.Origin, o Options) (*env.Env, error) {
	from := org.From
	config, err := b.ReadSmall(a.m.Config.Digest.String(), maxConfig)
	if err != nil {
		return nil, fmt.Errorf("%s: env.json: %w", from, err)
	}
	m, err := adoptConfig(config, a, org.Grant, from)
	if err != nil {
		return nil, err
	}
	stage, err := st.NewStage()
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			stage.Discard()
		}
	}()
	if err := os.Mkdir(stage.LayerDir(), 0o755); err != nil {
		return nil, err
	}
	u, err := layertar.New(stage.LayerDir(), layertar.Options{MaxBytes: o.MaxUnpacked, MaxEntries: o.MaxEntries})
	if err != nil {
		return nil, err
	}
	defer u.Close()
	// Layers in order of their names, whatever the manifest's order. They
	// are disjoint directories, so they unpack at once (as many at a time
	// as there are CPUs: creating files mostly waits on the file system);
	// the first layer's error in that order is the one reported.
	layers := append([]layerDesc(nil), a.layers...)
	sort.Slice(layers, func(i, j int) bool { return layers[i].top < layers[j].top })
	errs := make([]error, len(layers))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, l := range layers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = unpackCached(b, l, u)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
	}
	if err := u.Finish(); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	for _, f := range a.files {
		if err := copyBlob(b, f.Digest.String(), filepath.Join(stage.Dir(), f.name)); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", from, f.name, err)
		}
	}
	org.Manifest = a.digest
	org.At = time.Now().UTC().Truncate(time.Second)
	stage.Adopt(*m, org)
	if err := stage.Publish(false); err != nil {
		return nil, err
	}
	ok = true
	e, err := st.Resolve(m.ID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return e, nil
}

// adoptConfig reads an artifact's env.json as this machine takes it: its
// base replaced by the granted one, its baseline (inline before version 3)
// kept for the stage to write.
func adoptConfig(config []byte, a *artifact, g env.Grant, from string) (*env.Env, error) {
	var m env.Env
	if err := json.Unmarshal(config, &m); err != nil {
		return nil, corrupt("%s: its env.json does not parse: %v", from, err)
	}
	if !validID(m.ID) || (a.id != "" && m.ID != a.id) {
		return nil, corrupt("%s: its env.json names environment %q, its manifest %q", from, m.ID, a.id)
	}
	if m.Version > env.ManifestVersion {
		return nil, errkind.Errorf(errkind.Input, "%s: environment %s has manifest version %d; this cwm reads up to %d: upgrade cwm", from, m.ID, m.Version, env.ManifestVersion)
	}
	if a.base != "" && m.Base != a.base {
		return nil, corrupt("%s: its manifest brings base %s, its env.json names %q", from, base.ShortDigest(a.base), m.Base)
	}
	if m.Base != "" && m.Base != "host" && g.Base == "" {
		return nil, errkind.Errorf(errkind.Input, "%s: environment %s was built on base %s: an artifact does not choose the sandbox's root; name the base on this machine with --base DIR (or --base host for the host's system directories)", from, m.ID, m.Base)
	}
	if g.Base == "" {
		g.Base = "host"
	}
	m.Base = g.Base
	if m.Version < 3 {
		var v2 struct {
			Baseline []env.TestResult `json:"baseline"`
		}
		if err := json.Unmarshal(config, &v2); err != nil {
			return nil, corrupt("%s: its env.json does not parse: %v", from, err)
		}
		m.Baseline = v2.Baseline
		if m.Baseline == nil {
			m.Baseline = []env.TestResult{}
		}
	}
	return &m, nil
}

// validID is what the store accepts as a directory name.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// unpackCached unpacks a cached layer blob, checking its digest as it is
// read: a blob damaged on disk is removed and refused.
func unpackCached(b blobcache.Cache, l layerDesc, u *layertar.Unpacker) error {
	f, err := b.Open(l.Digest.String())
	if err != nil {
		return err
	}
	defer f.Close()
	h := blobcache.NewHash()
	err = unpackLayer(io.TeeReader(f, h), u, l.top, l.diffID, l.tarSize)
	if err == nil {
		_, err = io.Copy(h, f) // the rest of the blob, for its digest
	}
	if err == nil && (h.Digest() != l.Digest.String() || h.N != l.Size) {
		os.Remove(b.Path(l.Digest.String()))
		err = corrupt("cached layer %s (%s) does not match its digest (damaged on disk; removed, pull again)", l.top, blobcache.Short(l.Digest.String()))
	}
	return err
}

// copyBlob copies a cached blob to a file.
func copyBlob(b blobcache.Cache, d, dst string) error {
	src, err := b.Open(d)
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Prune removes from the blob cache of home the blobs no environment of
// the store came from (by its origin.json) and no stored base keeps, and
// what killed pulls left. It returns the bytes freed.
func Prune(home string, st *env.Store) (int64, error) {
	b := blobcache.New(home)
	all, err := st.List()
	if err != nil {
		return 0, err
	}
	keep, err := base.NewStore(home).Blobs()
	if err != nil {
		return 0, err
	}
	for _, e := range all {
		o := e.Origin()
		if o == nil || o.Manifest == "" {
			continue
		}
		raw, err := b.ReadSmall(o.Manifest, maxManifest)
		if err != nil {
			continue
		}
		a, err := parseArtifact(raw, o.From)
		if err != nil {
			continue
		}
		keep[a.digest] = true
		for _, d := range a.blobsOf() {
			keep[d.Digest.String()] = true
		}
	}
	return b.Prune(keep)
}

// lockPull serialises pulls of one artifact on this machine (the tasks of
// a job array on one node): the second waits, then finds it in the store.
func lockPull(ctx context.Context, home, key string) (unlock func(), err error) {
	dir := filepath.Join(home, "blobs", "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, key), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
