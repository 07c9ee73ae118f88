#!/bin/bash
# The restart proof of snowflake-floord(8), in QEMU guests with a persistent
# disk: IDs are issued while the daemon saves, the guest crashes (no
# shutdown), boots again with its RTC one day behind, restores the floor,
# and every new ID must be greater than every old one.  The negative control
# (the same boot without the restore) must give a lower ID, or the test
# could not fail.  Also: a clean stop (SIGTERM) followed by a module reload,
# a corrupt file refused, and a save on a full disk; a restore into the
# same module instance (systemctl restart) moves neither the floor nor the
# clock, and one with the instance_id hidden (an older module) raises it as
# before.  See tests/restart/init.sh.
#
# Environment:
#   KERNELS="KVER ..."   kernels (default: Debian's 6.12 and 6.1, the first two of all_kvers,
#                        and the newest, newest_kver)
#   RESTART_TIMEOUT=300  seconds one boot may take
#   SNOWFLAKE_SKIP_DEPS=1  do not run deps.sh/ksrc.sh first (check.sh did)
#
# Prints the figures and "restart: N passed, M failed"; exits nonzero when
# anything failed.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"

TIMEOUT=${RESTART_TIMEOUT:-300}
OUT=$BUILD/restart
EPOCH_MS=1288834974657	# the default layout: timestamp = id >> 22
DAY=86400

if [ "${SNOWFLAKE_SKIP_DEPS:-0}" != 1 ]; then
	"$ROOT/scripts/deps.sh"
	"$ROOT/scripts/ksrc.sh"
fi

finish() {
	echo "restart: $pass passed, $fail failed$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}

if [ -n "${KERNELS:-}" ]; then
	mapfile -t kvers < <(all_kvers)
else
	# The non-RT kernels: 6.12, 6.1 and the newest, 7.2 (the module and the daemon do
	# nothing RT-specific; vmtest covers the RT kernel).
	mapfile -t kvers < <(all_kvers | grep -v -- '-rt-' | head -n 2; newest_kver)
fi

# Static snowflake-floord and snowflake for the busybox guest.
mkdir -p "$OUT"
echo "==== building static snowflake-floord and snowflake ===="
if ! make -C "$ROOT/userspace" OUT="$BUILD/userspace" ${V:+V="$V"} "$BUILD/userspace/libsnowflake.a" ||
	! cc -static -O2 -g -std=gnu11 -Wall -Wextra -Werror -I"$ROOT/userspace/include" -I"$ROOT/uapi" \
		-DSNOWFLAKE_VERSION="\"$(cat "$ROOT/VERSION")\"" -o "$OUT/snowflake-floord" "$ROOT"/userspace/floord/*.c "$BUILD/userspace/libsnowflake.a" ||
	! cc -static -O2 -g -std=gnu11 -Wall -Wextra -Werror -I"$ROOT/userspace/include" -I"$ROOT/uapi" \
		-o "$OUT/snowflake" "$ROOT"/userspace/cli/*.c "$BUILD/userspace/libsnowflake.a"; then
	notok "building the static binaries"
	finish
fi

# modules_of KVER: the modules tree of KVER: the installed kernel's, or the
# part we need unpacked from its package into build/kernels/KVER/ (also
# with SNOWFLAKE_NO_BOOT_KERNEL=1, as for the guest kernels in lib.sh).
modules_of() {
	local kver=$1 dir=$BUILD/kernels/$1 tmp deb m=./lib/modules/$1
	# Another suite's kernel: scripts/kroot.sh unpacked them.
	if [ -f "$BUILD/kroots/images/$kver/lib/modules/$kver/modules.dep" ]; then
		echo "$BUILD/kroots/images/$kver/lib/modules/$kver"
		return 0
	fi
	if [ "${SNOWFLAKE_NO_BOOT_KERNEL:-0}" != 1 ] && [ -f "/lib/modules/$kver/modules.dep" ]; then
		echo "/lib/modules/$kver"
		return 0
	fi
	if [ ! -f "$dir/lib/modules/$kver/modules.dep" ]; then
		tmp=$(mktemp -d "$BUILD/modules.XXXXXX")
		if ! (cd "$tmp" && { apt-get -q download "linux-image-$kver" ||
			apt-get -q download "linux-image-$kver-unsigned"; }) >"$tmp/log" 2>&1; then
			cat "$tmp/log" >&2
			rm -rf "$tmp"
			return 1
		fi
		deb=$(find "$tmp" -name '*.deb' | head -n 1)
		mkdir -p "$dir"
		# Only what the disk needs: block, virtio, ext4 and what they use.
		if ! dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" --wildcards \
			"$m/modules.*" "$m/kernel/fs/*" "$m/kernel/lib/*" "$m/kernel/crypto/*" \
			"$m/kernel/drivers/virtio/*" "$m/kernel/drivers/block/*"; then
			rm -rf "$tmp" "$dir/lib/modules/$kver"
			return 1
		fi
		rm -rf "$tmp"
		# The package has no modules.dep: dpkg's postinst runs depmod.
		if ! depmod -b "$dir" "$kver" || [ ! -f "$dir/lib/modules/$kver/modules.dep" ]; then
			rm -rf "$dir/lib/modules/$kver"
			return 1
		fi
	fi
	echo "$dir/lib/modules/$kver"
}

# stage_modules MODDIR DEST NAME...: the modules NAME and what they depend
# on (modules.dep), decompressed into DEST, and DEST/order, dependencies
# first.  A module that is not in modules.dep must be built in.
stage_modules() {
	local moddir=$1 dest=$2 name path
	shift 2
	local -A seen=()
	mkdir -p "$dest"
	: >"$dest/order"
	add() { # add PATH (relative to moddir, as in modules.dep)
		local p=$1 d base
		[ -z "${seen[$p]:-}" ] || return 0
		seen[$p]=1
		# shellcheck disable=SC2013 # words: one module path each
		for d in $(awk -v p="$p:" '$1 == p { for (i = 2; i <= NF; i++) print $i }' "$moddir/modules.dep"); do
			add "$d"
		done
		base=${p##*/}
		case $base in
		*.ko.xz) xz -dc "$moddir/$p" >"$dest/${base%.xz}" ;;
		*.ko.zst) zstd -qdc "$moddir/$p" >"$dest/${base%.zst}" ;;
		*.ko.gz) gzip -dc "$moddir/$p" >"$dest/${base%.gz}" ;;
		*) cp "$moddir/$p" "$dest/$base" ;;
		esac
		base=${base%.xz}
		base=${base%.zst}
		echo "${base%.gz}" >>"$dest/order"
	}
	for name in "$@"; do
		path=$(awk -v n="$name" '{ k = $1; sub(/:$/, "", k); b = k; sub(/.*\//, "", b);
			sub(/\.ko(\.xz|\.zst|\.gz)?$/, "", b); gsub(/-/, "_", b);
			if (b == n) { print k; exit } }' "$moddir/modules.dep")
		if [ -n "$path" ]; then
			add "$path"
		elif ! grep -qE "/${name//_/[-_]}\.ko\$" "$moddir/modules.builtin" 2>/dev/null; then
			echo "restart: $name is neither a module nor built into $(basename "$moddir")" >&2
			return 1
		fi
	done
}

# boot KVER INITRD DISK WITNESS PHASE LOG [RTC]: one boot; the console in LOG.
boot() {
	local kver=$1 initrd=$2 disk=$3 witness=$4 phase=$5 log=$6 rtc=${7:-} kernel
	local -a args
	kernel=$(vmlinuz_of "$kver") || return 1
	# One CPU (nothing here needs two), one TCG thread: the boot of every
	# guest (vm_accel_args, tests/lib/vm.sh).
	vm_accel_args single
	# shellcheck disable=SC2054 # qemu arguments with commas
	args=("${VM_ACCEL[@]}" -smp 1 -m 512 -nographic -no-reboot -nodefaults
		-serial mon:stdio -kernel "$kernel" -initrd "$initrd"
		-drive "file=$disk,format=raw,if=virtio,cache=writeback"
		-drive "file=$witness,format=raw,if=virtio,cache=writeback"
		-append "console=ttyS0 panic=-1 oops=panic quiet loglevel=4 sfphase=$phase ${VM_KARGS[*]}")
	if [ -n "$rtc" ]; then
		args+=(-rtc "base=$rtc")
	fi
	timeout -k 10 "$TIMEOUT" qemu-system-x86_64 "${args[@]}" </dev/null >"$log" 2>&1 || return $?
}

# val LOG KEY: the value of the last "RESTART KEY ..." line.
val() {
	tr -d '\r' <"$2" | sed -n "s/^RESTART $1 //p" | tail -n 1
}
ts_ms() { echo $(((${1:-0} >> 22) + EPOCH_MS)); }
# shellcheck disable=SC2317 # called through check
full_disk_ok() {
	[[ "$(val enospc_msg "$1")" == *"No space left on device"* ]] &&
		[ "$(val enospc_kept "$1")" = yes ] && [ -z "$(val enospc_tmp "$1")" ]
}
# shellcheck disable=SC2317
same_number() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" = "$2" ]; }
# hex32 S: an instance id, 32 lowercase hex digits.
# shellcheck disable=SC2317
hex32() { [[ "$1" =~ ^[0-9a-f]{32}$ ]]; }
# has LOG KEY TEXT / lacks LOG KEY TEXT: the value of KEY contains TEXT / not.
# shellcheck disable=SC2317
has() { [[ "$(val "$2" "$1")" == *"$3"* ]]; }
# shellcheck disable=SC2317
lacks() { [ -n "$(val "$2" "$1")" ] && [[ "$(val "$2" "$1")" != *"$3"* ]]; }
# saved_as LOG ID: the daemon's SIGTERM save was version 2, naming ID.
# shellcheck disable=SC2317
saved_as() { hex32 "$2" && [ "$(val same_saved "$1")" = "snowflake-floor 2 $2" ]; }
# rc_and_log LOG RCKEY LOGKEY TEXT: the exit status RCKEY was 0 and LOGKEY has TEXT.
# shellcheck disable=SC2317
rc_and_log() { [ "$(val "$2" "$1")" = 0 ] && has "$1" "$3" "$4"; }
# raised_to A B C: the floor went from A up to B, which is C.
# shellcheck disable=SC2317
raised_to() { gt "$2" "$1" && same_number "$2" "$3"; }
# same_id A B: A is an instance id, and B.
# shellcheck disable=SC2317
same_id() { hex32 "$1" && [ "$1" = "$2" ]; }
# new_instance A B: A is an instance id other than B.
# shellcheck disable=SC2317
new_instance() { hex32 "$1" && [ "$1" != "$2" ]; }
# restored LOG FLOOR F: the device's floor F is the saved FLOOR, and the
# restore said it restored it, not that it left it alone.
# shellcheck disable=SC2317
restored() {
	same_number "$2" "$3" && has "$1" reload_log "restored floor_ms $2 " &&
		lacks "$1" reload_log restore_same_instance
}
# gt A B: both numbers, A > B.
# shellcheck disable=SC2317
gt() { [[ "$1" =~ ^[0-9]+$ && "$2" =~ ^[0-9]+$ ]] && [ "$1" -gt "$2" ]; }

test_kernel() {
	local kver=$1 dir=$OUT/$1 stage initrd disk witness log1 log2 moddir t0 t1
	local old_max witness_val control new_min before_stop reload_min saved_high saved_floor
	local wall2 host2 delta rc crc
	stage=$dir/initramfs
	initrd=$dir/initramfs.cpio.gz
	disk=$dir/disk.img
	witness=$dir/witness.img
	log1=$dir/boot1.log
	log2=$dir/boot2.log
	t0=$(now)
	echo
	echo "==== restart $kver ===="
	rm -rf "$dir"
	mkdir -p "$dir"
	if ! vm_module_stage "$kver" "$dir" "$stage" "$ROOT/tests/restart/init.sh" "$dir/build.log"; then
		notok "$kver: building snowflake.ko"
		return 0
	fi
	# A floor file with a right checksum, floor_ms in 2100: past the layout.
	python3 -c 'import sys, zlib; b = sys.argv[1].encode(); sys.stdout.buffer.write(b + b"crc32 %08x\n" % zlib.crc32(b))' \
		$'snowflake-floor 1\nfloor_ms 4102444800000\n' >"$stage/floor.beyond"
	install -m 0755 "$OUT/snowflake" "$stage/usr/bin/snowflake"
	install -m 0755 "$OUT/snowflake-floord" "$stage/usr/sbin/snowflake-floord"
	# ext4's crc32c: through the crypto API (crc32c_generic) before 6.15;
	# since then the crc32c library, which modules.dep names.
	crc=(crc32c_generic)
	if moddir=$(modules_of "$kver") && ! grep -qE '/crc32c[-_]generic\.ko' "$moddir/modules.dep" "$moddir/modules.builtin" 2>/dev/null; then
		crc=()
	fi
	if ! moddir=$(modules_of "$kver") ||
		! stage_modules "$moddir" "$stage/modules" "${crc[@]}" ext4 virtio_pci virtio_blk; then
		notok "$kver: the guest's disk modules (virtio_blk, ext4)"
		return 0
	fi
	vm_pack "$stage" "$initrd"
	truncate -s 64M "$disk"
	mkfs.ext4 -q -F -L snowflake "$disk"
	truncate -s 1M "$witness"

	# Boot 1: the clock is right; IDs, then a crash.
	rc=0
	boot "$kver" "$initrd" "$disk" "$witness" 1 "$log1" || rc=$?
	old_max=$(val old_max "$log1")
	if [ "$(val crash "$log1")" = now ] && [ -n "$old_max" ] && [ "$rc" -ne 124 ]; then
		ok "$kver: boot 1 issued $(val old_count "$log1") IDs, the daemon saved, then the guest crashed (sysrq b)"
	else
		notok "$kver: boot 1 did not reach the crash (qemu exit $rc): $(val error "$log1")"
		tr -d '\r' <"$log1" | tail -n 30 | sed 's/^/#   | /'
		return 0
	fi
	check "$kver: boot 1: first start, nothing to restore (exit 0)" [ "$(val restore1_rc "$log1")" = 0 ]
	check "$kver: boot 1: the daemon saved again while IDs were issued ($(grep -c 'periodic)' "$log1") periodic saves)" \
		grep -q 'high-water mark + 10000 ms; periodic)' "$log1"

	# Boot 2: the RTC one day behind.
	host2=$(date +%s)
	rc=0
	boot "$kver" "$initrd" "$disk" "$witness" 2 "$log2" "$(date -u -d "@$((host2 - DAY))" +%Y-%m-%dT%H:%M:%S)" || rc=$?
	if [ "$(val finished "$log2")" != ok ]; then
		notok "$kver: boot 2 did not finish (qemu exit $rc): $(val error "$log2")"
		tr -d '\r' <"$log2" | tail -n 30 | sed 's/^/#   | /'
		return 0
	fi
	wall2=$(val wall "$log2")
	delta=$((wall2 - host2))
	witness_val=$(val witness "$log2")
	control=$(val control "$log2")
	new_min=$(val new_min "$log2")
	before_stop=$(val before_stop_max "$log2")
	reload_min=$(val reload_min "$log2")
	saved_high=$(val saved_high_ms "$log2")
	saved_floor=$(val saved_floor_ms "$log2")
	saved_floor=${saved_floor%% *}
	t1=$(now)
	check "$kver: the daemon, started by root, runs with no capability ($(val daemon_caps "$log2"))" \
		[ "$(val daemon_caps "$log2")" = "0000000000000000 0000000000000000" ]

	echo "# old max ID      $old_max  (timestamp $(ts_ms "$old_max") ms, $(date -u -d "@$(($(ts_ms "$old_max") / 1000))" +%FT%TZ))"
	echo "# saved floor     $saved_floor ms (high-water mark $saved_high at the last save before the crash)"
	echo "# clock delta     ${delta} s (guest wall clock at boot 2 minus the host's)"
	echo "# control ID      $control  (no restore; timestamp $(ts_ms "${control:-0}") ms)"
	echo "# new min ID      $new_min  (timestamp $(ts_ms "${new_min:-0}") ms)"
	echo "# new - old       $((${new_min:-0} - ${old_max:-0})) ($(($(ts_ms "$new_min") - $(ts_ms "$old_max"))) ms of timestamp)"

	check "$kver: the witness on the raw disk survived the crash ($witness_val)" [ "$witness_val" = "$old_max" ]
	check "$kver: IDs were issued after the last save that survived (old max ts $(ts_ms "$old_max") > saved high-water mark $saved_high)" \
		gt "$(ts_ms "$old_max")" "$saved_high"
	check "$kver: the guest's clock was a day behind at boot 2 (${delta} s)" \
		[ "$delta" -le $((-DAY + 600)) ]
	check "$kver: negative control: without the restore, an ID lower than the old max ($control < $old_max)" \
		gt "$old_max" "$control"
	check "$kver: restore exit 0" [ "$(val restore_rc "$log2")" = 0 ]
	check "$kver: after the restore, every new ID > every old ID ($new_min > $old_max)" \
		gt "$new_min" "$old_max"
	check "$kver: the restore saved a floor ahead of the new IDs at once ($(val after_restore_floor "$log2") > $(ts_ms "$new_min"))" \
		gt "$(val after_restore_floor "$log2")" "$(ts_ms "$new_min")"
	check "$kver: the saved floor was above every old ID (floor $saved_floor > old max ts $(ts_ms "$old_max"))" \
		gt "$saved_floor" "$(ts_ms "$old_max")"
	check "$kver: SIGTERM: the daemon saved and exited 0" [ "$(val daemon_rc "$log2")" = 0 ]
	check "$kver: module reload + restore: $reload_min > $before_stop" \
		gt "$reload_min" "$before_stop"

	# The module's instance_id hidden (a module without it): as before.
	read -r f0 f1 <<<"$(val hidden_floor "$log2")"
	check "$kver: before hiding it, the file named the instance ($(val hidden_saved_id "$log2"))" \
		hex32 "$(val hidden_saved_id "$log2")"
	check "$kver: no instance_id: the restore exits 0 and says the module has none" \
		rc_and_log "$log2" hidden_rc hidden_log "has no instance_id"
	check "$kver: ... and raises the floor as before ($f0 -> $f1 = the saved $(val hidden_saved_floor "$log2"))" \
		raised_to "$f0" "$f1" "$(val hidden_saved_floor "$log2")"
	check "$kver: ... and saves version 1, with no instance ($(val hidden_version "$log2"))" \
		[ "$(val hidden_version "$log2")" = "snowflake-floor 1" ]

	# A restore into the same instance (systemctl restart): nothing moves.
	inst=$(val same_instance "$log2")
	echo "# same instance   $inst; the SIGTERM save: $(val same_saved "$log2")"
	echo "# floor_ms        $(val same_floor "$log2") (before, after the restore)"
	echo "# clock_offset_ms $(val same_offset "$log2")"
	echo "# restore log     $(val same_log "$log2")"
	check "$kver: the daemon's last save named the module instance (version 2)" \
		saved_as "$log2" "$inst"
	check "$kver: same instance: the restore exits 0 and logs event=restore_same_instance" \
		rc_and_log "$log2" same_rc same_log "event=restore_same_instance instance_id=$inst "
	read -r f0 f1 <<<"$(val same_floor "$log2")"
	check "$kver: ... the device's floor_ms did not move ($f0 -> $f1)" same_number "$f0" "$f1"
	read -r f0 f1 <<<"$(val same_offset "$log2")"
	check "$kver: ... nor its clock_offset_ms ($f0 -> $f1): no IDs stamped ahead" same_number "$f0" "$f1"
	read -r f0 f1 <<<"$(val same_jumps "$log2")"
	check "$kver: ... nor statistics/floor_jumps ($f0 -> $f1)" same_number "$f0" "$f1"
	check "$kver: ... and no \"may repeat\" warning" lacks "$log2" same_log "may repeat"
	check "$kver: ... the IDs go on above those before ($(val same_after_max "$log2") > $before_stop)" \
		gt "$(val same_after_max "$log2")" "$before_stop"
	check "$kver: ... and it saved again under the same instance" \
		same_id "$(val same_resaved "$log2")" "$inst"
	# A reload: a new instance, the floor raised as before.
	read -r f0 f1 <<<"$(val reload_floor "$log2")"
	check "$kver: a reload draws a new instance_id ($(val reload_instance "$log2"))" \
		new_instance "$(val reload_instance "$log2")" "$inst"
	check "$kver: ... whose restore raises the floor to the saved one ($f1 = $f0) and says so" \
		restored "$log2" "$f0" "$f1"
	check "$kver: a corrupt file is refused (exit 3)" [ "$(val corrupt_rc "$log2")" = 3 ]
	read -r f0 f1 <<<"$(val corrupt_floor "$log2")"
	check "$kver: ... and the device's floor is unchanged ($f0)" same_number "$f0" "$f1"
	b_msg=$(val beyond_msg "$log2")
	b_ok=no
	[[ $(val beyond_rc "$log2") = 3 && $b_msg == *"past the last ms the device's layout can stamp"* ]] && b_ok=yes
	check "$kver: a floor past the layout's last ms (2100) is refused by --restore (exit 3: $b_msg)" \
		[ "$b_ok" = yes ]
	read -r f0 f1 <<<"$(val beyond_floor "$log2")"
	b_ok=no
	[[ -n $f0 && $f0 = "$f1" && $(val beyond_save_rc "$log2") = 3 ]] && b_ok=yes
	check "$kver: ... the device's floor is unchanged ($f0 = $f1), and --save refuses to carry it forward (exit 3)" \
		[ "$b_ok" = yes ]
	check "$kver: a full disk: --save exits 1 ($(val enospc_msg "$log2"))" \
		[ "$(val enospc_rc "$log2")" = 1 ]
	check "$kver: ... says 'No space left on device', keeps the old file, leaves no floor.tmp" \
		full_disk_ok "$log2"
	if vm_problems "$log1" && vm_problems "$log2"; then
		ok "$kver: no kernel problem on either boot"
	else
		notok "$kver: kernel problems (above)"
	fi
	echo "# $kver: $((t1 - t0)) s"
}

# The kernels' guests side by side (RESTART_JOBS, default 3), their
# outputs whole, in order.
parallel_each "${RESTART_JOBS:-3}" test_kernel "${kvers[@]}"
finish
