package sandbox

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
)

// Files are read and written by init, which resolves every path inside the
// sandbox's root (openat2 with RESOLVE_IN_ROOT): neither ".." nor a symlink,
// relative or absolute, reaches outside. Relative paths start at the
// sandbox's workdir.

// ReadFile returns the content of a file inside the sandbox. limit, if
// positive, is the largest size accepted.
func (s *Sandbox) ReadFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	id, ch := s.register()
	defer s.unregister(id)
	err = s.send(request{ID: id, Op: "readfile", Path: s.resolve(name), Limit: limit}, pw)
	pw.Close()
	if err != nil {
		return nil, err
	}
	r, err := s.wait(ctx, ch)
	if err != nil {
		return nil, fileErr("read", name, err)
	}
	buf := make([]byte, 0, r.Size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := pr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// WriteFile writes data to a file inside the sandbox, creating or
// truncating it. Its directory must exist.
func (s *Sandbox) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	return s.writeFile(ctx, name, data, perm, "")
}

// CreateFile is WriteFile that fails if the file already exists.
func (s *Sandbox) CreateFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	return s.writeFile(ctx, name, data, perm, "create")
}

func (s *Sandbox) writeFile(ctx context.Context, name string, data []byte, perm fs.FileMode, how string) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	id, ch := s.register()
	defer s.unregister(id)
	err = s.send(request{ID: id, Op: "writefile", Path: s.resolve(name), Mode: uint32(perm.Perm()), Reason: how}, pr)
	pr.Close()
	if err != nil {
		pw.Close()
		return err
	}
	go func() {
		pw.Write(data)
		pw.Close()
	}()
	if _, err := s.wait(ctx, ch); err != nil {
		return fileErr("write", name, err)
	}
	return nil
}

// FileInfo is what Stat reports of a path inside the sandbox.
type FileInfo struct {
	Size  int64
	IsDir bool
	Mode  fs.FileMode
}

// Stat describes a path inside the sandbox, following symlinks within it.
func (s *Sandbox) Stat(ctx context.Context, name string) (FileInfo, error) {
	r, err := s.call(ctx, request{Op: "stat", Path: s.resolve(name)})
	if err != nil {
		return FileInfo{}, fileErr("stat", name, err)
	}
	return FileInfo{Size: r.Size, IsDir: r.IsDir, Mode: fs.FileMode(r.Mode & 0o777)}, nil
}

// fileErr turns init's error text back into an error that errors.Is can
// match against fs.ErrNotExist and friends.
func fileErr(op, name string, err error) error {
	if errors.Is(err, ErrDead) {
		return err
	}
	msg := err.Error()
	for _, e := range []error{fs.ErrNotExist, fs.ErrExist, fs.ErrPermission} {
		if containsErrText(msg, e) {
			return &fs.PathError{Op: op, Path: name, Err: e}
		}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func containsErrText(msg string, e error) bool {
	switch e {
	case fs.ErrNotExist:
		return strings.Contains(msg, "no such file or directory")
	case fs.ErrExist:
		return strings.Contains(msg, "file exists")
	case fs.ErrPermission:
		return strings.Contains(msg, "permission denied") || strings.Contains(msg, "read-only file system")
	}
	return false
}
