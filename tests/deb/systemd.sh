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
# exposure scores of systemd-analyze security on a running system; a host
# never given an identity says so, `snowflake config --datacenter 3
# --worker 9 --save` applies it at once; `apt-get purge snowflake-tools`
# keeps the saved floor and says so, and its reinstall with the wall clock
# stepped an hour back issues every ID above the highest before the purge;
# and a second boot (the reboot) comes up with the identity saved.
#
# Usage: systemd.sh ROOT KVER OUT
# The root is not changed: the initramfs is a cpio of it (without what a
# boot does not need: the kernel headers, gcc, documentation, apt's
# caches) followed by a second cpio with the test's files, which the
# kernel unpacks over the first.  Prints "deb-systemd: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"
# shellcheck source=tests/deb/lib.sh
. "$ROOT/tests/deb/lib.sh"

R=$1 KVER=$2 OUT=$3
# (Each boot; the first one's test ran out of 400 s on a loaded machine once
# issue 44's checks were added.)
TIMEOUT=${SYSTEMD_TEST_TIMEOUT:-600}
ov=$OUT/overlay
img=$OUT/root.cpio
log=$OUT/console.log
t0=$(now)

finish() {
	echo "deb-systemd: $pass passed, $fail failed ($(($(now) - t0)) s)$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}

rm -rf "$OUT"
mkdir -p "$ov/etc/snowflake"

# The test, run once the floor unit has started.
deb_guest_unit "$ov" sfsd "$ROOT/tests/deb/guest-systemd.sh" \
	"snowflake: the packages' units under systemd (tests/deb/systemd.sh)" \
	"snowflake-floor.service snowflake-metrics.timer systemd-udev-settle.service network.target"
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
# A host whose worker id comes from the agent.
deb_agent_conf sfsd 'state-file = /var/lib/snowflake/agent.state' >"$ov/etc/snowflake/agent.conf"
chmod 0700 "$ov/etc/snowflake"
chmod 0600 "$ov/etc/snowflake/agent.conf"
# Redis: the host's Debian binaries, with the libraries the root lacks.
deb_guest_redis "$ov" "$R" || finish
# snowflake-tools' .deb, which the test purges and installs again (issue
# 44, item 3; the root's /root/debs is not in the initramfs).
mkdir -p "$ov/usr/local/lib/sfsd-debs"
cp "$R"/root/debs/snowflake-tools_*.deb "$ov/usr/local/lib/sfsd-debs/"

# The initramfs: the root, then the overlay.
deb_guest_initramfs "$R" "$ov" "$img"
echo "# initramfs: $(($(stat -c %s "$img") >> 20)) MiB (the root without headers, gcc and docs, and the test)"

vm_boot_systemd "$KVER" "$img" "$log" "$TIMEOUT" || finish
[ -n "${SYSTEMD_TEST_KEEP:-}" ] || rm -f "$img"

deb_guest_results SFSD systemd "$log" "$OUT"

# The reboot (issue 44, item 2): the same root and test, booted again with
# what the host's disk would have kept of the first boot, the file
# `snowflake config --save` wrote (its console line SFSD-IDENTITY, base64),
# and without sfsd-test.conf (a host with a fixed identity, no agent).  The
# test's phase 2 checks the module came up with that identity.
ov2=$OUT/overlay-2 log2=$OUT/console-2.log
rm -rf "$ov2"
deb_guest_unit "$ov2" sfsd "$ROOT/tests/deb/guest-systemd.sh" \
	"snowflake: the identity after a reboot (tests/deb/systemd.sh)" \
	"snowflake-floor.service systemd-udev-settle.service network.target"
rm -f "$ov2/etc/modprobe.d/sfsd-test.conf"
echo 2 >"$ov2/etc/sfsd-phase"
if tr -d '\r' <"$log" | sed -n 's/^SFSD-IDENTITY //p' | head -n 1 | base64 -d >"$ov2/etc/modprobe.d/snowflake.identity.conf" 2>/dev/null &&
	grep -q '^options snowflake ' "$ov2/etc/modprobe.d/snowflake.identity.conf"; then
	ok "systemd: the file config --save wrote came out of the first boot ($(grep '^options' "$ov2/etc/modprobe.d/snowflake.identity.conf"))"
	deb_guest_initramfs "$R" "$ov2" "$img"
	vm_boot_systemd "$KVER" "$img" "$log2" "$TIMEOUT" || finish
	[ -n "${SYSTEMD_TEST_KEEP:-}" ] || rm -f "$img"
	deb_guest_results SFSD "systemd, after the reboot" "$log2" "$OUT"
else
	notok "systemd: no SFSD-IDENTITY line (the file config --save wrote) on the first boot's console: no reboot"
fi
finish
