#!/bin/bash
# `make bench-compare BASE=<commit>`: the headline figures (P1, P6 at 4096
# IDs) of the module at BASE and of this working tree (HEAD), in one QEMU
# guest boot, over the same placements of their text (scripts/bench-place.sh),
# BASE and HEAD alternating in every round; prints per P the ratio HEAD/BASE
# with its spread and names a change beyond the spread (bench/report.py
# --placements).  Measures, never asserts (not part of make check).
#
# BASE's module is built from `git archive BASE Kbuild VERSION driver uapi`,
# HEAD's from the working tree (or MODULE_SRC=DIR); both are measured with
# this tree's harness (bench/snowflake_bench.c, bench/init-bench.sh).
#
# Environment: BASE=<commit> (required), BENCH_SECONDS=1.0, BENCH_ROUNDS=3,
# BENCH_PLACEMENTS=8, BENCH_PLACE_STEP=512, BENCH_APPEND="tsc=reliable",
# KVER, VM_TIMEOUT=900, SNOWFLAKE_KVM=1, SNOWFLAKE_SKIP_DEPS=1, MODULE_SRC=DIR.
# Writes build/bench-compare/: compare.md, compare.json, raw.txt, guest.log.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"
# shellcheck source=scripts/bench-place.sh
. "$ROOT/scripts/bench-place.sh"

[ -n "${BASE:-}" ] || die "usage: make bench-compare BASE=<commit>"
VM_TIMEOUT=${VM_TIMEOUT:-900}
BENCH_APPEND=${BENCH_APPEND-tsc=reliable}
BENCH_SECONDS=${BENCH_SECONDS:-1.0}
BENCH_ROUNDS=${BENCH_ROUNDS:-3}
BENCH_PLACEMENTS=${BENCH_PLACEMENTS:-8}
BENCH_PLACE_STEP=${BENCH_PLACE_STEP:-512}
OUT=$BUILD/bench-compare
start_all=$(now)

base_rev=$(git -C "$ROOT" rev-parse --verify --quiet "$BASE^{commit}") ||
	die "BASE=$BASE is not a commit of $ROOT"
head_name=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "?")
if [ -z "${MODULE_SRC:-}" ] && [ -n "$(git -C "$ROOT" status --porcelain -- Kbuild VERSION driver uapi 2>/dev/null)" ]; then
	head_name="$head_name+changes"
fi
[ -z "${MODULE_SRC:-}" ] || head_name=$MODULE_SRC
base_name=$(git -C "$ROOT" rev-parse --short "$base_rev")

rm -rf "$OUT"
mkdir -p "$OUT/base-src"
if [ "${SNOWFLAKE_SKIP_DEPS:-0}" != 1 ]; then
	"$ROOT/scripts/deps.sh" >"$OUT/deps.log" 2>&1 || {
		cat "$OUT/deps.log" >&2
		die "installing the dependencies failed"
	}
fi
kver=$(default_kver)
stage=$OUT/initramfs
initrd=$OUT/initramfs.cpio.gz
log=$OUT/guest.log

# BASE's module sources; VERSION only where BASE has one.
paths=(Kbuild driver uapi)
git -C "$ROOT" cat-file -e "$base_rev:VERSION" 2>/dev/null && paths+=(VERSION)
git -C "$ROOT" archive "$base_rev" "${paths[@]}" | tar -x -C "$OUT/base-src"

msg "building BASE $base_name and HEAD $head_name for $kver at $BENCH_PLACEMENTS placements, $BENCH_PLACE_STEP bytes apart"
{
	place_build "$kver" "$OUT/base-src" base "$OUT/place" "$OUT/place-build-base.log"
	place_build "$kver" "${MODULE_SRC:-$ROOT}" head "$OUT/place" "$OUT/place-build-head.log"
} >"$OUT/placements.txt"
sed 's/^/  /' "$OUT/placements.txt"
gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -static -pthread -o "$OUT/snowflake_bench" \
	"$ROOT/bench/snowflake_bench.c"

vm_stage "$stage" "$ROOT/bench/init-bench.sh"
install -m 0755 "$OUT/snowflake_bench" "$stage/snowflake_bench"
cp -R "$OUT/place" "$stage/place"
{
	echo 'BENCH_MODE=compare'
	place_conf "base head" "$BENCH_ROUNDS" "$BENCH_SECONDS"
} >"$stage/etc/snowflake-vm.conf"
vm_pack "$stage" "$initrd"

bench_accel=TCG
[ "${SNOWFLAKE_KVM:-0}" = 1 ] && bench_accel=KVM
msg "booting $(vmlinuz_of "$kver") under QEMU $bench_accel, ${VM_CPUS:-2} vCPUs (console in ${log#"$ROOT"/})"
show_place() {
	awk '{ gsub(/\r/, "") } /^BENCH place_p6 / { print "  " $0; fflush() }'
}
t0=$(now)
rc=0
load_watch "$OUT/host-load.txt"
# The parallel boot, as make bench's (scripts/bench.sh).
VM_MODE=parallel VM_APPEND="${VM_APPEND:-} $BENCH_APPEND" \
	vm_boot "$kver" "$initrd" "$log" "$VM_TIMEOUT" show_place || rc=$?
guest_load=$(load_watch_stop)
guest_secs=$(($(now) - t0))
tr -d '\r' <"$log" | grep -E '^BENCH( |-ERROR )' >"$OUT/guest.txt" || true
if ! grep -q '^BENCH place_done' "$OUT/guest.txt" || grep -q '^BENCH-ERROR' "$OUT/guest.txt"; then
	tail -n 40 "$log" | tr -d '\r' | sed 's/^/  | /' >&2
	die "the guest did not finish (qemu exit $rc; console in ${log#"$ROOT"/})"
fi
bench_guest_verdict "$log"

{
	echo "BENCH meta base=$base_name head=\"$head_name\" accel=$bench_accel vm_mode=parallel textpoke=$textpoke vcpus=${VM_CPUS:-2} guest_kernel=$kver placements=$BENCH_PLACEMENTS step=$BENCH_PLACE_STEP rounds=$BENCH_ROUNDS point_s=$BENCH_SECONDS host_loadavg=$guest_load host_cpus=$(nproc) date=$(date -u +%Y-%m-%dT%H:%M:%SZ) guest_seconds=$guest_secs"
	cat "$OUT/placements.txt" "$OUT/guest.txt"
} >"$OUT/raw.txt"
python3 "$ROOT/bench/report.py" --placements "$OUT/raw.txt" "$OUT"
echo
cat "$OUT/compare.md"
echo
msg "results: ${OUT#"$ROOT"/}/compare.md, compare.json (raw lines: raw.txt)"
msg "done in $(($(now) - start_all))s (guest ${guest_secs}s)"
