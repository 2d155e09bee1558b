#!/usr/bin/env bash
# Runs inside the test VM (scripts/test-vm.sh) as root, from a systemd
# service with Delegate=yes: cwm's test binaries as root, then the
# messages cwm must give on a host that cannot run it, then the sandbox
# benchmarks, then the test binaries as the ordinary user tester through a
# delegated cgroup subtree (as systemd gives a user service). Writes one
# log per run and results.tsv (host, privilege, suite, passed, skipped,
# failed) to /mnt/out.
set -u
out=/mnt/out
bin=$out/bin
repo=/mnt/repo
host="Debian 12, Linux $(uname -r | cut -d- -f1), cgroup v$([ -f /sys/fs/cgroup/cgroup.controllers ] && echo 2 || echo 1)"
# As root: the sandbox (cgroup v2 as a delegated service's root: limits,
# containment, the escape suite) and its command line. As the ordinary
# user: every suite that starts sandboxes. -test.short trims repetitions
# (TestNoLeaks' hundred cycles to ten), not cases.
root_suites="sandbox cli_sandboxcmd"
suites="sandbox cli_sandboxcmd testrun trace envbuild tracer tasks"
timeout=${CWM_VM_TEST_TIMEOUT:-240m}
# What the host asked for (scripts/test-vm.sh): other suites, and tests
# to skip (a -test.skip pattern), for a shorter run under emulation.
[ -s "$out/suites" ] && suites=$(cat "$out/suites")
[ -s "$out/root-suites" ] && root_suites=$(cat "$out/root-suites")
skip=$(cat "$out/skip" 2>/dev/null)
[ "$root_suites" = none ] && root_suites=""
bench=$(cat "$out/bench" 2>/dev/null || echo 1)
: >"$out/results.tsv"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CGO_ENABLED=0
# How much slower than the host this VM runs (scripts/test-vm.sh).
export CWM_TEST_TIME_SCALE=$(cat "$out/time-scale" 2>/dev/null || echo 1)

# count prints passed, skipped and failed top-level tests of a -test.v log;
# a binary that dies before its summary counts one failure more.
count() {
	local log=$1 rc=$2 p s f
	p=$(grep -c '^--- PASS' "$log")
	s=$(grep -c '^--- SKIP' "$log")
	f=$(grep -c '^--- FAIL' "$log")
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
	printf '%s\t%s\t%s' "$p" "$s" "$f"
}

record() { # privilege suite log rc
	printf '%s\t%s\t%s\t%s\n' "$host" "$1" "$2" "$(count "$3" "$4")" >>"$out/results.tsv"
}

# Suites as root (the service's cgroup is delegated to it).
for s in $root_suites; do
	pkg=${s//_//}
	log=$out/root-$s.log
	(cd "$repo/internal/$pkg" && HOME=/root TMPDIR=/tmp CWM_TEST_BINARY=$bin/cwm "$bin/$s.test" -test.v -test.short -test.count=1 -test.timeout="$timeout" -test.skip="$skip") >"$log" 2>&1
	record "root" "$s" "$log" $?
done

# The messages of hosts that cannot run cwm as they are.
check() { # privilege name want command...
	local priv=$1 name=$2 want=$3
	local log=$out/msg-$name.log
	shift 3
	"$@" >"$log" 2>&1
	if grep -q -- "$want" "$log"; then
		echo "--- PASS: $name" >>"$log"
		printf '%s\t%s\t%s\t1\t0\t0\n' "$host" "$priv" "message: $name" >>"$out/results.tsv"
	else
		echo "--- FAIL: $name: want a message with \"$want\"" >>"$log"
		printf '%s\t%s\t%s\t0\t0\t1\n' "$host" "$priv" "message: $name" >>"$out/results.tsv"
	fi
}
# As tester outside any delegated subtree (the root service's own cgroup).
check "user, no delegation" no-delegation "Delegate=yes" \
	setpriv --reuid=1000 --regid=1000 --init-groups env HOME=/home/tester "$bin/cwm" sandbox run -- true
sysctl -q -w user.max_user_namespaces=0
check "user, no user namespaces" no-userns "user.max_user_namespaces" \
	systemd-run --quiet --wait --pipe --collect -p User=tester -p Delegate=yes -E HOME=/home/tester "$bin/cwm" sandbox run -- true
check "root, no user namespaces" no-userns-root "user.max_user_namespaces" \
	env HOME=/root "$bin/cwm" sandbox run -- true
sysctl -q -w user.max_user_namespaces=15000

# The sandbox benchmarks against bwrap, as root, on cgroup v2.
[ "$bench" = 0 ] || {
(cd "$repo/internal/sandbox" && HOME=/root "$bin/sandbox.test" -test.run '^$' -test.bench 'StartExecClose' -test.benchtime 200x) >"$out/bench-sandbox.log" 2>&1
(cd "$repo/internal/cli/sandboxcmd" && HOME=/root CWM_TEST_BINARY=$bin/cwm "$bin/cli_sandboxcmd.test" -test.run '^$' -test.bench 'SandboxRunProcess' -test.benchtime 300x) >"$out/bench-process.log" 2>&1

# Where a whole cwm process's time goes: its start-up alone (`cwm
# version`, which touches no sandbox) against `cwm sandbox run -- true`,
# ten of each, and the package inits of one start (GODEBUG=inittrace=1).
{
	TIMEFORMAT=%R
	for i in 1 2 3 4 5 6 7 8 9 10; do
		printf 'version\t'; { time HOME=/root "$bin/cwm" version >/dev/null; } 2>&1
		printf 'sandbox-run\t'; { time HOME=/root "$bin/cwm" sandbox run -- true >/dev/null; } 2>&1
	done
	GODEBUG=inittrace=1 "$bin/cwm" version 2>&1 >/dev/null | awk '{ms += $5} END {printf "inittrace-ms\t%.1f\n", ms}'
} >"$out/startup.log" 2>&1
}

# Suites as tester, in a transient service whose cgroup systemd delegates
# to it.
mkdir -p /tmp/tester && chown tester:tester /tmp/tester
for s in $suites; do
	pkg=${s//_//}
	log=$out/user-$s.log
	systemd-run --quiet --wait --pipe --collect -p User=tester -p Group=tester -p Delegate=yes \
		-p WorkingDirectory="$repo/internal/$pkg" -E HOME=/home/tester -E TMPDIR=/tmp/tester -E PATH="$PATH" -E CWM_TEST_TIME_SCALE="$CWM_TEST_TIME_SCALE" -E CWM_TEST_BINARY="$bin/cwm" \
		"$bin/$s.test" -test.v -test.short -test.count=1 -test.timeout="$timeout" -test.skip="$skip" >"$log" 2>&1
	record "user, delegated cgroup" "$s" "$log" $?
done

echo done >"$out/done"
