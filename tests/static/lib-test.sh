#!/bin/bash
# Tests of the scripts' own helpers (tests/lib/lib.sh), run by the static
# stage: log_has, which the guest stages use to read console logs, under
# the pipefail they all set; parallel_each, which runs their guests side by
# side; bg_start/bg_wait, which keep a background command's status; the
# machine cache (mcache_*), which the roots and builds keyed by their recipe
# are kept in.
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
# The machine cache (mcache_*): a miss, a hit, a key changed, a put that
# died midway never used, an expired entry, the newest MCACHE_KEEP kept,
# two puts and a get at once, a directory's copy written into, and no
# cache at all.  In a directory of this test's own.
export SNOWFLAKE_CACHE=$tmp/mcache
unset SNOWFLAKE_CACHE_DAYS
head -c 3000000 /dev/urandom >"$tmp/a"
head -c 3000000 /dev/urandom >"$tmp/b"
check "mcache: a miss on an empty cache, the file not made" \
	eval '! mcache_get kind k1 "$tmp/got" && [ ! -e "$tmp/got" ]'
check "mcache: put" mcache_put kind k1 "$tmp/a"
check "mcache: a hit gives the file put" eval 'mcache_get kind k1 "$tmp/got" && cmp -s "$tmp/a" "$tmp/got"'
check "mcache: another key (a recipe changed) is a miss" eval '! mcache_get kind k2 "$tmp/got2" && [ ! -e "$tmp/got2" ]'
check "mcache: another kind is a miss" eval '! mcache_get other k1 "$tmp/got2"'
# A put killed midway (its shell and its cp, SIGKILL, the source a FIFO
# that has given part of the file): no entry, only its temporary file.
mkfifo "$tmp/fifo"
setsid bash -c '. "$1"; mcache_put kind k3 "$2"' _ "$ROOT/tests/lib/lib.sh" "$tmp/fifo" &
p=$!
exec 5>"$tmp/fifo"
head -c 1000000 "$tmp/b" >&5
sleep 0.5
kill -KILL -- "-$p" 2>/dev/null || true
exec 5>&-
wait "$p" 2>/dev/null || true
half=$(find "$SNOWFLAKE_CACHE/kind" -name '.tmp.k3.*' -size +0 | wc -l)
check "mcache: a put killed midway left its temporary file ($half) and no entry" \
	eval '[ "$half" -eq 1 ] && [ ! -e "$SNOWFLAKE_CACHE/kind/k3" ]'
check "mcache: and a get of its key is a miss" eval '! mcache_get kind k3 "$tmp/got3" && [ ! -e "$tmp/got3" ]'
touch -d '2 days ago' "$SNOWFLAKE_CACHE"/kind/.tmp.k3.*
# Expiry: an entry put 8 days ago is a miss (7 by default), not with 9.
touch -d '8 days ago' "$SNOWFLAKE_CACHE/kind/k1"
check "mcache: an entry older than 7 days is a miss" eval '! mcache_get kind k1 "$tmp/got4"'
check "mcache: SNOWFLAKE_CACHE_DAYS=9: the same entry is a hit" \
	eval 'SNOWFLAKE_CACHE_DAYS=9 mcache_get kind k1 "$tmp/got4" && cmp -s "$tmp/a" "$tmp/got4"'
# Made again and put: the entry replaced, fresh; the expired entry of
# another key and the dead put's file (2 days old) pruned; the newest 2
# kept.
cp "$SNOWFLAKE_CACHE/kind/k1" "$SNOWFLAKE_CACHE/kind/k0"
touch -d '8 days ago' "$SNOWFLAKE_CACHE/kind/k0"
mcache_put kind k1 "$tmp/b"
check "mcache: put again, the expired key is a hit with the new file" \
	eval 'mcache_get kind k1 "$tmp/got4" && cmp -s "$tmp/b" "$tmp/got4"'
check "mcache: the put pruned the expired entry of another key and the dead put's file" \
	eval '[ ! -e "$SNOWFLAKE_CACHE/kind/k0" ] && ! ls "$SNOWFLAKE_CACHE"/kind/.tmp.* 2>/dev/null'
mcache_put kind k4 "$tmp/a"
sleep 1
mcache_put kind k5 "$tmp/a"
sleep 1
mcache_put kind k6 "$tmp/b"
left=$(cd "$SNOWFLAKE_CACHE/kind" && ls | paste -sd ' ')
check "mcache: of four keys put, the newest $MCACHE_KEEP kept ($left)" test "$left" = "k5 k6"
# Two puts of one key and a get, at once, 20 times: the get has one whole
# file or the other (or none), never a mix.
bad=0
for _ in $(seq 20); do
	mcache_put race k "$tmp/a" & p1=$!
	mcache_put race k "$tmp/b" & p2=$!
	if mcache_get race k "$tmp/got5"; then
		cmp -s "$tmp/a" "$tmp/got5" || cmp -s "$tmp/b" "$tmp/got5" || bad=$((bad + 1))
	fi
	wait "$p1" "$p2"
	cmp -s "$tmp/a" "$SNOWFLAKE_CACHE/race/k" || cmp -s "$tmp/b" "$SNOWFLAKE_CACHE/race/k" || bad=$((bad + 1))
done
check "mcache: two puts and a get at once: every file whole, 20 of 20 ($bad not)" test "$bad" -eq 0
# A directory: put, got into another place, written into there; the
# entry unchanged (a second get has the first content); owners as numbers.
mkdir -p "$tmp/d/sub"
echo one >"$tmp/d/sub/f"
[ "$(id -u)" -ne 0 ] || chown 54321:54321 "$tmp/d/sub/f"
check "mcache: put_dir" mcache_put_dir dkind k1 "$tmp/d"
check "mcache: get_dir gives the directory" eval 'mcache_get_dir dkind k1 "$tmp/e" && [ "$(cat "$tmp/e/sub/f")" = one ]'
[ "$(id -u)" -ne 0 ] ||
	check "mcache: get_dir keeps a root's owners as numbers (54321)" test "$(stat -c %u "$tmp/e/sub/f")" = 54321
echo two >"$tmp/e/sub/f"
rm -rf "$tmp/e"
check "mcache: a copy written into and removed leaves the entry as put" \
	eval 'mcache_get_dir dkind k1 "$tmp/e" && [ "$(cat "$tmp/e/sub/f")" = one ]'
check "mcache: get_dir of another key is a miss, the directory left as it was" \
	eval '! mcache_get_dir dkind k2 "$tmp/e" && [ "$(cat "$tmp/e/sub/f")" = one ]'
head -c 100000 /dev/urandom >"$SNOWFLAKE_CACHE/dkind/k9"
check "mcache: get_dir of an entry that does not extract is a miss, the directory and its temporary gone" \
	eval '! mcache_get_dir dkind k9 "$tmp/e" 2>/dev/null && [ ! -e "$tmp/e" ] && ! ls -d "$tmp"/e.mcache.* 2>/dev/null'
# No cache: SNOWFLAKE_CACHE empty; a directory of another user.
check "mcache: SNOWFLAKE_CACHE= is no cache: a put is nothing, a get a miss" \
	eval 'SNOWFLAKE_CACHE= mcache_put kind k7 "$tmp/a" && ! SNOWFLAKE_CACHE= mcache_get kind k6 "$tmp/got6"'
check "mcache: a relative SNOWFLAKE_CACHE is no cache" eval '! (cd "$tmp" && SNOWFLAKE_CACHE=mcache mcache_dir)'
if [ "$(id -u)" -eq 0 ]; then
	mkdir "$tmp/theirs"
	chown 54321 "$tmp/theirs"
	check "mcache: a directory another user owns is not used" eval '! SNOWFLAKE_CACHE=$tmp/theirs mcache_dir'
fi
unset SNOWFLAKE_CACHE
echo "lib-test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
