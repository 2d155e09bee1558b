package basebuild

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cwm/internal/errkind"
)

// HostMirror is the Debian archive the host's apt uses: the first "deb"
// source of aptDir's sources.list, sources.list.d/*.list (one-line
// format) and sources.list.d/*.sources (deb822) whose suites are not
// security updates (those live in an archive of their own).
func HostMirror(aptDir string) (string, error) {
	files := []string{filepath.Join(aptDir, "sources.list")}
	for _, pat := range []string{"*.list", "*.sources"} {
		m, _ := filepath.Glob(filepath.Join(aptDir, "sources.list.d", pat))
		sort.Strings(m)
		files = append(files, m...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var uri string
		if strings.HasSuffix(f, ".sources") {
			uri = deb822Mirror(string(data))
		} else {
			uri = oneLineMirror(string(data))
		}
		if uri != "" {
			return strings.TrimSuffix(uri, "/"), nil
		}
	}
	return "", errkind.Errorf(errkind.Usage, "no Debian mirror in the host's apt sources (%s): give --mirror URL", strings.Join(files, ", "))
}

// oneLineMirror reads "deb [options] URI SUITE COMPONENTS..." lines.
func oneLineMirror(text string) string {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:]
			}
		}
		if len(f) >= 2 && !strings.Contains(f[1], "security") {
			return f[0]
		}
	}
	return ""
}

// deb822Mirror reads the stanzas of a .sources file.
func deb822Mirror(text string) string {
	for _, stanza := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		fields := map[string]string{}
		var last string
		for _, line := range strings.Split(stanza, "\n") {
			switch {
			case strings.HasPrefix(line, "#"):
			case strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t"):
				if last != "" {
					fields[last] += " " + strings.TrimSpace(line)
				}
			default:
				k, v, ok := strings.Cut(line, ":")
				if ok {
					last = strings.ToLower(strings.TrimSpace(k))
					fields[last] = strings.TrimSpace(v)
				}
			}
		}
		if !strings.Contains(" "+fields["types"]+" ", " deb ") || strings.EqualFold(fields["enabled"], "no") {
			continue
		}
		uris, suites := strings.Fields(fields["uris"]), fields["suites"]
		if len(uris) > 0 && suites != "" && !strings.Contains(suites, "security") {
			return uris[0]
		}
	}
	return ""
}
