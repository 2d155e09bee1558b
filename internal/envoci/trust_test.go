package envoci

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"cwm/internal/blobcache"
	"cwm/internal/env"
	"cwm/internal/layertar"
	"cwm/internal/sandbox"
)

// rewritten is an environment's artifact taken apart to be rewritten as an
// attacker would: a real export, its env.json edited, layers added, the
// digests fixed.
type rewritten struct {
	m     v1.Manifest
	blobs map[string][]byte
	// configFirst writes the config blob before the manifest in the file
	// (an export writes the manifest first, which lets an import refuse
	// before it reads the rest).
	configFirst bool
}

// rewrite exports e (from home's store) and takes the file apart.
func rewrite(t *testing.T, e *env.Env, home string) *rewritten {
	t.Helper()
	file := filepath.Join(t.TempDir(), "e.tar")
	if _, err := Export(e, file, home); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &rewritten{blobs: map[string][]byte{}}
	var index v1.IndexManifest
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		switch {
		case hdr.Name == "index.json":
			json.Unmarshal(data, &index)
		case strings.HasPrefix(hdr.Name, "blobs/sha256/"):
			c.blobs["sha256:"+strings.TrimPrefix(hdr.Name, "blobs/sha256/")] = data
		}
	}
	if err := json.Unmarshal(c.blobs[index.Manifests[0].Digest.String()], &c.m); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *rewritten) put(data []byte) v1.Hash {
	d := blobcache.Digest(data)
	c.blobs[d] = data
	h, _ := v1.NewHash(d)
	return h
}

// editConfig rewrites env.json: edit gets it as a map.
func (c *rewritten) editConfig(t *testing.T, edit func(m map[string]any)) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.blobs[c.m.Config.Digest.String()], &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, _ := json.Marshal(m)
	c.setConfig(data)
}

func (c *rewritten) setConfig(data []byte) {
	c.m.Config.Digest, c.m.Config.Size = c.put(data), int64(len(data))
}

// addDirLayer adds a layer holding the empty top-level directory top/.
func (c *rewritten) addDirLayer(t *testing.T, top string) {
	t.Helper()
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, top), 0o755)
	var buf bytes.Buffer
	p, err := layertar.Pack(&buf, root, top)
	if err != nil {
		t.Fatal(err)
	}
	h := c.put(buf.Bytes())
	c.m.Layers = append(c.m.Layers, v1.Descriptor{MediaType: types.MediaType(LayerMediaType), Size: p.Size, Digest: h,
		Annotations: map[string]string{annPath: top, annDiffID: p.DiffID, annTarSize: fmt.Sprint(p.TarSize)}})
}

func (c *rewritten) manifest(t *testing.T) []byte {
	t.Helper()
	raw, err := json.Marshal(c.m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// file writes the artifact as an exported file.
func (c *rewritten) file(t *testing.T) string {
	t.Helper()
	raw := c.manifest(t)
	md := c.put(raw)
	index, _ := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex,
		Manifests: []v1.Descriptor{{MediaType: types.OCIManifestSchema1, Size: int64(len(raw)), Digest: md}}})
	file := filepath.Join(t.TempDir(), "rewritten.tar")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	put := func(name string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	put("index.json", index)
	order := []string{md.String(), c.m.Config.Digest.String()}
	if c.configFirst {
		order[0], order[1] = order[1], order[0]
	}
	for _, d := range c.m.Layers {
		order = append(order, d.Digest.String())
	}
	for _, d := range order {
		put(blobName(d), c.blobs[d])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return file
}

// push stores the artifact in the registry at host as repo:tag, blob by
// blob, and returns the reference.
func (c *rewritten) push(t *testing.T, host string) string {
	t.Helper()
	ref, err := name.NewTag(host+"/rewritten/env:x", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, d := range append([]v1.Descriptor{c.m.Config}, c.m.Layers...) {
		if err := remote.WriteLayer(ref.Context(), static.NewLayer(c.blobs[d.Digest.String()], d.MediaType), remote.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
	}
	if err := remote.Put(ref, rawManifest(c.manifest(t)), remote.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// hostileEnv is what the rewritten artifacts start from: a real
// environment, in a store of its own.
func hostileEnv(t *testing.T) (*env.Env, string) {
	src := t.TempDir()
	return putEnv(t, src, "4444dddd4444dddd", map[string]string{"pkg/mod.py": "x = 1\n"}), src
}

// TestHostileManifest: rewritten env.json files, through env import and
// env pull from a local registry. An artifact choosing the sandbox's root
// is refused with a message that says what to do, and nothing is left in
// the store; one asking for absurd limits is installed, and its sandboxes
// get the host's defaults (the disk limit seen from inside); an operator's
// --base is used whatever env.json says.
func TestHostileManifest(t *testing.T) {
	e, src := hostileEnv(t)
	reg := strings.TrimPrefix(inProcess(t), "http://")
	rootBase := func(t *testing.T) *rewritten {
		c := rewrite(t, e, src)
		c.editConfig(t, func(m map[string]any) { m["base"] = "/etc" })
		for _, top := range []string{"proc", "dev", "tmp"} {
			c.addDirLayer(t, top)
		}
		return c
	}
	absurd := func(t *testing.T) *rewritten {
		c := rewrite(t, e, src)
		c.editConfig(t, func(m map[string]any) {
			m["limits"] = map[string]any{"timeout_seconds": 3 * 365 * 24 * 3600, "memory_bytes": int64(1) << 50,
				"disk_bytes": int64(1) << 40, "pids": 1 << 30, "output_bytes": int64(1) << 50}
		})
		return c
	}
	type install func(t *testing.T, c *rewritten, home string, g env.Grant) (*env.Env, error)
	ways := map[string]install{
		"import": func(t *testing.T, c *rewritten, home string, g env.Grant) (*env.Env, error) {
			res, err := Import(env.NewStore(home), c.file(t), Options{Home: home, Grant: g})
			if err != nil {
				return nil, err
			}
			return res.Envs[0], nil
		},
		"pull": func(t *testing.T, c *rewritten, home string, g env.Grant) (*env.Env, error) {
			res, err := Pull(context.Background(), env.NewStore(home), c.push(t, reg), Options{Home: home, Grant: g})
			if err != nil {
				return nil, err
			}
			return res.Env, nil
		},
	}
	for way, put := range ways {
		t.Run(way+"/base /etc", func(t *testing.T) {
			home := t.TempDir()
			_, err := put(t, rootBase(t), home, env.Grant{})
			if err == nil || !strings.Contains(err.Error(), "was built on base /etc: an artifact does not choose the sandbox's root; name the base on this machine with --base DIR") {
				t.Fatalf("install = %v, want the base refused", err)
			}
			storeIsClean(t, home)
		})
		t.Run(way+"/base /etc, the operator's --base host", func(t *testing.T) {
			home := t.TempDir()
			got, err := put(t, rootBase(t), home, env.Grant{Base: "host"})
			if err != nil {
				t.Fatal(err)
			}
			sb, err := env.NewSandboxes(testRT).Open(context.Background(), got)
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			r, err := sb.Exec(context.Background(), sandbox.Cmd{Shell: "test -x /usr/bin/python3 && cat pkg/mod.py"})
			if err != nil || string(r.Stdout) != "x = 1\n" || got.Base != "host" {
				t.Errorf("on the granted base: %q, %v, base %q; want the layer over the host's /usr", r.Stdout, err, got.Base)
			}
		})
		t.Run(way+"/absurd limits", func(t *testing.T) {
			home := t.TempDir()
			got, err := put(t, absurd(t), home, env.Grant{})
			if err != nil {
				t.Fatal(err)
			}
			d := sandbox.DefaultLimits
			want := env.RunLimits{Timeout: d.Timeout, Memory: d.Memory, Pids: d.Pids, Output: d.Output, Disk: d.Disk}
			if l := got.SandboxLimits(); l != want {
				t.Errorf("SandboxLimits = %+v, want the host's defaults %+v", l, want)
			}
			checkDisk(t, got, d.Disk)
		})
	}
}

// checkDisk opens a sandbox on e and checks the size of the file system
// it writes to (its upper layer's tmpfs, when the kernel has one).
func checkDisk(t *testing.T, e *env.Env, want int64) {
	t.Helper()
	sb, err := env.NewSandboxes(testRT).Open(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	r, err := sb.Exec(context.Background(), sandbox.Cmd{Shell: "stat -f -c '%b %S' /tmp"})
	if err != nil {
		t.Fatal(err)
	}
	var blocks, size int64
	fmt.Sscan(string(r.Stdout), &blocks, &size)
	if got := blocks * size; got > want {
		t.Errorf("a sandbox's writable file system is %d bytes, want at most %d", got, want)
	}
}

// TestHostileStore: a store that already holds foreign manifests (pulled
// before this machine granted bases and limits, or copied in): a base
// env.json chose is refused when a sandbox starts, with a message that
// says what to do, and doing it works; absurd limits are clamped.
func TestHostileStore(t *testing.T) {
	home := t.TempDir()
	e := putEnv(t, home, "5555eeee5555eeee", map[string]string{"pkg/mod.py": "x = 1\n"})
	old, _ := json.Marshal(map[string]string{"manifest": "sha256:" + strings.Repeat("0", 64), "from": "reg.example/envs/x:1"})
	os.WriteFile(e.File(env.OriginFile), old, 0o644)
	rewrite := func(edit func(m map[string]any)) *env.Env {
		data, _ := os.ReadFile(e.File(env.ManifestFile))
		var m map[string]any
		json.Unmarshal(data, &m)
		edit(m)
		data, _ = json.Marshal(m)
		os.WriteFile(e.File(env.ManifestFile), data, 0o644)
		got, err := env.NewStore(home).Resolve(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	hostile := rewrite(func(m map[string]any) { m["base"] = "/etc" })
	_, err := env.NewSandboxes(testRT).Open(context.Background(), hostile)
	if err == nil || !strings.Contains(err.Error(), "names base /etc, which this machine did not grant (it grants the host's)") ||
		!strings.Contains(err.Error(), "pulled or imported from reg.example/envs/x:1") {
		t.Errorf("Open on a stored foreign base = %v, want it refused", err)
	}
	// What the message says to do: import it again, naming the base.
	file := filepath.Join(t.TempDir(), "e.tar")
	if _, err := Export(hostile, file, home); err != nil {
		t.Fatal(err)
	}
	res, err := Import(env.NewStore(home), file, Options{Home: home, Grant: env.Grant{Base: "host"}})
	if err != nil || res.Present != 1 {
		t.Fatalf("ImportWith --base host of the stored environment = %+v, %v; want it present, granted", res, err)
	}
	sb, err := env.NewSandboxes(testRT).Open(context.Background(), res.Envs[0])
	if err != nil {
		t.Fatalf("Open after the operator named the base: %v", err)
	}
	sb.Close()
	absurd := rewrite(func(m map[string]any) {
		m["base"] = "host"
		m["limits"] = map[string]any{"timeout_seconds": 1e8, "memory_bytes": int64(1) << 50, "disk_bytes": int64(1) << 40}
	})
	if l := absurd.SandboxLimits(); l.Memory != sandbox.DefaultLimits.Memory || l.Disk != sandbox.DefaultLimits.Disk || l.Timeout != sandbox.DefaultLimits.Timeout {
		t.Errorf("SandboxLimits of a stored foreign manifest = %+v, want the defaults", l)
	}
	checkDisk(t, absurd, sandbox.DefaultLimits.Disk)
}

// TestHugeManifest: an env.json well past 1 MiB is refused with a clear
// error: a pull before it fetches it, an import (run as a child process,
// the config blob placed before the manifest so that it is read) with
// its peak memory (VmHWM) far below the blob's size; nothing is left in
// the store, nor in the blob cache.
func TestHugeManifest(t *testing.T) {
	e, src := hostileEnv(t)
	huge := func(size int) *rewritten {
		c := rewrite(t, e, src)
		config := c.blobs[c.m.Config.Digest.String()]
		data := make([]byte, 0, len(config)+size+16)
		data = append(data, `{"reason":"`...)
		data = append(data, bytes.Repeat([]byte("x"), size)...)
		data = append(append(data, `",`...), config[1:]...)
		c.setConfig(data)
		return c
	}
	t.Run("pull", func(t *testing.T) {
		p := newProxy(t, inProcess(t))
		c := huge(2 << 20)
		ref := c.push(t, p.host())
		p.reset()
		home := t.TempDir()
		_, err := Pull(context.Background(), env.NewStore(home), ref, Options{Home: home})
		if err == nil || !strings.Contains(err.Error(), "its env.json (config blob) is 2097") || !strings.Contains(err.Error(), "past the 1 MiB a manifest may have: not fetched") {
			t.Errorf("Pull = %v, want the config refused", err)
		}
		if p.fetched() != 0 {
			t.Errorf("%d blobs fetched, want none", p.fetched())
		}
		storeIsClean(t, home)
	})
	t.Run("import", func(t *testing.T) {
		c := huge(200 << 20)
		c.configFirst = true
		file := c.file(t)
		home := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "ENVOCI_TEST_IMPORT="+file, "ENVOCI_TEST_HOME="+home)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), "past the 1 MiB a manifest may have") {
			t.Errorf("import of a 200 MiB env.json: %s, want it refused", out)
		}
		var kb int64
		if i := strings.Index(string(out), "VmHWM:"); i < 0 {
			t.Fatalf("the import's child did not say its peak memory: %s", out)
		} else {
			fmt.Sscanf(string(out[i+len("VmHWM:"):]), "%d", &kb)
		}
		rss := kb << 10
		if rss == 0 || rss > 256<<20 {
			t.Errorf("import of a 200 MiB env.json peaked at %d MiB of memory, want under 256", rss>>20)
		}
		t.Logf("import of a 200 MiB env.json: refused, peak memory %d MiB", rss>>20)
		storeIsClean(t, home)
		cached, _ := filepath.Glob(filepath.Join(home, "blobs", "sha256", "*"))
		if len(cached) > 0 {
			t.Errorf("a refused import left %d blobs in the cache", len(cached))
		}
	})
}

// TestVersion2Artifact: an artifact of cwm before the baseline moved out
// of env.json still imports, its baseline kept.
func TestVersion2Artifact(t *testing.T) {
	e, src := hostileEnv(t)
	c := rewrite(t, e, src)
	c.editConfig(t, func(m map[string]any) {
		m["version"] = 2
		m["baseline"] = []map[string]any{{"id": "t::old", "status": "pass", "outcomes": []string{"pass"}}}
	})
	var layers []v1.Descriptor
	for _, l := range c.m.Layers {
		if string(l.MediaType) != BaselineMediaType {
			layers = append(layers, l)
		}
	}
	c.m.Layers = layers
	home := t.TempDir()
	res, err := Import(env.NewStore(home), c.file(t), Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Envs[0]
	if len(got.Baseline) != 1 || got.Baseline[0].ID != "t::old" || got.Version != env.ManifestVersion {
		t.Errorf("imported version 2: version %d, baseline %+v; want version %d and its test", got.Version, got.Baseline, env.ManifestVersion)
	}
	if o := got.Origin(); o == nil || o.Kind != env.OriginImported || o.FileDigest == "" {
		t.Errorf("origin = %+v, want imported with the file's digest", o)
	}
}
