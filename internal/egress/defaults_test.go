package egress

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pageServer is an index whose page for pip lists files on other hosts,
// in the JSON form or, without the JSON Accept, in HTML. It refuses
// requests without the credentials user:tok.
func pageServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /simple/pip/", func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if strings.Contains(r.Header.Get("Accept"), "json") {
			w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
			w.Write([]byte(`{"meta":{"api-version":"1.1"},"name":"pip","files":[
				{"filename":"pip-1.whl","url":"https://files.example.test/p/pip-1.whl"},
				{"filename":"pip-2.whl","url":"../../local/pip-2.whl"},
				{"filename":"pip-3.whl","url":"http://mirror.example.test:8081/pip-3.whl"}]}`))
			return
		}
		w.Write([]byte(`<a href="https://other.example.test/pip-1.whl">pip-1.whl</a>`))
	})
	return serve(t, mux)
}

func TestHostPolicy(t *testing.T) {
	idx := pageServer(t)
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The other indexes are the same server, which has no page for them
	// (names would be looked up in DNS).
	write("etc/pip.conf", "[global]\nextra-index-url =\n    http://"+idx+"/extra/simple\n    http://"+idx+"/extra2/simple\ntimeout = 3\n")
	write("home/.config/uv/uv.toml", "[[index]]\nurl = \"http://"+idx+"/uv/simple\"\n")
	write("etc/apt/sources.list", "# deb http://old.example.test/debian bookworm main\ndeb [arch=amd64 signed-by=/x] http://deb.example.test/debian bookworm main\n")
	write("etc/apt/sources.list.d/a.sources", "Types: deb\nURIs: https://sec.example.test/debian-security\nSuites: bookworm\n\nTypes: deb\nEnabled: no\nURIs: http://off.example.test/d\n")
	write("etc/apt/sources.list.d/b.list.disabled", "deb http://disabled.example.test/d x main\n")
	env := map[string]string{"PIP_INDEX_URL": "http://user:tok@" + idx + "/simple"}
	h := host{getenv: func(k string) string { return env[k] }, home: dir + "/home", etc: dir + "/etc"}
	p, err := h.policy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ip := strings.Split(idx, ":")
	want := []Host{
		{Name: ip[0], Ports: []int{atoi(ip[1])}, Literal: true, From: "PIP_INDEX_URL"},
		{Name: "mirror.example.test", Ports: []int{8081}, From: "files of http://" + idx + "/simple"},
		{Name: "files.example.test", From: "files of http://" + idx + "/simple"},
		{Name: "deb.example.test", Apt: true, From: dir + "/etc/apt/sources.list"},
		{Name: "sec.example.test", Apt: true, From: dir + "/etc/apt/sources.list.d/a.sources"},
	}
	if diff := cmp.Diff(want, p.Hosts); diff != "" {
		t.Errorf("hosts (-want +got):\n%s\nfound: %q", diff, p.Found)
	}
	if p.IndexURL != "http://"+idx+"/simple" {
		t.Errorf("IndexURL = %q, want it without credentials", p.IndexURL)
	}
	if diff := cmp.Diff([]string{"http://" + idx + "/extra/simple", "http://" + idx + "/extra2/simple", "http://" + idx + "/uv/simple"}, p.ExtraIndexURLs); diff != "" {
		t.Errorf("ExtraIndexURLs (-want +got):\n%s", diff)
	}
	all := strings.Join(p.Found, "\n")
	if !strings.Contains(all, "dropped the credentials of the index http://"+idx+"/simple from PIP_INDEX_URL") || strings.Contains(all, "tok") {
		t.Errorf("Found = %q, want the dropped credentials named and never shown", p.Found)
	}

	// Without python3 and without any index configured, the refusal says
	// what to set.
	h = host{getenv: func(string) string { return "" }, etc: t.TempDir()}
	if _, err := h.policy(context.Background()); err == nil || !strings.Contains(err.Error(), "PIP_INDEX_URL") {
		t.Errorf("policy without any index = %v, want an error naming PIP_INDEX_URL", err)
	}
}

// TestPipConfigList reads the index from the host's pip itself (pip
// config list, with PIP_CONFIG_FILE), and pip's default when nothing is
// configured.
func TestPipConfigList(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	conf := filepath.Join(t.TempDir(), "pip.conf")
	os.WriteFile(conf, []byte("[install]\nindex-url = https://conf.example.test/simple\n"), 0o644)
	t.Setenv("PIP_CONFIG_FILE", conf)
	h := host{getenv: func(string) string { return "" }, etc: t.TempDir(), python: "/usr/bin/python3"}
	main, _ := h.pipConfig(context.Background())
	if len(main) != 1 || main[0].url != "https://conf.example.test/simple" {
		t.Errorf("pipConfig() = %v, want the index of PIP_CONFIG_FILE", main)
	}
	u, err := h.pipDefault(context.Background())
	if err != nil || !strings.HasPrefix(u, "https://") {
		t.Errorf("pipDefault() = %q, %v; want pip's own https index", u, err)
	}
}

// TestCABundle finds the bundle the host's pip verifies with: PIP_CERT
// first, then pip's cert setting (through pip config list), then
// SSL_CERT_FILE; none when the host names none.
func TestCABundle(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	h := host{getenv: env(map[string]string{"PIP_CERT": "/a.pem", "SSL_CERT_FILE": "/b.pem"}), etc: t.TempDir()}
	if p, from := h.caBundle(context.Background()); p != "/a.pem" || from != "PIP_CERT" {
		t.Errorf("caBundle() = %q, %q; want PIP_CERT's", p, from)
	}
	h = host{getenv: env(map[string]string{"SSL_CERT_FILE": "/b.pem"}), etc: t.TempDir()}
	if p, _ := h.caBundle(context.Background()); p != "/b.pem" {
		t.Errorf("caBundle() = %q, want SSL_CERT_FILE's", p)
	}
	h = host{getenv: env(nil), etc: t.TempDir()}
	if p, _ := h.caBundle(context.Background()); p != "" {
		t.Errorf("caBundle() = %q with nothing configured, want none", p)
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		return
	}
	conf := filepath.Join(t.TempDir(), "pip.conf")
	os.WriteFile(conf, []byte("[global]\ncert = /conf/ca.pem\n"), 0o644)
	t.Setenv("PIP_CONFIG_FILE", conf)
	t.Setenv("PIP_CERT", "")
	h = host{getenv: env(map[string]string{"SSL_CERT_FILE": "/b.pem"}), etc: t.TempDir(), python: "/usr/bin/python3"}
	if p, _ := h.caBundle(context.Background()); p != "/conf/ca.pem" {
		t.Errorf("caBundle() = %q, want pip's configured cert /conf/ca.pem", p)
	}
}
