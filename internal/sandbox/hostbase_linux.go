package sandbox

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The host base is what a sandbox without --base runs on: an almost empty
// skeleton (a lower layer) with the host's /usr bound read-only and a
// generated /etc, never the host's own. The generated /etc holds the files
// programs need to run (the dynamic loader's cache, the CA bundle, locale
// and time zone, Python's and the shell's configuration, alternatives) and
// files of cwm's own (passwd, group, hosts, resolv.conf, nsswitch.conf,
// gitconfig); it has no shadow or gshadow, no ssh keys, no credentials.

// etcCopied are the host /etc entries the generated /etc takes, when the
// host has them. Directories are copied whole, but only what everybody
// may read.
var etcCopied = []string{
	"alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "debian_version",
	"default", "environment", "ethertypes", "fonts", "gai.conf", "host.conf", "inputrc",
	"issue", "issue.net", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "locale.alias",
	"locale.conf", "locale.gen", "localtime", "login.defs", "lsb-release", "magic", "magic.mime",
	"mailcap", "manpath.config", "matplotlibrc", "mime.types", "mtab", "networks", "os-release",
	"papersize", "perl", "profile", "profile.d", "protocols", "python3", "rpc", "services",
	"shells", "ssl/certs", "ssl/openssl.cnf", "timezone",
}

// etcGenerated are the files of the generated /etc that cwm writes itself.
var etcGenerated = map[string]string{
	"passwd": "root:x:0:0:root:/root:/bin/bash\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n" +
		"bin:x:2:2:bin:/bin:/usr/sbin/nologin\n" +
		"sys:x:3:3:sys:/dev:/usr/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	"group": "root:x:0:\ndaemon:x:1:\nbin:x:2:\nsys:x:3:\nadm:x:4:\ntty:x:5:\ndisk:x:6:\n" +
		"staff:x:50:\nusers:x:100:\nnogroup:x:65534:\n",
	"hosts":    "127.0.0.1\tlocalhost\n127.0.1.1\tcwm\n::1\tlocalhost ip6-localhost ip6-loopback\n",
	"hostname": "cwm\n",
	// The sandbox has no network: no name server to ask.
	"resolv.conf": "# cwm sandboxes have no network\n",
	"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n" +
		"protocols: files\nservices: files\nethers: files\nrpc: files\nnetgroup: files\n",
	// The repository in a layer is the sandbox's own, whoever owns it.
	"gitconfig": "[safe]\n\tdirectory = *\n",
}

// etcSources lists the host paths the generated /etc copies, with the
// python3.X directories the host has.
func etcSources() []string {
	src := append([]string{}, etcCopied...)
	if m, err := filepath.Glob("/etc/python3.*"); err == nil {
		for _, p := range m {
			src = append(src, strings.TrimPrefix(p, "/etc/"))
		}
	}
	return src
}

// hostEtc returns (making it once) the generated /etc for this host under
// home. Its name hashes what it is made of, so a change to one of the
// copied host files or directories (a new CA bundle, an updated loader
// cache) makes a new one.
func hostEtc(home string) (string, error) {
	srcs := etcSources()
	h := fnv.New64a()
	fmt.Fprintf(h, "v1\n")
	for _, name := range slices.Sorted(maps.Keys(etcGenerated)) {
		fmt.Fprintf(h, "%s\x00%s\n", name, etcGenerated[name])
	}
	for _, s := range srcs {
		var st unix.Stat_t
		if unix.Lstat("/etc/"+s, &st) != nil {
			continue
		}
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00%d.%d\x00%d\n", s, st.Mode, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ino)
	}
	dir := filepath.Join(home, "base", "etc-"+strconv.FormatUint(h.Sum64(), 16))
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".etc-")
	if err != nil {
		return "", err
	}
	os.Chmod(tmp, 0o755)
	if err := fillEtc(tmp, srcs); err != nil {
		RemoveAll(tmp)
		return "", fmt.Errorf("generate /etc: %w", err)
	}
	return dir, publishDir(tmp, dir)
}

func fillEtc(dst string, srcs []string) error {
	for _, s := range srcs {
		if err := copyReadable("/etc/"+s, filepath.Join(dst, s)); err != nil {
			return err
		}
	}
	for name, content := range etcGenerated {
		if err := os.WriteFile(filepath.Join(dst, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyReadable copies src to dst: symlinks as they are, directories with
// what they hold, files that everybody may read. A missing src is skipped.
func copyReadable(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.IsDir():
			if info.Mode().Perm()&0o005 != 0o005 {
				return fs.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		case info.Mode().IsRegular() && info.Mode().Perm()&0o004 != 0:
			return CopyFile(p, target, info.Mode().Perm())
		}
		return nil
	})
}

// CopyFile copies the regular file src to dst, which must not exist, with
// mode perm.
func CopyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// publishDir renames a finished directory into place; when another cwm
// made the same one first, that one is kept.
func publishDir(tmp, dir string) error {
	if err := os.Rename(tmp, dir); err != nil {
		RemoveAll(tmp)
		if _, serr := os.Stat(dir); serr == nil {
			return nil
		}
		return err
	}
	return nil
}

// hostSkeleton makes (once) the lowest layer of the host base: an almost
// empty root with mount points for the host's system directories and the
// same /bin, /lib and /sbin links as the host. It returns the skeleton and
// the host directories to bind at the same path (/usr, and /bin, /lib, ...
// where they are directories rather than links into /usr).
func hostSkeleton(home string) (string, []string, error) {
	type entry struct {
		name, link string
		mode       uint32 // with the sticky bit, which os.FileMode spells differently
	}
	entries := []entry{{"proc", "", 0o555}, {"dev", "", 0o755}, {"tmp", "", 0o1777},
		{"root", "", 0o700}, {"home", "", 0o755}, {"run", "", 0o755}, {"var", "", 0o755},
		{"var/tmp", "", 0o1777}, {"mnt", "", 0o755}, {"opt", "", 0o755}, {"srv", "", 0o755},
		{"sys", "", 0o555}, {"usr", "", 0o755}, {"etc", "", 0o755}}
	hostDirs := []string{"/usr"}
	for _, d := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		fi, err := os.Lstat("/" + d)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink("/" + d)
			if err != nil {
				return "", nil, err
			}
			entries = append(entries, entry{name: d, link: target})
		} else if fi.IsDir() {
			entries = append(entries, entry{name: d, mode: 0o755})
			hostDirs = append(hostDirs, "/"+d)
		}
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "v2\n")
	for _, e := range entries {
		fmt.Fprintf(h, "%s\x00%s\x00%o\n", e.name, e.link, e.mode)
	}
	dir := filepath.Join(home, "base", "host-"+strconv.FormatUint(h.Sum64(), 16))
	if _, err := os.Stat(dir); err == nil {
		return dir, hostDirs, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".skel-")
	if err != nil {
		return "", nil, err
	}
	os.Chmod(tmp, 0o755)
	for _, e := range entries {
		p := filepath.Join(tmp, e.name)
		if e.link != "" {
			if err := os.Symlink(e.link, p); err != nil {
				RemoveAll(tmp)
				return "", nil, err
			}
			continue
		}
		if err := unix.Mkdir(p, e.mode); err != nil {
			RemoveAll(tmp)
			return "", nil, err
		}
		unix.Chmod(p, e.mode) // umask
	}
	return dir, hostDirs, publishDir(tmp, dir)
}
