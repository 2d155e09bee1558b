// Package oncedir makes a directory once per machine, whichever process
// asks first: the maker holds an exclusive lock beside the directory
// (dir.lock) and writes a completion mark into it last, so that processes
// asking at once (test binaries of several packages) wait and find it
// made, and what a killed maker left half made is removed and made
// again. The test venvs (internal/pytestenv) and the test bases
// (internal/base/basetest) are made this way.
package oncedir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Mark is the file written last into a finished directory.
const Mark = ".cwm-complete"

// Complete reports whether dir was finished.
func Complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, Mark))
	return err == nil
}

// Ensure makes dir with make unless it is complete, and reports whether
// this call made it. make is given dir, absent, to create; the mark it is
// given is written into dir once make returns nil. Another process
// making the same dir is waited for at most wait.
func Ensure(ctx context.Context, dir string, wait time.Duration, mark string, make func(dir string) error) (bool, error) {
	if Complete(dir) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return false, fmt.Errorf("make the cache directory: %w", err)
	}
	unlock, err := lock(ctx, dir+".lock", wait)
	if err != nil {
		return false, err
	}
	defer unlock()
	if Complete(dir) { // made by whoever held the lock before
		return false, nil
	}
	// What is there is a run that died half way.
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("remove the incomplete %s: %w", dir, err)
	}
	if err := make(dir); err != nil {
		return false, err
	}
	if err := os.WriteFile(filepath.Join(dir, Mark), []byte(mark+"\n"), 0o644); err != nil {
		return false, fmt.Errorf("mark %s complete: %w", dir, err)
	}
	return true, nil
}

// lock takes an exclusive flock on path, waiting at most wait for
// another process that holds it.
func lock(ctx context.Context, path string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the lock %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s: still held by another process after %s", path, wait)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// CacheDir is the cache directory the variable env names, or name in the
// user's cache directory ($XDG_CACHE_HOME or ~/.cache) when it is unset.
func CacheDir(env, name string) (string, error) {
	if dir := os.Getenv(env); dir != "" {
		return dir, nil
	}
	uc, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find a cache directory (set %s): %w", env, err)
	}
	return filepath.Join(uc, name), nil
}
