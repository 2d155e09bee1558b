package envoci

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"cwm/internal/base"
	"cwm/internal/blobcache"
	"cwm/internal/env"
	"cwm/internal/errkind"
)

// PushResult is what a push did.
type PushResult struct {
	// Ref is the reference pushed, with the manifest's digest:
	// registry.example.com/envs/textkit:ID@sha256:...
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	EnvID  string `json:"env_id"`
	// Blobs is how many blobs the environment has, Uploaded how many the
	// registry did not have yet and Bytes their size.
	Blobs    int     `json:"blobs"`
	Uploaded int     `json:"uploaded"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	// Base is the stored base pushed with the environment (its blobs are
	// counted in Blobs), "" for an environment on the host's system or a
	// directory, which is not portable.
	Base string `json:"base,omitempty"`
}

// Push stores the environment e under ref in its registry. A ref without
// a tag is tagged with the environment's id. Blobs the registry already
// has (a layer another environment shares, an earlier push) are not sent
// again. An environment on a stored base brings it: the base's image is
// pushed into the same repository by its digest, before the environment.
func Push(ctx context.Context, e *env.Env, ref string, o Options) (*PushResult, error) {
	start := time.Now()
	r, err := o.parseRef(ref, true)
	if err != nil {
		return nil, err
	}
	if _, ok := r.(name.Digest); ok {
		return nil, errkind.Errorf(errkind.Usage, "push to a tag, not a digest: %s", ref)
	}
	tag := r.(name.Tag)
	if tag.TagStr() == name.DefaultTag && !hasExplicitTag(ref) {
		tag = r.Context().Tag(e.ID)
	}
	b := blobcache.New(o.Home)
	a, err := prepare(e, o.Home, b, o.WithBuildLog)
	if err != nil {
		return nil, err
	}
	pusher, err := remote.NewPusher(o.remote(ctx)...)
	if err != nil {
		return nil, err
	}
	puller, err := remote.NewPuller(o.remote(ctx)...)
	if err != nil {
		return nil, err
	}
	blobs := a.blobsOf()
	if a.carried != nil {
		blobs = append(blobs, a.carried.blobs...)
	}
	res := &PushResult{EnvID: e.ID, Digest: a.digest, Blobs: len(blobs), Base: a.base}
	var mu sync.Mutex // guards res's counts and first
	var first error
	sem := make(chan struct{}, o.jobs())
	var wg sync.WaitGroup
	for _, d := range blobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			uploaded, err := pushBlob(ctx, pusher, puller, tag.Context(), b, d)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if uploaded {
				res.Uploaded++
				res.Bytes += d.Size
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if c := a.carried; c != nil {
		if err := pusher.Put(ctx, tag.Context().Digest(c.digest), c); err != nil {
			return nil, registryError("push base "+base.ShortDigest(c.digest)+" of "+e.ID+" to "+tag.Context().String(), err)
		}
	}
	if err := pusher.Put(ctx, tag, rawManifest(a.raw)); err != nil {
		return nil, registryError("push the manifest of "+e.ID+" to "+tag.String(), err)
	}
	res.Ref = tag.String() + "@" + a.digest
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// pushBlob uploads one blob unless the repository has it.
func pushBlob(ctx context.Context, pusher *remote.Pusher, puller *remote.Puller, repo name.Repository, b blobcache.Cache, d v1.Descriptor) (bool, error) {
	what := fmt.Sprintf("push blob %s to %s", blobcache.Short(d.Digest.String()), repo)
	l, err := puller.Layer(ctx, repo.Digest(d.Digest.String()))
	if err != nil {
		return false, registryError(what, err)
	}
	if ex, ok := l.(interface{ Exists() (bool, error) }); ok {
		if have, err := ex.Exists(); err == nil && have {
			return false, nil
		}
	}
	if err := pusher.Upload(ctx, repo, blobLayer{b, d}); err != nil {
		return false, registryError(what, err)
	}
	return true, nil
}

// hasExplicitTag reports whether the reference's last part names a tag.
func hasExplicitTag(ref string) bool {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return true
		}
	}
	return false
}

// lockKey names the lock of a reference's pulls.
func lockKey(ref string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(ref)))[:24] }
