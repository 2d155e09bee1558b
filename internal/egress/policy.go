package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cwm/internal/errkind"
)

// Policy is what a relay lets through. The zero Policy refuses everything.
type Policy struct {
	// Hosts is the allowlist.
	Hosts []Host `json:"hosts"`
	// IndexURL and ExtraIndexURLs are the package indexes the host's pip
	// and uv use, without any credentials (DefaultPolicy fills them in):
	// what an install step passes to pip or uv inside the sandbox.
	IndexURL       string   `json:"index_url,omitempty"`
	ExtraIndexURLs []string `json:"extra_index_urls,omitempty"`
	// MaxBytes caps the bytes relayed, both ways, over the relay's life
	// (one install step); 0 means DefaultMaxBytes.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxTime caps the relay's life; 0 means DefaultMaxTime.
	MaxTime time.Duration `json:"max_time,omitempty"`
	// MaxTunnels is how many connections are relayed at once; more wait
	// for a free one. 0 means DefaultMaxTunnels.
	MaxTunnels int `json:"max_tunnels,omitempty"`
	// Proxy, when set, is the host's proxy the relay goes through for a
	// target (nil: direct), as golang.org/x/net/http/httpproxy's ProxyFunc
	// decides from HTTPS_PROXY, HTTP_PROXY and NO_PROXY. A proxy's
	// credentials stay on the host: the relay sends them, the sandbox never
	// sees them.
	Proxy func(*url.URL) (*url.URL, error) `json:"-"`
	// Resolve, when set, replaces the host's resolver (tests use it to
	// make an allowed name resolve somewhere it must not).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error) `json:"-"`
	// CABundle is the host path of the certificate bundle the host's pip
	// verifies its index with (DefaultPolicy: PIP_CERT, pip's cert
	// setting, SSL_CERT_FILE, REQUESTS_CA_BUNDLE), which install steps
	// verify with too; "" for the base's own trust store.
	CABundle string `json:"ca_bundle,omitempty"`
	// Found says where DefaultPolicy found the index and the mirror, for
	// reports.
	Found []string `json:"found,omitempty"`
}

// The caps of a relay whose policy sets none. An install step that
// downloads more than this is not a repository's dependencies.
const (
	DefaultMaxBytes   = 4 << 30
	DefaultMaxTime    = time.Hour
	DefaultMaxTunnels = 32
)

// Host is one entry of the allowlist.
type Host struct {
	// Name is a host name ("files.example"), a suffix pattern
	// ("*.example", which matches names below example, not example
	// itself), or a literal IP address.
	Name string `json:"name"`
	// Ports are the ports allowed; none means 443 only, and 80 too when
	// Apt is set.
	Ports []int `json:"ports,omitempty"`
	// Apt marks a Debian mirror, which apt reaches over plain HTTP.
	Apt bool `json:"apt,omitempty"`
	// Literal marks an IP:PORT the operator gave (--allow-host): it is
	// dialled as given, even a loopback or private address (that is how
	// tests reach a loopback index), though never a metadata address.
	Literal bool `json:"literal,omitempty"`
	// From says where the entry came from ("--allow-host", "PIP_INDEX_URL").
	From string `json:"from,omitempty"`
}

// ParseAllowHost reads an --allow-host value: NAME, NAME:PORT, *.SUFFIX,
// *.SUFFIX:PORT or IP:PORT (an IPv6 address in brackets). A name without a
// port allows 443; an IP needs its port.
func ParseAllowHost(s string) (Host, error) {
	bad := func(why string) (Host, error) {
		return Host{}, errkind.Errorf(errkind.Usage, "--allow-host %q: %s (want NAME, NAME:PORT, *.SUFFIX or IP:PORT)", s, why)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return bad("empty")
	}
	if strings.Contains(s, "/") {
		return bad("a host, not a URL")
	}
	name, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return bad("port " + p + " is not a TCP port")
		}
		name, port = h, n
	} else if strings.Count(s, ":") > 1 || strings.HasPrefix(s, "[") {
		return bad("an IPv6 address needs brackets and a port, as [::1]:443")
	}
	h := Host{Name: strings.ToLower(name), From: "--allow-host"}
	if port != 0 {
		h.Ports = []int{port}
	}
	if a, err := netip.ParseAddr(name); err == nil {
		if port == 0 {
			return bad("an IP address needs its port")
		}
		if Metadata(a) {
			return bad("a link-local or cloud metadata address is never allowed")
		}
		h.Name, h.Literal = a.Unmap().String(), true
		return h, nil
	}
	if err := checkName(strings.TrimPrefix(h.Name, "*.")); err != nil {
		return bad(err.Error())
	}
	return h, nil
}

// checkName tells a plausible DNS name.
func checkName(n string) error {
	if n == "" || len(n) > 253 {
		return fmt.Errorf("not a host name")
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("not a host name")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("%q is not allowed in a host name", c)
			}
		}
	}
	return nil
}

// Allow adds hosts to the policy, keeping one entry per name (ports
// merged).
func (p *Policy) Allow(hosts ...Host) {
	for _, h := range hosts {
		i := p.index(h.Name)
		if i < 0 {
			p.Hosts = append(p.Hosts, h)
			continue
		}
		e := &p.Hosts[i]
		e.Apt = e.Apt || h.Apt
		e.Literal = e.Literal || h.Literal
		if len(h.Ports) > 0 || len(e.Ports) > 0 {
			e.Ports = mergePorts(e.ports(), h.ports())
		}
	}
}

func (p *Policy) index(name string) int {
	for i, h := range p.Hosts {
		if h.Name == name {
			return i
		}
	}
	return -1
}

func mergePorts(a, b []int) []int {
	out := append([]int(nil), a...)
	for _, x := range b {
		found := false
		for _, y := range out {
			found = found || x == y
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}

// ports are the ports h allows.
func (h Host) ports() []int {
	switch {
	case len(h.Ports) > 0:
		return h.Ports
	case h.Apt:
		return []int{443, 80}
	}
	return []int{443}
}

func (h Host) matches(name string) bool {
	if suffix, ok := strings.CutPrefix(h.Name, "*."); ok {
		return strings.HasSuffix(name, "."+suffix)
	}
	return name == h.Name
}

// match finds the entry that allows host:port, or says why none does.
// host is lower-cased, an IP address unbracketed.
func (p *Policy) match(host string, port int) (Host, string) {
	nameOK := false
	for _, h := range p.Hosts {
		if !h.matches(host) {
			continue
		}
		nameOK = true
		for _, q := range h.ports() {
			if q == port {
				return h, ""
			}
		}
	}
	if nameOK {
		return Host{}, fmt.Sprintf("port %d is not allowed for this host", port)
	}
	return Host{}, "not on the allowlist"
}

// IndexEnv points pip at the policy's index (the host's, found by
// DefaultPolicy, without credentials), which pip reaches through the
// relay's proxy: what env build's install steps and a Dockerfile's RUN
// steps (Harbor tasks) are given.
func (p *Policy) IndexEnv() []string {
	var vars []string
	if p.IndexURL != "" {
		vars = append(vars, "PIP_INDEX_URL="+p.IndexURL)
	}
	if len(p.ExtraIndexURLs) > 0 {
		vars = append(vars, "PIP_EXTRA_INDEX_URL="+strings.Join(p.ExtraIndexURLs, " "))
	}
	// An index the host reaches over plain HTTP (a local mirror) is one
	// the host trusts: without saying so, pip would ignore it (or, on the
	// loopback, use it but cache nothing it downloads from it).
	if trusted := p.HTTPIndexHosts(); len(trusted) > 0 {
		vars = append(vars, "PIP_TRUSTED_HOST="+strings.Join(trusted, " "))
	}
	return vars
}

// HTTPIndexHosts are the hosts of the policy's indexes reached over plain
// HTTP, which pip and uv must be told to trust.
func (p *Policy) HTTPIndexHosts() []string {
	var hosts []string
	for _, u := range append([]string{p.IndexURL}, p.ExtraIndexURLs...) {
		if pu, err := url.Parse(u); err == nil && pu.Scheme == "http" && pu.Host != "" {
			hosts = append(hosts, pu.Host)
		}
	}
	return hosts
}
