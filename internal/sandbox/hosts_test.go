package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserNamespaceChecks: each setting that forbids user namespaces is
// found by its file and named with its fix (the files are fakes here:
// Ubuntu's AppArmor restriction exists only on Ubuntu's kernels).
func TestUserNamespaceChecks(t *testing.T) {
	saved := hostFiles
	t.Cleanup(func() { hostFiles = saved })
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if content != "" {
			os.WriteFile(p, []byte(content+"\n"), 0o644)
		}
		return p
	}
	for _, c := range []struct {
		name                        string
		uid                         int
		maxNS, clone, restrict, cur string
		want                        string
	}{
		{"all allowed", 1000, "15000", "1", "0", "unconfined", ""},
		{"no user namespaces", 1000, "0", "", "", "", "user.max_user_namespaces is 0"},
		{"no user namespaces, as root", 0, "0", "", "", "", "user.max_user_namespaces is 0"},
		{"Debian's old switch", 1000, "15000", "0", "", "", "kernel.unprivileged_userns_clone is 0"},
		{"the switch does not bind root", 0, "15000", "0", "", "", ""},
		{"AppArmor restriction, no profile", 1000, "15000", "", "1", "unconfined", "deploy/apparmor/cwm"},
		{"AppArmor restriction, cwm's profile", 1000, "15000", "", "1", "cwm (unconfined)", ""},
		{"AppArmor restriction does not bind root", 0, "15000", "", "1", "unconfined", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			hostFiles.maxUserNS = file(c.name+"-max", c.maxNS)
			hostFiles.unprivClone = file(c.name+"-clone", c.clone)
			hostFiles.apparmorRestrict = file(c.name+"-restrict", c.restrict)
			hostFiles.apparmorCurrent = file(c.name+"-current", c.cur)
			err := checkUserNamespaces(c.uid)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("checkUserNamespaces(%d) = %v, want nil", c.uid, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("checkUserNamespaces(%d) = %v, want an error naming %q", c.uid, err, c.want)
			}
		})
	}
}

func TestCgroupsRequired(t *testing.T) {
	for _, c := range []struct {
		cg        cgroups
		uid       int
		rlimits   bool
		want      string
		wantError bool
	}{
		{cgroups{version: 1}, 1000, false, "", false},
		{cgroups{reason: "x"}, 1000, true, "", false},
		{cgroups{reason: "not delegated", v2: true}, 1000, false, "Delegate=yes", true},
		{cgroups{reason: "not delegated", v2: true}, 0, false, "memory and pids controllers", true},
		{cgroups{reason: "not writable"}, 1000, false, "writable by uid 1000", true},
	} {
		err := cgroupsRequired(c.cg, c.uid, c.rlimits)
		if (err != nil) != c.wantError || err != nil && (!strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), LimitsEnv+"=rlimits")) {
			t.Errorf("cgroupsRequired(%+v, %d, %v) = %v", c.cg, c.uid, c.rlimits, err)
		}
	}
}

// TestAppArmorProfile checks deploy/apparmor/cwm with apparmor_parser. It
// needs AppArmor 4 (Ubuntu 24.04) for the userns rule; an older parser
// (Debian 12 has 3.0) checks the rest of the profile, with the rule and
// the 4.0 ABI line taken out, and the test checks those two are there.
func TestAppArmorProfile(t *testing.T) {
	profile, err := os.ReadFile("../../deploy/apparmor/cwm")
	if err != nil {
		t.Fatal(err)
	}
	parser, err := exec.LookPath("apparmor_parser")
	if err != nil {
		t.Skip("apparmor_parser is not installed (make setup installs Debian's apparmor package)")
	}
	text := string(profile)
	for _, want := range []string{"abi <abi/4.0>,", "\n  userns,\n", "profile cwm /usr/local/bin/cwm flags=(unconfined) {"} {
		if !strings.Contains(text, want) {
			t.Errorf("profile lacks %q", want)
		}
	}
	out, _ := exec.Command(parser, "--version").CombinedOutput()
	if !strings.Contains(string(out), "version 4.") && !strings.Contains(string(out), "version 5.") {
		t.Logf("%s: AppArmor before 4.0; checking the profile without its 4.0 rule", strings.SplitN(string(out), "\n", 2)[0])
		text = strings.NewReplacer("abi <abi/4.0>,\n", "", "  userns,\n", "").Replace(text)
	}
	p := filepath.Join(t.TempDir(), "cwm")
	os.WriteFile(p, []byte(text), 0o644)
	if out, err := exec.Command(parser, "--skip-kernel-load", "--skip-cache", "-Q", p).CombinedOutput(); err != nil {
		t.Errorf("apparmor_parser refuses the profile: %v\n%s", err, out)
	}
	// And it does refuse a broken one, so the check means something.
	os.WriteFile(p, []byte(strings.Replace(text, "{", "", 1)), 0o644)
	if err := exec.Command(parser, "--skip-kernel-load", "--skip-cache", "-Q", p).Run(); err == nil {
		t.Errorf("apparmor_parser accepts a profile without its opening brace")
	}
}
