package egress

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"

	"cwm/internal/errkind"
	"cwm/internal/lazyre"
)

// host is what DefaultPolicy reads of the machine it runs on; tests give
// their own.
type host struct {
	getenv func(string) string
	home   string // the user's home, for ~/.config/pip/pip.conf and uv.toml
	etc    string // "/etc", for pip.conf, uv.toml and apt's sources
	python string // the host's python3, "" when it has none
	// pip is `pip config list` once read (policy reads it first, so that
	// the index and the certificate bundle come from one run of pip).
	pip *pipList
}

// pipList is what pipSettings read: the settings, and whether a pip
// answered at all.
type pipList struct {
	settings [][2]string
	ok       bool
}

func thisHost() host {
	home, _ := os.UserHomeDir()
	py, _ := exec.LookPath("python3")
	return host{getenv: os.Getenv, home: home, etc: "/etc", python: py}
}

// DefaultPolicy is the allowlist the host's own configuration implies,
// never a host written into cwm: the index the host's pip and uv are
// configured with (their environment variables and configuration files),
// otherwise pip's built-in default as the host's pip reports it; the
// hosts that index serves its files from (learned by asking it for one
// project's page); and the Debian mirrors of the host's apt sources (ports
// 80 and 443). The host's proxy (HTTPS_PROXY, HTTP_PROXY, NO_PROXY) is
// used for the targets it covers. Found says where each entry came from.
// Credentials written in an index URL are dropped: none enter the sandbox.
func DefaultPolicy(ctx context.Context) (Policy, error) {
	return thisHost().policy(ctx)
}

func (h host) policy(ctx context.Context) (Policy, error) {
	if h.pip == nil {
		settings, ok := h.pipSettings(ctx)
		h.pip = &pipList{settings, ok}
	}
	var p Policy
	idx := h.indexes(ctx)
	if len(idx) == 0 {
		u, err := h.pipDefault(ctx)
		if err != nil {
			return Policy{}, err
		}
		idx = append(idx, found{u, "pip's built-in default"})
	}
	prox := h.proxy()
	for i, f := range idx {
		u, err := url.Parse(f.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.Found = append(p.Found, fmt.Sprintf("ignored index %q from %s: not an http(s) URL", redact(f.url), f.from))
			continue
		}
		clean := *u
		clean.User = nil
		if u.User != nil {
			p.Found = append(p.Found, fmt.Sprintf("dropped the credentials of the index %s from %s: none enter the sandbox", clean.String(), f.from))
		}
		if i == 0 || p.IndexURL == "" {
			p.IndexURL = clean.String()
		} else if clean.String() != p.IndexURL {
			p.ExtraIndexURLs = append(p.ExtraIndexURLs, clean.String())
		}
		p.Allow(urlHost(&clean, f.from))
		p.Found = append(p.Found, fmt.Sprintf("index %s from %s", clean.String(), f.from))
		// The files' hosts, asked on the host side (with the credentials,
		// which stay here).
		hosts, err := fileHosts(ctx, u, prox)
		if err != nil {
			p.Found = append(p.Found, fmt.Sprintf("could not learn where %s serves its files from: %v", clean.String(), err))
			continue
		}
		for _, fh := range hosts {
			p.Allow(urlHost(fh, "files of "+clean.String()))
			p.Found = append(p.Found, fmt.Sprintf("file host %s from %s's page for pip", fh.Host, clean.String()))
		}
	}
	for _, m := range h.aptMirrors() {
		hh := urlHost(m.u, m.from)
		hh.Apt, hh.Ports = true, nil
		if _, err := netip.ParseAddr(hh.Name); err == nil {
			hh.Ports = []int{portOf(m.u), 443, 80}
		} else if port := m.u.Port(); port != "" {
			hh.Ports = []int{portOf(m.u)}
		}
		p.Allow(hh)
		p.Found = append(p.Found, fmt.Sprintf("apt mirror %s from %s", m.u.Host, m.from))
	}
	if ca, from := h.caBundle(ctx); ca != "" {
		if fi, err := os.Stat(ca); err == nil && fi.Mode().IsRegular() {
			p.CABundle = ca
			p.Found = append(p.Found, fmt.Sprintf("certificate bundle %s from %s", ca, from))
		} else {
			p.Found = append(p.Found, fmt.Sprintf("ignored the certificate bundle %s from %s: not a file", ca, from))
		}
	}
	if prox != nil {
		p.Proxy = prox
		p.Found = append(p.Found, "the host's proxy from HTTPS_PROXY/HTTP_PROXY/NO_PROXY")
	}
	return p, nil
}

type found struct{ url, from string }

func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// urlHost is the allowlist entry of a URL's host: its port (or its
// scheme's), an IP address or localhost as given (the host's own
// configuration names them: a local mirror is meant to be reached).
func urlHost(u *url.URL, from string) Host {
	h := Host{Name: strings.ToLower(u.Hostname()), From: from}
	if a, err := netip.ParseAddr(h.Name); err == nil {
		h.Name, h.Literal = a.Unmap().String(), true
	}
	if h.Name == "localhost" {
		h.Literal = true
	}
	if port := portOf(u); port != 443 || h.Literal {
		h.Ports = []int{port}
	}
	return h
}

func portOf(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}

// indexes are the indexes the host's pip and uv are configured with, the
// main one first.
func (h host) indexes(ctx context.Context) []found {
	var main, extra []found
	for _, k := range []string{"PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL"} {
		if v := strings.TrimSpace(h.getenv(k)); v != "" {
			main = append(main, found{v, k})
		}
	}
	for _, k := range []string{"PIP_EXTRA_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_INDEX"} {
		for _, v := range strings.Fields(h.getenv(k)) {
			if _, u, ok := strings.Cut(v, "="); ok && !strings.Contains(v[:strings.Index(v, "=")], "/") {
				v = u // UV_INDEX's name=url
			}
			extra = append(extra, found{v, k})
		}
	}
	m, e := h.pipConfig(ctx)
	main, extra = append(main, m...), append(extra, e...)
	m, e = h.uvConfig()
	main, extra = append(main, m...), append(extra, e...)
	return append(main, extra...)
}

// pipSettings is `pip config list` of the host's pip: its settings as
// key and value, those of the environment (":env:") left out; false when
// the host has no pip to ask.
func (h host) pipSettings(ctx context.Context) ([][2]string, bool) {
	if h.pip != nil {
		return h.pip.settings, h.pip.ok
	}
	if h.python == "" {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.python, "-m", "pip", "config", "list")
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	var kvs [][2]string
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(k, ":env:") {
			continue // the environment is read on its own
		}
		kvs = append(kvs, [2]string{k, strings.Trim(strings.TrimSpace(v), `'"`)})
	}
	return kvs, true
}

// pipConfig reads pip's configuration as the host's pip sees it (pip
// config list), or, without a pip, its files.
func (h host) pipConfig(ctx context.Context) (main, extra []found) {
	if settings, ok := h.pipSettings(ctx); ok {
		for _, kv := range settings {
			k, v := kv[0], kv[1]
			from := "pip's configuration (" + k + ")"
			switch {
			case strings.HasSuffix(k, ".index-url"):
				main = append(main, found{v, from})
			case strings.HasSuffix(k, ".extra-index-url"):
				for _, x := range strings.Fields(v) {
					extra = append(extra, found{x, from})
				}
			}
		}
		return main, extra
	}
	files := []string{filepath.Join(h.etc, "pip.conf"), filepath.Join(h.etc, "xdg/pip/pip.conf")}
	if h.home != "" {
		files = append(files, filepath.Join(h.home, ".pip/pip.conf"), filepath.Join(h.home, ".config/pip/pip.conf"))
	}
	if f := h.getenv("PIP_CONFIG_FILE"); f != "" {
		files = append(files, f)
	}
	for _, f := range files {
		m, e := readPipConf(f)
		main, extra = append(main, m...), append(extra, e...)
	}
	return main, extra
}

// readPipConf reads index-url and extra-index-url from a pip.conf (an ini
// file; a value may go on over indented lines).
func readPipConf(path string) (main, extra []found) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	key := ""
	for _, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' || t[0] == '[' {
			key = ""
			continue
		}
		val := t
		if line[0] != ' ' && line[0] != '\t' {
			k, v, ok := strings.Cut(t, "=")
			if !ok {
				key = ""
				continue
			}
			key, val = strings.TrimSpace(k), strings.TrimSpace(v)
		}
		for _, v := range strings.Fields(val) {
			switch key {
			case "index-url", "index_url":
				main = append(main, found{v, path})
			case "extra-index-url", "extra_index_url":
				extra = append(extra, found{v, path})
			}
		}
	}
	return main, extra
}

// pipDefault is the index pip uses when nothing says otherwise, as the
// host's pip reports it: its PyPI model, or else the default its help
// prints for --index-url.
func (h host) pipDefault(ctx context.Context) (string, error) {
	if h.python == "" {
		return "", errkind.Errorf(errkind.Unavailable, "find the package index: the host has no python3 whose pip could name its default index, and no PIP_INDEX_URL or UV_DEFAULT_INDEX is set")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, h.python, "-c", "from pip._internal.models.index import PyPI; print(PyPI.simple_url)").Output()
	if u := strings.TrimSpace(string(out)); err == nil && strings.HasPrefix(u, "http") {
		return u, nil
	}
	help, err := exec.CommandContext(ctx, h.python, "-m", "pip", "install", "--help").Output()
	if m := pipHelpDefault().FindSubmatch(help); m != nil {
		return string(m[1]), nil
	}
	return "", errkind.Errorf(errkind.Unavailable, "find the package index: %s's pip names no default index (%v); set PIP_INDEX_URL", h.python, err)
}

var pipHelpDefault = lazyre.New(`--index-url[^(]*\(default\s+(https?://[^\s)]+)\)`)

// proxy is the host's proxy choice, or nil when its environment names none.
func (h host) proxy() func(*url.URL) (*url.URL, error) {
	cfg := &httpproxy.Config{
		HTTPProxy:  firstEnv(h.getenv, "HTTP_PROXY", "http_proxy"),
		HTTPSProxy: firstEnv(h.getenv, "HTTPS_PROXY", "https_proxy"),
		NoProxy:    firstEnv(h.getenv, "NO_PROXY", "no_proxy"),
	}
	if cfg.HTTPProxy == "" && cfg.HTTPSProxy == "" {
		return nil
	}
	return cfg.ProxyFunc()
}

func firstEnv(getenv func(string) string, keys ...string) string {
	for _, k := range keys {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return ""
}
