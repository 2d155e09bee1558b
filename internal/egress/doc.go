// Package egress is the one way out of a sandbox: an HTTP proxy (CONNECT
// tunnels and plain-HTTP forward requests) that cwm serves on a listener
// inside the sandbox's network namespace (sandbox.Listen) and that dials
// out from the host's, for install steps only. It lets through the hosts
// of a Policy (by default the package index the host's own pip and uv use,
// the hosts its files are served from, and the host's Debian mirror) and
// refuses everything else, naming each refusal, so that a build step that
// calls home fails visibly instead of silently reaching the network.
// Every address is checked after resolution, at dial time, so a name on
// the list that resolves to loopback, link-local or a cloud metadata
// address is refused too.
package egress
