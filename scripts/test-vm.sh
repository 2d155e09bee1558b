#!/usr/bin/env bash
# make test-vm: runs cwm's test binaries in a Debian 12 virtual machine
# booted with cgroup v2 only, as root and as an ordinary user, and prints
# what passed, skipped and failed there.
#
# The root filesystem is made once with debootstrap (from this host's own
# Debian mirror, as apt knows it) and cached in $CWM_VM_CACHE (default
# ~/.cache/cwm-test-vm); it holds every package the tests need, since the
# VM has no network. Each run boots Debian's kernel from it under qemu
# (with KVM when /dev/kvm works), with the disk in snapshot mode so that
# runs do not change it, shares the repository (read-only) and an output
# directory with 9p, and runs scripts/test-vm-guest.sh there as a systemd
# service that powers the VM off when it is done.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${CWM_VM_CACHE:-$HOME/.cache/cwm-test-vm}
out=${CWM_VM_OUT:-$top/vm-results}
timeout=${CWM_VM_TIMEOUT:-43200}
mem=${CWM_VM_MEMORY:-6G}
say() { printf 'test-vm: %s\n' "$*" >&2; }

# Packages of the VM: what the tests run (Python, pytest, git, patch, bwrap
# for the benchmarks' baseline), what the guest script uses, and the kernel.
vm_pkgs=systemd,systemd-sysv,dbus,udev,kmod,linux-image-amd64,initramfs-tools,procps,iproute2,util-linux,e2fsprogs,uidmap,ca-certificates,python3,python3-pytest,python3-venv,python3-setuptools,python3-pip,git,patch,bubblewrap,hyperfine,coreutils,findutils,grep,sed,gawk,less

need() {
	local missing=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		say "installing$missing"
		local sudo=""
		[ "$(id -u)" = 0 ] || sudo=sudo
		$sudo apt-get update -qq
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
	fi
}

# mirror prints the Debian mirror apt uses on this host.
mirror() {
	local m
	m=$(grep -hs -A3 -E '^Types: *deb' /etc/apt/sources.list.d/*.sources | awk '/^URIs:/ {print $2}' | grep -v security | head -1)
	[ -n "$m" ] || m=$(grep -hs -E '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}' | grep -v security | head -1)
	[ -n "$m" ] || { say "no Debian mirror in /etc/apt: set CWM_VM_MIRROR"; exit 1; }
	echo "${CWM_VM_MIRROR:-$m}"
}

make_rootfs() {
	local root=$cache/rootfs
	# Made again when the package list changes.
	if [ "$(cat "$cache/rootfs.done" 2>/dev/null)" = "$vm_pkgs" ]; then return; fi
	need debootstrap e2fsprogs
	# An interrupted debootstrap leaves /proc and /sys mounted inside.
	{ grep -o " $root/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$root"
	mkdir -p "$cache"
	say "debootstrap Debian 12 into $root (once; a few minutes)"
	debootstrap --variant=minbase --include="$vm_pkgs" bookworm "$root" "$(mirror)" >"$cache/debootstrap.log" 2>&1 || {
		tail -20 "$cache/debootstrap.log" >&2
		exit 1
	}
	# A user for the unprivileged runs, with a subordinate id range.
	chroot "$root" useradd -m -u 1000 -s /bin/bash tester
	echo "tester:200000:65536" >"$root/etc/subuid"
	echo "tester:200000:65536" >"$root/etc/subgid"
	echo cwm-test-vm >"$root/etc/hostname"
	printf '/dev/vda / ext4 rw,relatime 0 1\n' >"$root/etc/fstab"
	mkdir -p "$root/mnt/repo" "$root/mnt/out"
	# The guest runs the tests at boot, then powers off.
	cat >"$root/etc/systemd/system/cwm-tests.service" <<'EOF'
[Unit]
Description=cwm tests
After=local-fs.target
[Service]
Type=oneshot
Delegate=yes
ExecStartPre=/bin/mount -t 9p -o trans=virtio,version=9p2000.L,ro repo /mnt/repo
ExecStartPre=/bin/mount -t 9p -o trans=virtio,version=9p2000.L out /mnt/out
ExecStart=/bin/bash /mnt/repo/scripts/test-vm-guest.sh
ExecStopPost=/bin/systemctl --no-block poweroff
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity
[Install]
WantedBy=multi-user.target
EOF
	chroot "$root" systemctl enable cwm-tests.service >/dev/null 2>&1
	chroot "$root" systemctl mask getty@tty1.service serial-getty@ttyS0.service systemd-timesyncd.service apt-daily.timer apt-daily-upgrade.timer >/dev/null 2>&1 || true
	# 9p at boot without waiting for udev's module loading.
	printf '9p\n9pnet\n9pnet_virtio\n' >"$root/etc/modules-load.d/9p.conf"
	echo "$vm_pkgs" >"$cache/rootfs.done"
	rm -f "$cache/root.img"
}

make_image() {
	if [ -f "$cache/root.img" ]; then return; fi
	say "making the disk image"
	mke2fs -q -t ext4 -d "$cache/rootfs" "$cache/root.img" 8G
}

stage() {
	# The binaries the guest runs, built here: cwm and each package's tests.
	mkdir -p "$out"
	rm -rf "$out"/*
	mkdir -p "$out/bin"
	(cd "$top" && CGO_ENABLED=0 go build -trimpath -o "$out/bin/cwm" ./cmd/cwm)
	for p in sandbox envbuild tracer tasks testrun trace cli/sandboxcmd; do
		(cd "$top" && CGO_ENABLED=0 go test -c -o "$out/bin/$(echo $p | tr / _).test" "./internal/$p")
	done
	chmod -R a+rX "$out"
	chmod a+rwx "$out"
}

boot() {
	local root=$cache/rootfs kernel initrd accel=tcg cpu=max
	kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
	initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
	# KVM needs the CPU's virtualisation extensions besides /dev/kvm (a
	# nested guest may have the device without them and hang at boot).
	if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then accel=kvm cpu=host; fi
	accel=${CWM_VM_ACCEL:-$accel}
	# Software emulation runs the tests 10-30 times slower: the wall-clock
	# bounds they assert are scaled (internal/testtime), not the limits.
	# A shorter run: CWM_VM_SUITES (the ordinary user's suites),
	# CWM_VM_ROOT_SUITES (root's), CWM_VM_SKIP (tests to skip, a -test.skip
	# pattern; "none" for no root suites), CWM_VM_BENCH=0 (no benchmarks).
	printf '%s' "${CWM_VM_SUITES:-}" >"$out/suites"
	printf '%s' "${CWM_VM_BENCH:-1}" >"$out/bench"
	printf '%s' "${CWM_VM_ROOT_SUITES:-}" >"$out/root-suites"
	printf '%s' "${CWM_VM_SKIP:-}" >"$out/skip"
	if [ "$accel" = tcg ]; then echo "${CWM_VM_TIME_SCALE:-30}" >"$out/time-scale"; else echo "${CWM_VM_TIME_SCALE:-2}" >"$out/time-scale"; fi
	say "booting $(basename "$kernel") ($accel, cgroup v2 only); results in $out"
	timeout --foreground "$timeout" qemu-system-x86_64 -machine q35,accel=$accel -cpu $cpu -smp "$(nproc)" -m "$mem" \
		-kernel "$kernel" -initrd "$initrd" \
		-append "root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 panic=-1 loglevel=3" \
		-drive file="$cache/root.img",if=virtio,format=raw,snapshot=on \
		-virtfs local,path="$top",mount_tag=repo,security_model=none,readonly=on \
		-virtfs local,path="$out",mount_tag=out,security_model=none \
		-nographic -no-reboot -nic none >"$out/console.log" 2>&1 || {
		say "the VM did not finish (see $out/console.log)"
		tail -30 "$out/console.log" >&2
		exit 1
	}
}

report() {
	[ -f "$out/results.tsv" ] || { say "no results (see $out/console.log)"; tail -30 "$out/console.log" >&2; exit 1; }
	[ -f "$out/done" ] || say "the VM stopped before its last test: the table is partial"
	printf '%-28s %-26s %-14s %6s %6s %6s\n' HOST PRIVILEGE SUITE PASS SKIP FAIL
	awk -F'\t' '{printf "%-28s %-26s %-14s %6s %6s %6s\n", $1, $2, $3, $4, $5, $6}' "$out/results.tsv"
	if [ ! -f "$out/done" ] || awk -F'\t' '$6 != 0 {bad=1} END {exit !bad}' "$out/results.tsv"; then
		say "failures: see $out/*.log"
		exit 1
	fi
}

need qemu-system-x86 e2fsprogs
make_rootfs
make_image
stage
boot
report
