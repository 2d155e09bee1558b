// Package indextest serves a Python package index on 127.0.0.1 for tests:
// the simple repository API in its HTML form (PEP 503) and its JSON form
// (PEP 691, with PEP 700's upload-time, so that date cut-offs can be
// tested), and wheels the test describes, built with archive/zip. Nothing
// in it reaches beyond the loopback, so tests that install from it need no
// network.
package indextest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Wheel describes one pure-Python wheel the index serves.
type Wheel struct {
	Name    string // project name as written (normalised for URLs)
	Version string
	// Requires are Requires-Dist lines ("other>=1.0").
	Requires []string
	// RequiresPython, when set, is the wheel's Requires-Python (also shown
	// as data-requires-python).
	RequiresPython string
	// Module is the source of the wheel's one module, named after the
	// project (default: a __version__ assignment).
	Module string
	// Pad adds that many incompressible bytes to the wheel (a data file in
	// the module's package directory), for tests of byte caps.
	Pad int
	// Uploaded is the upload time shown in the JSON form; zero: 2020-01-01.
	Uploaded time.Time
	// Files are more of the wheel's files by their path in it (with
	// {info} and {data} standing for its dist-info and .data
	// directories), for tests of what an installer does with them:
	// entry points, scripts, data.
	Files map[string]string
}

// Index is a running index.
type Index struct {
	// URL is the simple API's root, http://127.0.0.1:PORT/simple, to give
	// pip as --index-url.
	URL string
	// Addr is the server's host:port.
	Addr string

	files    map[string][]byte // file name -> wheel
	projects map[string][]file // normalised name -> its files

	mu   sync.Mutex
	reqs []string // "METHOD PATH" of every request served
}

type file struct {
	name     string
	sha256   string
	size     int
	uploaded time.Time
	requires string
}

// New starts an index serving wheels and returns its URL (see Index.URL).
// It stops when the test ends.
func New(t testing.TB, wheels ...Wheel) string { return Start(t, wheels...).URL }

// Start is New returning the index itself.
func Start(t testing.TB, wheels ...Wheel) *Index {
	t.Helper()
	ix := &Index{files: map[string][]byte{}, projects: map[string][]file{}}
	for _, w := range wheels {
		name, b, err := Build(w)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		up := w.Uploaded
		if up.IsZero() {
			up = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		ix.files[name] = b
		n := Normalize(w.Name)
		ix.projects[n] = append(ix.projects[n], file{name: name, sha256: hex.EncodeToString(sum[:]), size: len(b), uploaded: up.UTC(), requires: w.RequiresPython})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /simple/{$}", ix.root)
	mux.HandleFunc("GET /simple/{project}/{$}", ix.project)
	mux.HandleFunc("GET /files/{file}", ix.file)
	srv := &http.Server{Handler: ix.log(mux), ReadHeaderTimeout: time.Minute}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	ix.Addr = ln.Addr().String()
	ix.URL = "http://" + ix.Addr + "/simple"
	return ix
}

// Requests lists the requests served so far ("GET /simple/six/").
func (ix *Index) Requests() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return append([]string(nil), ix.reqs...)
}

func (ix *Index) log(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ix.mu.Lock()
		ix.reqs = append(ix.reqs, r.Method+" "+r.URL.Path)
		ix.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

const jsonType = "application/vnd.pypi.simple.v1+json"

func wantsJSON(r *http.Request) bool { return strings.Contains(r.Header.Get("Accept"), jsonType) }

func (ix *Index) root(w http.ResponseWriter, r *http.Request) {
	names := make([]string, 0, len(ix.projects))
	for n := range ix.projects {
		names = append(names, n)
	}
	sort.Strings(names)
	if wantsJSON(r) {
		type proj struct {
			Name string `json:"name"`
		}
		var ps []proj
		for _, n := range names {
			ps = append(ps, proj{n})
		}
		writeJSON(w, map[string]any{"meta": map[string]string{"api-version": "1.1"}, "projects": ps})
		return
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><body>\n")
	for _, n := range names {
		fmt.Fprintf(&b, "<a href=\"%s/\">%s</a>\n", n, n)
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", "text/html")
	w.Write([]byte(b.String()))
}

func (ix *Index) project(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("project")
	if n := Normalize(name); n != name {
		http.Redirect(w, r, "/simple/"+n+"/", http.StatusMovedPermanently)
		return
	}
	files, ok := ix.projects[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if wantsJSON(r) {
		type jfile struct {
			Filename       string            `json:"filename"`
			URL            string            `json:"url"`
			Hashes         map[string]string `json:"hashes"`
			RequiresPython string            `json:"requires-python,omitempty"`
			Size           int               `json:"size"`
			UploadTime     string            `json:"upload-time"`
		}
		var fs []jfile
		versions := map[string]bool{}
		for _, f := range files {
			fs = append(fs, jfile{f.name, "../../files/" + f.name, map[string]string{"sha256": f.sha256}, f.requires, f.size,
				f.uploaded.Format("2006-01-02T15:04:05.000000Z")})
			versions[strings.Split(f.name, "-")[1]] = true
		}
		var vs []string
		for v := range versions {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		w.Header().Set("Content-Type", jsonType)
		writeJSON(w, map[string]any{"meta": map[string]string{"api-version": "1.1"}, "name": name, "files": fs, "versions": vs})
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><body><h1>Links for %s</h1>\n", name)
	for _, f := range files {
		rp := ""
		if f.requires != "" {
			rp = fmt.Sprintf(" data-requires-python=\"%s\"", html.EscapeString(f.requires))
		}
		fmt.Fprintf(&b, "<a href=\"../../files/%s#sha256=%s\"%s>%s</a><br>\n", f.name, f.sha256, rp, f.name)
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", "text/html")
	w.Write([]byte(b.String()))
}

func (ix *Index) file(w http.ResponseWriter, r *http.Request) {
	b, ok := ix.files[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, r.PathValue("file"), time.Time{}, bytes.NewReader(b))
}

func writeJSON(w http.ResponseWriter, v any) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", jsonType)
	}
	json.NewEncoder(w).Encode(v)
}

var normRe = regexp.MustCompile(`[-_.]+`)

// Normalize is a project name as PEP 503 writes it in URLs.
func Normalize(name string) string { return strings.ToLower(normRe.ReplaceAllString(name, "-")) }

// Build makes w's wheel: its file name and its bytes. A wheel is a zip of
// the module, and in NAME-VERSION.dist-info its METADATA, WHEEL and RECORD
// (every other file's digest and size).
func Build(w Wheel) (string, []byte, error) {
	if w.Name == "" || w.Version == "" {
		return "", nil, fmt.Errorf("indextest: a wheel needs a name and a version, got %q %q", w.Name, w.Version)
	}
	dist := strings.ReplaceAll(Normalize(w.Name), "-", "_")
	info := dist + "-" + w.Version + ".dist-info/"
	mod := w.Module
	if mod == "" {
		mod = fmt.Sprintf("__version__ = %q\n", w.Version)
	}
	var meta strings.Builder
	fmt.Fprintf(&meta, "Metadata-Version: 2.1\nName: %s\nVersion: %s\n", w.Name, w.Version)
	if w.RequiresPython != "" {
		fmt.Fprintf(&meta, "Requires-Python: %s\n", w.RequiresPython)
	}
	for _, r := range w.Requires {
		fmt.Fprintf(&meta, "Requires-Dist: %s\n", r)
	}
	type entry struct {
		name string
		data []byte
	}
	entries := []entry{{dist + ".py", []byte(mod)}}
	if w.Pad > 0 {
		pad := make([]byte, w.Pad)
		rng := rand.NewChaCha8([32]byte{1})
		rng.Read(pad)
		entries = append(entries, entry{dist + "_pad.bin", pad})
	}
	names := make([]string, 0, len(w.Files))
	for n := range w.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := strings.NewReplacer("{info}", strings.TrimSuffix(info, "/"), "{data}", dist+"-"+w.Version+".data").Replace(n)
		entries = append(entries, entry{p, []byte(w.Files[n])})
	}
	entries = append(entries,
		entry{info + "METADATA", []byte(meta.String())},
		entry{info + "WHEEL", []byte("Wheel-Version: 1.0\nGenerator: cwm-indextest\nRoot-Is-Purelib: true\nTag: py3-none-any\n")})
	var record strings.Builder
	for _, e := range entries {
		sum := sha256.Sum256(e.data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", e.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(e.data))
	}
	record.WriteString(info + "RECORD,,\n")
	entries = append(entries, entry{info + "RECORD", []byte(record.String())})

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		method := zip.Deflate
		if strings.HasSuffix(e.name, "_pad.bin") {
			method = zip.Store // incompressible anyway
		}
		f, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: method, Modified: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			return "", nil, err
		}
		if _, err := f.Write(e.data); err != nil {
			return "", nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%s-%s-py3-none-any.whl", dist, w.Version), buf.Bytes(), nil
}
