package envoci

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"cwm/internal/base"
	"cwm/internal/blobcache"
	"cwm/internal/env"
)

// PullResult is what a pull did.
type PullResult struct {
	Env    *env.Env `json:"-"`
	EnvID  string   `json:"env_id"`
	Ref    string   `json:"ref"`
	Digest string   `json:"digest"`
	// Present is set when the store had the environment: only the
	// manifest was read (nothing at all for a reference by digest).
	Present bool `json:"present"`
	// Blobs is how many blobs the environment has, Fetched how many came
	// from the registry (the others were in the blob cache) and Bytes
	// their size.
	Blobs   int     `json:"blobs"`
	Fetched int     `json:"fetched"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// Base is what the pull did with the stored base the environment
	// came with (nil for none, or when --base named one).
	Base *BaseResult `json:"base,omitempty"`
}

// Pull puts the environment ref names into st, unless it is there (then
// o.Grant, when set, replaces what the store granted it): the
// manifest is read (from the blob cache for a reference by digest), the
// blobs the cache lacks are fetched and checked against their digests,
// the layers unpacked into a stage of the store and the stage published.
// A blob that does not match is refused; an interrupted pull leaves
// nothing in the store (a hidden stage, removed by the next env gc, at
// most) and no partial blob in the cache. An environment that comes with
// a stored base (annBase) has it imported into the base store first,
// unless there (as cwm base import does, from the same repository, by
// its digest), and is granted it unless o.Grant names a base.
func Pull(ctx context.Context, st *env.Store, ref string, o Options) (*PullResult, error) {
	start := time.Now()
	r, err := o.parseRef(ref, false)
	if err != nil {
		return nil, err
	}
	unlock, err := lockPull(ctx, o.Home, lockKey(r.String()))
	if err != nil {
		return nil, err
	}
	defer unlock()
	b := blobcache.New(o.Home)
	puller, err := remote.NewPuller(o.remote(ctx)...)
	if err != nil {
		return nil, err
	}
	a, err := manifestOf(ctx, puller, b, r)
	if err != nil {
		return nil, err
	}
	res := &PullResult{Ref: r.String(), Digest: a.digest, EnvID: a.id, Blobs: len(a.blobsOf())}
	if e := st.Get(a.id); a.id != "" && e != nil && e.Usable {
		if o.Grant != (env.Grant{}) {
			if err := st.Regrant(e, o.Grant); err != nil {
				return nil, err
			}
		}
		res.Env, res.Present = e, true
		res.Seconds = time.Since(start).Seconds()
		return res, nil
	}
	var missing []v1.Descriptor
	for _, d := range a.blobsOf() {
		if !b.Has(d.Digest.String(), d.Size) {
			missing = append(missing, d)
		}
	}
	if err := fetchBlobs(ctx, puller, b, r.Context(), missing, o.jobs()); err != nil {
		return nil, err
	}
	for _, d := range missing {
		res.Fetched++
		res.Bytes += d.Size
	}
	g := o.Grant
	if a.base != "" && g.Base == "" {
		if res.Base, err = ensureBase(ctx, o, a.base, base.Source{Kind: base.KindRegistry, Ref: r.Context().Digest(a.base).String()}, remoteBase(ctx, o, r.Context(), a.base)); err != nil {
			return nil, err
		}
		g = grantBase(g, a.base)
	}
	e, err := install(st, b, a, env.Origin{Kind: env.OriginPulled, From: r.String(), Grant: g}, o)
	if err != nil {
		return nil, err
	}
	res.Env, res.EnvID = e, e.ID
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// manifestOf reads the artifact r names: from the cache for a digest it
// has, otherwise from the registry (and then keeps it).
func manifestOf(ctx context.Context, puller *remote.Puller, b blobcache.Cache, r name.Reference) (*artifact, error) {
	if dg, ok := r.(name.Digest); ok {
		if raw, err := b.ReadSmall(dg.DigestStr(), maxManifest); err == nil {
			return parseArtifact(raw, r.String())
		}
	}
	desc, err := puller.Get(ctx, r)
	if err != nil {
		return nil, registryError("read "+r.String(), err)
	}
	if desc.Size > maxManifest || len(desc.Manifest) > maxManifest {
		return nil, corrupt("%s: a manifest of %d bytes is not an environment's", r, len(desc.Manifest))
	}
	a, err := parseArtifact(desc.Manifest, r.String())
	if err != nil {
		return nil, err
	}
	if err := b.PutBytes(a.digest, a.raw); err != nil {
		return nil, err
	}
	return a, nil
}

// fetchBlobs fetches blobs into the cache, jobs at once; the first error
// stops the others.
func fetchBlobs(ctx context.Context, puller *remote.Puller, b blobcache.Cache, repo name.Repository, ds []v1.Descriptor, jobs int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := fetchBlob(ctx, puller, b, repo, d); err != nil {
				mu.Lock()
				if first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func fetchBlob(ctx context.Context, puller *remote.Puller, b blobcache.Cache, repo name.Repository, d v1.Descriptor) error {
	what := fmt.Sprintf("fetch blob %s (%s) from %s", blobcache.Short(d.Digest.String()), blobWhat(d), repo)
	l, err := puller.Layer(ctx, repo.Digest(d.Digest.String()))
	if err != nil {
		return registryError(what, err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return registryError(what, err)
	}
	defer rc.Close()
	if err := b.Put(d.Digest.String(), d.Size, rc); err != nil {
		return registryError(what, err)
	}
	return nil
}

// blobWhat says what a blob of an environment is, for errors.
func blobWhat(d v1.Descriptor) string {
	if p := d.Annotations[annPath]; p != "" {
		return "layer " + p + "/"
	}
	if t := d.Annotations[annTitle]; t != "" {
		return t
	}
	return "env.json"
}
