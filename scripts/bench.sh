#!/bin/bash
# `make bench`: measure, never assert.  Builds snowflake.ko for the default
# guest kernel (6.12) and the static bench/snowflake_bench, boots one QEMU
# guest that runs it (P1-P4, all in the same boot so the ratios are fair),
# then counts the instructions of the pure generator core natively under
# callgrind (P5), and writes build/bench/results.json, table.md and bench.svg
# (bench/report.py).
#
# The guest runs under QEMU TCG (software emulation) unless SNOWFLAKE_KVM=1:
# absolute times are not native; the ratios are what count.
#
# Environment: KVER=<kernel release> (default: the first supported kernel),
# BENCH_SECONDS=1.0 (seconds per throughput point in the guest), BENCH_ROUNDS=3
# (P1-P4 repeated in the same boot; the report takes the medians),
# BENCH_APPEND="tsc=reliable" (guest kernel command line, see below),
# VM_TIMEOUT=600, SNOWFLAKE_KVM=1, SNOWFLAKE_SKIP_DEPS=1, MODULE_SRC=DIR.
#
# Why tsc=reliable: under TCG on a busy host the guest's clocksource watchdog
# sometimes finds the emulated TSC skewed against the emulated HPET, marks
# it unstable at a random moment of the run and switches to the HPET, whose
# every read is an emulated MMIO access.  The device reads the clock on
# every read(2) (/dev/zero does not), so the results became bimodal.  Real
# hardware keeps the TSC; so does the benchmark guest.  BENCH_APPEND= (empty)
# turns it off; the clocksource at the start and the end is reported.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/vm.sh
. "$ROOT/scripts/vm.sh"

VM_TIMEOUT=${VM_TIMEOUT:-600}
BENCH_SECONDS=${BENCH_SECONDS:-1.0}
BENCH_ROUNDS=${BENCH_ROUNDS:-3}
BENCH_APPEND=${BENCH_APPEND-tsc=reliable}
OUT=$BUILD/bench
mkdir -p "$OUT"
start_all=$(now)

if [ "${SNOWFLAKE_SKIP_DEPS:-0}" != 1 ]; then
	"$ROOT/scripts/deps.sh" >"$OUT/deps.log" 2>&1 || {
		cat "$OUT/deps.log" >&2
		die "installing the dependencies failed"
	}
fi
for t in gcc qemu-system-x86_64 valgrind callgrind_annotate gnuplot python3; do
	command -v "$t" >/dev/null || die "$t is missing (run scripts/deps.sh)"
done

kver=$(default_kver)
moddir=$BUILD/mod-bench-$kver
stage=$BUILD/bench/initramfs
initrd=$OUT/initramfs.cpio.gz
log=$OUT/guest.log
CFLAGS=(-O2 -g -std=gnu11 -Wall -Wextra -Werror)

msg "building snowflake.ko for $kver"
(build_module "$kver" "$moddir") >"$OUT/module-build.log" 2>&1 || {
	cat "$OUT/module-build.log" >&2
	die "building the module failed"
}

msg "building bench/snowflake_bench (static) and bench/core_bench (native)"
gcc "${CFLAGS[@]}" -static -pthread -o "$OUT/snowflake_bench" "$ROOT/bench/snowflake_bench.c"
gcc "${CFLAGS[@]}" -I"$ROOT/driver" -I"$ROOT/uapi" -o "$OUT/core_bench" \
	"$ROOT/bench/core_bench.c" "$ROOT/driver/snowflake_core.c"

vm_stage "$stage" "$ROOT/bench/init-bench.sh"
cp "$moddir/snowflake.ko" "$stage/snowflake.ko"
install -m 0755 "$OUT/snowflake_bench" "$stage/snowflake_bench"
printf 'BENCH_ARGS="-s %s -r %s"\n' "$BENCH_SECONDS" "$BENCH_ROUNDS" >"$stage/etc/snowflake-vm.conf"
vm_pack "$stage" "$initrd"

bench_accel=TCG
[ "${SNOWFLAKE_KVM:-0}" = 1 ] && bench_accel=KVM
msg "booting $(vmlinuz_of "$kver") under QEMU $bench_accel, ${VM_CPUS:-2} vCPUs, append '$BENCH_APPEND' (console in ${log#"$ROOT"/})"
show_bench() {
	awk '{ gsub(/\r/, "") } /^BENCH/ { print "  " $0; fflush() }'
}
t0=$(now)
rc=0
VM_APPEND="${VM_APPEND:-} $BENCH_APPEND" vm_boot "$kver" "$initrd" "$log" "$VM_TIMEOUT" show_bench || rc=$?
guest_secs=$(($(now) - t0))
tr -d '\r' <"$log" | grep -E '^BENCH( |-DMESG )' >"$OUT/guest.txt" || true
if ! grep -q '^BENCH done' "$OUT/guest.txt" || grep -q '^BENCH-ERROR' <(tr -d '\r' <"$log"); then
	tail -n 40 "$log" | tr -d '\r' | sed 's/^/  | /' >&2
	die "the guest benchmark did not finish (qemu exit $rc; console in ${log#"$ROOT"/})"
fi
vm_problems "$log" || die "kernel problems during the benchmark"

# P5: instructions of sf_core_reserve() only (--toggle-collect), natively.
cg() { # MODE CALLS
	local out=$OUT/callgrind.out.$1 ir ids
	valgrind --tool=callgrind --toggle-collect=bench_reserve \
		--callgrind-out-file="$out" "$OUT/core_bench" "$1" "$2" \
		>"$OUT/core-$1.txt" 2>"$OUT/callgrind-$1.log" ||
		die "callgrind failed (see ${OUT#"$ROOT"/}/callgrind-$1.log)"
	ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")
	ids=$(sed -n 's/.* ids=\([0-9]*\).*/\1/p' "$OUT/core-$1.txt")
	if [ -z "$ir" ] || [ -z "$ids" ]; then
		die "no callgrind totals for $1"
	fi
	# The same count, function by function, for the record.
	callgrind_annotate "$out" >"$OUT/callgrind-annotate-$1.txt" 2>&1 || true
	echo "BENCH p5 mode=$1 calls=$2 ids=$ids instructions=$ir"
}
msg "callgrind: sf_core_reserve() natively, $(valgrind --version)"
{
	cg batch 20000
	cg single 1000000
} | tee "$OUT/core.txt"

{
	echo "BENCH meta accel=$bench_accel append=\"$BENCH_APPEND\" host_loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\" host_cpus=$(nproc) guest_kernel=$kver qemu=\"$(qemu-system-x86_64 --version | sed -n 1p)\" valgrind=$(valgrind --version) gcc=\"$(gcc --version | sed -n 1p)\" date=$(date -u +%Y-%m-%dT%H:%M:%SZ) guest_seconds=$guest_secs"
	cat "$OUT/guest.txt" "$OUT/core.txt"
} >"$OUT/raw.txt"

python3 "$ROOT/bench/report.py" "$OUT/raw.txt" "$OUT"
gnuplot "$OUT/bench.gp"
msg "results: ${OUT#"$ROOT"/}/results.json, table.md, bench.svg (raw lines: raw.txt)"
echo
cat "$OUT/table.md"
echo
msg "done in $(($(now) - start_all))s (guest ${guest_secs}s)"
