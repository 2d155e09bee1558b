package envbuild

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"cwm/internal/env"
)

// A --locked rebuild whose wheels are all in the wheel cache installs
// them the way uv does, not through pip: each wheel is unpacked once into
// $CWM_HOME/cache/unpacked/SHA256 (the wheel's digest, which the lock
// names), and a build links its files into the layer's venv (hard links:
// the layer and the cache share CWM_HOME's file system; a copy where they
// do not) and writes what an installer writes (PEP 376, PEP 427): the
// dist-info's INSTALLER, REQUESTED and RECORD, the entry points' scripts,
// the .data directory's scripts and data where they belong. pip spent its
// time unpacking and byte-compiling the same files on every rebuild; a
// link costs a directory entry. Nothing is byte-compiled at install:
// Python compiles a module when it is first imported, and the build's
// warm-up run (the test collection) does that for what the tests import.

func unpackedCacheDir(home string) string { return filepath.Join(home, "cache", "unpacked") }

// recordEntry is one line of a wheel's RECORD: a file and its digest
// (sha256=URL-safe base64, unpadded) and size.
type recordEntry struct {
	path, hash string
	size       int64
}

// linkedWheel is one cached wheel ready to link: its unpacked tree,
// checked against the RECORD of the wheel (whose digest the lock names).
type linkedWheel struct {
	pkg      env.LockedPackage
	dir      string // the unpacked tree
	distInfo string // NAME-VERSION.dist-info
	record   []recordEntry
}

// linkPlan finds, for every package of lock that is installed (not the
// project, not a build entry), its wheel in the wheel cache and that
// wheel unpacked, and checks the unpacked files against the wheel's
// RECORD. ok is false when some package has no cached wheel this Python
// can install (a source archive, another interpreter's wheel, a file the
// cache lacks): then pip installs the lock as before. An unpacked tree
// that does not match its wheel (a file changed in the cache) is unpacked
// again from the wheel; a wheel whose own files do not match its RECORD
// is refused with an error that names it.
func linkPlan(home string, lock []env.LockedPackage, cached map[string]string, python string) (plan []linkedWheel, redone []string, ok bool, err error) {
	for _, p := range lock {
		if p.Local || p.Build {
			continue
		}
		wheel, have := cached[p.SHA256]
		if !have || !remote(p) || !wheelFits(filepath.Base(wheel), python) {
			return nil, nil, false, nil
		}
		w, again, err := unpackedWheel(home, wheel, p)
		if err != nil {
			return nil, nil, false, err
		}
		if again {
			redone = append(redone, p.Name)
		}
		plan = append(plan, w)
	}
	return plan, redone, len(plan) > 0, nil
}

// wheelFits tells whether a wheel's tags (NAME-VER[-BUILD]-PY-ABI-PLAT.whl)
// name this CPython (X.Y) on this machine: pure wheels (py3, py3N with N
// at most Y), CPython's own ABI (cpXY), the stable ABI (abi3, from the
// version it names on), Linux platforms of this architecture. Anything
// else goes to pip, which knows every tag.
func wheelFits(file, python string) bool {
	parts := strings.Split(strings.TrimSuffix(file, ".whl"), "-")
	if len(parts) < 5 {
		return false
	}
	pys, abis, plats := parts[len(parts)-3], parts[len(parts)-2], parts[len(parts)-1]
	major, minor, ok := strings.Cut(python, ".")
	y, err := strconv.Atoi(minor)
	if !ok || err != nil || major != "3" {
		return false
	}
	platOK := false
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	for _, pl := range strings.Split(plats, ".") {
		if pl == "any" || (arch != "" && strings.HasSuffix(pl, "_"+arch) &&
			(strings.HasPrefix(pl, "linux_") || strings.HasPrefix(pl, "manylinux"))) {
			platOK = true
		}
	}
	if !platOK {
		return false
	}
	for _, py := range strings.Split(pys, ".") {
		for _, abi := range strings.Split(abis, ".") {
			switch {
			case abi == "none" && py == "py3":
				return true
			case abi == "none" && strings.HasPrefix(py, "py3"):
				if n, err := strconv.Atoi(py[3:]); err == nil && n <= y {
					return true
				}
			case strings.HasPrefix(py, "cp3"):
				n, err := strconv.Atoi(py[3:])
				if err != nil {
					continue
				}
				if (abi == py && n == y) || (abi == "abi3" && n <= y) || (abi == "none" && n == y) {
					return true
				}
			}
		}
	}
	return false
}

// unpackedWheel returns the cached wheel unpacked, unpacking it when the
// cache has no tree for it or the tree does not match the wheel's RECORD
// (again reports the second: a file changed in the cache).
func unpackedWheel(home, wheel string, p env.LockedPackage) (linkedWheel, bool, error) {
	w := linkedWheel{pkg: p, dir: filepath.Join(unpackedCacheDir(home), p.SHA256)}
	zr, err := zip.OpenReader(wheel)
	if err != nil {
		return w, false, fmt.Errorf("read the cached wheel %s: %w", filepath.Base(wheel), err)
	}
	defer zr.Close()
	if w.distInfo, w.record, err = wheelRecord(&zr.Reader); err != nil {
		return w, false, fmt.Errorf("the cached wheel %s: %w", filepath.Base(wheel), err)
	}
	again := false
	if _, err := os.Stat(w.dir); err == nil {
		if checkTree(w.dir, w.record) == "" {
			return w, false, nil
		}
		again = true
	}
	bad, err := unpackWheel(&zr.Reader, w.dir, w.record)
	if err != nil {
		return w, false, fmt.Errorf("unpack the cached wheel %s: %w", filepath.Base(wheel), err)
	}
	if bad != "" {
		return w, false, inputErrorf("the lock's %s==%s: its wheel %s does not match its own RECORD (%s)", p.Name, p.Version, filepath.Base(wheel), bad)
	}
	return w, again, nil
}

// wheelRecord reads a wheel's dist-info directory and RECORD. Every file
// but RECORD itself must have a sha256 there: it is what the unpacked
// tree is checked against.
func wheelRecord(zr *zip.Reader) (string, []recordEntry, error) {
	var rec *zip.File
	for _, f := range zr.File {
		dir, name, found := strings.Cut(f.Name, "/")
		if found && name == "RECORD" && strings.HasSuffix(dir, ".dist-info") {
			if rec != nil {
				return "", nil, errors.New("two dist-info directories")
			}
			rec = f
		}
	}
	if rec == nil {
		return "", nil, errors.New("no dist-info/RECORD")
	}
	r, err := rec.Open()
	if err != nil {
		return "", nil, err
	}
	defer r.Close()
	out, err := parseRecord(r, rec.Name)
	return path.Dir(rec.Name), out, err
}

// parseRecord reads a RECORD (name, for errors) whose every file but
// itself has a sha256 and stays inside the tree.
func parseRecord(r io.Reader, name string) ([]recordEntry, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	var out []recordEntry
	for _, row := range rows {
		if len(row) < 1 || row[0] == name {
			continue
		}
		if len(row) < 3 || !strings.HasPrefix(row[1], "sha256=") || !filepath.IsLocal(filepath.FromSlash(row[0])) {
			return nil, fmt.Errorf("%s: %q has no sha256 or leaves the tree", name, row[0])
		}
		size, err := strconv.ParseInt(row[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: size %q", name, row[0], row[2])
		}
		out = append(out, recordEntry{path: row[0], hash: strings.TrimPrefix(row[1], "sha256="), size: size})
	}
	return out, nil
}

// checkTree returns the first file of record that dir lacks or holds with
// another digest, or "" when all match. Only regular files count: a link
// planted in the cache would point the layer elsewhere.
func checkTree(dir string, record []recordEntry) string {
	for _, e := range record {
		p := filepath.Join(dir, filepath.FromSlash(e.path))
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != e.size {
			return e.path
		}
		if h, err := recordHash(p); err != nil || h != e.hash {
			return e.path
		}
	}
	return ""
}

// recordHash is a file's sha256 as a RECORD writes it.
func recordHash(p string) (string, error) {
	sum, err := fileSHA256(p)
	if err != nil {
		return "", err
	}
	b, err := hex.DecodeString(sum)
	return base64.RawURLEncoding.EncodeToString(b), err
}

// unpackWheel replaces dir with the wheel's files, each hashed as it is
// written (one pass over the bytes) and checked against the RECORD: bad
// names the first file that does not match it, and then dir is left as
// it was.
func unpackWheel(zr *zip.Reader, dir string, record []recordEntry) (bad string, err error) {
	err = replaceDir(dir, func(tmp string) error {
		got := map[string]recordEntry{}
		for _, f := range zr.File {
			if !filepath.IsLocal(filepath.FromSlash(f.Name)) {
				return fmt.Errorf("entry %q leaves the directory", f.Name)
			}
			if strings.HasSuffix(f.Name, "/") || !f.Mode().IsRegular() {
				continue
			}
			p := filepath.Join(tmp, filepath.FromSlash(f.Name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			h := sha256.New()
			n, err := extractTo(f, p, h)
			if err != nil {
				return err
			}
			got[f.Name] = recordEntry{hash: base64.RawURLEncoding.EncodeToString(h.Sum(nil)), size: n}
		}
		for _, e := range record {
			if g, ok := got[e.path]; !ok || g.hash != e.hash || g.size != e.size {
				bad = e.path
				return errBadRecord
			}
		}
		return nil
	})
	if errors.Is(err, errBadRecord) {
		return bad, nil
	}
	return "", err
}

var errBadRecord = errors.New("a file does not match the RECORD")

// replaceDir makes dir anew: fill writes it in a temporary sibling,
// renamed into place, so that no build sees half a tree.
func replaceDir(dir string, fill func(tmp string) error) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".new-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := fill(tmp); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// lockLink is what linkLocked installed: the lock's packages, the ones
// whose unpacked tree had to be made again, the local projects whose
// editable install came from the editable cache (by the command of their
// install step) and how long it took.
type lockLink struct {
	pkgs      []env.LockedPackage
	redone    []string
	editables map[string]env.LockedPackage
	took      time.Duration
}

// editable returns the local project whose editable install of a
// --locked build's step command was linked (none when l is nil).
func (l *lockLink) editable(command string) (env.LockedPackage, bool) {
	if l == nil {
		return env.LockedPackage{}, false
	}
	p, ok := l.editables[command]
	return p, ok
}

// linkLocked installs a --locked build's packages into the layer's venv
// (layer/venv, whose Python is X.Y) by linking them from the
// cached wheels (cachedWheels: sha256 -> file)
// unpacked-wheel cache, when every one of them has a cached wheel this
// Python takes; nil (and nothing written) otherwise. The caller must not
// have a sandbox open over the layer. editKey is the editable cache's
// key of a local project at a path (editableKey).
func linkLocked(home string, lock []env.LockedPackage, cached map[string]string, layer, python string, editKey func(path string) string) (*lockLink, error) {
	start := time.Now()
	plan, redone, ok, err := linkPlan(home, lock, cached, python)
	if err != nil || !ok {
		return nil, err
	}
	venv := filepath.Join(layer, strings.TrimPrefix(env.VenvRoot, "/"))
	site := filepath.Join(venv, "lib", "python"+python, "site-packages")
	l := &lockLink{redone: redone}
	dirs := map[string]bool{} // made already
	for _, w := range plan {
		if err := linkWheel(w, venv, site, python, dirs); err != nil {
			return nil, fmt.Errorf("link %s==%s into the venv: %w", w.pkg.Name, w.pkg.Version, err)
		}
		l.pkgs = append(l.pkgs, w.pkg)
	}
	for _, p := range lock {
		path, ok := localPath(p)
		if !ok {
			continue
		}
		w, ok := cachedEditable(home, editKey(path), p)
		if !ok {
			continue // pip installs it, and keepEditables keeps it
		}
		if err := linkWheel(w, venv, site, python, dirs); err != nil {
			return nil, fmt.Errorf("link the editable install of %s into the venv: %w", p.Name, err)
		}
		if l.editables == nil {
			l.editables = map[string]env.LockedPackage{}
		}
		l.editables[localStep(path).Command] = p
	}
	l.took = time.Since(start)
	return l, nil
}

// venvPython is the interpreter the scripts of an environment's venv run.
const venvPython = env.VenvRoot + "/bin/python"

// linkInto links (or copies) src to dst, making dst's directory unless
// dirs says it was made, and replacing a file there (a later wheel's file
// replaces an earlier one's, as pip does). A wheel has hundreds of files:
// only the syscalls a link needs.
func linkInto(src, dst string, dirs map[string]bool) error {
	if d := filepath.Dir(dst); !dirs[d] {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		dirs[d] = true
	}
	if os.Link(src, dst) == nil {
		return nil
	}
	os.Remove(dst)
	return copyFile(src, dst)
}

func linkWheel(w linkedWheel, venv, site, python string, dirs map[string]bool) error {
	dataDir := strings.TrimSuffix(w.distInfo, ".dist-info") + ".data/"
	var record [][]string
	add := func(dst, hash string, size int64) {
		rel, _ := filepath.Rel(site, dst)
		record = append(record, []string{filepath.ToSlash(rel), "sha256=" + hash, strconv.FormatInt(size, 10)})
	}
	write := func(dst string, data []byte, mode os.FileMode) error {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		os.Remove(dst)
		if err := os.WriteFile(dst, data, mode); err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		add(dst, base64.RawURLEncoding.EncodeToString(sum[:]), int64(len(data)))
		return nil
	}
	for _, e := range w.record {
		src := filepath.Join(w.dir, filepath.FromSlash(e.path))
		dst := filepath.Join(site, filepath.FromSlash(e.path))
		if rest, ok := strings.CutPrefix(e.path, dataDir); ok {
			scheme, sub, _ := strings.Cut(rest, "/")
			switch scheme {
			case "purelib", "platlib":
				dst = filepath.Join(site, filepath.FromSlash(sub))
			case "scripts":
				// A script's #!python line names the venv's interpreter,
				// as an installer rewrites it: a copy, not a link, with
				// the wheel's mode (pip's way: executable if it was).
				data, err := os.ReadFile(src)
				if err != nil {
					return err
				}
				fi, err := os.Stat(src)
				if err != nil {
					return err
				}
				if rest, ok := bytes.CutPrefix(data, []byte("#!python")); ok {
					data = append([]byte("#!"+venvPython), rest...)
				}
				if err := write(filepath.Join(venv, "bin", filepath.FromSlash(sub)), data, fi.Mode().Perm()); err != nil {
					return err
				}
				continue
			case "headers":
				dst = filepath.Join(venv, "include", "site", "python"+python, w.pkg.Name, filepath.FromSlash(sub))
			case "data":
				dst = filepath.Join(venv, filepath.FromSlash(sub))
			default:
				return fmt.Errorf("%s: unknown .data scheme %q", e.path, scheme)
			}
		}
		if !strings.HasPrefix(dst, venv+string(filepath.Separator)) {
			return fmt.Errorf("%s leaves the venv", e.path)
		}
		if err := linkInto(src, dst, dirs); err != nil {
			return err
		}
		add(dst, e.hash, e.size)
	}
	scripts, err := entryPointScripts(filepath.Join(w.dir, filepath.FromSlash(w.distInfo), "entry_points.txt"))
	if err != nil {
		return err
	}
	for _, s := range scripts {
		if err := write(filepath.Join(venv, "bin", s.name), []byte(s.text), 0o755); err != nil {
			return err
		}
	}
	info := filepath.Join(site, filepath.FromSlash(w.distInfo))
	if err := write(filepath.Join(info, "INSTALLER"), []byte("cwm\n"), 0o644); err != nil {
		return err
	}
	// Every package of a lock is one the build asked for.
	if err := write(filepath.Join(info, "REQUESTED"), nil, 0o644); err != nil {
		return err
	}
	record = append(record, []string{w.distInfo + "/RECORD", "", ""})
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	cw.WriteAll(record)
	return os.WriteFile(filepath.Join(info, "RECORD"), b.Bytes(), 0o644)
}

type script struct{ name, text string }

// entryPointScripts reads a dist-info's entry_points.txt and returns the
// scripts of its console_scripts and gui_scripts, written as pip 26
// writes them (the same text, so a venv does not depend on which
// installer made it).
func entryPointScripts(file string) ([]script, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []script
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
			continue
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		if section != "console_scripts" && section != "gui_scripts" {
			continue
		}
		name, ref, ok := strings.Cut(line, "=")
		name, ref = strings.TrimSpace(name), strings.TrimSpace(ref)
		if i := strings.Index(ref, "["); i >= 0 {
			ref = strings.TrimSpace(ref[:i]) // extras: nothing to do at run time
		}
		mod, attr, hasAttr := strings.Cut(ref, ":")
		mod, attr = strings.TrimSpace(mod), strings.TrimSpace(attr)
		if !ok || name == "" || mod == "" || !hasAttr || attr == "" || strings.ContainsAny(name, "/\\") {
			return nil, fmt.Errorf("%s: entry point %q: want NAME = MODULE:ATTRIBUTE", file, line)
		}
		first, _, _ := strings.Cut(attr, ".")
		out = append(out, script{name: name, text: "#!" + venvPython + "\nimport sys\nfrom " + mod + " import " + first +
			"\nif __name__ == '__main__':\n    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n    sys.exit(" + attr + "())\n"})
	}
	return out, nil
}
