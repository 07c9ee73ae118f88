#!/bin/bash
# VM clones: a guest with the module (strict=1, a worker id assigned) is
# saved with QEMU's savevm while it runs, goes on issuing IDs (the parent),
# and is then started again from that snapshot with another vmgenid GUID
# (the clone, which resumes with its parent's ids and its parent's clock).
# The clone's kernel reports the VM fork (vmgenid); the module must then
# refuse reads until a worker id is assigned for the new fork count (a
# stale count is ESTALE), and no ID of the clone may equal one of the
# parent's.  See tests/vmclone/init.sh.
#
# Environment:
#   KERNELS="KVER ..."   kernels (default: Debian 12's and the newest,
#                        newest_kver; not 5.10, whose kernel cannot report a
#                        VM fork (vmtest checks that it says so), nor the
#                        debug kernel, which has no vmgenid driver)
#   VMCLONE_TIMEOUT=300  seconds one boot may take
#   SNOWFLAKE_SKIP_DEPS=1  do not run deps.sh/ksrc.sh first (check.sh did)
#
# Needs qemu-img (scripts/deps.sh installs it) and python3 for the
# monitor.  Prints
# "vmclone: N passed, M failed"; exits nonzero when anything failed.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"

TIMEOUT=${VMCLONE_TIMEOUT:-300}
OUT=$BUILD/vmclone
GUID_PARENT=6f1d2a9e-7c3b-4e58-9a40-1b2c3d4e5f60
GUID_CLONE=0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d

if [ "${SNOWFLAKE_SKIP_DEPS:-0}" != 1 ]; then
	"$ROOT/scripts/deps.sh"
	"$ROOT/scripts/ksrc.sh"
fi

finish() {
	echo "vmclone: $pass passed, $fail failed$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}

for tool in qemu-img python3 qemu-system-x86_64; do
	if ! command -v "$tool" >/dev/null; then
		notok "$tool is missing (scripts/deps.sh installs it)"
		finish
	fi
done

mapfile -t kvers < <(all_kvers; [ -n "${KERNELS:-}" ] || newest_kver)

mkdir -p "$OUT"
echo "==== building the static snowflake CLI and vmclone-stale ===="
if ! make -C "$ROOT/userspace" OUT="$BUILD/userspace" ${V:+V="$V"} "$BUILD/userspace/libsnowflake.a" ||
	! cc -static -O2 -g -std=gnu11 -Wall -Wextra -Werror -I"$ROOT/userspace/include" -I"$ROOT/uapi" \
		-o "$OUT/snowflake" "$ROOT"/userspace/cli/*.c "$BUILD/userspace/libsnowflake.a" ||
	! cc -static -O2 -g -std=gnu11 -Wall -Wextra -Werror -I"$ROOT/uapi" \
		-o "$OUT/vmclone-stale" "$ROOT/tests/vmclone/vmclone-stale.c"; then
	notok "building the static binaries"
	finish
fi

# qemu KVER INITRD DISK GUID SOCK LOG [ARGS...]: one guest in the background,
# its console in LOG, its monitor on the unix socket SOCK.  One CPU, one
# TCG thread (vm_accel_args, tests/lib/vm.sh).  Sets $qpid.
qemu() {
	local kver=$1 initrd=$2 disk=$3 guid=$4 sock=$5 log=$6 kernel
	shift 6
	kernel=$(vmlinuz_of "$kver") || return 1
	rm -f "$sock"
	# shellcheck disable=SC2054 # qemu arguments with commas
	vm_accel_args single
	timeout -k 10 "$TIMEOUT" qemu-system-x86_64 "${VM_ACCEL[@]}" -smp 1 -m 512 \
		-nographic -no-reboot -nodefaults -serial mon:stdio \
		-monitor "unix:$sock,server,nowait" \
		-device "vmgenid,guid=$guid" \
		-drive "file=$disk,format=qcow2,if=virtio" \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 oops=panic quiet loglevel=4 ${VM_KARGS[*]}" \
		"$@" </dev/null >"$log" 2>&1 &
	qpid=$!
}

# wait_for LOG PATTERN SECS: until a console line matches (0) or time is up.
wait_for() {
	local log=$1 pat=$2 secs=$3 i
	for ((i = 0; i < secs * 10; i++)); do
		if log_has "$log" "$pat"; then
			return 0
		fi
		kill -0 "$qpid" 2>/dev/null || break
		sleep 0.1
	done
	log_has "$log" "$pat"
}

# monitor SOCK CMD: one human-monitor command; prints its output once the
# "(qemu)" prompt is back (savevm takes a while), at most 120 s.
monitor() {
	timeout 130 python3 - "$1" "$2" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(120)
s.connect(sys.argv[1])
def until_prompt():
    buf = b""
    end = time.time() + 120
    while not buf.endswith(b"(qemu) ") and time.time() < end:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    return buf
until_prompt()
s.sendall(sys.argv[2].encode() + b"\n")
out = until_prompt().decode(errors="replace").replace("\r", "")
print(out.rsplit("(qemu) ", 1)[0])
PY
}

# stop_qemu: quit through the monitor, then make sure, by the pid.
stop_qemu() {
	local sock=$1
	monitor "$sock" quit >/dev/null 2>&1 || true
	for _ in $(seq 50); do
		kill -0 "$qpid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$qpid" 2>/dev/null || true
	wait "$qpid" 2>/dev/null || true
}

# worker_is W IDS: every ID of IDS (one a line, the default layout
# 41/5/5/12) has worker id W, and there is at least one.
worker_is() {
	local id n=0
	while read -r id; do
		[ -n "$id" ] || continue
		[ $(((id >> 12) & 31)) -eq "$1" ] || return 1
		n=$((n + 1))
	done <<<"$2"
	[ "$n" -gt 0 ]
}

# lines LOG KEY: the rest of every "VMCLONE-KEY ..." console line.
lines() { tr -d '\r' <"$1" | sed -n "s/^.*VMCLONE-$2 //p"; }

# clone_run KVER NAME INIT [agent]: the initramfs with INIT (and the agent
# and Redis with "agent"), the parent booted, saved with savevm when it says
# VMCLONE-SNAPSHOT-NOW and left to run to its end, then the clone from that
# snapshot with another vmgenid GUID.  Sets $dir, $plog and $clog; returns
# 1 (counted) when a step failed.
clone_run() {
	local kver=$1 name=$2 init=$3 with=${4:-} stage initrd disk sock t0
	dir=$OUT/$kver/$name
	stage=$dir/initramfs
	initrd=$dir/initramfs.cpio.gz
	disk=$dir/disk.qcow2
	sock=$dir/monitor.sock
	plog=$dir/parent.log
	clog=$dir/clone.log
	t0=$(now)
	echo
	echo "==== vmclone $kver $name ===="
	rm -rf "$dir"
	mkdir -p "$dir"
	if ! vm_module_stage "$kver" "$dir" "$stage" "$init" "$dir/build.log"; then
		notok "building snowflake.ko"
		return 1
	fi
	install -m 0755 "$OUT/snowflake" "$stage/usr/bin/snowflake"
	install -m 0755 "$OUT/vmclone-stale" "$stage/usr/bin/vmclone-stale"
	if [ "$with" = agent ] && ! vm_add_agent "$stage" "$dir"; then
		notok "staging the agent and redis-server"
		return 1
	fi
	vm_pack "$stage" "$initrd"
	# savevm keeps the RAM in a qcow2 image: a blank one, not used otherwise.
	qemu-img create -q -f qcow2 "$disk" 64M

	# The parent: saved while it sleeps, then it goes on.
	qemu "$kver" "$initrd" "$disk" "$GUID_PARENT" "$sock" "$plog"
	if ! wait_for "$plog" '^VMCLONE-SNAPSHOT-NOW' "$TIMEOUT"; then
		stop_qemu "$sock"
		tail -n 30 "$plog" | indent
		notok "the parent reached the snapshot point"
		return 1
	fi
	monitor "$sock" "savevm clone" >"$dir/savevm.log" 2>&1 || true
	monitor "$sock" "info snapshots" >"$dir/snapshots.log" 2>&1 || true
	if ! grep -q ' clone ' "$dir/snapshots.log"; then
		stop_qemu "$sock"
		indent <"$dir/savevm.log"
		notok "savevm"
		return 1
	fi
	# (SNOWFLAKE-VM-DONE comes after VMCLONE-DONE and the kernel log,
	# tests/lib/kernel-log.sh)
	wait_for "$plog" '^SNOWFLAKE-VM-DONE' "$TIMEOUT" || true
	stop_qemu "$sock"

	# The clone: the same machine from the snapshot, another vmgenid.
	qemu "$kver" "$initrd" "$disk" "$GUID_CLONE" "$sock" "$clog" -loadvm clone
	wait_for "$clog" '^SNOWFLAKE-VM-DONE' "$TIMEOUT" || true
	stop_qemu "$sock"
	echo "# parent and clone in $(($(now) - t0)) s; consoles in ${dir#"$ROOT"/}"
	check "the parent ran to its end" grep -q '^VMCLONE-DONE' <(tr -d '\r' <"$plog")
	check "the clone ran to its end" grep -q '^VMCLONE-DONE' <(tr -d '\r' <"$clog")
	# Every guest's kernel log at warning level and above, and its canary
	# (tests/lib/kernel-log.sh): the clone's covers the parent's boot too.
	check "no kernel problem on the parent's console" vm_problems "$plog"
	check "no kernel problem on the clone's console" vm_problems "$clog"
}

# Static ids: the clone refuses until an administrator's re-arm.
test_static() {
	local kver=$1 pids cids dups forks
	TAP_PREFIX="$kver static: "
	clone_run "$kver" static "$ROOT/tests/vmclone/init.sh" || { TAP_PREFIX=; return 0; }
	check "the parent saw no VM fork and went on issuing IDs" \
		test "$(lines "$plog" FORKS)" = "0 vm_forked=0 refusing=0" -a \
		"$(lines "$plog" NEXT | tr '\n' ' ')" = "before ok after ok "
	forks=$(lines "$clog" FORKS)
	check "the clone's kernel reported one VM fork: reads refused ($forks)" \
		test "$forks" = "1 vm_forked=1 refusing=1"
	check "the clone's first read after resuming was refused (ENOTCONN)" \
		grep -q '^after refused: .*' <(lines "$clog" NEXT)
	check "a re-arm for the count from before the fork: ESTALE, still refusing" \
		test "$(lines "$clog" STALE) $(lines "$clog" FORKED-STILL)" = "refused 1"
	check "the re-arm with a new worker id for the new count: served again" \
		test "$(lines "$clog" REARM) $(lines "$clog" FORKED-AFTER) $(lines "$clog" NEXT | tail -n 1)" = \
		"ok 0 rearmed ok"
	check "the module logged the fork" grep -q 'virtual machine fork 1' <(lines "$clog" DMESG)
	pids=$(lines "$plog" ID | awk '{ print $2 }' | sort)
	cids=$(lines "$clog" ID | awk '$1 != "before" { print $2 }' | sort)
	dups=$(comm -12 <(printf '%s\n' "$pids") <(printf '%s\n' "$cids") | grep -c . || true)
	echo "# parent: $(grep -c . <<<"$pids") IDs; clone, after the snapshot: $(grep -c . <<<"$cids") IDs; in both: $dups"
	check "no ID of the clone equals one of the parent's" test "$dups" -eq 0 -a -n "$cids"
	check "the clone's IDs carry the new worker id" worker_is 2 "$(lines "$clog" ID | awk '$1 == "rearmed" { print $2 }')"
	TAP_PREFIX=
}

# An agent holding a lease: the clone's copy of it must drop the parent's
# identity, take a new pair, and the device refuse reads until then.
test_agent() {
	local kver=$1 ppoll cpoll k pafter cafter dups before cw
	TAP_PREFIX="$kver agent: "
	clone_run "$kver" agent "$ROOT/tests/vmclone/init-agent.sh" agent ||
		{ TAP_PREFIX=; return 0; }
	before=$(lines "$plog" PAIR | sed -n 's/^before //p')
	check "the parent saw no VM fork and kept its pair ($before)" \
		test "$(lines "$plog" FORKS) $(lines "$plog" PAIR | sed -n 's/^after //p')" = "0 $before"
	check "the clone's kernel reported one VM fork" test "$(lines "$clog" FORKS)" = 1
	check "the clone's agent dropped the parent's identity (event=vm_fork)" \
		grep -q 'event=vm_fork ' <(lines "$clog" AGENT)
	cafter=$(lines "$clog" PAIR | sed -n 's/^after //p')
	check "the clone's agent holds a new pair ($cafter, the parent's $before)" \
		test -n "$cafter" -a "$cafter" != "$before"
	# The two poll logs are the same up to the snapshot; after it each VM
	# read on its own.
	ppoll=$(lines "$plog" POLL)
	cpoll=$(lines "$clog" POLL)
	k=$(paste -d'|' <(printf '%s\n' "$ppoll") <(printf '%s\n' "$cpoll") |
		awk -F'|' '$1 != $2 && !k { k = NR } END { print k ? k - 1 : NR }')
	k=${k:-0}
	pafter=$(printf '%s\n' "$ppoll" | tail -n +$((k + 1)))
	cafter=$(printf '%s\n' "$cpoll" | tail -n +$((k + 1)))
	echo "# poll: $k reads before the snapshot; after it the parent read $(grep -c '^ok' <<<"$pafter") IDs, the clone $(grep -c '^ok' <<<"$cafter") IDs and $(grep -c '^refused' <<<"$cafter") refusals"
	check "the clone's reads were refused until its agent had a new pair" \
		grep -q '^refused' <<<"$cafter"
	cw=$(lines "$clog" PAIR | sed -n 's/^after [0-9]* //p')
	check "the clone's last IDs carry its new worker id ($cw)" \
		worker_is "$cw" "$(grep '^ok' <<<"$cafter" | tail -n 5 | awk '{ print $2 }')"
	dups=$(comm -12 <(grep '^ok' <<<"$pafter" | awk '{ print $2 }' | sort) \
		<(grep '^ok' <<<"$cafter" | awk '{ print $2 }' | sort) | grep -c . || true)
	check "no ID of the clone equals one of the parent's ($dups in both)" test "$dups" -eq 0
	TAP_PREFIX=
}

for kver in "${kvers[@]}"; do
	if [ -n "$(debug_tree_of "$kver")" ]; then
		echo "vmclone: $kver is the debug kernel (no vmgenid driver): skipped"
		continue
	fi
	test_static "$kver"
	# The agent in a clone: on Debian's 6.12 (as the agent-guest stage).
	if [[ $kver == 6.12.* && $kver != *-rt-* ]]; then
		test_agent "$kver"
	fi
done
finish
