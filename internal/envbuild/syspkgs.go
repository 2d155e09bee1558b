package envbuild

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"

	"cwm/internal/env"
	"cwm/internal/progress"
)

// SystemNeed is what a failed install step's output says the build lacks
// from the system: the Debian packages that provide it, and the line that
// says so.
type SystemNeed struct {
	Packages []string
	Evidence string
}

// headerPackages are the Debian packages that provide a header a C
// compiler did not find, by the header's path (a directory prefix ends in
// "/"). The names are the same in bullseye, bookworm and trixie.
var headerPackages = map[string]string{
	"libxml/":           "libxml2-dev",
	"libxslt/":          "libxslt1-dev",
	"libexslt/":         "libxslt1-dev",
	"geos_c.h":          "libgeos-dev",
	"jpeglib.h":         "libjpeg-dev",
	"zlib.h":            "zlib1g-dev",
	"ffi.h":             "libffi-dev",
	"openssl/":          "libssl-dev",
	"yaml.h":            "libyaml-dev",
	"hdf5.h":            "libhdf5-dev",
	"lzma.h":            "liblzma-dev",
	"bzlib.h":           "libbz2-dev",
	"gmp.h":             "libgmp-dev",
	"mpfr.h":            "libmpfr-dev",
	"mpc.h":             "libmpc-dev",
	"sqlite3.h":         "libsqlite3-dev",
	"proj.h":            "libproj-dev",
	"png.h":             "libpng-dev",
	"tiffio.h":          "libtiff-dev",
	"ft2build.h":        "libfreetype-dev",
	"lcms2.h":           "liblcms2-dev",
	"webp/":             "libwebp-dev",
	"openjpeg.h":        "libopenjp2-7-dev",
	"cairo.h":           "libcairo2-dev",
	"libpq-fe.h":        "libpq-dev",
	"snappy-c.h":        "libsnappy-dev",
	"lz4.h":             "liblz4-dev",
	"zstd.h":            "libzstd-dev",
	"curl/":             "libcurl4-openssl-dev",
	"readline/":         "libreadline-dev",
	"ncurses.h":         "libncurses-dev",
	"curses.h":          "libncurses-dev",
	"uuid/":             "uuid-dev",
	"cblas.h":           "libopenblas-dev",
	"portaudio.h":       "portaudio19-dev",
	"krb5.h":            "libkrb5-dev",
	"gssapi/":           "libkrb5-dev",
	"sasl/":             "libsasl2-dev",
	"libmemcached/":     "libmemcached-dev",
	"mysql.h":           "default-libmysqlclient-dev",
	"mysql/":            "default-libmysqlclient-dev",
	"xmlsec/":           "libxmlsec1-dev",
	"systemd/":          "libsystemd-dev",
	"dbus/":             "libdbus-1-dev",
	"alsa/":             "libasound2-dev",
	"pcap.h":            "libpcap-dev",
	"magic.h":           "libmagic-dev",
	"libudev.h":         "libudev-dev",
	"expat.h":           "libexpat1-dev",
	"gdal.h":            "libgdal-dev",
	"netcdf.h":          "libnetcdf-dev",
	"fftw3.h":           "libfftw3-dev",
	"openblas_config.h": "libopenblas-dev",
}

// pkgconfigPackages are the Debian packages of pkg-config modules (and of
// the names meson's dependency() looks up).
var pkgconfigPackages = map[string]string{
	"libxml-2.0": "libxml2-dev", "libxslt": "libxslt1-dev", "libexslt": "libxslt1-dev",
	"geos": "libgeos-dev", "libjpeg": "libjpeg-dev", "zlib": "zlib1g-dev", "libffi": "libffi-dev",
	"openssl": "libssl-dev", "libssl": "libssl-dev", "libcrypto": "libssl-dev", "yaml-0.1": "libyaml-dev",
	"hdf5": "libhdf5-dev", "liblzma": "liblzma-dev", "sqlite3": "libsqlite3-dev", "proj": "libproj-dev",
	"libpng": "libpng-dev", "libtiff-4": "libtiff-dev", "freetype2": "libfreetype-dev", "lcms2": "liblcms2-dev",
	"libwebp": "libwebp-dev", "libopenjp2": "libopenjp2-7-dev", "cairo": "libcairo2-dev", "libpq": "libpq-dev",
	"openblas": "libopenblas-dev", "blas": "libopenblas-dev", "lapack": "liblapack-dev", "cblas": "libopenblas-dev",
	"libzstd": "libzstd-dev", "liblz4": "liblz4-dev", "libcurl": "libcurl4-openssl-dev", "uuid": "uuid-dev",
	"gobject-introspection-1.0": "libgirepository1.0-dev", "dbus-1": "libdbus-1-dev", "alsa": "libasound2-dev",
	"mysqlclient": "default-libmysqlclient-dev", "xmlsec1": "libxmlsec1-dev", "libsystemd": "libsystemd-dev",
	"expat": "libexpat1-dev", "gdal": "libgdal-dev", "netcdf": "libnetcdf-dev", "fftw3": "libfftw3-dev",
	"gmp": "libgmp-dev", "mpfr": "libmpfr-dev",
}

// phrasePackages are what a build says in its own words when a library's
// development files are missing, and the packages that provide them.
var phrasePackages = []struct {
	re   string
	pkgs []string
}{
	// lxml's setup: "Error: Please make sure the libxml2 and libxslt
	// development packages are installed."
	{`libxml2 and libxslt development packages`, []string{"libxml2-dev", "libxslt1-dev"}},
	{`\bxslt-config\b.*(not found|No such file)`, []string{"libxml2-dev", "libxslt1-dev"}},
	{`\bxml2-config\b.*(not found|No such file)`, []string{"libxml2-dev"}},
	// shapely's: "Could not find geos-config executable."
	{`(?i)could not find geos-config|geos-config: (command )?not found`, []string{"libgeos-dev"}},
	{`(?i)gdal-config: (command )?not found|could not find gdal-config`, []string{"libgdal-dev"}},
	{`pg_config executable not found|pg_config: (command )?not found`, []string{"libpq-dev"}},
	{`mysql_config: (command )?not found|mysql_config not found`, []string{"default-libmysqlclient-dev"}},
	{`krb5-config: (command )?not found`, []string{"libkrb5-dev"}},
	{`(?i)libpcap not found`, []string{"libpcap-dev"}},
}

// Pillow's setup: "The headers or library files could not be found for
// jpeg, a required dependency when compiling Pillow from source."
var pillowPackages = map[string]string{
	"jpeg": "libjpeg-dev", "zlib": "zlib1g-dev", "freetype": "libfreetype-dev", "lcms": "liblcms2-dev",
	"tiff": "libtiff-dev", "webp": "libwebp-dev", "jpeg2000": "libopenjp2-7-dev", "openjpeg": "libopenjp2-7-dev",
}

var sysRE = sync.OnceValue(func() (r struct {
	header, pkgconfig, meson, pillow *regexp.Regexp
	phrases                          []*regexp.Regexp
}) {
	r.header = regexp.MustCompile(`fatal error: ([\w./+-]+\.h): No such file or directory`)
	r.pkgconfig = regexp.MustCompile(`Package '?([\w.+-]+)'?,? (?:required by '[^']*', )?(?:was )?not found`)
	r.meson = regexp.MustCompile(`Dependency "?([\w.+-]+)"? (?:found: NO|not found)`)
	r.pillow = regexp.MustCompile(`headers or library files could not be found for ([\w]+)`)
	for _, p := range phrasePackages {
		r.phrases = append(r.phrases, regexp.MustCompile(p.re))
	}
	return r
})

// systemNeed reads a failed step's output for what the build lacks from
// the system; nil when it names nothing cwm knows the Debian package of.
// A header of a Python package (numpy/ndarraytypes.h) is not one.
func systemNeed(out string) *SystemNeed {
	var need SystemNeed
	add := func(line string, pkgs ...string) {
		line = strings.TrimSpace(line)
		if len(line) > 200 {
			line = line[:200] + "..."
		}
		need.add(line, pkgs...)
	}
	re := sysRE()
	for _, line := range strings.Split(out, "\n") {
		if m := re.header.FindStringSubmatch(line); m != nil {
			if p := headerPackage(m[1]); p != "" {
				add(line, p)
			}
			continue
		}
		for _, m := range [][]string{re.pkgconfig.FindStringSubmatch(line), re.meson.FindStringSubmatch(line)} {
			if m != nil {
				if p, ok := pkgconfigPackages[strings.ToLower(m[1])]; ok {
					add(line, p)
				}
			}
		}
		if m := re.pillow.FindStringSubmatch(line); m != nil {
			if p, ok := pillowPackages[m[1]]; ok {
				add(line, p)
			}
		}
		for i, p := range re.phrases {
			if p.MatchString(line) {
				add(line, phrasePackages[i].pkgs...)
			}
		}
	}
	if len(need.Packages) == 0 {
		return nil
	}
	return &need
}

// add records pkgs (kept sorted, each once) and, if n has none yet, the
// evidence.
func (n *SystemNeed) add(evidence string, pkgs ...string) {
	if n.Evidence == "" {
		n.Evidence = evidence
	}
	for _, p := range pkgs {
		if !slices.Contains(n.Packages, p) {
			n.Packages = append(n.Packages, p)
		}
	}
	slices.Sort(n.Packages)
}

// headerPackage is the Debian package of a header path, or "".
func headerPackage(h string) string {
	if p, ok := headerPackages[h]; ok {
		return p
	}
	if i := strings.Index(h, "/"); i > 0 {
		return headerPackages[h[:i+1]]
	}
	return ""
}

// without is need's packages that have is missing.
func (n *SystemNeed) without(have []string) []string { return missing(n.Packages, have) }

// missing is what of want have lacks.
func missing(want, have []string) []string {
	var out []string
	for _, p := range want {
		if !slices.Contains(have, p) {
			out = append(out, p)
		}
	}
	return out
}

// maxDerivations bounds how many times one build goes on to a derived
// base: a build whose next step needs yet another library gets one more.
const maxDerivations = 2

// lackingError stops an install whose failed step lacks system packages
// that a derived base can give (Options.DeriveBase).
type lackingError struct{ need *SystemNeed }

func (e *lackingError) Error() string {
	return "the install needs the Debian packages " + strings.Join(e.need.Packages, ", ")
}

// canDerive says whether a build can go on to a base with need's
// packages: an online build on a stored base, with a DeriveBase, that has
// not derived too often, and a need the base does not meet already.
func canDerive(o Options, need *SystemNeed) bool {
	return o.DeriveBase != nil && o.onBase != nil && o.derivations < maxDerivations && len(need.without(o.onBase.Packages)) > 0
}

// buildWithPackages builds again on a base derived from the one chosen
// with the packages need names.
func buildWithPackages(ctx context.Context, sbs *env.Sandboxes, opts Options, need *SystemNeed, say io.Writer) (*env.Env, error) {
	on := *opts.onBase
	add := need.without(on.Packages)
	list := strings.Join(add, ", ")
	fmt.Fprintf(say, "system packages: the install needs %s (%q); a base with them, from %s\n", list, need.Evidence, on.Ref)
	stop := progress.Waiting(say, "a base with "+list, progress.HeartbeatEvery)
	b, err := opts.DeriveBase(ctx, on, add)
	stop()
	if err != nil {
		return nil, fmt.Errorf("a base with the Debian packages %s: %w", list, err)
	}
	fmt.Fprintf(say, "system packages: building again on %s\n", b.Ref)
	next := opts
	next.Bases = []BasePython{*b}
	next.onBase = nil
	next.derivations++
	next.derived = strings.TrimPrefix(opts.derived+"; ", "; ") + fmt.Sprintf("on %s, derived from %s with the Debian packages %s, which an install step lacked (%q)", b.Ref, on.Ref, list, need.Evidence)
	return Build(ctx, sbs, next)
}

// builtOnDerived is the usable environment of the same inputs built on a
// base derived from the chosen one (the same Python, its packages and
// more), or nil: a build that went on to a derived base is stored under
// that base's id, which a later build of the same commit finds here
// without repeating the install that failed.
func builtOnDerived(store *env.Store, opts Options, in idInputs, r Recipe) *env.Env {
	if opts.DeriveBase == nil || opts.onBase == nil || opts.Force {
		return nil
	}
	on := opts.onBase
	for _, b := range opts.Bases {
		if b.Root == on.Root || b.Python != on.Python || len(b.Packages) <= len(on.Packages) || len(missing(on.Packages, b.Packages)) > 0 {
			continue
		}
		in.base = b.Root
		if old := store.Get(envID(in, r)); old != nil && old.Usable {
			return old
		}
	}
	return nil
}
