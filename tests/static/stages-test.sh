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
stages=$(bash tests/lib/check.sh --stages | paste -sd ' ')
check "check.sh --stages: $stages" grep -qE '^deps ksrc .*\bdocs\b' <<<"$stages"
echo "stages-test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
