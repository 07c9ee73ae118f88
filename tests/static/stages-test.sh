#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A stage name that `make check` does not have (STAGES="agent", as
# docs/deployment-redis.md once said) must be an error that lists the
# stages, before any stage runs: it used to run deps and ksrc only and
# report success.  Run by the static stage; prints
# "stages-test: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
cd "$ROOT"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rc=0
STAGES="agent style" SNOWFLAKE_BUILD=$tmp/build timeout 60 bash tests/lib/check.sh \
	>"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
check "STAGES=\"agent style\": exit 2 ($rc)" test "$rc" -eq 2
check "STAGES=\"agent style\": names agent as unknown" grep -q 'no such stage: agent\b' "$tmp/err"
check "STAGES=\"agent style\": lists the stages" grep -q '^the stages: deps ksrc .*\bstyle\b.*\bdebug-kernel\b' "$tmp/err"
check "STAGES=\"agent style\": no stage ran" test ! -s "$tmp/out"
# Names apart by a newline or a tab are two names, as by a space: they once
# passed the check of the names and then selected nothing (deps and ksrc
# ran, "2 passed, 0 failed").
sel=$(STAGES=$'style\nsparse' bash tests/lib/check.sh --selected 2>&1 | paste -sd ' ') || true
check "STAGES=\$'style\\nsparse' selects style and sparse ($sel)" test "$sel" = "style sparse"
sel=$(STAGES=$' docs\tstatic  ' bash tests/lib/check.sh --selected 2>&1 | paste -sd ' ') || true
check "STAGES=\$' docs\\tstatic  ' selects static and docs ($sel)" test "$sel" = "static docs"
# The summary's failure lines give a kselftest failure's reason (CI's run
# of 109e975 printed "not ok 12 cli.usage_errors_exit_2_and_change_nothing"
# and nothing that said why): the last three messages of its test.
reasons=$(printf '%s\n' '#  RUN           cli.a ...' '#            OK  cli.a' 'ok 11 cli.a' \
	'#  RUN           cli.x ...' '# cli_test.c:730:x:Expected 2 (2) == r.rc (0)' \
	'# x: Test terminated by timeout' '#          FAIL  cli.x' 'not ok 12 cli.x' 'ok 13 cli.y' |
	bash tests/lib/check.sh --reasons | paste -sd '|')
check "check.sh --reasons: a kselftest failure's messages before its not ok ($reasons)" \
	test "$reasons" = '  # cli_test.c:730:x:Expected 2 (2) == r.rc (0)|  # x: Test terminated by timeout|not ok 12 cli.x'
stages=$(bash tests/lib/check.sh --stages | paste -sd ' ')
check "check.sh --stages: $stages" grep -qE '^deps ksrc .*\bdocs\b' <<<"$stages"

# How a stage is counted (tests/lib/count.sh): a counting lane whose log
# says "0 passed, 0 failed", or that ends (exit 0) with no count line, is a
# failure; a stage of UNCOUNTED_STAGES with no count line counts as one by
# its exit status.  counted NAME RC LOG: "PASSED FAILED" as check.sh counts.
counted() (
	BUILD=$tmp total_pass=0 total_fail=0 table=() failed_stages=()
	# shellcheck source=tests/lib/count.sh
	. tests/lib/count.sh
	printf '%s\n' "$3" >"$BUILD/check-stage-$1.log"
	count_stage "$1" "$2" 1 >/dev/null
	echo "$total_pass $total_fail"
)
check "a lane's 3 passed, 0 failed, exit 0: 3 0" test "$(counted unit 0 'unit: 3 passed, 0 failed')" = "3 0"
check "a lane's 0 passed, 0 failed, exit 0: a failure" test "$(counted unit 0 'unit: 0 passed, 0 failed')" = "0 1"
check "a counting lane with no count line, exit 0: a failure" test "$(counted contract 0 'started')" = "0 1"
check "a counting lane's count line and exit 1: a failure" test "$(counted unit 1 'unit: 2 passed, 0 failed')" = "2 1"
check "an uncounted stage (bench-smoke), exit 0: one passed" test "$(counted bench-smoke 0 'done')" = "1 0"
check "an uncounted stage (deps), exit 1: one failed" test "$(counted deps 1 'apt failed')" = "0 1"
# Every stage but UNCOUNTED_STAGES prints its count line (the list kept true).
# shellcheck source=tests/lib/count.sh
. tests/lib/count.sh
# (the dkms-SUITE stages: tests/dkms-suite/run.sh, its STAGE=dkms-$SUITE.)
for st in $(bash tests/lib/check.sh --stages); do
	uncounted "$st" && continue
	if [[ $st == dkms-* ]]; then
		# shellcheck disable=SC2016 # the script's text, not expanded here
		check "stage $st prints \"$st: N passed, M failed\" (tests/dkms-suite/run.sh ${st#dkms-})" \
			grep -qE 'echo "\$STAGE: \$[a-z_]+ passed, \$[a-z_]+ failed' tests/dkms-suite/run.sh
		continue
	fi
	check "stage $st prints \"$st: N passed, M failed\" (tests/$st/run.sh)" \
		grep -qE "echo \"$st: \\\$[a-z_]+ passed, \\\$[a-z_]+ failed" "tests/$st/run.sh"
done
echo "stages-test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
