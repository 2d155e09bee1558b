package envbuild

import (
	"fmt"
	"strings"
	"testing"

	"cwm/internal/egress"
	"cwm/internal/egress/indextest"
)

// TestInstallStepEgress builds with an egress policy: an install step
// reaches the allowed (loopback) index through its relay, and a call to a
// host off the list is refused and named in the step's note.
func TestInstallStepEgress(t *testing.T) {
	ix := indextest.Start(t, indextest.Wheel{Name: "cwm-top", Version: "1.0"})
	allow, err := egress.ParseAllowHost(ix.Addr)
	if err != nil {
		t.Fatal(err)
	}
	var p egress.Policy
	p.Allow(allow)
	opts := buildOpts(copyRepo(t, "testdata/bareunit"))
	fetch := `python3 -c "import urllib.request as u; u.urlopen('%s').read()"`
	opts.Install = []string{
		fmt.Sprintf(fetch, ix.URL+"/cwm-top/") + " && (" + fmt.Sprintf(fetch, "https://evil.example/") + " || true)",
	}
	opts.Egress = &p
	e := mustBuild(t, opts)
	st := e.Install[1]
	if st.Status != "ok" {
		t.Fatalf("install step %q: %s: %s", st.Command, st.Status, st.Note)
	}
	if want := "egress refused: evil.example:443 (not on the allowlist)"; st.Note != want {
		t.Errorf("install step note = %q, want %q", st.Note, want)
	}
	if got := strings.Join(ix.Requests(), ","); got != "GET /simple/cwm-top/" {
		t.Errorf("the index served %q, want the step's one request", got)
	}
}

func TestRefusalNote(t *testing.T) {
	r := func(h string, why string) egress.Refusal { return egress.Refusal{Host: h, Port: 443, Why: why} }
	for _, c := range []struct {
		refusals []egress.Refusal
		want     string
	}{
		{nil, ""},
		{[]egress.Refusal{r("a.test", "not on the allowlist"), r("a.test", "not on the allowlist"), r("b.test", "x")},
			"egress refused: a.test:443 (not on the allowlist), b.test:443 (x)"},
		{[]egress.Refusal{r("1", "x"), r("2", "x"), r("3", "x"), r("4", "x"), r("5", "x"), r("6", "x"), r("7", "x")},
			"egress refused: 1:443 (x), 2:443 (x), 3:443 (x), 4:443 (x), 5:443 (x) and 2 more"},
	} {
		if got := refusalNote(egress.Stats{Refusals: c.refusals}); got != c.want {
			t.Errorf("refusalNote(%v) = %q, want %q", c.refusals, got, c.want)
		}
	}
}
