// Package basetest gives tests a Debian base, built once per machine and
// kept between test runs: Debian(t, "bookworm") is a stored base with
// Python 3.11 (bullseye 3.9, trixie 3.13).
//
// Each (suite, packages, bootstrap tool version) has its own directory in
// the cache ($CWM_TESTBASE_DIR, default the user's cache directory's
// cwm-testbases), which is a $CWM_HOME holding that one base (bases/ and
// blobs/), made under a lock with a completion mark (internal/oncedir), so
// test processes that want the same base at once build it once. The base
// is handed out where it lies, a read-only store shared by every test:
// nothing is copied. Tests must not remove it or write under its rootfs
// (sandboxes mount it read-only anyway); a test that needs it in its own
// $CWM_HOME (an env store naming it) calls Link, which hard-links it
// there. With CWM_TESTBASE_OFFLINE=1 a test whose base is not yet built
// skips instead of reaching the Debian archive.
package basetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/hostexec"
	"cwm/internal/oncedir"
	"cwm/internal/sandbox"
)

// Variables that steer the cache.
const (
	EnvDir     = "CWM_TESTBASE_DIR"
	EnvOffline = "CWM_TESTBASE_OFFLINE"
)

// buildWait bounds waiting for another process building the same base.
const buildWait = 40 * time.Minute

// Debian returns the Debian base of suite with packages beyond
// basebuild.DebianPackages, building it if the cache has none.
func Debian(t testing.TB, suite string, packages ...string) *base.Base {
	t.Helper()
	dir, err := Dir(suite, packages)
	if err != nil {
		t.Fatal(err)
	}
	if !oncedir.Complete(dir) && os.Getenv(EnvOffline) == "1" {
		t.Skipf("no test base for Debian %s yet and %s=1", suite, EnvOffline)
	}
	t0 := time.Now()
	ctx := context.Background()
	created, err := oncedir.Ensure(ctx, dir, buildWait, suite, func(home string) error {
		rt, err := sandbox.NewRuntime(sandbox.Options{Home: filepath.Join(home, "runtime")})
		if err != nil {
			return err
		}
		defer func() { rt.Close(); sandbox.RemoveAll(filepath.Join(home, "runtime")) }()
		_, err = basebuild.BuildDebian(ctx, base.NewStore(home), basebuild.Debian{Suite: suite, Packages: packages}, basebuild.Options{Runtime: rt})
		return err
	})
	if err != nil {
		t.Fatalf("test base Debian %s: %v", suite, err)
	}
	if created {
		t.Logf("built the test base Debian %s in %.1fs: %s", suite, time.Since(t0).Seconds(), dir)
	}
	all, err := base.NewStore(dir).List()
	if err != nil || len(all) != 1 {
		t.Fatalf("test base Debian %s in %s: %d bases, %v", suite, dir, len(all), err)
	}
	return all[0]
}

// Dir is the cache directory of a base: a key of the suite, the packages
// and the bootstrap tool's version.
func Dir(suite string, packages []string) (string, error) {
	cache, err := oncedir.CacheDir(EnvDir, "cwm-testbases")
	if err != nil {
		return "", err
	}
	tool := "debootstrap"
	if _, err := exec.LookPath("mmdebstrap"); err == nil {
		tool = "mmdebstrap"
	}
	out, _ := hostexec.Output(context.Background(), hostexec.Cmd{Args: []string{tool, "--version"}})
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", suite, strings.Join(packages, ","), strings.Join(basebuild.DebianPackages, ","), out)
	return filepath.Join(cache, suite+"-"+hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// Link puts b into the store of home by hard links (its tree and its
// blobs; the same file system as the cache, or copies where it is not)
// and returns it from there.
func Link(t testing.TB, b *base.Base, home string) *base.Base {
	t.Helper()
	st := base.NewStore(home)
	dst := filepath.Join(st.Dir(), strings.TrimPrefix(b.Digest, "sha256:"))
	if err := os.MkdirAll(filepath.Join(home, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(st.Dir(), 0o755)
	if _, err := hostexec.Output(context.Background(), hostexec.Cmd{Args: []string{"cp", "-a", "--link", b.Dir(), dst}, Timeout: 10 * time.Minute}); err != nil {
		if _, err := hostexec.Output(context.Background(), hostexec.Cmd{Args: []string{"cp", "-a", b.Dir(), dst}, Timeout: 10 * time.Minute}); err != nil {
			t.Fatalf("link base %s into %s: %v", b.Short(), home, err)
		}
	}
	src := filepath.Join(filepath.Dir(filepath.Dir(b.Dir())), "blobs", "sha256")
	ents, _ := os.ReadDir(src)
	for _, e := range ents {
		os.Link(filepath.Join(src, e.Name()), filepath.Join(home, "blobs", "sha256", e.Name()))
	}
	got := st.Get(b.Digest)
	if got == nil {
		t.Fatalf("base %s is not in %s after linking it", b.Short(), home)
	}
	return got
}
