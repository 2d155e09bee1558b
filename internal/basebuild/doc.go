// Package basebuild makes bases (internal/base): Import stores any OCI
// image (a registry reference through go-containerregistry and cwm's
// registry guard, an OCI layout, a docker-save archive) or a plain root
// filesystem directory; BuildDebian builds one from the Debian archive
// with mmdebstrap (debootstrap as root where it is missing). Layers are
// unpacked by internal/layertar with whiteouts and opaque directories
// honoured, every blob checked against its digest on its way into the
// blob cache, every tar against its diff_id; the Python of the base is
// found by running it in a sandbox on the staged base; the stage is
// published whole or not at all.
//
// It is apart from internal/base so that the store, which the sandbox
// commands' fast path reads, does not pull go-containerregistry in.
package basebuild
