#!/bin/sh
# /init of the restart test's guest (tests/restart/run.sh): one phase per
# boot, chosen by "sfphase=" on the kernel command line.  The host parses the
# "RESTART <key> <value>" lines.
#
#   /dev/vda  ext4, persistent: the floor file in /mnt/state
#   /dev/vdb  raw, persistent: the witness, the largest ID of the first boot,
#             written with dd conv=fsync (so no sync(2) makes the floor file
#             durable behind snowflake-floord's back)
#
# Phase 1: IDs are issued while snowflake-floord saves; the daemon is then
# stopped (SIGSTOP, so it cannot save again) and more IDs are issued, the
# largest goes to the witness, and the guest crashes (sysrq b: no sync, no
# unmount, no SIGTERM).
# Phase 2, RTC one day behind: the negative control (module loaded, no
# restore: an ID lower than the witness), then restore and the new IDs; a
# restore with the module's instance_id hidden (as with an older module)
# raises the floor as before; then a clean stop (SIGTERM) and a restore into
# the same module instance (systemctl restart): the floor and the clock do
# not move; then a module reload, whose restore raises the floor again; a
# corrupt file is refused; a save on a full disk fails and keeps the old
# file.

# shellcheck source=tests/lib/init-common.sh
. /etc/init-common.sh

STATE=/mnt/state
phase=$(sed -n 's/.*sfphase=\([0-9]*\).*/\1/p' /proc/cmdline)
SYS=/sys/class/misc/snowflake
say() { echo "RESTART $*"; }
fail() {
	say "error $*"
	vm_done
}

say phase "$phase"
say kernel "$(uname -r)"
say wall "$(date +%s)"
echo 1 >/proc/sys/kernel/sysrq
while read -r m; do
	insmod "/modules/$m" || fail "insmod $m"
done </modules/order
mkdir -p /mnt
i=0
while [ ! -b /dev/vda ] || [ ! -b /dev/vdb ]; do
	i=$((i + 1))
	[ "$i" -lt 50 ] || fail "no /dev/vda or /dev/vdb"
	sleep 0.1
done
mount -t ext4 /dev/vda /mnt || fail "mount /dev/vda"
mkdir -p "$STATE"

if [ "$phase" = 1 ]; then
	insmod /snowflake.ko || fail "insmod snowflake.ko"
	snowflake-floord --restore --state-dir "$STATE"
	say restore1_rc "$?"
	snowflake-floord --state-dir "$STATE" --interval 1s --margin 10s -v &
	dpid=$!
	# Long enough for a periodic save (the first comes 5-6 s after the start).
	end=$(($(date +%s) + 8))
	n=0
	while [ "$(date +%s)" -lt "$end" ]; do
		snowflake next -n 4096 >/dev/null || fail "snowflake next"
		n=$((n + 4096))
	done
	# The daemon can no longer save: what follows is "between two saves".
	kill -STOP "$dpid"
	end=$(($(date +%s) + 3))
	while [ "$(date +%s)" -lt "$end" ]; do
		snowflake next -n 4096 >/dev/null || fail "snowflake next"
		n=$((n + 4096))
	done
	last=$(snowflake next) || fail "snowflake next"
	printf '%s\n' "$last" | dd of=/dev/vdb conv=fsync 2>/dev/null || fail "witness"
	say old_count "$((n + 1))"
	say old_max "$last"
	# This boot ends in a crash, not in vm_done: its kernel log and the
	# check's canary (tests/lib/kernel-log.sh) come first, so that the
	# host's console check reads this boot's log as it reads every other.
	vm_kernel_log
	say crash now
	# Let the serial console drain: the reset drops what it still holds.
	sleep 1
	echo b >/proc/sysrq-trigger
	sleep 30
	fail "still running after sysrq b"
fi

# Phase 2: the clock is a day behind.
old=$(head -n 1 /dev/vdb)
say witness "$old"
snowflake-floord --show --state-dir "$STATE" | sed 's/^/RESTART saved_/'

# The negative control: without the restore, this boot's IDs are lower.
insmod /snowflake.ko || fail "insmod snowflake.ko (control)"
say control "$(snowflake next)"
rmmod snowflake || fail "rmmod (control)"

insmod /snowflake.ko || fail "insmod snowflake.ko"
snowflake-floord --restore --state-dir "$STATE"
say restore_rc "$?"
say new_min "$(snowflake next)"
# The restore saved again at once, ahead of what the device now issues.
say after_restore_floor "$(snowflake-floord --show --state-dir "$STATE" | sed -n 's/^floor_ms \([0-9]*\).*/\1/p')"
snowflake next -n 10000 >/dev/null

# A module without instance_id (hidden by a tmpfs over the device's sysfs
# directory): a restore raises the floor as before, even into the instance
# that saved (the file, saved just before, names it), and saves version 1.
dev_dir=$(readlink -f "$SYS")
snowflake-floord --save --state-dir "$STATE" || fail "--save"
say hidden_saved_id "$(snowflake-floord --show --state-dir "$STATE" | sed -n 's/^instance_id //p')"
say hidden_saved_floor "$(snowflake-floord --show --state-dir "$STATE" | sed -n 's/^floor_ms \([0-9]*\).*/\1/p')"
f0=$(cat "$SYS/floor_ms")
mount -t tmpfs none "$dev_dir" || fail "mount tmpfs over $dev_dir"
msg=$(snowflake-floord --restore --state-dir "$STATE" 2>&1)
say hidden_rc "$?"
umount "$dev_dir" || fail "umount $dev_dir"
say hidden_floor "$f0 $(cat "$SYS/floor_ms")"
say hidden_log "$(echo "$msg" | tr '\n' '|')"
say hidden_version "$(head -n 1 "$STATE/floor")"

# A clean stop saves; a restore into the same module instance (what
# systemctl restart snowflake-floor does) leaves the floor and the clock
# alone; a module reload restores it.
snowflake-floord --state-dir "$STATE" --interval 1s --margin 10s -v &
dpid=$!
sleep 2
# The daemon runs without any capability (it drops them: only the restore
# configures, through the device opened for writing), even started by root.
say daemon_caps "$(sed -n 's/^CapEff:[[:space:]]*//p' "/proc/$dpid/status") $(sed -n 's/^CapPrm:[[:space:]]*//p' "/proc/$dpid/status")"
snowflake next -n 4096 >/dev/null
say before_stop_max "$(snowflake next)"
kill -TERM "$dpid"
wait "$dpid"
say daemon_rc "$?"
say same_saved "$(head -n 1 "$STATE/floor") $(sed -n 's/^instance_id //p' "$STATE/floor")"
say same_instance "$(cat "$SYS/instance_id")"
b_floor=$(cat "$SYS/floor_ms")
b_offset=$(cat "$SYS/clock_offset_ms")
b_jumps=$(cat "$SYS/statistics/floor_jumps")
msg=$(snowflake-floord --restore --state-dir "$STATE" 2>&1)
say same_rc "$?"
say same_floor "$b_floor $(cat "$SYS/floor_ms")"
say same_offset "$b_offset $(cat "$SYS/clock_offset_ms")"
say same_jumps "$b_jumps $(cat "$SYS/statistics/floor_jumps")"
say same_log "$(echo "$msg" | tr '\n' '|')"
say same_after_max "$(snowflake next)"
# The restore saved at once, ahead of the device, under the same instance.
say same_resaved "$(sed -n 's/^instance_id //p' "$STATE/floor")"
saved=$(snowflake-floord --show --state-dir "$STATE" | sed -n 's/^floor_ms \([0-9]*\).*/\1/p')
rmmod snowflake || fail "rmmod"
insmod /snowflake.ko || fail "insmod snowflake.ko (reload)"
say reload_instance "$(cat "$SYS/instance_id")"
msg=$(snowflake-floord --restore --state-dir "$STATE" 2>&1)
say restore2_rc "$?"
say reload_floor "$saved $(cat "$SYS/floor_ms")"
say reload_log "$(echo "$msg" | tr '\n' '|')"
say reload_min "$(snowflake next)"

# A corrupt file is refused and changes nothing.
cp "$STATE/floor" /tmp/floor.good
# One more digit: a floor ten times later, if it were believed.
sed -i 's/^floor_ms /floor_ms 1/' "$STATE/floor"
cmp -s "$STATE/floor" /tmp/floor.good && fail "the file was not changed"
f0=$(cat /sys/class/misc/snowflake/floor_ms)
snowflake-floord --restore --state-dir "$STATE"
say corrupt_rc "$?"
say corrupt_floor "$f0 $(cat /sys/class/misc/snowflake/floor_ms)"
cp /tmp/floor.good "$STATE/floor"

# A right checksum over a floor past the last ms the layout stamps (year
# 2100; 41 bits of ms from 2010 end in 2080; made on the host): refused by
# the restore and by --save (exit 3), the device's floor unchanged.
cp /floor.beyond "$STATE/floor"
f0=$(cat "$SYS/floor_ms")
msg=$(snowflake-floord --restore --state-dir "$STATE" 2>&1)
say beyond_rc "$?"
say beyond_floor "$f0 $(cat "$SYS/floor_ms")"
say beyond_msg "$(echo "$msg" | head -n 1)"
snowflake-floord --save --state-dir "$STATE" >/dev/null 2>&1
say beyond_save_rc "$?"
cp /tmp/floor.good "$STATE/floor"

# A full disk: the save fails with a clear message and keeps the old file.
dd if=/dev/zero of=/mnt/fill bs=1M 2>/dev/null
dd if=/dev/zero of=/mnt/fill2 bs=1k 2>/dev/null
msg=$(snowflake-floord --save --state-dir "$STATE" 2>&1)
say enospc_rc "$?"
say enospc_msg "$msg"
cmp -s "$STATE/floor" /tmp/floor.good && say enospc_kept yes
# A save's temporary file is floor.tmp.XXXXXX (floor.tmp before issue 24).
ls "$STATE"/floor.tmp* >/dev/null 2>&1 && say enospc_tmp left
rm -f /mnt/fill /mnt/fill2

rmmod snowflake
umount /mnt
say finished ok
vm_done
