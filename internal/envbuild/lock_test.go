package envbuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/env"
)

// A report as pip 26 writes it (trimmed to what cwm reads): an editable
// project, a wheel from an index, a wheel from a wheelhouse.
const pipReportJSON = `{"version": "1", "pip_version": "26.0.1", "install": [
 {"download_info": {"url": "file:///repo", "dir_info": {"editable": true}}, "is_direct": true,
  "metadata": {"name": "textkit", "version": "0.3.1"}},
 {"download_info": {"url": "https://files.example/pytest-9.2.0-py3-none-any.whl",
  "archive_info": {"hash": "sha256=07acdcf88ec174f907dc01af70bf52d49b014bbab03faeeade31c96b18c2e588",
   "hashes": {"sha256": "07acdcf88ec174f907dc01af70bf52d49b014bbab03faeeade31c96b18c2e588"}}},
  "metadata": {"name": "PyTest", "version": "9.2.0"}},
 {"download_info": {"url": "file:///cwm-tools/wheelhouse/cwm_dep-1.0-py3-none-any.whl",
  "archive_info": {"hash": "sha256=39de08c331fbfbe8f35ce1c9c59fc00ddf960c372f4f400a988ec56e36be736f"}},
  "metadata": {"name": "cwm_dep", "version": "1.0"}}]}`

func TestLockRoundTrip(t *testing.T) {
	lock, err := addReport([]env.LockedPackage{{Name: "pytest", Version: "8.0.0", SHA256: strings.Repeat("0", 64)}}, []byte(pipReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := []env.LockedPackage{
		{Name: "pytest", Version: "9.2.0", URL: "https://files.example/pytest-9.2.0-py3-none-any.whl", SHA256: "07acdcf88ec174f907dc01af70bf52d49b014bbab03faeeade31c96b18c2e588"},
		{Name: "textkit", Version: "0.3.1", URL: "file:///repo", Local: true},
		{Name: "cwm-dep", Version: "1.0", URL: "file:///cwm-tools/wheelhouse/cwm_dep-1.0-py3-none-any.whl", SHA256: "39de08c331fbfbe8f35ce1c9c59fc00ddf960c372f4f400a988ec56e36be736f"},
	}
	if diff := cmp.Diff(want, lock); diff != "" {
		t.Fatalf("addReport (-want +got):\n%s", diff)
	}
	text := env.LockRequirements(lock)
	wantText := `cwm-dep==1.0 --hash=sha256:39de08c331fbfbe8f35ce1c9c59fc00ddf960c372f4f400a988ec56e36be736f
pytest==9.2.0 --hash=sha256:07acdcf88ec174f907dc01af70bf52d49b014bbab03faeeade31c96b18c2e588
# textkit==0.3.1 local file:///repo
`
	if text != wantText {
		t.Errorf("LockRequirements =\n%s\nwant\n%s", text, wantText)
	}
	file := filepath.Join(t.TempDir(), "lock.txt")
	os.WriteFile(file, []byte(text), 0o644)
	back, err := ReadLock(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 3 || back[0].Name != "cwm-dep" || back[1].SHA256 != lock[0].SHA256 || !back[2].Local || back[2].URL != "file:///repo" {
		t.Errorf("ReadLock(LockRequirements) = %+v", back)
	}
	if got := lockSteps(lock); len(got) != 2 || got[1].Command != "pip install --no-deps -e ." {
		t.Errorf("lockSteps = %+v, want the packages then the project", got)
	}
	os.WriteFile(file, []byte("pytest>=8\n"), 0o644)
	if _, err := ReadLock(file); err == nil || !strings.Contains(err.Error(), `lock.txt:1: want name==version --hash=sha256:HEX, got "pytest>=8"`) {
		t.Errorf("ReadLock(an unpinned line) = %v", err)
	}
}

func TestExcludeNewer(t *testing.T) {
	commit := time.Date(2021, 6, 1, 12, 0, 0, 0, time.FixedZone("", 2*3600))
	tests := []struct {
		flag string
		date time.Time
		want string
		err  bool
	}{
		{"", commit, "2021-06-08T10:00:00Z", false},
		{"", time.Time{}, "", false},
		{"none", commit, "", false},
		{"2024-05-01", commit, "2024-05-01T00:00:00Z", false},
		{"2024-05-01T10:00:00+02:00", commit, "2024-05-01T08:00:00Z", false},
		{"May 1", commit, "", true},
	}
	for _, tt := range tests {
		got, err := excludeNewer(tt.flag, tt.date)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("excludeNewer(%q, %v) = %q, %v; want %q (error %v)", tt.flag, tt.date, got, err, tt.want, tt.err)
		}
	}
}
