package basebuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"cwm/internal/base"
	"cwm/internal/errkind"
	"cwm/internal/hostexec"
	"cwm/internal/layertar"
)

// DebianPackages are what every Debian base holds beyond the minimal
// system: Python with venv and pip (so that a build can make a venv with
// pip), git (the layers' repositories) and the CA certificates.
var DebianPackages = []string{"python3", "python3-venv", "python3-pip", "git", "ca-certificates"}

// Debian says which Debian base to build.
type Debian struct {
	// Suite is the release: bookworm (Python 3.11), bullseye (3.9),
	// trixie (3.13), or any other the mirror has.
	Suite string
	// Packages are installed beyond DebianPackages.
	Packages []string
	// Mirror is the archive's URL (default: the host's apt sources, see
	// HostMirror).
	Mirror string
}

// debianEpoch is the SOURCE_DATE_EPOCH of the trees (2024-01-01): files
// mmdebstrap makes get it, so that a tree from the same packages packs
// into the same layer.
const debianEpoch = 1704067200

// bootstrapTimeout bounds mmdebstrap or debootstrap (downloads included).
const bootstrapTimeout = 30 * time.Minute

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*$`)

// BuildDebian builds a base from the Debian archive: mmdebstrap in a user
// namespace (its unshare mode, no root needed) writes the tree as a tar,
// which layertar unpacks into a stage; where mmdebstrap is missing,
// debootstrap (as root) writes the stage directly. The tree is given an
// /etc/hosts (the archive's packages leave it to the installer), packed
// into one layer, and stored as ImportDir stores a directory.
func BuildDebian(ctx context.Context, s *base.Store, d Debian, o Options) (*base.Base, error) {
	if !nameRE.MatchString(d.Suite) {
		return nil, errkind.Errorf(errkind.Usage, "--debian %q: want a suite name such as bookworm, bullseye or trixie", d.Suite)
	}
	for _, p := range d.Packages {
		if !nameRE.MatchString(p) {
			return nil, errkind.Errorf(errkind.Usage, "--packages: %q is not a Debian package name", p)
		}
	}
	mirror := d.Mirror
	if mirror == "" {
		var err error
		if mirror, err = HostMirror("/etc/apt"); err != nil {
			return nil, err
		}
	}
	if !strings.HasPrefix(mirror, "http://") && !strings.HasPrefix(mirror, "https://") && !strings.HasPrefix(mirror, "file:/") {
		return nil, errkind.Errorf(errkind.Usage, "--mirror %q: want an http, https or file URL of a Debian archive", mirror)
	}
	pkgs := append(append([]string{}, DebianPackages...), d.Packages...)
	st, err := s.NewStage()
	if err != nil {
		return nil, err
	}
	tool, err := bootstrap(ctx, st, d.Suite, mirror, pkgs, o)
	if err != nil {
		st.Discard()
		return nil, fmt.Errorf("build a Debian %s base: %w", d.Suite, err)
	}
	if err := addHosts(st.Rootfs()); err != nil {
		st.Discard()
		return nil, fmt.Errorf("build a Debian %s base: %w", d.Suite, err)
	}
	src := base.Source{Kind: base.KindDebian, Ref: mirror, Suite: d.Suite, Packages: d.Packages, Tool: tool}
	return fromTree(ctx, s, st, st.Rootfs(), src, o)
}

// addHosts gives the tree an /etc/hosts naming localhost, unless it has
// one, with the times of the archive's files: the file at the epoch, /etc
// as it was, so that the tree packs the same way every time.
func addHosts(rootfs string) error {
	etc := filepath.Join(rootfs, "etc")
	hosts := filepath.Join(etc, "hosts")
	if _, err := os.Lstat(hosts); err == nil {
		return nil
	}
	fi, err := os.Stat(etc)
	if err != nil {
		return fmt.Errorf("the tree has no /etc: %w", err)
	}
	if err := os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"), 0o644); err != nil {
		return err
	}
	epoch := time.Unix(debianEpoch, 0)
	if err := os.Chtimes(hosts, epoch, epoch); err != nil {
		return err
	}
	return os.Chtimes(etc, fi.ModTime(), fi.ModTime())
}

// bootstrap makes the tree in st's rootfs and returns the tool and its
// version.
func bootstrap(ctx context.Context, st *base.Stage, suite, mirror string, pkgs []string, o Options) (string, error) {
	env := []string{fmt.Sprintf("SOURCE_DATE_EPOCH=%d", debianEpoch)}
	if p, err := exec.LookPath("mmdebstrap"); err == nil {
		tool := toolVersion(ctx, p)
		out := filepath.Join(st.Dir(), "tree.tar")
		args := []string{p, "--quiet", "--mode=unshare", "--variant=minbase", "--include=" + strings.Join(pkgs, ","),
			"--skip=output/dev", suite, out, mirror}
		if _, err := hostexec.Output(ctx, hostexec.Cmd{Args: args, Env: env, Timeout: bootstrapTimeout}); err != nil {
			return "", fmt.Errorf("%s: %w", tool, err)
		}
		f, err := os.Open(out)
		if err != nil {
			return "", err
		}
		defer os.Remove(out)
		defer f.Close()
		u, err := layertar.New(st.Rootfs(), layertar.Options{MaxBytes: o.MaxUnpacked, MaxEntries: o.MaxEntries})
		if err != nil {
			return "", err
		}
		defer u.Close()
		fi, _ := f.Stat()
		if err := u.Layer(f, layertar.Layer{Name: "the tree mmdebstrap wrote", Size: fi.Size()}); err != nil {
			return "", err
		}
		return tool, u.Finish()
	}
	p, err := exec.LookPath("debootstrap")
	if err != nil {
		return "", errkind.Errorf(errkind.Unavailable, "neither mmdebstrap nor debootstrap is installed (make setup installs both)")
	}
	if os.Geteuid() != 0 {
		return "", errkind.Errorf(errkind.Unavailable, "mmdebstrap is not installed and debootstrap needs root: install mmdebstrap, which builds in a user namespace")
	}
	tool := toolVersion(ctx, p)
	args := []string{p, "--variant=minbase", "--include=" + strings.Join(pkgs, ","), suite, st.Rootfs(), mirror}
	if _, err := hostexec.Output(ctx, hostexec.Cmd{Args: args, Env: env, Timeout: bootstrapTimeout}); err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	return tool, nil
}

// toolVersion is "NAME VERSION" of a bootstrap tool.
func toolVersion(ctx context.Context, p string) string {
	out, err := hostexec.Output(ctx, hostexec.Cmd{Args: []string{p, "--version"}})
	v := strings.TrimSpace(string(out))
	if err != nil || v == "" {
		return filepath.Base(p)
	}
	if !strings.HasPrefix(v, filepath.Base(p)) {
		v = filepath.Base(p) + " " + v
	}
	return strings.SplitN(v, "\n", 2)[0]
}
