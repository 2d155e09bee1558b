package egress

import "context"

// caBundle is the certificate bundle the host's pip verifies the index
// with, when the host names one: PIP_CERT, pip's `cert` setting, then
// SSL_CERT_FILE and REQUESTS_CA_BUNDLE. A host behind a TLS-inspecting
// proxy trusts that proxy's authority through such a bundle, and a base
// image's own trust store does not know it: install steps get the same
// bundle. It holds public certificates only, never a credential. "" when
// the host names none (the base's own trust store is used).
func (h host) caBundle(ctx context.Context) (path, from string) {
	if v := h.getenv("PIP_CERT"); v != "" {
		return v, "PIP_CERT"
	}
	settings, _ := h.pipSettings(ctx)
	for _, kv := range settings {
		if kv[0] == "global.cert" || kv[0] == "install.cert" {
			return kv[1], "pip's configuration (" + kv[0] + ")"
		}
	}
	for _, k := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"} {
		if v := h.getenv(k); v != "" {
			return v, k
		}
	}
	return "", ""
}
