// Package pytestenv gives tests a Python virtual environment holding
// pinned packages (the real clients of cwm serve, a trainer's library),
// made by the test itself on a fresh machine and reused afterwards.
//
// A purpose has its own requirements file (every distribution pinned
// with its sha256, as scripts/pin-testvenv.py writes them) in its
// package's testdata. The venv lives in a cache directory under a name
// keyed by the file's contents and the interpreter's version, so an
// edited pin makes a new venv and an unchanged one is found again; it is
// built by /usr/bin/python3 -m venv and pip install --require-hashes
// --no-deps (the file lists the whole closure) under an exclusive lock,
// and marked complete last, so test processes that want the same venv at
// once build it once and never see half of it.
package pytestenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cwm/internal/hostexec"
	"cwm/internal/oncedir"
)

// Interpreter is the Python venvs are made from: the system's, whose
// version the pins were resolved for.
const Interpreter = "/usr/bin/python3"

// Env names the variables that steer the cache.
const (
	// EnvDir is the cache directory (default: the user's cache
	// directory's cwm-testvenv, i.e. $XDG_CACHE_HOME or ~/.cache).
	EnvDir = "CWM_TESTVENV_DIR"
	// EnvOffline, set to 1, skips the tests that need a venv not yet
	// made, instead of failing them, on a machine without the package
	// index.
	EnvOffline = "CWM_TESTVENV_OFFLINE"
)

// installTimeout bounds making one venv (its downloads included).
const installTimeout = 10 * time.Minute

// lockWait bounds waiting for another process making the same venv.
const lockWait = installTimeout + 2*time.Minute

// Venv returns the directory of the venv of requirements (a path
// relative to the test's package), making it if the cache has none.
func Venv(t testing.TB, requirements string) string {
	t.Helper()
	dir, err := Dir(requirements)
	if err != nil {
		t.Fatal(err)
	}
	if !oncedir.Complete(dir) && os.Getenv(EnvOffline) == "1" {
		t.Skipf("no venv for %s yet and %s=1", requirements, EnvOffline)
	}
	t0 := time.Now()
	created, err := Ensure(context.Background(), dir, requirements)
	if err != nil {
		t.Fatalf("test venv for %s: %v", requirements, err)
	}
	if created {
		t.Logf("made the venv of %s in %.1fs: %s", requirements, time.Since(t0).Seconds(), dir)
	}
	return dir
}

// Python is the interpreter of the venv of requirements.
func Python(t testing.TB, requirements string) string {
	t.Helper()
	return filepath.Join(Venv(t, requirements), "bin", "python")
}

// Dir is where the venv of requirements is kept: the cache directory
// and a key of the file's contents and the interpreter.
func Dir(requirements string) (string, error) {
	b, err := os.ReadFile(requirements)
	if err != nil {
		return "", fmt.Errorf("read the requirements: %w", err)
	}
	cache, err := oncedir.CacheDir(EnvDir, "cwm-testvenv")
	if err != nil {
		return "", err
	}
	target, err := filepath.EvalSymlinks(Interpreter)
	if err != nil {
		return "", fmt.Errorf("find the interpreter: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", target)
	h.Write(b)
	name := filepath.Base(requirements)
	name = name[:len(name)-len(filepath.Ext(name))]
	return filepath.Join(cache, name+"-"+hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// Ensure makes the venv dir of requirements unless it is complete, and
// reports whether this call made it. Callers in other processes wait on
// the lock beside dir (internal/oncedir).
func Ensure(ctx context.Context, dir, requirements string) (bool, error) {
	req, err := filepath.Abs(requirements)
	if err != nil {
		return false, err
	}
	return oncedir.Ensure(ctx, dir, lockWait, req, func(dir string) error {
		steps := [][]string{
			{Interpreter, "-m", "venv", dir},
			{filepath.Join(dir, "bin", "python"), "-m", "pip", "install", "--quiet", "--no-input",
				"--disable-pip-version-check", "--require-hashes", "--no-deps", "--only-binary", ":all:", "-r", req},
		}
		for _, args := range steps {
			if _, err := hostexec.Output(ctx, hostexec.Cmd{Args: args, Timeout: installTimeout}); err != nil {
				return fmt.Errorf("make the venv %s: %w", dir, err)
			}
		}
		return nil
	})
}
