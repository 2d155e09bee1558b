package envbuild

import (
	"context"
	"slices"
	"testing"
)

// TestSystemNeed reads what builds print when a system library is
// missing (lines as lxml, shapely, Pillow, a C compiler, pkg-config and
// meson print them) for the Debian packages that provide it.
func TestSystemNeed(t *testing.T) {
	for _, c := range []struct {
		out  string
		want []string
	}{
		{"      Building lxml version 7.0.0a3.\n      Error: Please make sure the libxml2 and libxslt development packages are installed.\n", []string{"libxml2-dev", "libxslt1-dev"}},
		{"      Could not find geos-config executable. Either append the path to geos-config to PATH or manually provide the include_dirs", []string{"libgeos-dev"}},
		{"    The headers or library files could not be found for jpeg,\n    a required dependency when compiling Pillow from source.", []string{"libjpeg-dev"}},
		{"src/lxml/etree.c:97:10: fatal error: libxml/xmlversion.h: No such file or directory", []string{"libxml2-dev"}},
		{"ext/_yaml.c:1:10: fatal error: yaml.h: No such file or directory", []string{"libyaml-dev"}},
		{"Package libxml-2.0 was not found in the pkg-config search path.\nPackage 'libxml-2.0', required by 'virtual:world', not found", []string{"libxml2-dev"}},
		{`Run-time dependency openblas found: NO (tried pkgconfig and cmake)` + "\n" + `../meson.build:5:0: ERROR: Dependency "OpenBLAS" not found, tried pkgconfig`, []string{"libopenblas-dev"}},
		{"Error: pg_config executable not found.", []string{"libpq-dev"}},
		// A Python package's header is no system package; neither is a
		// header cwm does not know.
		{"src/geos.h:5:10: fatal error: numpy/ndarraytypes.h: No such file or directory", nil},
		{"x.c:1:10: fatal error: somethingelse.h: No such file or directory", nil},
		{"error: command '/usr/bin/x86_64-linux-gnu-gcc' failed with exit code 1", nil},
	} {
		need := systemNeed(c.out)
		var got []string
		if need != nil {
			got = need.Packages
			if need.Evidence == "" {
				t.Errorf("systemNeed(%q) has no evidence", c.out)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("systemNeed(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}

// TestSystemNeedChoice: of two bases with the same Python, the one with
// fewer packages is chosen, so that a base derived for one project's
// system libraries is not every project's; and a derivation is only for
// packages the base lacks, at most maxDerivations times.
func TestSystemNeedChoice(t *testing.T) {
	bases := []BasePython{{Ref: "derived", Python: "3.11.2", Packages: []string{"build-essential", "libxml2-dev"}}, {Ref: "bookworm", Python: "3.11.2", Packages: []string{"build-essential"}}}
	got, err := choosePython(pythonNeed{}, "", "3.11.2", true, bases, "none")
	if err != nil || got.Prov.Base != "bookworm" {
		t.Errorf("choosePython = %+v, %v; want the base with fewer packages", got.Prov, err)
	}
	need := &SystemNeed{Packages: []string{"libxml2-dev", "libxslt1-dev"}}
	o := Options{DeriveBase: func(_ context.Context, _ BasePython, _ []string) (*BasePython, error) { return nil, nil }, onBase: &bases[0]}
	if !canDerive(o, need) {
		t.Error("canDerive = false for a base lacking libxslt1-dev")
	}
	if got := need.without(bases[0].Packages); !slices.Equal(got, []string{"libxslt1-dev"}) {
		t.Errorf("without = %v, want [libxslt1-dev]", got)
	}
	o.onBase = &BasePython{Packages: need.Packages}
	if canDerive(o, need) {
		t.Error("canDerive = true for a base that has every package")
	}
	o.onBase, o.derivations = &bases[1], maxDerivations
	if canDerive(o, need) {
		t.Error("canDerive = true after maxDerivations")
	}
	o.derivations, o.DeriveBase = 0, nil
	if canDerive(o, need) {
		t.Error("canDerive = true without DeriveBase")
	}
}
