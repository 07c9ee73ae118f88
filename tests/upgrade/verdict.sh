# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
# sfup_verdict NAME RC LOG EXPECTED: the verdict on one run of the previous
# release's selftest NAME against today's module (tests/upgrade/guest.sh),
# from its exit code RC and its kselftest output LOG, against the list of
# cases allowed to fail, EXPECTED (tests/upgrade/expected-fail: lines
# "NAME CASE ERE  why", the ERE a line the case's failure must print).
# Prints one line, "pass: ..." or "fail: ...", and returns 0 or 1.
#
# The run passes only when all of these hold:
#  - it ended by itself (no timeout, no signal: RC below 124);
#  - it printed its plan (1..N) and N results (a crash or a hang after a
#    listed case leaves results missing);
#  - no case was skipped (a SKIP is not a pass);
#  - every failed case is listed for NAME, and its output between its
#    "RUN" line and its result has a line matching the listed ERE (a
#    listed case failing for another reason is a failure);
#  - every case listed for NAME ran and failed (one that passes now must
#    leave the list);
#  - RC is 0 when nothing failed, nonzero when something did.
# tests/upgrade/verdict-test.sh feeds it each of these failures.
sfup_verdict() {
	local name=$1 rc=$2 log=$3 exp=$4 plan nres failed c ere listed bad=""
	if [ "$rc" -ge 124 ]; then
		echo "fail: exit $rc (a timeout or a signal: the cases after it never ran)"
		return 1
	fi
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$log" | head -n 1)
	nres=$(grep -cE '^(ok|not ok) [0-9]+ ' "$log")
	if [ -z "$plan" ]; then
		echo "fail: no plan (1..N) printed, $nres results"
		return 1
	fi
	if [ "$nres" != "$plan" ]; then
		echo "fail: $nres results of the $plan planned"
		return 1
	fi
	c=$(sed -n 's/^ok [0-9]* \([^ ]*\) # SKIP.*/\1/p' "$log" | paste -sd ' ')
	[ -z "$c" ] || bad+=" skipped: $c;"
	failed=$(sed -n 's/^not ok [0-9]* \([^ ]*\).*/\1/p' "$log")
	for c in $failed; do
		ere=$(awk -v n="$name" -v c="$c" '$1 == n && $2 == c { print $3; exit }' "$exp")
		if [ -z "$ere" ]; then
			bad+=" $c failed, not listed;"
		elif ! awk -v c="$c" '
			$0 ~ "^#  *RUN  *" c " " { on = 1; next }
			on && /^(ok|not ok) [0-9]+ / { exit }
			on { print }' "$log" | grep -qE -- "$ere"; then
			bad+=" $c failed, but not as listed (no line matches $ere);"
		fi
	done
	listed=$(awk -v n="$name" '$1 == n { print $2 }' "$exp")
	for c in $listed; do
		grep -qxF "$c" <<<"$failed" || bad+=" $c is listed but did not fail (remove it from expected-fail);"
	done
	if [ -z "$failed" ] && [ "$rc" != 0 ]; then
		bad+=" exit $rc with no case failed;"
	elif [ -n "$failed" ] && [ "$rc" = 0 ]; then
		bad+=" exit 0 with cases failed;"
	fi
	if [ -n "$bad" ]; then
		echo "fail:${bad%;}"
		return 1
	fi
	echo "pass: $plan cases${failed:+, failed as listed: $(paste -sd ' ' <<<"$failed")}"
}
