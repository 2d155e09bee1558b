package egress

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"cwm/internal/lazyre"
)

// uvConfig reads the indexes of uv's configuration files (UV_CONFIG_FILE,
// or the user's and the system's uv.toml).
func (h host) uvConfig() (main, extra []found) {
	files := []string{filepath.Join(h.etc, "uv/uv.toml")}
	if x := h.getenv("XDG_CONFIG_HOME"); x != "" {
		files = append(files, filepath.Join(x, "uv/uv.toml"))
	} else if h.home != "" {
		files = append(files, filepath.Join(h.home, ".config/uv/uv.toml"))
	}
	if f := h.getenv("UV_CONFIG_FILE"); f != "" {
		files = []string{f}
	}
	for _, f := range files {
		var cfg struct {
			IndexURL      string   `toml:"index-url"`
			ExtraIndexURL []string `toml:"extra-index-url"`
			Index         []struct {
				URL     string `toml:"url"`
				Default bool   `toml:"default"`
			} `toml:"index"`
		}
		if _, err := toml.DecodeFile(f, &cfg); err != nil {
			continue
		}
		if cfg.IndexURL != "" {
			main = append(main, found{cfg.IndexURL, f})
		}
		for _, u := range cfg.ExtraIndexURL {
			extra = append(extra, found{u, f})
		}
		for _, ix := range cfg.Index {
			if ix.Default {
				main = append(main, found{ix.URL, f})
			} else if ix.URL != "" {
				extra = append(extra, found{ix.URL, f})
			}
		}
	}
	return main, extra
}

// maxPage caps the project page read to learn an index's file hosts.
const maxPage = 32 << 20

// fileHosts asks the index for pip's own project page (every index has
// pip), in the JSON form when it speaks it, and returns the scheme and
// host of each file URL on it that is not the index's own.
func fileHosts(ctx context.Context, index *url.URL, proxy func(*url.URL) (*url.URL, error)) ([]*url.URL, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	page := index.JoinPath("pip") // JoinPath keeps the credentials
	page.Path += "/"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, page.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.pypi.simple.v1+json, text/html;q=0.1")
	tr := &http.Transport{Proxy: func(r *http.Request) (*url.URL, error) {
		if proxy == nil {
			return nil, nil
		}
		return proxy(r.URL)
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask the index: %w", scrub(err, index))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ask the index for %s: %s", page.Redacted(), resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxPage))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", page.Redacted(), err)
	}
	var links []string
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		var j struct {
			Files []struct {
				URL string `json:"url"`
			} `json:"files"`
		}
		if err := json.Unmarshal(b, &j); err != nil {
			return nil, fmt.Errorf("read %s: %w", page.Redacted(), err)
		}
		for _, f := range j.Files {
			links = append(links, f.URL)
		}
	} else {
		for _, m := range hrefRe().FindAllSubmatch(b, -1) {
			links = append(links, string(m[1]))
		}
	}
	base := resp.Request.URL
	seen := map[string]*url.URL{}
	for _, l := range links {
		u, err := base.Parse(strings.ReplaceAll(l, "&amp;", "&"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == index.Host {
			continue
		}
		seen[u.Scheme+"://"+u.Host] = &url.URL{Scheme: u.Scheme, Host: u.Host}
	}
	var out []*url.URL
	for _, u := range seen {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

var hrefRe = lazyre.New(`(?i)href\s*=\s*["']([^"']+)["']`)

// scrub removes an index URL's credentials from an error.
func scrub(err error, u *url.URL) error {
	if u.User == nil {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), u.String(), u.Redacted()))
}

type mirror struct {
	u    *url.URL
	from string
}

// aptMirrors are the http(s) URIs of the host's apt sources: one-line
// .list files and deb822 .sources files (stanzas with Enabled: no left
// out).
func (h host) aptMirrors() []mirror {
	dir := filepath.Join(h.etc, "apt")
	files := []string{filepath.Join(dir, "sources.list")}
	for _, pat := range []string{"*.list", "*.sources"} {
		m, _ := filepath.Glob(filepath.Join(dir, "sources.list.d", pat))
		files = append(files, m...)
	}
	var out []mirror
	seen := map[string]bool{}
	add := func(raw, from string) {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || seen[u.Host] {
			return
		}
		seen[u.Host] = true
		out = append(out, mirror{&url.URL{Scheme: u.Scheme, Host: u.Host}, from})
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if strings.HasSuffix(f, ".sources") {
			for _, stanza := range strings.Split(string(b), "\n\n") {
				var uris []string
				enabled := true
				for _, line := range strings.Split(stanza, "\n") {
					k, v, ok := strings.Cut(line, ":")
					if !ok || strings.HasPrefix(line, "#") {
						continue
					}
					switch strings.ToLower(strings.TrimSpace(k)) {
					case "uris":
						uris = append(uris, strings.Fields(v)...)
					case "enabled":
						enabled = strings.TrimSpace(strings.ToLower(v)) != "no"
					}
				}
				if enabled {
					for _, u := range uris {
						add(u, f)
					}
				}
			}
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 2 || (fields[0] != "deb" && fields[0] != "deb-src") {
				continue
			}
			i := 1
			if strings.HasPrefix(fields[1], "[") {
				for i < len(fields) && !strings.HasSuffix(fields[i], "]") {
					i++
				}
				i++
			}
			if i < len(fields) {
				add(fields[i], f)
			}
		}
	}
	return out
}
