package envoci

import (
	"compress/gzip"
	"io"

	"cwm/internal/blobcache"
	"cwm/internal/errkind"
	"cwm/internal/layertar"
)

// unpackLayer unpacks a layer blob read from r (gzip-compressed tar) with
// u, which unpacks into the environment's layer being made. The blob is
// not trusted (a registry, a file someone handed over): layertar holds it
// to its rules (every name under top/, nothing reached through a symbolic
// link, no devices, sparse files or whiteouts, sizes checked before they
// are written); here the tar must end where its manifest says it does
// (tarSize bytes) and its digest must be diffID.
func unpackLayer(r io.Reader, u *layertar.Unpacker, top, diffID string, tarSize int64) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return corrupt("layer %s is not gzip-compressed: %v", top, err)
	}
	defer gz.Close()
	th := blobcache.NewHash()
	// One byte more than the manifest says, to tell a longer tar.
	tr := io.TeeReader(io.LimitReader(gz, tarSize+1), th)
	err = u.Layer(tr, layertar.Layer{Name: top + "/", Top: top, Size: tarSize})
	if err != nil && th.N > tarSize {
		return corrupt("layer %s holds more than the %d bytes of tar its manifest says", top, tarSize)
	}
	if err != nil {
		return err
	}
	// Whatever follows the tar's end marker is part of the blob too.
	if _, err := io.Copy(io.Discard, io.TeeReader(io.LimitReader(gz, tarSize+1-th.N), th)); err != nil {
		return corrupt("layer %s: %v", top, err)
	}
	if th.N != tarSize {
		return corrupt("layer %s holds %d bytes of tar, its manifest says %d", top, th.N, tarSize)
	}
	if got := th.Digest(); got != diffID {
		return corrupt("layer %s: its tar's digest is %s, its manifest says %s", top, got, diffID)
	}
	return nil
}

// corrupt is the error of a blob that is not what its manifest says.
func corrupt(format string, args ...any) error {
	return errkind.Errorf(errkind.Input, format, args...)
}
