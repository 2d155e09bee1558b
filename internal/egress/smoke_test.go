package egress

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestRealIndex downloads a small pure wheel from the index the host's pip
// uses, through DefaultPolicy's relay, in a sandbox: the allowlist learnt
// from the host is enough, and nothing else is needed.
func TestRealIndex(t *testing.T) {
	if os.Getenv("CWM_TESTVENV_OFFLINE") == "1" {
		t.Skip("CWM_TESTVENV_OFFLINE=1: no package index")
	}
	ctx := context.Background()
	p, err := DefaultPolicy(ctx)
	if err != nil {
		t.Skipf("no package index on this host: %v", err)
	}
	for _, f := range p.Found {
		if strings.HasPrefix(f, "could not learn where "+p.IndexURL) {
			t.Skipf("the host's index is unreachable from the host: %s", f)
		}
	}
	t.Logf("policy: index %s, hosts %v, found %q", p.IndexURL, p.Hosts, p.Found)
	s := sb{newSandbox(t)}
	r, err := Start(ctx, s.Sandbox, p)
	if err != nil {
		t.Fatal(err)
	}
	res := s.run(t, r, "python3 -m pip download --no-cache-dir --no-deps --retries 1 -d /tmp/d --index-url "+p.IndexURL+" six==1.16.0 && ls /tmp/d")
	st := r.Close()
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "six-1.16.0-py2.py3-none-any.whl") {
		t.Fatalf("pip download six==1.16.0 through the relay: exit %d\n%s\nstats %+v", res.ExitCode, output(res), st)
	}
	if len(st.Refusals) != 0 || st.Conns < 2 {
		t.Errorf("Stats = %+v, want at least two tunnels (the index, its file host) and no refusal", st)
	}
}
