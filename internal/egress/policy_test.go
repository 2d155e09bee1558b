package egress

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/errkind"
)

func TestParseAllowHost(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Host
		err  string
	}{
		{in: "files.example", want: Host{Name: "files.example", From: "--allow-host"}},
		{in: "Files.Example:8443", want: Host{Name: "files.example", Ports: []int{8443}, From: "--allow-host"}},
		{in: "*.example", want: Host{Name: "*.example", From: "--allow-host"}},
		{in: "127.0.0.1:5555", want: Host{Name: "127.0.0.1", Ports: []int{5555}, Literal: true, From: "--allow-host"}},
		{in: "[::1]:5555", want: Host{Name: "::1", Ports: []int{5555}, Literal: true, From: "--allow-host"}},
		{in: "", err: "empty"},
		{in: "https://files.example/simple", err: "a host, not a URL"},
		{in: "127.0.0.1", err: "an IP address needs its port"},
		{in: "::1", err: "an IPv6 address needs brackets and a port"},
		{in: "files.example:0", err: "port 0 is not a TCP port"},
		{in: "files.example:99999", err: "port 99999 is not a TCP port"},
		{in: "169.254.169.254:80", err: "a link-local or cloud metadata address is never allowed"},
		{in: "[fd00:ec2::254]:80", err: "a link-local or cloud metadata address is never allowed"},
		{in: "bad host", err: `' ' is not allowed in a host name`},
		{in: "a..b", err: "not a host name"},
	} {
		got, err := ParseAllowHost(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "--allow-host") || errkind.Of(err) != errkind.Usage {
				t.Errorf("ParseAllowHost(%q) = %v, want a usage error saying %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAllowHost(%q): %v", c.in, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("ParseAllowHost(%q) (-want +got):\n%s", c.in, diff)
		}
	}
}

func TestMatch(t *testing.T) {
	var p Policy
	p.Allow(Host{Name: "idx.example"}, Host{Name: "*.cdn.example"}, Host{Name: "deb.example", Apt: true},
		Host{Name: "idx.example", Ports: []int{8443}})
	for _, c := range []struct {
		host string
		port int
		why  string
	}{
		{"idx.example", 443, ""},
		{"idx.example", 8443, ""},
		{"idx.example", 80, "port 80 is not allowed for this host"},
		{"a.cdn.example", 443, ""},
		{"a.b.cdn.example", 443, ""},
		{"cdn.example", 443, "not on the allowlist"},
		{"evilcdn.example", 443, "not on the allowlist"},
		{"deb.example", 80, ""},
		{"deb.example", 443, ""},
		{"deb.example", 22, "port 22 is not allowed for this host"},
		{"other.example", 443, "not on the allowlist"},
	} {
		if _, why := p.match(c.host, c.port); why != c.why {
			t.Errorf("match(%s, %d) = %q, want %q", c.host, c.port, why, c.why)
		}
	}
	if len(p.Hosts) != 3 {
		t.Errorf("Allow kept %d entries, want one per name: %v", len(p.Hosts), p.Hosts)
	}
}

func TestURLHost(t *testing.T) {
	for _, c := range []struct {
		url  string
		want Host
	}{
		{"https://idx.example/simple", Host{Name: "idx.example", From: "x"}},
		{"http://idx.example/simple", Host{Name: "idx.example", Ports: []int{80}, From: "x"}},
		{"https://IDX.example:8443/simple", Host{Name: "idx.example", Ports: []int{8443}, From: "x"}},
		{"http://10.0.0.5/simple", Host{Name: "10.0.0.5", Ports: []int{80}, Literal: true, From: "x"}},
		{"https://[::1]/simple", Host{Name: "::1", Ports: []int{443}, Literal: true, From: "x"}},
		{"http://localhost:3141/root/pypi", Host{Name: "localhost", Ports: []int{3141}, Literal: true, From: "x"}},
	} {
		u, _ := url.Parse(c.url)
		if diff := cmp.Diff(c.want, urlHost(u, "x")); diff != "" {
			t.Errorf("urlHost(%s) (-want +got):\n%s", c.url, diff)
		}
	}
}
