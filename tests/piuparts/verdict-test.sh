#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The piuparts lane's verdict (tests/piuparts/verdict.sh) fed made-up logs:
# a run whose upgrade test piuparts skipped (the old packages, or one of
# them, unknown to apt) or failed must fail; a whole run passes.  Run by
# tests/piuparts/run.sh; alone: bash tests/piuparts/verdict-test.sh.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/piuparts/verdict.sh
. "$here/verdict.sh"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
n=0 bad=0
case_() {
	local want=$1 what=$2 got=fail
	cat >"$log"
	piu_verdict "$log" && got=pass
	n=$((n + 1))
	if [ "$got" = "$want" ]; then echo "ok $n $want: $what"; else echo "not ok $n $want: $what (got $got)"; bad=$((bad + 1)); fi
}
ip='0m12.3s INFO: PASS: Installation and purging test.'
up='0m40.1s INFO: PASS: Installation, upgrade and purging tests.'
all='0m41.0s INFO: PASS: All tests.'
case_ pass "install, upgrade, purge" < <(printf '%s\n' "$ip" "$up" "$all")
case_ fail "the upgrade skipped: the old packages unknown to apt" \
	< <(printf '%s\n' "$ip" "0m13.0s INFO: Can't test upgrade: packages not known by apt-get." "$all")
case_ fail "the upgrade skipped: --apt" \
	< <(printf '%s\n' "$ip" "0m13.0s INFO: Can't test upgrades: -a or --apt option used." "$all")
case_ fail "the upgrade of one package of two skipped: not in the old repository" \
	< <(printf '%s\n' "$ip" "0m28.6s INFO: apt-cache knows about the following packages: snowflake-tools" \
		"0m28.6s INFO: the following packages are not in the archive: snowflake-agent" "$up" "$all")
case_ fail "the upgrade failed" < <(printf '%s\n' "$ip" '0m30.0s ERROR: FAIL: Installation, upgrade and purging tests.')
case_ fail "no install and purge test" < <(printf '%s\n' "$up" "$all")
case_ fail "an empty log" </dev/null
echo "# verdict-test: $((n - bad)) of $n"
[ "$bad" = 0 ]
