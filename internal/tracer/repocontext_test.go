package tracer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/trace"
)

// TestRepoContextDefs checks the contexts of the example repository's
// episodes against CWM-SPEC's trace format: "$CONTEXT is the source code;
// the entry point's def line carries the comment # << START_OF_TRACE", and
// the worked example's context is the two functions its trace runs
// (`def f(a,b): ...` and `def main(): # << START_OF_TRACE`), not a module.
// With ContextDefs every def in an episode's context is one whose code
// runs in the episode, inside one, or the header line alone of a def
// around one, the root's def
// line is the one marked, and the context is smaller than the modules
// whole; with ContextModule it is the modules whole, as before.
func TestRepoContextDefs(t *testing.T) {
	e, tests := textkitRecordings(t)
	opts := EpisodeOptions{MaxDepth: 2, StepIn: 0.5, Seed: 1, Context: ContextDefs}
	defs := cutAll(e, tests, opts)
	opts.Context = ContextModule
	modules := cutAll(e, tests, opts)
	if len(defs) != len(modules) {
		t.Fatalf("%d episodes with defs, %d with modules", len(defs), len(modules))
	}
	var defBytes, moduleBytes int
	for i, ep := range defs {
		if !ep.Status.Complete() {
			t.Errorf("%s: status %s (%s)", ep.ID, ep.Status, ep.Error)
			continue
		}
		defBytes += len(ep.Context)
		moduleBytes += len(modules[i].Context)
		if got := wholeFiles(t, e.LayerDir(), modules[i].Context); got != modules[i].Context {
			t.Errorf("%s: the module context is not its files whole:\n%s", ep.ID, modules[i].Context)
		}
		run := map[string]bool{} // "file:qualname's last part" of the codes run
		for _, c := range ep.Codes {
			run[c.File+":"+c.Qualname[strings.LastIndexByte(c.Qualname, '.')+1:]] = true
		}
		file, marked, inside := "", 0, -1 // inside: the indentation of a def run, -1 outside one
		lines := strings.Split(ep.Context, "\n")
		for i, line := range lines {
			if f, ok := strings.CutPrefix(line, "# file: "); ok {
				file = f
				continue
			}
			if strings.HasSuffix(line, trace.EntryMarker) {
				marked++
				if file != ep.Function.File || !strings.Contains(line, "def "+ep.Function.Qualname[strings.LastIndexByte(ep.Function.Qualname, '.')+1:]+"(") {
					t.Errorf("%s: marked line %q in %s, want the def of %s in %s", ep.ID, line, file, ep.Function.Qualname, ep.Function.File)
				}
			}
			s := strings.TrimLeft(line, " ")
			if s != "" && inside >= 0 && indentOf(line) <= inside {
				inside = -1 // past the block of a def the episode runs
			}
			name, ok := strings.CutPrefix(s, "def ")
			if !ok {
				continue
			}
			name = name[:strings.IndexByte(name, '(')]
			if run[file+":"+name] && inside < 0 {
				inside = indentOf(line)
			}
			if !run[file+":"+name] && inside < 0 && !headerOnly(lines[i+1:]) {
				t.Errorf("%s: the context has def %s of %s, which the episode does not run:\n%s", ep.ID, name, file, ep.Context)
			}
		}
		if marked != 1 {
			t.Errorf("%s: %d marked lines, want 1", ep.ID, marked)
		}
	}
	t.Logf("contexts: %d bytes as defs, %d as modules", defBytes, moduleBytes)
	if defBytes*2 > moduleBytes {
		t.Errorf("contexts as defs take %d bytes, more than half of the modules' %d", defBytes, moduleBytes)
	}
}

// headerOnly reports whether the lines after a def line leave its body
// out: the next one that is not empty starts a def or a decorator (a
// header kept for a function defined in it).
func headerOnly(after []string) bool {
	for _, l := range after {
		if s := strings.TrimLeft(l, " "); s != "" {
			return strings.HasPrefix(s, "def ") || strings.HasPrefix(s, "@") || strings.HasPrefix(s, "class ")
		}
	}
	return false
}

// wholeFiles rebuilds a module context from the files it names, the
// marker left where the context has it.
func wholeFiles(t *testing.T, layer, ctx string) string {
	t.Helper()
	var sb strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(ctx, "\n"), "\n") {
		if f, ok := strings.CutPrefix(line, "# file: "); ok {
			data, err := os.ReadFile(filepath.Join(layer, "repo", f))
			if err != nil {
				t.Fatal(err)
			}
			src := strings.TrimRight(string(data), "\n")
			if i := strings.Index(ctx, trace.EntryMarker); i >= 0 && strings.Contains(ctx[:i], line+"\n") {
				// The marked def is somewhere in this file or a later one:
				// put the marker back on the same line for the comparison.
				marked := ctx[strings.LastIndexByte(ctx[:i], '\n')+1 : i+len(trace.EntryMarker)]
				src = strings.Replace(src, strings.TrimSuffix(marked, " "+trace.EntryMarker), marked, 1)
			}
			sb.WriteString(line + "\n" + src + "\n")
		}
	}
	return sb.String()
}
