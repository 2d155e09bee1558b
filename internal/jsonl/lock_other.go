//go:build !unix

package jsonl

import "os"

// lockFile does nothing where flock is unavailable; callers must then ensure
// a single appender themselves.
func lockFile(*os.File) error { return nil }
