package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// What cwm needs of a host, checked when a runtime starts so that a host
// that cannot run sandboxes says why and what to change at once, rather
// than with EPERM from deep inside the first sandbox (docs/sandbox.md,
// "Hosts").

// hostFiles are the files the checks read; tests point them elsewhere.
var hostFiles = struct {
	maxUserNS, unprivClone, apparmorRestrict, apparmorCurrent string
}{
	maxUserNS:        "/proc/sys/user/max_user_namespaces",
	unprivClone:      "/proc/sys/kernel/unprivileged_userns_clone",
	apparmorRestrict: "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
	apparmorCurrent:  "/proc/self/attr/apparmor/current",
}

// readSetting reads a number from a /proc/sys file; ok is false when the
// host has no such setting.
func readSetting(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return n, err == nil
}

// checkUserNamespaces reports a setting of this host that forbids the user
// namespaces every sandbox needs, with the fix.
func checkUserNamespaces(uid int) error {
	if n, ok := readSetting(hostFiles.maxUserNS); ok && n == 0 {
		return errors.New("user namespaces are disabled on this host (user.max_user_namespaces is 0); " +
			"as root: sysctl -w user.max_user_namespaces=15000, and put it in /etc/sysctl.d/ to keep it")
	}
	if uid == 0 {
		return nil
	}
	if n, ok := readSetting(hostFiles.unprivClone); ok && n == 0 {
		return errors.New("this kernel forbids user namespaces to ordinary users (kernel.unprivileged_userns_clone is 0); " +
			"as root: sysctl -w kernel.unprivileged_userns_clone=1, or run cwm as root")
	}
	if n, ok := readSetting(hostFiles.apparmorRestrict); ok && n == 1 && !apparmorProfiled() {
		return errors.New("AppArmor lets ordinary users make user namespaces only from programs with a profile " +
			"(kernel.apparmor_restrict_unprivileged_userns is 1, as on Ubuntu 23.10 and later), and cwm runs without one; " +
			"install the profile cwm ships: set its path in deploy/apparmor/cwm to this cwm, then " +
			"sudo cp deploy/apparmor/cwm /etc/apparmor.d/cwm && sudo apparmor_parser -r /etc/apparmor.d/cwm " +
			"(or, as root, sysctl -w kernel.apparmor_restrict_unprivileged_userns=0)")
	}
	return nil
}

// apparmorProfiled reports whether this process runs under an AppArmor
// profile (cwm's, which allows user namespaces) rather than unconfined.
func apparmorProfiled() bool {
	b, err := os.ReadFile(hostFiles.apparmorCurrent)
	if err != nil {
		return false
	}
	cur := strings.TrimSpace(string(b))
	return cur != "" && cur != "unconfined"
}

// LimitsEnv names the variable that lets cwm run without cgroups, limiting
// memory and processes with per-process rlimits instead (weaker: not per
// sandbox): CWM_LIMITS=rlimits.
const LimitsEnv = "CWM_LIMITS"

// cgroupsRequired turns a host without usable cgroups into one clear
// error saying what to configure, unless rlimits were asked for.
func cgroupsRequired(cg cgroups, uid int, rlimitsOK bool) error {
	if cg.version != 0 || rlimitsOK {
		return nil
	}
	fix := "set " + LimitsEnv + "=rlimits to limit memory and processes per process instead (weaker: not per sandbox)"
	switch {
	case cg.v2 && uid != 0:
		fix = "run cwm in a cgroup delegated to you, for example under systemd-run --user --scope -p Delegate=yes, " +
			"or as a service with Delegate=yes; or " + fix
	case cg.v2:
		fix = "run cwm in a cgroup whose parent enables the memory and pids controllers " +
			"(for example systemd-run --scope -p Delegate=yes); or " + fix
	case uid != 0:
		fix = "run cwm as root or in cgroups writable by uid " + strconv.Itoa(uid) + "; or " + fix
	}
	return fmt.Errorf("no usable cgroups for the sandboxes' memory and process limits (%s): %s", cg.reason, fix)
}
