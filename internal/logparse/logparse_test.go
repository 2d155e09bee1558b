package logparse

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/pytestenv"
)

// Every Python parser of swebench 5.0.2's registry, and its table of
// repositories, has its port here, and the port gives what the original
// gives on each log of testdata/logs (pytest -rA and verbose forms,
// parametrised ids with spaces and paths, colour codes and control
// characters, django's runner and its interrupted lines, sympy's runner,
// Python's whitespace beyond ASCII). The original runs in the pinned
// swebench of the export's tests (internal/taskexport/testdata/
// swebench.txt): one venv for both.
func TestAgainstSwebench(t *testing.T) {
	py := pytestenv.Python(t, filepath.Join("..", "taskexport", "testdata", "swebench.txt"))
	logs, err := filepath.Glob(filepath.Join("testdata", "logs", "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no logs in testdata/logs: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{filepath.Join("testdata", "parse.py")}, logs...)...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("swebench's parsers: %v", err)
	}
	var want struct {
		Parsers map[string]map[string]map[string]string `json:"parsers"`
		ByRepo  map[string]string                       `json:"by_repo"`
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("swebench's parsers wrote %.200s: %v", b, err)
	}
	var names []string
	for n := range want.Parsers {
		names = append(names, n)
	}
	sort.Strings(names)
	var ours []string
	for _, n := range Names() {
		if !strings.HasSuffix(n, Swebench4) {
			ours = append(ours, n)
		}
	}
	if diff := cmp.Diff(names, ours); diff != "" {
		t.Errorf("Names() against swebench's Python parsers (-swebench +cwm):\n%s", diff)
	}
	for repo, fn := range want.ByRepo {
		// The table holds the functions; aliases are named by what
		// they alias (parse_log_flask is parse_log_pytest).
		got, ok := ForRepo(repo)
		p, err := Get(got)
		if !ok || err != nil {
			t.Errorf("ForRepo(%q) = %q, %v; want a parser like %s", repo, got, ok, fn)
			continue
		}
		for _, log := range logs {
			text, _ := os.ReadFile(log)
			if diff := cmp.Diff(want.Parsers[fn][filepath.Base(log)], p(string(text)), cmp.Transformer("empty", nonNil)); diff != "" {
				t.Errorf("ForRepo(%q)'s parser on %s (-swebench %s +cwm %s):\n%s", repo, log, fn, got, diff)
			}
		}
	}
	for _, name := range names {
		p, err := Get(name)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, log := range logs {
			text, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			got := p(string(text))
			if diff := cmp.Diff(nonNil(want.Parsers[name][filepath.Base(log)]), got); diff != "" {
				t.Errorf("%s(%s) (-swebench +cwm):\n%s", name, log, diff)
			}
		}
	}
	// The logs exercise the parsers: something is found in each non-empty one.
	if n := len(Pytest(read(t, "pytest-ra.log"))); n < 10 {
		t.Errorf("Pytest(pytest-ra.log) found %d tests, want at least 10", n)
	}
}

// The parsers of swebench 4.x (the @swebench4 names, which cwm tasks
// import --native grades with, as its specifications are 4.1.0's) give
// what 4.1.0's parse_log_pytest_v2 gives on the same logs; the pinned
// 4.1.0 is the native import's test venv.
func TestAgainstSwebench4(t *testing.T) {
	py := pytestenv.Python(t, filepath.Join("..", "swenative", "testdata", "swebench4.txt"))
	logs, err := filepath.Glob(filepath.Join("testdata", "logs", "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no logs in testdata/logs: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{filepath.Join("testdata", "parse4.py")}, logs...)...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("swebench 4's parser: %v", err)
	}
	var want map[string]map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("swebench 4's parser wrote %.200s: %v", b, err)
	}
	cut := false
	for _, name := range []string{"parse_log_pytest_v2", "parse_log_astropy", "parse_log_scikit", "parse_log_sphinx"} {
		p, err := Get(name + Swebench4)
		if err != nil {
			t.Fatal(err)
		}
		for _, log := range logs {
			got := p(read(t, filepath.Base(log)))
			if diff := cmp.Diff(nonNil(want[filepath.Base(log)]), got); diff != "" {
				t.Errorf("%s%s(%s) (-swebench 4.1.0 +cwm):\n%s", name, Swebench4, log, diff)
			}
			for id := range got {
				if _, ok := PytestV2(read(t, filepath.Base(log)))[id]; !ok {
					cut = true
				}
			}
		}
	}
	if !cut {
		t.Errorf("no log gives an id swebench 4 cuts and 5.0.2 keeps whole: the logs do not tell the two apart")
	}
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func read(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "logs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An unknown parser name is an input error that lists the known ones.
func TestGetUnknown(t *testing.T) {
	if _, err := Get("parse_log_nope"); err == nil {
		t.Errorf("Get(parse_log_nope) = nil error, want one")
	}
}
