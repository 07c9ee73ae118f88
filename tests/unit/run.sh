#!/bin/bash
# Host unit tests of the generator core: `make -C selftests/core check`,
# a kselftest-harness program.  Counts its top-level TAP results.
# Prints "unit: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

dir=$ROOT/selftests/core
if [ ! -f "$dir/Makefile" ]; then
	echo "unit: ${dir#"$ROOT"/}/Makefile is missing: no unit tests" >&2
	echo "unit: 0 passed, 1 failed"
	exit 1
fi

mkdir -p "$BUILD"
log=$BUILD/unit.log
set +e
make -C "$dir" ${V:+V="$V"} check 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e

pass=$(grep -cE '^ok [0-9]+([[:space:]]|$)' "$log" || true)
fail=$(grep -cE '^not ok [0-9]+([[:space:]]|$)' "$log" || true)
skip=$(grep -E '^ok [0-9]+([[:space:]]|$)' "$log" | grep -ciE '#[[:space:]]*skip' || true)
# Every program's plan (1..N) against the results it printed: a crash or a
# hang after some cases leaves results missing.
plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$log" | awk '{ s += $1 } END { print s + 0 }')
# The pure core has nothing to skip: a skipped case is a failure (issue
# 42, finding 13), never a pass.
if [ "$skip" -gt 0 ]; then
	echo "unit: $skip cases skipped (a failure here):"
	grep -E '^ok [0-9]+([[:space:]]|$)' "$log" | grep -iE '#[[:space:]]*skip' | indent
	pass=$((pass - skip)) fail=$((fail + skip))
fi
if [ "$plan" -ne "$((pass + fail))" ]; then
	echo "unit: $((pass + fail)) results of the $plan planned"
	fail=$((fail + 1))
fi
if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
	echo "unit: make check exited $rc without a failing test"
	fail=1
elif [ "$((pass + fail))" -eq 0 ]; then
	echo "unit: no TAP result"
	fail=1
fi
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
