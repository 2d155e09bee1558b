package basebuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostMirror(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string // "" for an error
	}{
		{"one-line", map[string]string{"sources.list": "# comment\ndeb-src http://a.invalid/debian bookworm main\ndeb http://a.invalid/debian-security bookworm-security main\ndeb [arch=amd64 signed-by=/k.gpg] http://a.invalid/debian/ bookworm main\n"},
			"http://a.invalid/debian"},
		{"deb822", map[string]string{"sources.list.d/debian.sources": "Types: deb\nURIs: http://b.invalid/debian-security\nSuites: bookworm-security\nComponents: main\n\nTypes: deb deb-src\n# a comment\nURIs: http://b.invalid/debian\nSuites: bookworm bookworm-updates\nComponents: main\n"},
			"http://b.invalid/debian"},
		{"disabled stanza", map[string]string{"sources.list.d/x.sources": "Enabled: no\nTypes: deb\nURIs: http://c.invalid/old\nSuites: bookworm\n\nTypes: deb\nURIs: http://c.invalid/debian\nSuites: trixie\n"},
			"http://c.invalid/debian"},
		{"sources.list first", map[string]string{"sources.list": "deb http://d.invalid/debian bookworm main\n", "sources.list.d/y.list": "deb http://e.invalid/debian bookworm main\n"},
			"http://d.invalid/debian"},
		{"none", map[string]string{"sources.list": "# nothing\n"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, body := range c.files {
				os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755)
				os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644)
			}
			got, err := HostMirror(dir)
			if c.want == "" {
				if err == nil || !strings.Contains(err.Error(), "give --mirror URL") {
					t.Errorf("HostMirror = %q, %v; want an error saying to give --mirror", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("HostMirror = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
