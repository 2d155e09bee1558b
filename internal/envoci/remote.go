package envoci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"cwm/internal/blobcache"
	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/registryguard"
	"cwm/internal/sandbox"
)

// Options configure cwm's side of a registry, what is shipped, and what
// the environments pulled or imported are granted.
type Options struct {
	// Home is $CWM_HOME, where the blob cache is.
	Home string
	// Keychain gives the credentials of a registry (default: the Docker
	// config, $DOCKER_CONFIG/config.json or ~/.docker/config.json, and
	// the credential helpers it names).
	Keychain authn.Keychain
	// Transport is the HTTP transport (default: go-containerregistry's,
	// which honours HTTPS_PROXY and SSL_CERT_FILE). Whichever it is, cwm
	// refuses link-local and cloud metadata addresses (internal/registryguard).
	Transport http.RoundTripper
	// Insecure lists the registries (host:port) spoken to over plain
	// HTTP; loopback addresses always are. Default: $CWM_INSECURE_REGISTRIES,
	// comma-separated.
	Insecure []string
	// Jobs is how many blobs move at once (default 4).
	Jobs int
	// MaxUnpacked is the ceiling on an environment's unpacked size, and
	// MaxEntries the cap on its layers' entries, on pull and import
	// (default: layertar's).
	MaxUnpacked int64
	MaxEntries  int
	// Grant is what this machine grants the environments pulled or
	// imported: the base their sandboxes start on (the host's by default;
	// an artifact never chooses it) and the ceilings of their limits.
	Grant env.Grant
	// Runtime starts the sandbox that finds the Python of a base an
	// environment brings (default: one started for that, and closed).
	Runtime *sandbox.Runtime
	// WithBuildLog ships an environment's build log when pushed or
	// exported; it stays on the machine that built it otherwise.
	WithBuildLog bool
}

func (o Options) remote(ctx context.Context) []remote.Option {
	kc := o.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithUserAgent("cwm"),
		remote.WithTransport(registryguard.Transport(o.Transport, maxManifest))}
}

func (o Options) jobs() int {
	if o.Jobs < 1 {
		return 4
	}
	return o.Jobs
}

// LooksLikeReference reports whether s names an environment in a
// registry rather than in the store: environment ids and names never
// have a slash, references always do (registry.example.com/team/env:tag).
func LooksLikeReference(s string) bool { return strings.Contains(s, "/") }

// parseRef reads a reference. A push may leave the tag out (the
// environment's id is its tag); a pull needs a tag or a digest, since
// "latest" means nothing for environments.
func (o Options) parseRef(s string, push bool) (name.Reference, error) {
	insecure := o.Insecure
	if insecure == nil {
		for _, h := range strings.Split(os.Getenv("CWM_INSECURE_REGISTRIES"), ",") {
			if h = strings.TrimSpace(h); h != "" {
				insecure = append(insecure, h)
			}
		}
	}
	var opts []name.Option
	repo, _, _ := strings.Cut(s, "/")
	for _, h := range insecure {
		if h == repo {
			opts = append(opts, name.Insecure)
		}
	}
	last := s[strings.LastIndex(s, "/")+1:]
	hasTag := strings.Contains(last, ":") || strings.Contains(last, "@")
	if !hasTag && !push {
		return nil, errkind.Errorf(errkind.Usage, "%s names no tag or digest: give REPOSITORY:TAG (cwm env push tags with the environment's id) or REPOSITORY@sha256:...", s)
	}
	ref, err := name.ParseReference(s, opts...)
	if err != nil {
		return nil, errkind.Errorf(errkind.Usage, "registry reference %q: %v", s, err)
	}
	return ref, nil
}

// registryError gives a registry's failure its kind and says what to do.
func registryError(what string, err error) error {
	var te *transport.Error
	var ne net.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errkind.Of(err) != errkind.Internal:
		return fmt.Errorf("%s: %w", what, err)
	case errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden):
		return errkind.Errorf(errkind.Unavailable, "%s: the registry refused access (%d): log in (docker login, or a config.json in $DOCKER_CONFIG; see docs/scale.md): %v", what, te.StatusCode, err)
	case errors.As(err, &te) && te.StatusCode == http.StatusNotFound:
		return errkind.Errorf(errkind.NotFound, "%s: not in the registry: %v", what, err)
	case errors.As(err, &te):
		return errkind.Errorf(errkind.Unavailable, "%s: %v", what, err)
	case strings.Contains(err.Error(), "SSRF protection"):
		// go-containerregistry's own check of a redirect to a private
		// or link-local address literal, before internal/registryguard's.
		return errkind.Errorf(errkind.Input, "%s: the registry redirected to a private or link-local address: refused: %v", what, err)
	case errors.As(err, &ne), strings.Contains(err.Error(), "connection refused"), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errkind.Errorf(errkind.Unavailable, "%s: the registry cannot be reached or broke off: %v", what, err)
	case strings.Contains(err.Error(), "does not match requested digest"):
		return errkind.Errorf(errkind.Input, "%s: the registry sent a manifest that does not match the digest asked for: refused: %v", what, err)
	case strings.Contains(err.Error(), "error verifying sha256 checksum") || strings.Contains(err.Error(), "Content-Length"):
		return errkind.Errorf(errkind.Input, "%s: the registry sent bytes that do not match the digest: refused: %v", what, err)
	}
	return errkind.Errorf(errkind.Unavailable, "%s: %v", what, err)
}

// blobLayer is a cached blob as go-containerregistry uploads it.
type blobLayer struct {
	b blobcache.Cache
	d v1.Descriptor
}

func (l blobLayer) Digest() (v1.Hash, error)            { return l.d.Digest, nil }
func (l blobLayer) DiffID() (v1.Hash, error)            { return l.d.Digest, nil }
func (l blobLayer) Size() (int64, error)                { return l.d.Size, nil }
func (l blobLayer) MediaType() (types.MediaType, error) { return l.d.MediaType, nil }
func (l blobLayer) Compressed() (io.ReadCloser, error)  { return l.b.Open(l.d.Digest.String()) }
func (l blobLayer) Uncompressed() (io.ReadCloser, error) {
	return nil, errors.New("cwm uploads blobs as they are")
}

// rawManifest is a manifest as go-containerregistry puts it.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
