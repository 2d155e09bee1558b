package setupagent

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	patch := `diff --git a/cwm-setup.json b/cwm-setup.json
new file mode 100644
--- /dev/null
+++ b/cwm-setup.json
@@ -0,0 +1,3 @@
+{"install": ["python -m pip install --no-index -e .", " "],
+ "test": "python -m pytest -q tests"}
diff --git a/other.txt b/other.txt
+{"ignored": true}
`
	p, err := Parse(patch)
	if err != nil {
		t.Fatal(err)
	}
	want := &Proposal{Install: []string{"python -m pip install --no-index -e ."}, Test: "python -m pytest -q tests"}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("Parse(patch) mismatch (-want +got):\n%s", diff)
	}
	if p, err := Parse(`{"test": "python -m unittest"}`); err != nil || p.Test != "python -m unittest" {
		t.Errorf("Parse(json) = %+v, %v", p, err)
	}
	for _, bad := range []string{`{"install": ["x"]}`, `not json`, `{"test": "pytest", "extra": 1}`} {
		if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "setup agent's recipe") {
			t.Errorf("Parse(%q) error = %v, want one about the recipe", bad, err)
		}
	}
}
