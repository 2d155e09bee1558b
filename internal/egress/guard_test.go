package egress

import (
	"net/netip"
	"testing"
)

func TestRefusedAddr(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"127.0.0.1", "a loopback address"},
		{"127.9.9.9", "a loopback address"},
		{"::1", "a loopback address"},
		{"::ffff:127.0.0.1", "a loopback address"},
		{"0.0.0.0", "the unspecified address"},
		{"0.1.2.3", "the unspecified address"},
		{"::", "the unspecified address"},
		{"255.255.255.255", "a broadcast address"},
		{"224.0.0.1", "a multicast address"},
		{"ff02::1", "a multicast address"},
		{"169.254.169.254", "a link-local or cloud metadata address"},
		{"::ffff:169.254.169.254", "a link-local or cloud metadata address"},
		{"fe80::1", "a link-local or cloud metadata address"},
		{"fd00:ec2::254", "a link-local or cloud metadata address"},
		{"100.100.100.200", "a link-local or cloud metadata address"},
		{"10.1.2.3", ""},
		{"192.168.1.1", ""},
		{"93.184.215.14", ""},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", ""},
		{"100.100.100.201", ""},
	} {
		if got := refusedAddr(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("refusedAddr(%s) = %q, want %q", c.addr, got, c.want)
		}
	}
}
