package envoci

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/registry"

	"cwm/internal/blobcache"
	"cwm/internal/env"
	"cwm/internal/envoci/ocitest"
	"cwm/internal/errkind"
	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
)

var testRT *sandbox.Runtime

func TestMain(m *testing.M) {
	if ref := os.Getenv("ENVOCI_TEST_PULL"); ref != "" {
		// The child of TestKilledPull: a pull, killed half way.
		home := os.Getenv("ENVOCI_TEST_HOME")
		_, err := Pull(context.Background(), env.NewStore(home), ref, Options{Home: home})
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	if file := os.Getenv("ENVOCI_TEST_HOSTILE"); file != "" {
		hostileChild(file, os.Getenv("ENVOCI_TEST_HOME"))
	}
	if file := os.Getenv("ENVOCI_TEST_BOUNDED"); file != "" {
		boundedChild(file)
	}
	if file := os.Getenv("ENVOCI_TEST_IMPORT"); file != "" {
		// The child of TestHugeManifest: an import, which says its peak
		// memory (its rusage would count the parent's, whose memory it
		// shared until exec).
		home := os.Getenv("ENVOCI_TEST_HOME")
		_, err := Import(env.NewStore(home), file, Options{Home: home})
		fmt.Fprintln(os.Stderr, err)
		status, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				fmt.Fprintln(os.Stderr, l)
			}
		}
		os.Exit(3)
	}
	sandboxtest.Main(m, "envoci", func(rt *sandbox.Runtime, _ string) { testRT = rt })
}

// proxy stands between cwm and a registry, counting the blob requests and
// spoiling blobs when told to.
type proxy struct {
	srv *httptest.Server
	// mode: "" passes, "flip" changes a byte of every blob sent, "cut"
	// breaks the connection half way through a blob, "stall" holds
	// blobs until the request ends, "down" answers 503.
	mode atomic.Value
	mu   sync.Mutex
	gets map[string]int // blob digests fetched
	puts int            // blob uploads begun
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	u, _ := url.Parse(target)
	p := &proxy{gets: map[string]int{}}
	p.mode.Store("")
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // what is sent is on the wire, as a registry's would be
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ModifyResponse = func(resp *http.Response) error {
		r := resp.Request
		isBlob := r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") && resp.StatusCode == http.StatusOK
		if !isBlob {
			return nil
		}
		p.mu.Lock()
		p.gets[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]++
		p.mu.Unlock()
		switch p.mode.Load().(string) {
		case "flip":
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body[len(body)/2] ^= 0xff
			resp.Body = io.NopCloser(strings.NewReader(string(body)))
		case "cut":
			resp.Body = &cutReader{r: resp.Body, left: resp.ContentLength / 2}
		case "stall":
			<-r.Context().Done()
			return r.Context().Err()
		case "half":
			resp.Body = &cutReader{r: resp.Body, left: resp.ContentLength / 2, hold: r.Context().Done()}
		}
		return nil
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.mode.Load().(string) == "down" {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/blobs/uploads/") {
			p.mu.Lock()
			p.puts++
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// host is the proxy's address, as a reference names it.
func (p *proxy) host() string { return strings.TrimPrefix(p.srv.URL, "http://") }

func (p *proxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets, p.puts = map[string]int{}, 0
}

func (p *proxy) fetched() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.gets {
		n += c
	}
	return n
}

// cutReader gives left bytes, then fails as a broken connection does, or
// with hold, waits for it to be closed.
type cutReader struct {
	r    io.ReadCloser
	left int64
	hold <-chan struct{}
}

func (c *cutReader) Read(b []byte) (int, error) {
	if c.left <= 0 && c.hold != nil {
		<-c.hold
	}
	if c.left <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	return n, err
}
func (c *cutReader) Close() error { return c.r.Close() }

// inProcess is go-containerregistry's registry on 127.0.0.1: the fast
// case.
func inProcess(t *testing.T) string {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return srv.URL
}

// twoEnvs makes two environments that share their virtual environment.
func twoEnvs(t *testing.T, home string) (*env.Env, *env.Env) {
	e1 := putEnv(t, home, "1111aaaa1111aaaa", map[string]string{"pkg/mod.py": "def f():\n    return 1\n"})
	e2 := putEnv(t, home, "2222bbbb2222bbbb", map[string]string{"pkg/mod.py": "def f():\n    return 2\n"})
	return e1, e2
}

// storeIsClean checks that nothing of a failed pull is in the store or
// the blob cache: no environment, no stage, no temporary blob.
func storeIsClean(t *testing.T, home string) {
	t.Helper()
	st := env.NewStore(home)
	if all, _ := st.List(); len(all) > 0 {
		t.Errorf("the store has %d environments after a failed pull", len(all))
	}
	left, _ := filepath.Glob(filepath.Join(st.Dir(), ".build-*"))
	tmp, _ := filepath.Glob(filepath.Join(home, "blobs", "sha256", ".tmp-*"))
	if len(left)+len(tmp) > 0 {
		t.Errorf("a failed pull left %v %v", left, tmp)
	}
}

func TestPushPullInProcess(t *testing.T) {
	pushPull(t, inProcess(t), "")
}

// TestPushPullDistribution runs the same against the CNCF Distribution
// registry with htpasswd authentication, and checks that wrong or absent
// credentials are refused with a message that says so.
func TestPushPullDistribution(t *testing.T) {
	r := ocitest.Start(t, "alice", "s3cret")
	pushPull(t, "http://"+r.Host, "alice:s3cret")

	e := putEnv(t, t.TempDir(), "3333cccc3333cccc", map[string]string{"pkg/mod.py": "x = 1\n"})
	for _, c := range []struct{ name, config string }{
		{"no credentials", `{}`},
		{"a wrong password", `{"auths": {"` + r.Host + `": {"auth": "YWxpY2U6d3Jvbmc="}}}`},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(c.config), 0o600)
		t.Setenv("DOCKER_CONFIG", dir)
		_, err := Push(context.Background(), e, r.Host+"/envs/x", Options{Home: t.TempDir()})
		if err == nil || errkind.Of(err) != errkind.Unavailable || !strings.Contains(err.Error(), "refused access") {
			t.Errorf("push with %s = %v (kind %v), want the registry's refusal", c.name, err, errkind.Of(err))
		}
		_, err = Pull(context.Background(), env.NewStore(t.TempDir()), r.Host+"/envs/x:latest", Options{Home: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "refused access") {
			t.Errorf("pull with %s = %v, want the registry's refusal", c.name, err)
		}
	}
}

// pushPull pushes two environments sharing a layer and pulls them on
// another "machine" (another home), through a counting proxy.
func pushPull(t *testing.T, registryURL, login string) {
	ctx := context.Background()
	p := newProxy(t, registryURL)
	var o Options
	if login != "" {
		// The credentials of the proxy's address, which cwm sees.
		dir := t.TempDir()
		auth := base64.StdEncoding.EncodeToString([]byte(login))
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths": {"`+p.host()+`": {"auth": "`+auth+`"}}}`), 0o600)
		t.Setenv("DOCKER_CONFIG", dir)
	}
	repo := p.host() + "/cwm/envs"
	src := t.TempDir()
	e1, e2 := twoEnvs(t, src)
	o.Home = src
	o.WithBuildLog = true

	res, err := Push(ctx, e1, repo, o)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if res.Blobs != 6 || res.Uploaded != 6 || !strings.HasPrefix(res.Ref, repo+":"+e1.ID+"@sha256:") {
		t.Errorf("Push = %+v, want 6 blobs uploaded (2 layers, env.json, baseline, coverage, log), tagged with the id", res)
	}
	again, err := Push(ctx, e1, repo+":v1", o)
	if err != nil || again.Uploaded != 0 || again.Digest != res.Digest {
		t.Errorf("Push again = %+v, %v; want nothing uploaded, the same digest", again, err)
	}
	res2, err := Push(ctx, e2, repo, o)
	if err != nil {
		t.Fatal(err)
	}
	// The second environment shares its venv layer, baseline, coverage
	// map and log.
	if res2.Uploaded != 2 {
		t.Errorf("Push of an environment sharing 4 blobs uploaded %d of %d, want 2 (its repo layer and env.json)", res2.Uploaded, res2.Blobs)
	}

	// Another machine.
	dst := t.TempDir()
	st := env.NewStore(dst)
	o.Home = dst
	p.reset()
	pr, err := Pull(ctx, st, repo+":"+e1.ID, o)
	if err != nil {
		t.Fatalf("Pull: %v", err)
	}
	if pr.Present || pr.Fetched != 6 || p.fetched() != 6 || pr.Env.ID != e1.ID {
		t.Errorf("Pull = %+v (%d blob requests), want 6 blobs fetched", pr, p.fetched())
	}
	if diff := cmp.Diff(e1.Baseline, pr.Env.Baseline); diff != "" || len(pr.Env.Baseline) != 1 {
		t.Errorf("pulled baseline (-pushed +pulled):\n%s", diff)
	}
	if o := pr.Env.Origin(); o == nil || o.Kind != env.OriginPulled || o.From != repo+":"+e1.ID || o.Manifest != res.Digest {
		t.Errorf("pulled origin = %+v, want pulled from %s:%s, manifest %s", o, repo, e1.ID, res.Digest)
	}
	if diff := cmp.Diff(snapshot(t, e1.LayerDir()), snapshot(t, pr.Env.LayerDir())); diff != "" {
		t.Errorf("pulled layer (-pushed +pulled):\n%s", diff)
	}
	for _, f := range []string{env.CoverageFile, env.BuildLog, env.OriginFile, env.BaselineFile} {
		if _, err := os.Stat(pr.Env.File(f)); err != nil {
			t.Errorf("pulled environment lacks %s: %v", f, err)
		}
	}
	// A sandbox on the pulled environment sees its layer.
	sb, err := env.NewSandboxes(testRT).Open(ctx, pr.Env)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sb.Exec(ctx, sandbox.Cmd{Shell: "cat pkg/mod.py && readlink /venv/bin/python3 && stat -c %U .git"})
	sb.Close()
	if err != nil || string(out.Stdout) != "def f():\n    return 1\npython\nroot\n" {
		t.Errorf("in a sandbox on the pulled environment: %q %q, %v", out.Stdout, out.Stderr, err)
	}

	p.reset()
	pr, err = Pull(ctx, st, repo+":"+e1.ID, o)
	if err != nil || !pr.Present || p.fetched() != 0 {
		t.Errorf("Pull again = %+v, %v (%d blob requests); want it present, nothing fetched", pr, err, p.fetched())
	}
	pr2, err := Pull(ctx, st, repo+":"+e2.ID, o)
	if err != nil || pr2.Fetched != 2 || p.fetched() != 2 {
		t.Errorf("Pull of the second environment = %+v, %v (%d blob requests); want 2 fetched, the shared 3 from the cache", pr2, err, p.fetched())
	}
	// By digest, with the registry down: the cache knows the manifest and
	// the store the environment.
	p.mode.Store("down")
	pr, err = Pull(ctx, st, repo+"@"+res.Digest, o)
	if err != nil || !pr.Present {
		t.Errorf("Pull by digest with the registry down = %+v, %v; want it present", pr, err)
	}
	p.mode.Store("")
	if _, err := Pull(ctx, st, repo+":nope", o); errkind.Of(err) != errkind.NotFound {
		t.Errorf("Pull of an unknown tag = %v (kind %v), want not found", err, errkind.Of(err))
	}
	if _, err := Pull(ctx, st, repo, o); errkind.Of(err) != errkind.Usage {
		t.Errorf("Pull without a tag = %v, want a usage error", err)
	}
}

// TestPullRefusesWhatIsNotSent checks a blob whose bytes do not match its
// digest, a pull broken off half way and a cancelled one: each is an
// error saying what happened, and leaves nothing in the store or cache;
// the next pull works.
func TestPullRefusesWhatIsNotSent(t *testing.T) {
	ctx := context.Background()
	p := newProxy(t, inProcess(t))
	src := t.TempDir()
	e1, _ := twoEnvs(t, src)
	ref := p.host() + "/envs:one"
	if _, err := Push(ctx, e1, ref, Options{Home: src}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode string
		kind errkind.Kind
		want string
	}{
		{"flip", errkind.Input, "digest"},
		{"cut", errkind.Unavailable, "broke off"},
		{"stall", errkind.Canceled, "context deadline exceeded"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			dst := t.TempDir()
			p.mode.Store(c.mode)
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			_, err := Pull(ctx, env.NewStore(dst), ref, Options{Home: dst})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Pull through %q = %v, want an error containing %q", c.mode, err, c.want)
			}
			if c.kind != errkind.Canceled && errkind.Of(err) != c.kind {
				t.Errorf("Pull through %q: kind %v, want %v", c.mode, errkind.Of(err), c.kind)
			}
			storeIsClean(t, dst)
			p.mode.Store("")
			pr, err := Pull(context.Background(), env.NewStore(dst), ref, Options{Home: dst})
			if err != nil || pr.Env == nil {
				t.Fatalf("Pull after %q = %+v, %v", c.mode, pr, err)
			}
		})
	}
}

// TestKilledPull kills (SIGKILL) a pull whose blob is half received: the
// store has no environment, the cache no blob under a digest, and the
// next pull works.
func TestKilledPull(t *testing.T) {
	p := newProxy(t, inProcess(t))
	src := t.TempDir()
	e1, _ := twoEnvs(t, src)
	ref := p.host() + "/envs:one"
	if _, err := Push(context.Background(), e1, ref, Options{Home: src}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	p.mode.Store("half")
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "ENVOCI_TEST_PULL="+ref, "ENVOCI_TEST_HOME="+dst)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dst, "blobs", "sha256", ".tmp-*")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m, _ := filepath.Glob(tmp); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			child.Wait()
			t.Fatal("the child wrote no blob within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // half a blob is in
	child.Process.Kill()
	child.Wait()
	p.mode.Store("")
	st := env.NewStore(dst)
	if all, _ := st.List(); len(all) > 0 {
		t.Errorf("a killed pull left %d environments", len(all))
	}
	blobs, _ := filepath.Glob(filepath.Join(dst, "blobs", "sha256", "[0-9a-f]*"))
	for _, b := range blobs {
		data, _ := os.ReadFile(b)
		if got := blobcache.Digest(data); got != "sha256:"+filepath.Base(b) {
			t.Errorf("a killed pull left blob %s holding %s", filepath.Base(b), got)
		}
	}
	pr, err := Pull(context.Background(), st, ref, Options{Home: dst})
	if err != nil || pr.Env == nil {
		t.Fatalf("Pull after a killed one = %+v, %v", pr, err)
	}
}

func TestExportImport(t *testing.T) {
	src := t.TempDir()
	e1, _ := twoEnvs(t, src)
	file := filepath.Join(t.TempDir(), "e1.tar")
	ex, err := Export(e1, file, src)
	if err != nil || ex.Blobs != 5 { // 2 layers, env.json, baseline, coverage: the build log stays
		t.Fatalf("Export = %+v, %v", ex, err)
	}
	dst := t.TempDir()
	st := env.NewStore(dst)
	res, err := Import(st, file, Options{Home: dst})
	if err != nil || len(res.Envs) != 1 || res.Present != 0 {
		t.Fatalf("Import = %+v, %v", res, err)
	}
	if diff := cmp.Diff(snapshot(t, e1.LayerDir()), snapshot(t, res.Envs[0].LayerDir())); diff != "" {
		t.Errorf("imported layer (-exported +imported):\n%s", diff)
	}
	if res, err := Import(st, file, Options{Home: dst}); err != nil || res.Present != 1 {
		t.Errorf("Import again = %+v, %v; want it present", res, err)
	}
	data, _ := os.ReadFile(file)
	for _, c := range []struct {
		name  string
		spoil func([]byte) []byte
		want  string
	}{
		{"cut short", func(b []byte) []byte { return b[:len(b)*2/3] }, ""},
		{"a byte changed", func(b []byte) []byte {
			c := append([]byte(nil), b...)
			c[len(c)-2048] ^= 0xff
			return c
		}, ""},
	} {
		bad := filepath.Join(t.TempDir(), "bad.tar")
		os.WriteFile(bad, c.spoil(data), 0o644)
		home := t.TempDir()
		_, err := Import(env.NewStore(home), bad, Options{Home: home})
		if err == nil || errkind.Of(err) != errkind.Input {
			t.Errorf("Import of a file %s = %v (kind %v), want an input error", c.name, err, errkind.Of(err))
		}
		storeIsClean(t, home)
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	host := strings.TrimPrefix(inProcess(t), "http://")
	src := t.TempDir()
	e1, e2 := twoEnvs(t, src)
	if _, err := Push(ctx, e1, host+"/envs", Options{Home: src}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "e2.tar")
	if _, err := Export(e2, file, src); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	st := env.NewStore(dst)
	var said []string
	note := func(what string, _ float64) { said = append(said, what) }
	for _, c := range []struct{ ref, id string }{
		{host + "/envs:" + e1.ID, e1.ID}, {file, e2.ID}, {host + "/envs:" + e1.ID, e1.ID}, {e2.ID[:6], e2.ID}, {file, e2.ID},
	} {
		e, err := Resolve(ctx, st, c.ref, Options{Home: dst}, note)
		if err != nil || e.ID != c.id {
			t.Errorf("Resolve(%q) = %v, %v; want %s", c.ref, e, err, c.id)
		}
	}
	want := []string{"pulled " + e1.ID + " from " + host + "/envs:" + e1.ID, "imported " + e2.ID + " from " + file}
	if diff := cmp.Diff(want, said); diff != "" {
		t.Errorf("what Resolve said (-want +got):\n%s", diff)
	}
	if _, err := Resolve(ctx, st, "nothing", Options{Home: dst}, nil); !errors.Is(err, err) || errkind.Of(err) != errkind.NotFound {
		t.Errorf("Resolve(nothing) = %v, want not found", err)
	}
}
