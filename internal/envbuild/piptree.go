package envbuild

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// pipTree returns pip's wheel unpacked beside it (WHEEL.d), with bytecode
// compiled by the host's python3, making it once. Run from the zip, every
// pip command compiles pip's modules again in memory (a zip holds no
// __pycache__): about 0.7 s of CPU for each pip run of a build, a rebuild
// from the lock has two. Bytecode for the host's Python version serves
// every base with the same version; other versions compile in memory as
// before (the tree is read-only in the sandbox).
func pipTree(ctx context.Context, wheel string) (string, error) {
	dst := wheel + ".d"
	if _, err := os.Stat(filepath.Join(dst, "pip", "__init__.py")); err == nil {
		return dst, nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(wheel), ".unpack-*")
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", filepath.Base(wheel), err)
	}
	defer os.RemoveAll(tmp)
	if err := unzipTo(wheel, tmp); err != nil {
		return "", fmt.Errorf("unpack %s: %w", filepath.Base(wheel), err)
	}
	// Best effort: without bytecode pip runs as from the zip.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	exec.CommandContext(cctx, "python3", "-m", "compileall", "-q", "-j", "0", tmp).Run()
	if err := os.Rename(tmp, dst); err != nil {
		if _, serr := os.Stat(filepath.Join(dst, "pip", "__init__.py")); serr == nil {
			return dst, nil // another build made it first
		}
		return "", fmt.Errorf("unpack %s: %w", filepath.Base(wheel), err)
	}
	return dst, nil
}

// unzipTo unpacks a zip's regular files into dir, refusing a name that
// would leave it.
func unzipTo(zipPath, dir string) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		name := filepath.FromSlash(f.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("entry %q leaves the directory", f.Name)
		}
		if strings.HasSuffix(f.Name, "/") || !f.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := extract(f, p); err != nil {
			return err
		}
	}
	return nil
}

func extract(f *zip.File, p string) error {
	_, err := extractTo(f, p, io.Discard)
	return err
}

// extractTo writes a zip entry to the new file p, and its bytes to h as
// well; it returns how many there were.
func extractTo(f *zip.File, p string, h io.Writer) (int64, error) {
	r, err := f.Open()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	mode := os.FileMode(0o644)
	if f.Mode()&0o111 != 0 {
		mode = 0o755 // a wheel's executables (a bundled binary) stay so
	}
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.MultiWriter(w, h), r)
	if err != nil {
		w.Close()
		return n, fmt.Errorf("%s: %w", f.Name, err)
	}
	return n, w.Close()
}

// linkTree puts every file of src at the same place under dst (links, or
// copies across file systems).
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(p, filepath.Join(dst, rel))
	})
}
