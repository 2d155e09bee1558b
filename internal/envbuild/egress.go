package envbuild

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"cwm/internal/egress"
	"cwm/internal/env"
)

// relay starts the egress relay for one install step when the build may
// reach the network (Options.Egress): the step's commands get the relay's
// proxy environment, and the returned function, called when the step ends,
// closes the relay and adds its refusals to the step's note, so that a
// setup.py calling home fails visibly. Offline it does nothing.
func (in *installer) relay(ctx context.Context, st *env.Step) func() {
	if in.egress == nil {
		return func() {}
	}
	r, err := egress.Start(ctx, in.s, *in.egress)
	if err != nil {
		return func() { addNote(st, fmt.Sprintf("no egress relay: %v", err)) }
	}
	in.proxyEnv = r.Env()
	if in.egress.CABundle != "" {
		// What the host's pip trusts (a TLS-inspecting proxy's authority
		// among it), staged by stageTools.
		in.proxyEnv = append(in.proxyEnv, "PIP_CERT="+toolsCA, "SSL_CERT_FILE="+toolsCA, "REQUESTS_CA_BUNDLE="+toolsCA)
	}
	return func() {
		in.proxyEnv = nil
		stats := r.Close()
		if n := refusalNote(stats); n != "" {
			addNote(st, n)
		}
		if n := unreachedNote(stats); n != "" && st.Status != "ok" {
			addNote(st, n)
		}
	}
}

// maxNoted is how many distinct refusals a note names.
const maxNoted = 5

// refusalNote is "egress refused: evil.example:443 (not on the allowlist),
// ..." naming each distinct refusal once, or "" when there was none.
func refusalNote(s egress.Stats) string { return distinctNote("egress refused: ", s.Refusals) }

// distinctNote is prefix and each distinct entry of rs once (the first
// maxNoted), or "" when there is none.
func distinctNote(prefix string, rs []egress.Refusal) string {
	var seen []string
	for _, r := range rs {
		if str := r.String(); !slices.Contains(seen, str) {
			seen = append(seen, str)
		}
	}
	if len(seen) == 0 {
		return ""
	}
	more := ""
	if len(seen) > maxNoted {
		more = fmt.Sprintf(" and %d more", len(seen)-maxNoted)
		seen = seen[:maxNoted]
	}
	return prefix + strings.Join(seen, ", ") + more
}

func addNote(st *env.Step, n string) {
	if st.Note != "" {
		st.Note += "; "
	}
	st.Note += n
}
