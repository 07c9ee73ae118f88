#!/bin/bash
# Tests of the scripts' own helpers (tests/lib/lib.sh), run by the static
# stage: log_has, which the guest stages use to read console logs, under
# the pipefail they all set; parallel_each, which runs their guests side by
# side; bg_start/bg_wait, which keep a background command's status.
# Prints "lib-test: N passed, M failed".
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A console of 4 MiB with \r\n line ends: the line looked for comes first,
# so a reader that stops there leaves almost all of it unread.
{
	printf 'SNOWFLAKE-PROM-END device rc=0\r\n'
	yes 'console line with some text in it to make up the size of a log.' |
		head -c $((4 << 20)) | sed 's/$/\r/' || true
	printf 'SNOWFLAKE-VM-DONE\r\n'
} >"$tmp/console.log"

early=0 late=0 absent=0 old=0
for _ in $(seq 20); do
	log_has "$tmp/console.log" '^SNOWFLAKE-PROM-END device rc=0$' && early=$((early + 1))
	log_has "$tmp/console.log" '^SNOWFLAKE-VM-DONE$' && late=$((late + 1))
	log_has "$tmp/console.log" '^KASAN' || absent=$((absent + 1))
	# The pattern log_has replaces: counted to show why, never asserted
	# (it is a race, only nearly always lost on a log this size).
	tr -d '\r' <"$tmp/console.log" | grep -qE '^SNOWFLAKE-PROM-END' || old=$((old + 1))
done
echo "# tr | grep -q under pipefail failed $old times of 20 on a line that is there"
check "log_has finds the first line of a 4 MiB console, 20 of 20 ($early)" test "$early" -eq 20
check "log_has finds the last line, 20 of 20 ($late)" test "$late" -eq 20
check "log_has does not find a line that is not there, 20 of 20 ($absent)" test "$absent" -eq 20
# parallel_each: the items' outputs whole and in order, their counts
# added, TAP numbers continued, an item that exits counted as a failure.
# (A subshell of its own: the counts it makes are its, not this test's.)
item() {
	case $1 in
	slow) sleep 1; ok "slow one"; ok "slow two" ;;
	fast) notok "fast one" ;;
	gone) exit 3 ;;
	esac
}
BUILD=$tmp
got=$(pass=0 fail=0 ntap=0; parallel_each 3 item slow fast gone; echo "counts $pass $fail $ntap")
want=$(printf '%s\n' "ok 1 slow one" "ok 2 slow two" "not ok 3 fast one" \
	"not ok 4 item gone ended without its counts (it exited: above)" "counts 2 2 4")
check "parallel_each: outputs in order, counts and TAP numbers carried on" test "$got" = "$want"
[ "$got" = "$want" ] || diff <(echo "$want") <(echo "$got") | sed 's/^/#   /'
got=$(pass=0 fail=0 ntap=0; parallel_each 1 item fast slow; echo "counts $pass $fail $ntap")
want=$(printf '%s\n' "not ok 1 fast one" "ok 2 slow one" "ok 3 slow two" "counts 2 1 3")
check "parallel_each 1: one after another, in this shell" test "$got" = "$want"
# bg_start/bg_wait: the status of a background command that ended long
# before it is waited for, when a later child of the shell is given its pid
# again (pid_max wraps in minutes under a kernel build).  In a pid
# namespace of its own, ns_last_pid gives the next child that pid at once.
# The control, plain `wait PID`, must lose it (127), or nothing was shown.
# shellcheck disable=SC2016 # expanded by the inner shell
if got=$(unshare --pid --fork --mount-proc bash -c '
	. "$1"
	(exit 3) & q=$!
	while [ -e "/proc/$q" ]; do sleep 0.05; done; sleep 0.2
	echo $((q - 1)) >/proc/sys/kernel/ns_last_pid; cut -c1 <<<"x" >/dev/null
	wait "$q" 2>/dev/null; echo "plain $?"
	bg_start "$2/bg.rc" sh -c "exit 3"; q=$!
	while [ -e "/proc/$q" ]; do sleep 0.05; done; sleep 0.2
	echo $((q - 1)) >/proc/sys/kernel/ns_last_pid; cut -c1 <<<"x" >/dev/null
	bg_wait "$q" "$2/bg.rc"; echo "bg_wait $?"
	bg_start "$2/bg0.rc" true; q=$!
	bg_wait "$q" "$2/bg0.rc"; echo "bg_wait0 $?"
' _ "$ROOT/tests/lib/lib.sh" "$tmp" 2>&1); then :; fi
echo "# $(tr '\n' ' ' <<<"$got")"
check "bg_wait: plain wait PID lost the status of a child whose pid came back (127: the fault shown)" \
	grep -qx "plain 127" <<<"$got"
check "bg_wait: bg_start/bg_wait keep that status (exit 3)" grep -qx "bg_wait 3" <<<"$got"
check "bg_wait: and exit 0 is 0" grep -qx "bg_wait0 0" <<<"$got"
echo "lib-test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
