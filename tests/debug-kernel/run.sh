#!/bin/bash
# The debug-kernel lane (`make debug-kernel`, the check stage
# `debug-kernel`): the guest suite but cli_test (tests/vmtest/run.sh, which adds
# the kmemleak check on this kernel) on the tinyconfig 6.12 with lockdep,
# KASAN, UBSAN and kmemleak that scripts/debug-kernel.sh builds (or reuses
# from build/debug-kernel/).  Ends with "debug-kernel: N passed, M failed".
# There fuzz_test makes SNOWFLAKE_FUZZ_CALLS=100000 calls unless set (each
# costs ~5x more), and concurrency_test's torture SNOWFLAKE_TORTURE_IDS=250000
# IDs per process (8 x 1,000,000 took 85 s of the suite's 400 under KASAN
# and lockdep, which see the same lock and paths at any count); TESTS
# (default: every selftest but cli_test, below).
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

mkdir -p "$BUILD"
"$ROOT/scripts/debug-kernel.sh" | tee "$BUILD/debug-kernel-kver.txt"
kver=$(sed -n 's/^KVER=//p' "$BUILD/debug-kernel-kver.txt" | tail -n1)
[ -n "$kver" ] || die "scripts/debug-kernel.sh printed no KVER"
rc=0
out=$BUILD/debug-kernel-vmtest.log
# KASAN, lockdep and kmemleak under TCG: several times slower.  fuzz_test
# makes 100,000 calls here (about 55 s; vmtest makes 1,000,000 on its
# first kernel and 250,000 on the others).  Every test binary but
# cli_test: it runs the CLI, a new process for each of its ~100 commands
# (126 s here, 23 on a quiet machine), and the module sees only what
# read_test, ioctl_test, sysfs_test and params_test do to it already;
# vmtest runs it on every kernel.
if [ -z "${TESTS:-}" ]; then
	TESTS=$(find "$ROOT/selftests" -maxdepth 1 -name '*_test.c' -printf '%f\n' | sed 's/\.c$//' | grep -vx cli_test | sort | paste -sd ' ')
fi
KERNELS=$kver VM_TIMEOUT=${VM_TIMEOUT:-2400} TEST_TIMEOUT=${TEST_TIMEOUT:-1200} \
	TESTS=$TESTS \
	SNOWFLAKE_FUZZ_CALLS=${SNOWFLAKE_FUZZ_CALLS:-100000} \
	SNOWFLAKE_TORTURE_IDS=${SNOWFLAKE_TORTURE_IDS:-250000} \
	"$ROOT/tests/vmtest/run.sh" 2>&1 | tee "$out" || rc=${PIPESTATUS[0]}
line=$(grep -E '^vmtest: [0-9]+ passed, [0-9]+ failed' "$out" | tail -n1) || true
if [ -n "$line" ]; then
	p=$(sed -E 's/^vmtest: ([0-9]+) passed.*/\1/' <<<"$line")
	f=$(sed -E 's/^vmtest: [0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")
else
	p=0 f=1
fi
[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
# vmtest's notes (a kernel problem and where it was) after the counts.
echo "debug-kernel: $p passed, $f failed$(sed -nE 's/^vmtest: [0-9]+ passed, [0-9]+ failed//p' <<<"$line")"
[ "$f" -eq 0 ]
