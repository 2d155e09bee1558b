package egress

import (
	"net/netip"
)

// A link-local or cloud metadata address is never a package index's, nor a
// registry's: a redirect or a name resolving there would have cwm fetch a
// machine's credentials on a remote's say. internal/envoci refuses these
// for registries (where loopback stays allowed: local registries); the
// relay refuses them always, with loopback and the unspecified address.
var metadataPrefixes = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),     // IPv4 link-local, AWS/GCP/Azure metadata
	netip.MustParsePrefix("fe80::/10"),          // IPv6 link-local
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS metadata over IPv6
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud metadata
}

// Metadata tells a link-local or cloud metadata address, which cwm never
// connects to on anyone's behalf.
func Metadata(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range metadataPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// refusedAddr says why the relay never dials a, or "" when it may: a
// sandbox reaching the host's own services (loopback), the whole machine
// (unspecified), its link (link-local, multicast) or a cloud's metadata
// service would escape through the relay, whatever name led there.
// Private-use ranges (10/8 and the like) stay allowed: a site's own index
// mirror lives there.
func refusedAddr(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case Metadata(a):
		return "a link-local or cloud metadata address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified() || a.Is4() && a.As4()[0] == 0:
		// 0.0.0.0/8 is "this network": connecting there reaches the host.
		return "the unspecified address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "a broadcast address"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	return ""
}
