package egress

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/egress/indextest"
)

// allowIndex is a policy allowing the loopback index at addr as given.
func allowIndex(t *testing.T, addr string) Policy {
	t.Helper()
	h, err := ParseAllowHost(addr)
	if err != nil {
		t.Fatal(err)
	}
	var p Policy
	p.Allow(h)
	return p
}

// TestPipInstallThroughRelay installs a wheel and its dependency in a real
// sandbox from a loopback index, reached only through the relay's
// plain-HTTP forward path (the index's address is the host's loopback,
// which the sandbox's own loopback does not have).
func TestPipInstallThroughRelay(t *testing.T) {
	ix := indextest.Start(t, indextest.Wheel{Name: "cwm-top", Version: "1.0", Requires: []string{"cwm-dep"}},
		indextest.Wheel{Name: "cwm-dep", Version: "2.0", Module: "VALUE = 7\n"})
	s := newSandbox(t)
	ctx := context.Background()

	// Without the relay the index is out of reach.
	res := run(t, s, nil, "python3 -m pip download --no-cache-dir --retries 0 --timeout 5 -d /tmp/d --index-url "+ix.URL+" cwm-top")
	if res.ExitCode == 0 {
		t.Fatalf("pip download without the relay succeeded: the sandbox reaches the host's loopback")
	}

	r, err := Start(ctx, s, allowIndex(t, ix.Addr))
	if err != nil {
		t.Fatal(err)
	}
	res = run(t, s, r, "python3 -m pip install --no-cache-dir --retries 0 --target /tmp/site --index-url "+ix.URL+" cwm-top && "+
		"PYTHONPATH=/tmp/site python3 -c 'import cwm_top, cwm_dep; print(cwm_top.__version__, cwm_dep.VALUE)'")
	st := r.Close()
	if res.ExitCode != 0 || !strings.HasSuffix(strings.TrimSpace(string(res.Stdout)), "1.0 7") {
		t.Fatalf("pip install through the relay: exit %d\n%s", res.ExitCode, output(res))
	}
	if st.Conns < 4 || st.Bytes == 0 || len(st.Refusals) != 0 {
		t.Errorf("Stats = %+v, want at least 4 connections (two pages, two wheels), bytes, no refusal", st)
	}
	got := ix.Requests()
	want := []string{"GET /simple/cwm-top/", "GET /files/cwm_top-1.0-py3-none-any.whl", "GET /simple/cwm-dep/", "GET /files/cwm_dep-2.0-py3-none-any.whl"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("index requests (-want +got):\n%s", diff)
	}
}
