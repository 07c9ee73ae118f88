#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The upgrade lane's own checks, fed the failures they exist for (issue
# 42, findings 2 to 4): tests/upgrade/verdict.sh on made-up kselftest
# output, and the reader's open gap (tests/upgrade/reader.c).  Each case
# prints "ok"/"not ok"; run by tests/upgrade/run.sh before its guests, and
# alone: bash tests/upgrade/verdict-test.sh.  Exit 1 on any "not ok".
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/upgrade/verdict.sh
. "$here/verdict.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
res() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; bad=$((bad + 1)); fi
}
printf '%s\n' 'x_test a.two ^boom$  why' 'y_test b.one nope  why' >"$tmp/exp"
# case NAME WANT(pass|fail) RC WHAT: the log on stdin judged.
case_() {
	local name=$1 want=$2 rc=$3 what=$4 v got
	cat >"$tmp/log"
	v=$(sfup_verdict "$name" "$rc" "$tmp/log" "$tmp/exp")
	got=${v%%:*}
	[ "$got" = "$want" ]
	res $? "verdict $want: $what ($v)"
}
ok3='TAP version 13
1..3
#  RUN           a.one ...
ok 1 a.one
#  RUN           a.two ...
boom
not ok 2 a.two
#  RUN           a.three ...
ok 3 a.three'
case_ x_test pass 1 "the listed case failed as listed" <<<"$ok3"
case_ x_test fail 124 "a timeout after the listed case" <<<"$ok3"
case_ x_test fail 139 "a crash (signal)" <<<"$ok3"
case_ x_test fail 1 "results missing after the listed case" <<<"${ok3%$'\n'*}"
case_ x_test fail 1 "no plan" <<<"$(grep -v '^1\.\.' <<<"$ok3")"
case_ x_test fail 1 "the listed case failed for another reason" <<<"${ok3/boom/other}"
case_ x_test fail 1 "a case skipped" <<<"${ok3/ok 3 a.three/ok 3 a.three # SKIP no device}"
case_ x_test fail 0 "the listed case passes now" <<<"${ok3/not ok 2/ok 2}"
case_ x_test fail 1 "an unlisted case failed" <<<"${ok3/ok 3 a.three/not ok 3 a.three}"
case_ z_test pass 0 "nothing listed, nothing failed" <<<"${ok3/not ok 2/ok 2}"
case_ z_test fail 1 "exit 1 with no case failed" <<<"${ok3/not ok 2/ok 2}"

# The reader: a device that stops serving and never comes back has a gap
# open at the stop, which the summary must count.
if gcc -O2 -Wall -Wextra -Werror -o "$tmp/reader" "$here/reader.c"; then
	printf '12345678' >"$tmp/dev"
	"$tmp/reader" read t "$tmp/dev" "$tmp/out" "$tmp/stop" reopen >"$tmp/r.txt" 2>&1 &
	pid=$!
	sleep 0.3
	rm -f "$tmp/dev"
	sleep 0.8
	touch "$tmp/stop"
	wait "$pid"
	g=$(sed -n 's/.* longest_gap_ms=\([0-9]*\) .*/\1/p' "$tmp/r.txt")
	[ "${g:-0}" -ge 700 ] && grep -q '^gap t .* open$' "$tmp/r.txt"
	res $? "reader: a gap still open at the stop is counted (${g:-none} ms, 800 ms dark)"
	rm -f "$tmp/stop"
	"$tmp/reader" read u "$tmp/none" "$tmp/out" "$tmp/stop" held >"$tmp/r.txt" 2>&1 &
	pid=$!
	sleep 0.5
	touch "$tmp/stop"
	wait "$pid"
	g=$(sed -n 's/.* longest_gap_ms=\([0-9]*\) .*/\1/p' "$tmp/r.txt")
	[ "${g:-0}" -ge 400 ]
	res $? "reader: a device never served is dark from the start (${g:-none} ms)"
else
	res 1 "reader.c builds"
fi
echo "# verdict-test: $((n - bad)) of $n"
[ "$bad" = 0 ]
