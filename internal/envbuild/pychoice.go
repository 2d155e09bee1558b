package envbuild

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"cwm/internal/env"
)

// BasePython is a stored base a build may run on, with its Python. The
// command line fills Options.Bases from the store of bases.
type BasePython struct {
	// Ref names the base (its name or digest), as recorded in provenance.
	Ref string
	// Python is its Python version ("3.11.2", or "3.11").
	Python string
	// Root is what the environment's Base holds when it runs on this base
	// (what env.Sandboxes resolves to the sandboxes' root filesystem: a
	// directory, as --base gives, or the store's name for the base).
	Root string
	// Packages are the Debian packages the base was built with beyond
	// cwm's own (a Debian base's --packages). Of two bases with the same
	// Python, the one with fewer is chosen: a base derived for one
	// project's system libraries is not every project's.
	Packages []string
}

// pythonChoice is where a build runs: the host (Base == "") or a stored
// base, and the provenance recorded in env.json.
type pythonChoice struct {
	Base *BasePython
	Prov env.PythonProvenance
}

// choosePython picks the Python a build runs on. --python (flag) names
// it; otherwise the project's need: the versions it lists that its
// specifier allows (all its specifier allows when it lists none). The
// host wins when its Python is one of them and portable is not asked for;
// then a base with one of them (the newest); then the nearest newer base
// the specifier allows. Where none is allowed, the error says so, naming
// the bases there are.
func choosePython(need pythonNeed, flag, host string, portable bool, bases []BasePython, bound string) (pythonChoice, error) {
	prov := env.PythonProvenance{Requires: need.Spec, From: describeNeed(need)}
	ok := func(v string) bool {
		mm := majorMinor(v)
		if flag != "" {
			return mm == flag
		}
		if !specAllows(need.Spec, v) {
			return false
		}
		return len(need.Listed) == 0 || slices.Contains(need.Listed, mm)
	}
	if flag != "" {
		prov.Wanted, prov.From = flag, "--python"
	} else if len(need.Listed) > 0 {
		for _, v := range need.Listed {
			if specAllows(need.Spec, v) {
				prov.Wanted = v // the newest listed version allowed
			}
		}
	}
	if host != "" && !portable && ok(host) {
		prov.Base = "host"
		return pythonChoice{Prov: prov}, nil
	}
	pick := func(accept func(string) bool, nearest bool) *BasePython {
		var best *BasePython
		for i := range bases {
			b := &bases[i]
			if !accept(b.Python) {
				continue
			}
			c := 0
			if best != nil {
				c = compareVersions(parseVersion(b.Python), parseVersion(best.Python))
			}
			if best == nil || (nearest && c < 0) || (!nearest && c > 0) || (c == 0 && len(b.Packages) < len(best.Packages)) {
				best = b
			}
		}
		return best
	}
	// A Python that came out after the commit's date bound is one its
	// dependencies of that date may not build for (SQLAlchemy's of June
	// 2022 lists 3.11, whose greenlet 1.1 does not compile there): the
	// newest one accept allows that came out before it, when a base has
	// one; nil when b is not after the bound or there is none.
	before := func(b *BasePython, accept func(string) bool) *BasePython {
		if flag != "" || releasedBefore(b.Python, bound) {
			return nil
		}
		return pick(func(v string) bool { return accept(v) && releasedBefore(v, bound) }, false)
	}
	day := bound[:min(len(bound), 10)]
	if b := pick(ok, false); b != nil {
		if early := before(b, ok); early != nil {
			prov.Base = early.Ref
			prov.Note = fmt.Sprintf("Python %s came out after the commit's date bound (%s); the newest allowed one before it", majorMinor(b.Python), day)
			return pythonChoice{Base: early, Prov: prov}, nil
		}
		prov.Base = b.Ref
		return pythonChoice{Base: b, Prov: prov}, nil
	}
	// No base has a wanted version: the nearest newer one the project
	// allows (for --python, newer than what was asked).
	floor := prov.Wanted
	newer := func(v string) bool {
		if floor != "" && compareVersions(parseVersion(majorMinor(v)), parseVersion(floor)) <= 0 {
			return false
		}
		return flag != "" || specAllows(need.Spec, v)
	}
	if floor != "" || flag != "" {
		if b := pick(newer, true); b != nil && (flag == "" || specAllows(need.Spec, b.Python)) {
			// The date rule holds here too: SQLAlchemy's CI of June 2022
			// lists 3.10 alone, and the nearest newer base, 3.11, came
			// out after the commit.
			if early := before(b, func(v string) bool { return specAllows(need.Spec, v) }); early != nil {
				prov.Base = early.Ref
				prov.Note = fmt.Sprintf("no base offers Python %s; the nearest newer one, %s, came out after the commit's date bound (%s); the newest allowed one before it", floor, majorMinor(b.Python), day)
				return pythonChoice{Base: early, Prov: prov}, nil
			}
			prov.Base = b.Ref
			prov.Note = fmt.Sprintf("no base offers Python %s; the nearest newer one the project allows", floor)
			return pythonChoice{Base: b, Prov: prov}, nil
		}
	}
	// None newer either (sqlalchemy's CI tests 3.14 and 3.15 only): the
	// newest base requires-python allows, which is the rule; the listed
	// versions were a preference.
	if flag == "" && need.Spec != "" && floor != "" {
		if b := pick(func(v string) bool { return specAllows(need.Spec, v) }, false); b != nil {
			prov.Base = b.Ref
			prov.Note = fmt.Sprintf("no base offers Python %s or newer; the newest one %s allows", floor, need.SpecFrom)
			return pythonChoice{Base: b, Prov: prov}, nil
		}
	}
	var have []string
	for _, b := range bases {
		have = append(have, majorMinor(b.Python)+" "+b.Ref)
	}
	if host != "" {
		have = append(have, majorMinor(host)+" host"+map[bool]string{true: " (not with --portable)"}[portable])
	}
	what := fmt.Sprintf("requires-python %q", need.Spec)
	switch {
	case flag != "":
		what = "--python " + flag
	case need.Spec == "" && len(need.Listed) > 0:
		what = "Python " + strings.Join(need.Listed, ", ") + " (" + need.ListedFrom + ")"
	}
	return pythonChoice{}, inputErrorf("%s: no base offers an allowed Python (bases: %s); build one with cwm base build --debian SUITE", what, strings.Join(have, ", "))
}

func describeNeed(n pythonNeed) string {
	var parts []string
	if n.Spec != "" {
		parts = append(parts, n.SpecFrom+" "+n.Spec)
	}
	if len(n.Listed) > 0 {
		parts = append(parts, n.ListedFrom+" "+strings.Join(n.Listed, " "))
	}
	return strings.Join(parts, "; ")
}

// hostPython is the version of the host's Python, the one sandboxes on
// the host base run (/usr/bin/python3); "" when there is none.
func hostPython(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", "import platform; print(platform.python_version())").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// describeChoice says why a Python was chosen, for the build's progress.
func describeChoice(p env.PythonProvenance) string {
	parts := []string{}
	if p.From != "" {
		parts = append(parts, p.From)
	} else {
		parts = append(parts, "the project names no Python")
	}
	if p.Note != "" {
		parts = append(parts, p.Note)
	}
	return strings.Join(parts, "; ")
}

// pythonReleased are the dates of Python's final releases.
var pythonReleased = map[string]string{
	"3.6": "2016-12-23", "3.7": "2018-06-27", "3.8": "2019-10-14", "3.9": "2020-10-05",
	"3.10": "2021-10-04", "3.11": "2022-10-24", "3.12": "2023-10-02", "3.13": "2024-10-07",
	"3.14": "2025-10-07",
}

// releasedBefore says whether Python v's final release came out before
// bound (an RFC 3339 time or date); true when either is unknown.
func releasedBefore(v, bound string) bool {
	day, ok := pythonReleased[majorMinor(v)]
	if !ok || len(bound) < 10 || bound == "none" {
		return true
	}
	return day < bound[:10]
}
