package indextest

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPipInstalls has the host's pip install from the index (a wheel and
// its dependency) into a directory, outside any sandbox: what the index
// serves is what pip accepts.
func TestPipInstalls(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	url := New(t, Wheel{Name: "Cwm_Top", Version: "1.0", Requires: []string{"cwm-dep>=2"}},
		Wheel{Name: "cwm-dep", Version: "2.1", Module: "VALUE = 42\n"})
	dir := t.TempDir()
	cmd := exec.Command("/usr/bin/python3", "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check",
		"--index-url", url, "--target", dir, "cwm-top")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pip install from the index: %v\n%s", err, out)
	}
	out, err := exec.Command("/usr/bin/python3", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import cwm_top, cwm_dep; print(cwm_top.__version__, cwm_dep.VALUE)", dir).CombinedOutput()
	if err != nil || string(out) != "1.0 42\n" {
		t.Errorf("import the installed wheels = %q, %v; want \"1.0 42\"", out, err)
	}
}

// TestJSONForm reads a project in the JSON form, with its upload times.
func TestJSONForm(t *testing.T) {
	up := time.Date(2021, 6, 1, 12, 0, 0, 0, time.UTC)
	ix := Start(t, Wheel{Name: "a.b", Version: "1.0", Uploaded: up}, Wheel{Name: "a.b", Version: "2.0"})
	req, _ := http.NewRequest("GET", ix.URL+"/a-b/", nil)
	req.Header.Set("Accept", jsonType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Name  string `json:"name"`
		Files []struct {
			Filename   string `json:"filename"`
			UploadTime string `json:"upload-time"`
		} `json:"files"`
		Versions []string `json:"versions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range page.Files {
		got = append(got, f.Filename+" "+f.UploadTime)
	}
	want := []string{"a_b-1.0-py3-none-any.whl 2021-06-01T12:00:00.000000Z", "a_b-2.0-py3-none-any.whl 2020-01-01T00:00:00.000000Z"}
	if diff := cmp.Diff(want, got); diff != "" || page.Name != "a-b" || strings.Join(page.Versions, ",") != "1.0,2.0" {
		t.Errorf("JSON page (-want +got):\n%s name %q versions %v", diff, page.Name, page.Versions)
	}
	if _, _, err := Build(Wheel{Name: "x"}); err == nil {
		t.Errorf("Build of a wheel without a version succeeded")
	}
}
