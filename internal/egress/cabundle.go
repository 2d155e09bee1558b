package egress

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

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
	if h.python != "" {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, h.python, "-m", "pip", "config", "list")
		cmd.Env = os.Environ()
		if out, err := cmd.Output(); err == nil {
			for _, line := range strings.Split(string(out), "\n") {
				k, v, ok := strings.Cut(line, "=")
				if ok && !strings.HasPrefix(k, ":env:") && (k == "global.cert" || k == "install.cert") {
					return strings.Trim(strings.TrimSpace(v), `'"`), "pip's configuration (" + k + ")"
				}
			}
		}
	}
	for _, k := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"} {
		if v := h.getenv(k); v != "" {
			return v, k
		}
	}
	return "", ""
}
