#!/bin/bash
# The handoff proof, end to end in guests: the pool's only pair is handed
# from "host A" (the module, snowflake-agent --owner host-a) to "host B" (the
# module reloaded with the wall clock stepped back 5 minutes and no floor
# restored: another host; snowflake-agent --owner host-b), through a real
# redis-server in the guest that persists every write.  Every ID of B must be
# above every ID of A, on each kernel: nothing but the store can carry A's
# time to B (issue 17).  A ends by SIGKILL (its lease runs out in Redis) in
# one round and by SIGTERM (released) in the other; a third round (replay)
# sets B's clock back only to where A read, both reading in every
# millisecond, so that a tree which passes no time from A to B shows B
# issuing A's very IDs.  The guest's /init is tests/handoff/init.sh;
# the agent is the static one of vm_add_agent (tests/lib/vm.sh), the
# CLI the static `snowflake`, handoff-ids is tests/handoff/handoff-ids.c.
#
#   HANDOFF_KVERS="KVER ..."  the kernels (default: all_kvers: 6.12, 6.1,
#                             6.12-rt, and newest_kver: 7.2), one after another
#   HANDOFF_TIMEOUT=300       seconds one guest may take
#   SNOWFLAKE_SKIP_DEPS=1     do not run deps.sh/ksrc.sh first (check.sh did)
#
# Prints the guests' ok/FAIL lines, a "figure: handoff ..." line per round
# and kernel (for check.sh's lanes), and "handoff: N passed, M failed".
set -uo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"

TIMEOUT=${HANDOFF_TIMEOUT:-300}
OUT=$BUILD/handoff
# One CPU, as in tests/restart/run.sh: nothing here needs two, and it
# keeps clear of TCG's cross-CPU code patching (a rare int3 oops at boot
# with -smp 2).
export VM_CPUS=${VM_CPUS:-1}

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
finish() {
	echo "handoff: $pass passed, $fail failed$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}

if [ "${SNOWFLAKE_SKIP_DEPS:-0}" != 1 ]; then
	"$ROOT/scripts/deps.sh" >/dev/null || { bad "scripts/deps.sh"; finish; }
	"$ROOT/scripts/ksrc.sh" >/dev/null || { bad "scripts/ksrc.sh"; finish; }
fi

if [ -n "${HANDOFF_KVERS:-}" ]; then
	read -ra kvers <<<"$HANDOFF_KVERS"
else
	mapfile -t kvers < <(all_kvers; [ -n "${KERNELS:-}" ] || newest_kver)
fi
[ "${#kvers[@]}" -gt 0 ] || { bad "no kernel to test"; finish; }

mkdir -p "$OUT"
echo "==== handoff: building the static CLI and handoff-ids ===="
make -s -C "$ROOT/selftests" OUT="$BUILD/selftests" KSFT_DIR="$BUILD/ksrc/$KSFT_SUBDIR" \
	"$BUILD/selftests/snowflake" >/dev/null || {
	bad "building the static CLI"
	finish
}
gcc -static -O2 -g -std=gnu11 -Wall -Wextra -Werror -o "$OUT/handoff-ids" \
	"$ROOT/tests/handoff/handoff-ids.c" || {
	bad "building handoff-ids"
	finish
}

# figure LINE: a guest's HANDOFF-FIGURE line, said for the lanes.
# shellcheck disable=SC2317 # called by vm_guest_results
figure() {
	local kver=$1 line=$2 k v kv
	declare -A f=()
	for kv in $line; do
		k=${kv%%=*} v=${kv#*=}
		f[$k]=$v
	done
	echo "figure: handoff $kver ${f[round]}: A ${f[ids_a]} IDs, B ${f[ids_b]} IDs, clock step ${f[clock_step_ms]} ms, min(B) - max(A) = ${f[min_b_minus_max_a]} (timestamps ${f[ts_min_b_minus_max_a_ms]} ms), B not above A ${f[b_not_above_a]}, equal ${f[b_equal_a]}"
}

test_kernel() {
	local kver=$1 dir=$OUT/$1 stage initrd log start secs rc console line
	stage=$dir/initramfs
	initrd=$dir/initramfs.cpio.gz
	log=$dir/console.log
	rm -rf "$dir"
	mkdir -p "$dir"
	echo
	echo "==== handoff $kver: building ===="
	if ! vm_module_stage "$kver" "$dir" "$stage" "$ROOT/tests/handoff/init.sh" "$dir/module.log"; then
		bad "$kver: building snowflake.ko"
		return 0
	fi
	install -m 0755 "$BUILD/selftests/snowflake" "$stage/usr/bin/snowflake"
	install -m 0755 "$OUT/handoff-ids" "$stage/usr/bin/handoff-ids"
	if ! vm_add_agent "$stage" "$dir"; then
		bad "$kver: staging the static snowflake-agent and redis-server"
		return 0
	fi
	vm_pack "$stage" "$initrd"

	echo "==== handoff $kver: booting (console in ${log#"$ROOT"/}) ===="
	start=$(now)
	vm_boot "$kver" "$initrd" "$log" "$TIMEOUT" >/dev/null
	rc=$?
	secs=$(($(now) - start))
	console=$(tr -d '\r' <"$log")
	# (The console may put escape sequences before it.)
	line=$(grep -o 'SNOWFLAKE-KERNEL [^ ]*' <<<"$console" | head -n1)
	if [ "$line" != "SNOWFLAKE-KERNEL $kver" ]; then
		bad "$kver: the guest did not run this kernel ($line)"
	fi
	vm_guest_results "$console" "$kver" HANDOFF 40 '^---- \/tmp\/agent-' '^---- end of ' figure "$kver"
	if vm_problems "$log"; then ok "$kver: no kernel problems on the console"; else bad "$kver: kernel problems (above)"; fi
	echo "handoff on $kver: ${secs}s"
}

# The kernels' guests side by side (HANDOFF_JOBS, default 4), their
# outputs whole, in order.
parallel_each "${HANDOFF_JOBS:-4}" test_kernel "${kvers[@]}"
finish
