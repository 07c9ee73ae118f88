# shellcheck shell=bash
# What the parts of the deb lane share (tests/deb/run.sh, systemd.sh,
# containers.sh): the chroot into the Debian 12 root, and the systemd guest
# made of that root (an overlay with the test and its unit, the host's
# Redis, the initramfs, the boot, the console's results).  Source it after
# tests/lib/lib.sh and tests/lib/vm.sh.

# inroot CMD...: CMD in the root $R, in its own mount and PID namespace (its
# /proc, /sys and /dev go away with it), apt's cache of .debs bound from
# $DEB_ARCHIVES.
# shellcheck disable=SC2016 # the inner script expands its own arguments
inroot() {
	unshare --mount --pid --fork --kill-child -- sh -c '
		R=$1; shift
		mount -t proc proc "$R/proc" && mount -t sysfs sysfs "$R/sys" &&
		mount --rbind /dev "$R/dev" &&
		mount --bind "$0" "$R/var/cache/apt/archives" &&
		exec chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"' \
		"$DEB_ARCHIVES" "$R" "$@"
}
# shellcheck disable=SC2034 # used by the scripts that source this file
APT=(apt-get -q -y -o Dpkg::Use-Pty=0 -o APT::Color=0 --no-install-recommends)
# apt_in PKG...: apt install in $R, with an update first when the cached
# lists are stale.
apt_in() {
	inroot "${APT[@]}" install "$@" || { inroot apt-get -q update && inroot "${APT[@]}" install "$@"; }
}

# deb_guest_unit OV TAG SCRIPT DESCRIPTION AFTER: into the overlay OV of a
# systemd guest, the test SCRIPT as /usr/local/sbin/TAG-test with the
# guests' helpers (tests/deb/guest-lib.sh), run once by TAG-test.service
# (ordered after AFTER, its output on the console); no login prompt on the
# console; the hostname TAG; the module with strict=1 (the agent leases the
# worker id).
deb_guest_unit() {
	local ov=$1 tag=$2 script=$3 desc=$4 after=$5
	mkdir -p "$ov"/{usr/local/sbin,usr/local/bin,usr/local/lib,etc/systemd/system/multi-user.target.wants,etc/modprobe.d,dev}
	install -m 0755 "$script" "$ov/usr/local/sbin/$tag-test"
	install -m 0644 "$ROOT/tests/deb/guest-lib.sh" "$ov/usr/local/lib/sf-guest-lib.sh"
	printf '%s\n' '[Unit]' "Description=$desc" "After=$after" '' '[Service]' 'Type=oneshot' \
		"ExecStart=/usr/local/sbin/$tag-test" 'StandardOutput=tty' 'StandardError=tty' \
		'TTYPath=/dev/ttyS0' >"$ov/etc/systemd/system/$tag-test.service"
	ln -s "../$tag-test.service" "$ov/etc/systemd/system/multi-user.target.wants/$tag-test.service"
	# Every guest's end step (tests/lib/kernel-log.sh): at the shutdown the
	# test asks for, the kernel log at warning level and above and the
	# check's canary, for deb_guest_results' vm_problems.  Started before
	# the test's unit (which asks for the poweroff itself: a unit ordered
	# after it would never start), so stopped after it, last.
	install -m 0644 "$ROOT/tests/lib/kernel-log.sh" "$ov/usr/local/lib/sf-kernel-log.sh"
	printf '%s\n' '[Unit]' 'Description=snowflake tests: the kernel log at the end (tests/lib/kernel-log.sh)' \
		"Before=$tag-test.service" '' '[Service]' 'Type=oneshot' 'RemainAfterExit=yes' 'ExecStart=/bin/true' \
		"ExecStop=/bin/sh -c '. /usr/local/lib/sf-kernel-log.sh; sf_kernel_log'" \
		'StandardOutput=tty' 'StandardError=tty' 'TTYPath=/dev/ttyS0' \
		>"$ov/etc/systemd/system/sf-kernel-log.service"
	ln -s ../sf-kernel-log.service "$ov/etc/systemd/system/multi-user.target.wants/sf-kernel-log.service"
	ln -s /dev/null "$ov/etc/systemd/system/serial-getty@ttyS0.service"
	ln -s /dev/null "$ov/etc/systemd/system/getty@tty1.service"
	echo "$tag" >"$ov/etc/hostname"
	echo 'options snowflake strict=1' >"$ov/etc/modprobe.d/$tag-test.conf"
	mknod -m 0600 "$ov/dev/console" c 5 1
}

# deb_agent_conf CLUSTER [LINE...]: snowflake-agent's configuration for
# the Redis on the guest's loopback, with each LINE before the last.
deb_agent_conf() {
	local cluster=$1
	shift
	printf '%s\n' 'backend = redis' 'redis-host = 127.0.0.1' 'redis-port = 6379' \
		'redis-timeout-ms = 500' 'prefix = snowflake' "cluster = $cluster" 'ttl-ms = 3000' \
		"$@" 'log-level = info'
}

# deb_guest_redis OV ROOT: the host's Debian redis-server and redis-cli into
# OV, with the libraries ROOT lacks; notok and 1 when the host has none.
deb_guest_redis() {
	local ov=$1 r=$2 b lib
	for b in redis-server redis-cli; do
		command -v "$b" >/dev/null || {
			notok "$b is missing on the host (scripts/deps.sh installs redis-server)"
			return 1
		}
	done
	for b in redis-server redis-cli; do
		install -m 0755 "$(readlink -f "$(command -v "$b")")" "$ov/usr/local/bin/$b"
		ldd "$(command -v "$b")" | awk '/=> \// { print $3 }'
	done | sort -u | while read -r lib; do
		# Into /usr/lib/<triplet> (merged /usr): an overlay directory named
		# lib would replace the root's /lib symlink (the kernel's unpacker
		# removes an entry of another type first).
		if [ ! -e "$r$lib" ] && [ ! -e "$r/usr$lib" ]; then
			mkdir -p "$ov/usr/lib/$(basename "$(dirname "$lib")")"
			cp -L "$lib" "$ov/usr/lib/$(basename "$(dirname "$lib")")/"
		fi
	done
}

# deb_guest_initramfs ROOT OV IMG [PATH...]: IMG, a cpio of ROOT without
# what a boot does not need (the kernel headers, gcc, documentation, apt's
# caches, and each PATH, e.g. ./usr/lib/cni), then a cpio of OV, which the
# kernel unpacks over the first.  ROOT is not changed.
deb_guest_initramfs() {
	local r=$1 ov=$2 img=$3 p d prune=()
	shift 3
	for p in ./usr/src ./usr/lib/gcc ./usr/libexec/gcc ./usr/share/doc ./usr/share/man \
		./usr/share/locale ./usr/share/info ./var/cache/apt ./var/lib/apt/lists ./root/debs \
		./proc ./sys ./run ./tmp "$@"; do
		prune+=(-o -path "$p")
	done
	(cd "$r" && find . -xdev \( "${prune[@]:1}" \) -prune -o -print0 |
		LC_ALL=C sort -z | cpio --null -o -H newc --quiet) >"$img"
	for d in proc sys run tmp; do
		mkdir -p "$ov/$d"
	done
	chmod 1777 "$ov/tmp"
	(cd "$ov" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet) >>"$img"
}

# deb_guest_results TAG WHAT LOG OUT: the guest's "TAG ok|notok ..." lines
# counted as "WHAT: ...", its "TAG # ..." lines shown; then that it ran to
# "TAG done", and no kernel problem on the console (OUT/problems.txt).
deb_guest_results() {
	local tag=$1 what=$2 log=$3 out=$4 res line
	tr -d '\r' <"$log" | sed -n "s/^$tag # /#/p"
	while read -r res line; do
		if [ "$res" = ok ]; then ok "$what: $line"; else notok "$what: $line"; fi
	done < <(tr -d '\r' <"$log" | sed -n "s/^$tag \(ok\|notok\) /\1 /p")
	# shellcheck disable=SC2154 # rc: qemu's exit code, from vm_boot_systemd (tests/lib/vm.sh)
	if log_has "$log" "^$tag done"; then
		ok "$what: the test ran to its end and the guest powered off (qemu exit $rc)"
	else
		tail -n 40 "$log" | tr -d '\r' | indent
		notok "$what: the test did not finish (qemu exit $rc; console: ${log#"$ROOT"/})"
	fi
	if vm_problems "$log" >"$out/problems.txt"; then
		ok "$what: no kernel problem on the console"
	else
		indent <"$out/problems.txt"
		notok "$what: kernel problems on the console"
	fi
}

# deb_part WHAT TAG LOG SCRIPT ARG...: one part of the lane, its own
# script, its output shown and kept in LOG; its "TAG: N passed, M failed"
# added to this script's counts (notok when it printed none).
deb_part() {
	local what=$1 tag=$2 log=$3 line p f
	shift 3
	"$@" 2>&1 | tee "$log" || true
	line=$(grep -E "^$tag: [0-9]+ passed, [0-9]+ failed" "$log" | tail -n 1) || true
	if [ -n "$line" ]; then
		read -r _ p _ f _ <<<"$line"
		pass=$((pass + p)) fail=$((fail + f)) ntap=$((ntap + p + f))
	else
		notok "$what: ${1#"$ROOT"/} printed no summary"
	fi
}
