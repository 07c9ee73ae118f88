#!/bin/bash
# The installed packages under systemd: the Debian 12 root of
# tests/deb/run.sh, with the packages installed and the module DKMS built
# for KVER, booted in QEMU with systemd as PID 1, as a host boots them.
# tests/deb/guest-systemd.sh checks there, as root, what the units do:
# snowflake-floor.service loads the module (strict=1) and runs floord as
# its user, udev gives the node its group, the metrics timer's service
# writes node_exporter's file, snowflake-agent.service (Type=notify) leases
# a pair from a Redis on the guest's loopback and the device serves it,
# stopping the agent fences the device and releases the lease, the
# exposure scores of systemd-analyze security on a running system.
#
# Usage: deb-systemd-test.sh ROOT KVER OUT
# The root is not changed: the initramfs is a cpio of it (without what a
# boot does not need: the kernel headers, gcc, documentation, apt's
# caches) followed by a second cpio with the test's files, which the
# kernel unpacks over the first.  Prints "deb-systemd: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"

R=$1 KVER=$2 OUT=$3
TIMEOUT=${SYSTEMD_TEST_TIMEOUT:-400}
ov=$OUT/overlay
img=$OUT/root.cpio
log=$OUT/console.log
t0=$(now)

finish() {
	echo "deb-systemd: $pass passed, $fail failed ($(($(now) - t0)) s)"
	[ "$fail" -eq 0 ]
	exit
}

rm -rf "$OUT"
mkdir -p "$ov"/{usr/local/sbin,usr/local/bin,etc/systemd/system/multi-user.target.wants,etc/modprobe.d,etc/snowflake,dev}

# The test, run once the floor unit has started.
install -m 0755 "$ROOT/tests/deb/guest-systemd.sh" "$ov/usr/local/sbin/sfsd-test"
cat >"$ov/etc/systemd/system/sfsd-test.service" <<'EOF'
[Unit]
Description=snowflake: the packages' units under systemd (tests/deb/systemd.sh)
After=snowflake-floor.service snowflake-metrics.timer systemd-udev-settle.service network.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/sfsd-test
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
EOF
ln -s ../sfsd-test.service "$ov/etc/systemd/system/multi-user.target.wants/sfsd-test.service"
# A service that reads an ID, ordered after the floor unit as every
# ordinary one is (through sysinit.target); the test starts it.
cat >"$ov/etc/systemd/system/sfsd-reader.service" <<'EOF'
[Unit]
Description=snowflake: a reader ordered after the floor unit (tests/deb/guest-systemd.sh)
After=snowflake-floor.service

[Service]
Type=oneshot
User=nobody
Group=snowflake
ExecStart=/usr/bin/snowflake next
StandardOutput=truncate:/run/sfsd-reader.id
EOF
# No login prompts on the console the test writes to.
ln -s /dev/null "$ov/etc/systemd/system/serial-getty@ttyS0.service"
ln -s /dev/null "$ov/etc/systemd/system/getty@tty1.service"
echo sfsd >"$ov/etc/hostname"
# A host whose worker id comes from the agent.
echo 'options snowflake strict=1' >"$ov/etc/modprobe.d/sfsd-test.conf"
cat >"$ov/etc/snowflake/agent.conf" <<'EOF'
backend = redis
redis-host = 127.0.0.1
redis-port = 6379
redis-timeout-ms = 500
prefix = snowflake
cluster = sfsd
ttl-ms = 3000
state-file = /var/lib/snowflake/agent.state
log-level = info
EOF
chmod 0700 "$ov/etc/snowflake"
chmod 0600 "$ov/etc/snowflake/agent.conf"
mknod -m 0600 "$ov/dev/console" c 5 1
# Redis: the host's Debian binaries, with the libraries the root lacks.
for b in redis-server redis-cli; do
	if ! p=$(command -v "$b"); then
		notok "$b is missing on the host (scripts/deps.sh installs redis-server)"
		finish
	fi
	install -m 0755 "$(readlink -f "$p")" "$ov/usr/local/bin/$b"
	ldd "$p" | awk '/=> \// { print $3 }'
done | sort -u | while read -r lib; do
	# Into /usr/lib/<triplet> (merged /usr): an overlay directory named
	# lib would replace the root's /lib symlink (the kernel's unpacker
	# removes an entry of another type first).
	if [ ! -e "$R$lib" ] && [ ! -e "$R/usr$lib" ]; then
		mkdir -p "$ov/usr/lib/$(basename "$(dirname "$lib")")"
		cp -L "$lib" "$ov/usr/lib/$(basename "$(dirname "$lib")")/"
	fi
done

# The initramfs: the root, then the overlay.
(cd "$R" && find . -xdev \( -path ./usr/src -o -path ./usr/lib/gcc -o -path ./usr/libexec/gcc \
	-o -path ./usr/share/doc -o -path ./usr/share/man -o -path ./usr/share/locale \
	-o -path ./usr/share/info -o -path ./var/cache/apt -o -path ./var/lib/apt/lists \
	-o -path ./root/debs -o -path ./proc -o -path ./sys -o -path ./run -o -path ./tmp \) \
	-prune -o -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) >"$img"
for d in proc sys run tmp; do
	mkdir -p "$ov/$d"
done
chmod 1777 "$ov/tmp"
(cd "$ov" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) >>"$img"
echo "# initramfs: $(($(stat -c %s "$img") >> 20)) MiB (the root without headers, gcc and docs, and the test)"

kernel=$(vmlinuz_of "$KVER") || { notok "no guest kernel for $KVER"; finish; }
echo "# booting $KVER with systemd as PID 1 (console in ${log#"$ROOT"/})"
start=$(now)
rc=0
# One CPU, no multi-threaded TCG (clear of TCG's cross-CPU code patching);
# the initramfs is unpacked into RAM.
timeout -k 10 "$TIMEOUT" qemu-system-x86_64 -accel tcg -smp 1 -m 3072 \
	-nographic -no-reboot -nodefaults -serial mon:stdio \
	-kernel "$kernel" -initrd "$img" \
	-append "console=ttyS0 rdinit=/lib/systemd/systemd panic=-1 quiet loglevel=4 systemd.show_status=false" \
	</dev/null >"$log" 2>&1 || rc=$?
echo "# the guest ran $(($(now) - start)) s (qemu exit $rc)"
[ -n "${SYSTEMD_TEST_KEEP:-}" ] || rm -f "$img"

tr -d '\r' <"$log" | sed -n 's/^SFSD # /#/p'
while read -r res what; do
	if [ "$res" = ok ]; then ok "systemd: $what"; else notok "systemd: $what"; fi
done < <(tr -d '\r' <"$log" | sed -n 's/^SFSD \(ok\|notok\) /\1 /p')
if log_has "$log" '^SFSD done'; then
	ok "systemd: the test ran to its end and the guest powered off (qemu exit $rc)"
else
	tail -n 40 "$log" | tr -d '\r' | indent
	notok "systemd: the test did not finish (qemu exit $rc; console: ${log#"$ROOT"/})"
fi
if vm_problems "$log" >"$OUT/problems.txt"; then
	ok "systemd: no kernel problem on the console"
else
	indent <"$OUT/problems.txt"
	notok "systemd: kernel problems on the console"
fi
finish
