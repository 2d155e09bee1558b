package envoci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"

	"cwm/internal/blobcache"
	"cwm/internal/env"
	"cwm/internal/envoci/ocitest"
	"cwm/internal/layertar/layertartest"
)

// The hostile-artifact suite: environments crafted here as an attacker
// would (layer tars written with archive/tar, the OCI layout or a
// registry around them), each taken in through cwm env import (the file)
// and cwm env pull (the CNCF Distribution registry on loopback, behind a
// proxy that misbehaves for some repositories), as root and as an
// ordinary user. Each must be refused with an error naming the layer and
// entry, leave the host untouched (a canary file's link count, content
// and time) and leave nothing in the store or the blob cache.

// Caps of the suite, set low: the unpacked ceiling and the entries.
const (
	hostileMaxUnpacked = 48 << 20
	hostileMaxEntries  = 100
	bombSize           = 256 << 20 // a decompression bomb's one file
)

// hostileCase is one attack as delivered: a file to import or a
// reference to pull, and what the refusal must say.
type hostileCase struct {
	Name string `json:"name"`
	File string `json:"file,omitempty"`
	Ref  string `json:"ref,omitempty"`
	Want string `json:"want"`
}

// craftLayer is a layer of a crafted environment.
type craftLayer struct {
	top string
	tar []byte
	// tarSize, when set, is the tar's size its manifest declares.
	tarSize int64
	// gz and diffID, when set, are the blob and its tar's digest (of a
	// tar too big to keep).
	gz     []byte
	diffID string
}

// crafted is an environment's artifact made by the test: its manifest
// and blobs (by digest).
type crafted struct {
	raw    []byte
	digest string
	blobs  map[string][]byte
}

// hostileTarOf writes tar entries (a regular file's body follows it).
func hostileTarOf(t *testing.T, hdrs ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := 0; i < len(hdrs); i++ {
		h := *hdrs[i].(*tar.Header)
		body := ""
		if h.Typeflag == tar.TypeReg {
			i++
			body = hdrs[i].(string)
			h.Size = int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("tar %s: %v", h.Name, err)
		}
		io.WriteString(tw, body)
	}
	tw.Close()
	return b.Bytes()
}

func hreg(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeReg} }
func hdir(name string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}
}
func hsym(name, to string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: to}
}
func hlink(name, to string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: to}
}

// sparseTars are a GNU sparse entry and a PAX (GNU 1.0) one, each
// declaring 3 GiB in a few KiB.
func sparseTars() (gnu, pax []byte) {
	return layertartest.GNUSparse("repo/sparse", 3<<30), layertartest.PAXSparse("repo/sparse", 3<<30)
}

// gz compresses a tar as a layer blob.
func gz(data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// craft makes an environment's artifact of config (an env.json) and
// layers.
func craft(t *testing.T, id string, config []byte, layers ...craftLayer) crafted {
	t.Helper()
	c := crafted{blobs: map[string][]byte{}}
	cd, _ := v1.NewHash(blobcache.Digest(config))
	c.blobs[cd.String()] = config
	var descs []v1.Descriptor
	for _, l := range layers {
		blob := l.blob()
		d, _ := v1.NewHash(blobcache.Digest(blob))
		c.blobs[d.String()] = blob
		size, diffID := l.tarSize, l.diffID
		if size == 0 {
			size = int64(len(l.tar))
		}
		if diffID == "" {
			diffID = blobcache.Digest(l.tar)
		}
		descs = append(descs, v1.Descriptor{MediaType: types.MediaType(LayerMediaType), Size: int64(len(blob)), Digest: d,
			Annotations: map[string]string{annPath: l.top, annDiffID: diffID, annTarSize: fmt.Sprint(size)}})
	}
	raw, err := newManifest(id, "hostile", "2026-01-01T00:00:00Z", "", v1.Descriptor{MediaType: ConfigMediaType, Size: int64(len(config)), Digest: cd}, descs)
	if err != nil {
		t.Fatal(err)
	}
	c.raw, c.digest = raw, blobcache.Digest(raw)
	return c
}

func (l craftLayer) blob() []byte {
	if l.gz != nil {
		return l.gz
	}
	return gz(l.tar)
}

// layout writes c as an exported file; index, when set, replaces its
// index.json and manifest, when set, the bytes stored as its manifest.
func (c crafted) layout(t *testing.T, file string, index, manifest []byte) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	put := func(name string, data []byte) {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write(data)
	}
	if index == nil {
		h, _ := v1.NewHash(c.digest)
		index, _ = json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex,
			Manifests: []v1.Descriptor{{MediaType: types.OCIManifestSchema1, Size: int64(len(c.raw)), Digest: h}}})
	}
	if manifest == nil {
		manifest = c.raw
	}
	put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	put("index.json", index)
	put(blobName(c.digest), manifest)
	for d, data := range c.blobs {
		put(blobName(d), data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// push stores c in a registry under ref.
func (c crafted) push(t *testing.T, ref string) {
	t.Helper()
	ctx := context.Background()
	r, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	b := blobcache.New(t.TempDir())
	pusher, err := remote.NewPusher(remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	a, err := parseArtifact(c.raw, ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range a.blobsOf() {
		if err := b.PutBytes(d.Digest.String(), c.blobs[d.Digest.String()]); err != nil {
			t.Fatal(err)
		}
		if err := pusher.Upload(ctx, r.Context(), blobLayer{b, d}); err != nil {
			t.Fatalf("push %s: %v", d.Digest, err)
		}
	}
	if err := pusher.Put(ctx, r, rawManifest(c.raw)); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// hostileProxy stands before the registry and misbehaves by repository:
// .../lie/ sends a manifest other than the digest asked for, .../index/
// an index of 10,000 manifests, .../bigindex/ one past 4 MiB, and
// .../redirect/ sends every blob to the cloud metadata address
// (.../redirect-alibaba/ to Alibaba Cloud's).
func hostileProxy(t *testing.T, registry string) string {
	t.Helper()
	u, _ := url.Parse("http://" + registry)
	rp := httputil.NewSingleHostReverseProxy(u)
	bigIndex := func(n int) []byte {
		idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
		h, _ := v1.NewHash(blobcache.Digest([]byte("x")))
		for i := range n {
			idx.Manifests = append(idx.Manifests, v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: int64(i), Digest: h,
				Platform: &v1.Platform{OS: "linux", Architecture: fmt.Sprintf("arch%d", i)}})
		}
		data, _ := json.Marshal(idx)
		return data
	}
	index, big := bigIndex(10_000), bigIndex(40_000)
	rp.ModifyResponse = func(resp *http.Response) error {
		if strings.Contains(resp.Request.URL.Path, "/lie/manifests/") && resp.StatusCode == http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			body = bytes.Replace(body, []byte("2026-01-01"), []byte("2026-01-02"), 1)
			resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case strings.Contains(p, "/index/manifests/"), strings.Contains(p, "/bigindex/manifests/"):
			data := index
			if strings.Contains(p, "/bigindex/") {
				data = big
			}
			w.Header().Set("Content-Type", string(types.OCIImageIndex))
			w.Header().Set("Docker-Content-Digest", blobcache.Digest(data))
			if r.Method == http.MethodHead {
				w.Header().Set("Content-Length", fmt.Sprint(len(data)))
				return
			}
			w.Write(data)
		case strings.Contains(p, "/redirect/blobs/sha256:") && r.Method == http.MethodGet:
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/security-credentials/", http.StatusTemporaryRedirect)
		case strings.Contains(p, "/redirect-alibaba/blobs/sha256:") && r.Method == http.MethodGet:
			http.Redirect(w, r, "http://100.100.100.200/latest/meta-data/ram/security-credentials/", http.StatusTemporaryRedirect)
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// hostileCanary is a file outside every store that no artifact may
// reach: owned by the ordinary user of the suite, so that it is that
// user's file too.
type hostileCanary struct {
	dir, path string
	st        unix.Stat_t
}

func newHostileCanary(t *testing.T, dir string) *hostileCanary {
	t.Helper()
	c := &hostileCanary{dir: filepath.Join(dir, "canary")}
	c.path = filepath.Join(c.dir, "canary")
	os.Mkdir(c.dir, 0o755)
	if err := os.WriteFile(c.path, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		os.Chown(c.dir, 65534, 65534)
		os.Chown(c.path, 65534, 65534)
	}
	old := time.Unix(1600000000, 0)
	os.Chtimes(c.path, old, old)
	if err := unix.Lstat(c.path, &c.st); err != nil {
		t.Fatal(err)
	}
	return c
}

// untouched says how the canary changed, or "".
func (c *hostileCanary) untouched() string {
	var st unix.Stat_t
	if err := unix.Lstat(c.path, &st); err != nil {
		return fmt.Sprintf("the canary: %v", err)
	}
	data, _ := os.ReadFile(c.path)
	if st.Nlink != c.st.Nlink || st.Mtim != c.st.Mtim || st.Mode != c.st.Mode || string(data) != "secret\n" {
		return fmt.Sprintf("the canary changed: %d links (was %d), mtime %v (was %v), mode %o, content %q", st.Nlink, c.st.Nlink, st.Mtim, c.st.Mtim, st.Mode, data)
	}
	ents, _ := os.ReadDir(c.dir)
	if len(ents) != 1 {
		return fmt.Sprintf("the canary's directory holds %d entries", len(ents))
	}
	return ""
}

// hostileSet crafts every attack into dir (files to import) and the
// registry behind proxy (references to pull).
func hostileSet(t *testing.T, dir, registry, proxy string, can *hostileCanary) []hostileCase {
	t.Helper()
	e := putEnv(t, t.TempDir(), "6666dddd6666dddd", map[string]string{"pkg/mod.py": "x = 1\n"})
	config, err := os.ReadFile(e.File(env.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	repo := func(tops ...craftLayer) crafted { return craft(t, e.ID, config, tops...) }
	layer := func(hdrs ...any) craftLayer { return craftLayer{top: "repo", tar: hostileTarOf(t, hdrs...)} }
	gnu, pax := sparseTars()
	var many []any
	for i := range hostileMaxEntries + 1 {
		many = append(many, hreg(fmt.Sprintf("repo/f%d", i)), "")
	}
	larger := layer(hreg("repo/a"), "a", hreg("repo/big"), strings.Repeat("x", 1<<20))
	larger.tarSize = 5 * 1024 // the tar without the big file's data
	attacks := []struct {
		name string
		art  crafted
		want string
	}{
		{"hard link through its own symlink", repo(layer(hdir("repo/"), hsym("repo/s", can.dir), hlink("repo/h", "repo/s/canary"))),
			`layer repo/: entry "repo/h" (a hard link to repo/s/canary) goes through a symbolic link`},
		{"up and out", repo(layer(hreg("repo/../../../../../../escape"), "x")), `layer repo/: entry "repo/../../../../../../escape" lies outside the destination`},
		{"absolute path", repo(layer(hreg(can.dir+"/escape"), "x")), `layer repo/: entry "` + can.dir + `/escape" lies outside the destination`},
		{"symlink then a file through it", repo(layer(hsym("repo/s", can.dir), hreg("repo/s/canary"), "owned\n")),
			`layer repo/: entry "repo/s/canary" goes through a symbolic link`},
		{"hard link to an absolute path", repo(layer(hlink("repo/h", can.path))), `layer repo/: the target of hard link entry "repo/h", "` + can.path + `" lies outside the destination`},
		{"symlink loop", repo(layer(hsym("repo/a", "b"), hsym("repo/b", "a"), hreg("repo/a/x"), "x")), `layer repo/: entry "repo/a/x" goes through a symbolic link`},
		{"device node", repo(layer(&tar.Header{Name: "repo/mem", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 1})), `layer repo/: entry "repo/mem" is a device`},
		{"FIFO", repo(layer(&tar.Header{Name: "repo/fifo", Typeflag: tar.TypeFifo})), `layer repo/: entry "repo/fifo" is a FIFO`},
		{"whiteout", repo(layer(hreg("repo/.wh.pkg"), "")), `layer repo/: entry "repo/.wh.pkg" is an OCI whiteout`},
		{"whiteout aimed outside", repo(layer(hreg("repo/../../.wh.canary"), "")), `layer repo/: entry "repo/../../.wh.canary" lies outside the destination`},
		{"GNU sparse", repo(craftLayer{top: "repo", tar: gnu}), `layer repo/: entry "repo/sparse" is a sparse file (GNU)`},
		{"PAX sparse", repo(craftLayer{top: "repo", tar: pax}), `layer repo/: entry "repo/sparse" is a sparse file (PAX GNU.sparse.`},
		{"decompression bomb", repo(bomb()), `layer repo/: entry "repo/zeros" declares 268435456 bytes, past the ceiling of 50331648 bytes unpacked`},
		{"past the entry cap", repo(layer(many...)), fmt.Sprintf(`layer repo/: entry "repo/f%d": more than %d entries`, hostileMaxEntries, hostileMaxEntries)},
		{"nested past PATH_MAX", repo(layer(hreg("repo/"+strings.Repeat("deep/", 900)+"x"), "x")), `past PATH_MAX`},
		{"larger than its descriptor", repo(larger), `layer repo/: entry "repo/big" declares 1048576 bytes, more than the`},
	}
	var cases []hostileCase
	for i, a := range attacks {
		file := filepath.Join(dir, fmt.Sprintf("attack%d.tar", i))
		a.art.layout(t, file, nil, nil)
		ref := fmt.Sprintf("%s/hostile/a%d:t", registry, i)
		a.art.push(t, ref)
		cases = append(cases,
			hostileCase{Name: a.name + " (import)", File: file, Want: a.want},
			hostileCase{Name: a.name + " (pull)", Ref: fmt.Sprintf("%s/hostile/a%d:t", proxy, i), Want: a.want})
	}
	// What the registry or the file says of the artifact around the layers.
	good := repo(layer(hreg("repo/a"), "a"))
	lie := filepath.Join(dir, "lie.tar")
	good.layout(t, lie, nil, bytes.Replace(good.raw, []byte("2026-01-01"), []byte("2026-01-02"), 1))
	good.push(t, registry+"/hostile/lie:t")
	good.push(t, registry+"/hostile/redirect:t")
	good.push(t, registry+"/hostile/redirect-alibaba:t")
	var idx v1.IndexManifest
	idx.SchemaVersion, idx.MediaType = 2, types.OCIImageIndex
	h, _ := v1.NewHash(good.digest)
	for range 5000 {
		idx.Manifests = append(idx.Manifests, v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: int64(len(good.raw)), Digest: h})
	}
	idxData, _ := json.Marshal(idx)
	many5000 := filepath.Join(dir, "index.tar")
	good.layout(t, many5000, idxData, nil)
	// A blob that declares a TiB in a file of a few KiB.
	huge := filepath.Join(dir, "huge.tar")
	good.layout(t, huge, nil, nil)
	f, err := os.OpenFile(huge, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Truncate(fi.Size() - 1024) // the end marker, where the blob's header goes
	f.Seek(0, io.SeekEnd)
	tw := tar.NewWriter(f)
	tw.WriteHeader(&tar.Header{Name: blobName(blobcache.Digest([]byte("huge"))), Mode: 0o644, Size: 1 << 40, Typeflag: tar.TypeReg})
	tw.Write(make([]byte, 4096))
	f.Close() // cut there: the tar is not finished
	return append(cases,
		hostileCase{Name: "a blob declaring a TiB (import)", File: huge, Want: "declares 1099511627776 bytes; the blob cache"},
		hostileCase{Name: "a manifest whose digest lies (import)", File: lie, Want: "the bytes received hash to"},
		hostileCase{Name: "a manifest whose digest lies (pull)", Ref: proxy + "/hostile/lie@" + good.digest, Want: "does not match the digest asked for"},
		hostileCase{Name: "an index of thousands (import)", File: many5000, Want: "index.json lists 5000 manifests"},
		hostileCase{Name: "an index of thousands (pull)", Ref: proxy + "/hostile/index:t", Want: "is a application/vnd.oci.image.index.v1+json, not an OCI image manifest"},
		hostileCase{Name: "an index past 4 MiB (pull)", Ref: proxy + "/hostile/bigindex:t", Want: "more than 4194304 bytes"},
		// go-containerregistry refuses a redirect to a link-local literal
		// itself; cwm's guard, one to 100.100.100.200 and any address a
		// name resolves to (TestDialRefusesMetadata).
		hostileCase{Name: "a blob redirected to cloud metadata (pull)", Ref: proxy + "/hostile/redirect:t",
			Want: `the registry redirected to a private or link-local address: refused: Get "http://169.254.169.254/`},
		hostileCase{Name: "a blob redirected to Alibaba Cloud's metadata (pull)", Ref: proxy + "/hostile/redirect-alibaba:t",
			Want: "refused to fetch http://100.100.100.200/latest/meta-data/ram/security-credentials/: a link-local or cloud metadata address is never a registry's"},
	)
}

// bomb is a layer of one file of bombSize zero bytes, whose blob is
// some 256 KiB; made once.
var bomb = sync.OnceValue(func() craftLayer {
	var blob bytes.Buffer
	zw := gzip.NewWriter(&blob)
	h := blobcache.NewHash()
	tw := tar.NewWriter(io.MultiWriter(zw, h))
	tw.WriteHeader(&tar.Header{Name: "repo/zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: bombSize})
	zero := make([]byte, 1<<20)
	for range bombSize >> 20 {
		tw.Write(zero)
	}
	tw.Close()
	zw.Close()
	return craftLayer{top: "repo", gz: blob.Bytes(), diffID: h.Digest(), tarSize: h.N}
})

// runHostile takes c in with a fresh home under base: it returns "" if
// it was refused as it must be and left nothing behind, or what went
// wrong.
func runHostile(c hostileCase, home string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := env.NewStore(home)
	o := Options{Home: home, MaxUnpacked: hostileMaxUnpacked, MaxEntries: hostileMaxEntries}
	var err error
	if c.File != "" {
		_, err = Import(st, c.File, o)
	} else {
		_, err = Pull(ctx, st, c.Ref, o)
	}
	switch {
	case err == nil:
		return "accepted"
	case !strings.Contains(err.Error(), c.Want):
		return fmt.Sprintf("refused with %q, want %q in it", err, c.Want)
	}
	if all, _ := st.List(); len(all) > 0 {
		return fmt.Sprintf("the store holds %d environments", len(all))
	}
	left, _ := filepath.Glob(filepath.Join(st.Dir(), ".build-*"))
	tmp, _ := filepath.Glob(filepath.Join(home, "blobs", "sha256", ".tmp-*"))
	if len(left)+len(tmp) > 0 {
		return fmt.Sprintf("left behind: %v %v", left, tmp)
	}
	return ""
}

func TestHostileArtifacts(t *testing.T) {
	start := time.Now()
	reg := ocitest.Start(t, "", "")
	// Not t.TempDir: its parent is not open to other users.
	dir, err := os.MkdirTemp("", "cwm-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	can := newHostileCanary(t, dir)
	proxy := hostileProxy(t, reg.Host)
	cases := hostileSet(t, dir, reg.Host, proxy, can)
	t.Logf("%d attacks crafted in %.1fs", len(cases), time.Since(start).Seconds())
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if why := runHostile(c, t.TempDir()); why != "" {
				t.Error(why)
			}
			if why := can.untouched(); why != "" {
				t.Fatal(why)
			}
		})
	}
	t.Run("as an ordinary user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to switch to an unprivileged user (the cases above ran as this one)")
		}
		data, _ := json.Marshal(cases)
		file := filepath.Join(dir, "cases.json")
		os.WriteFile(file, data, 0o644)
		home := filepath.Join(dir, "home")
		os.Mkdir(home, 0o755)
		os.Chown(home, 65534, 65534)
		out := runChild(t, dir, []string{"ENVOCI_TEST_HOSTILE=" + file, "ENVOCI_TEST_HOME=" + home}, true)
		got := map[string]string{}
		for _, line := range strings.Split(out.stdout, "\n") {
			if n, rest, ok := strings.Cut(strings.TrimPrefix(line, "ROW "), "\t"); ok && strings.HasPrefix(line, "ROW ") {
				got[n] = rest
			}
		}
		for _, c := range cases {
			switch r, ok := got[c.Name]; {
			case !ok:
				t.Errorf("%s: no result from uid 65534\n%s", c.Name, out.stderr)
			case r != "ok":
				t.Errorf("%s as uid 65534: %s", c.Name, r)
			}
		}
		if why := can.untouched(); why != "" {
			t.Error(why)
		}
	})
	t.Logf("the suite took %.1fs", time.Since(start).Seconds())
}

// hostileChild is the ordinary user's side of TestHostileArtifacts: it
// takes in every case and prints "ROW name\tok" or "ROW name\twhy".
func hostileChild(file, base string) {
	data, err := os.ReadFile(file)
	var cases []hostileCase
	if err == nil {
		err = json.Unmarshal(data, &cases)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i, c := range cases {
		home := filepath.Join(base, fmt.Sprint(i))
		why := runHostile(c, home)
		if why == "" {
			why = "ok"
		}
		fmt.Printf("ROW %s\t%s\n", c.Name, why)
	}
	os.Exit(0)
}
