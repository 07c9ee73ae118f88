#!/bin/sh
# /init of the handoff guest (tests/handoff/run.sh): one pair handed from
# "host A" to "host B" whose wall clock is 5 minutes behind, end to end with
# the real module (strict=1), snowflake-agent (not dry-run) and a redis-server
# on loopback that persists every write (appendfsync always).
#
# A round: insmod; agent A (--owner host-a) claims the pool's only pair P
# (1,3) and IDs are read; A ends (SIGTERM: released; or SIGKILL: its lease
# runs out in Redis); rmmod; the wall clock stepped back 5 minutes; insmod
# with no floor restored (host B has none of A's); agent B (--owner host-b)
# claims P from the same store and IDs are read.  Every ID of B must be above
# every ID of A: nothing but the store can carry A's time to B.  Rounds:
# kill first (the lease expires by itself: the case that matters), then term,
# then replay: B's clock set back only as far as A's reads (a few seconds),
# both reading once in every millisecond (handoff-ids), so that a tree that
# passes no time from A to B issues A's very IDs again, and the test shows it.
# Prints "ok   ..." / "FAIL ..." lines and HANDOFF-FIGURE lines for the host.

# shellcheck source=tests/lib/init-common.sh
. /etc/init-common.sh
# shellcheck source=tests/lib/agent-common.sh
. /etc/agent-common.sh

TTL=2000
STEP_S=300	# host B's clock is this far behind
N_IDS=4000	# IDs read from each holder
CHUNK=500
REPLAY_MS=3000	# the replay round's reads, per holder
EPOCH_MS=1288834974657	# the default layout: timestamp = id >> 22
DC=1
W=3
S=/sys/class/misc/snowflake
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
ts_of() { echo $((($1 >> 22) + EPOCH_MS)); }

echo "SNOWFLAKE-KERNEL $(uname -r) cpus=$(nproc)"

# The agents' common options: one pool of exactly one pair.  No state file
# (host B never saw A's).  --redis-min-uptime-ms 0: this Redis persists
# every write (the documented case for 0), and its uptime is not what is
# tested (Redis's INFO may count it on the wall clock, stepped back here).
agent_opts="--config /dev/null --redis-host 127.0.0.1 --redis-port 6379 --ttl-ms $TTL \
--redis-timeout-ms 300 --redis-min-uptime-ms 0 --datacenter-ids $DC --worker-ids $W \
--state-file= --log-level debug"

# agent LABEL LOG: an agent in the background, its pid in $agent_pid.
agent() {
	# shellcheck disable=SC2086 # agent_opts is a list of words
	snowflake-agent $agent_opts --owner "$1" 2>"$2" &
	agent_pid=$!
}

# read_ids FILE: append N_IDS IDs to FILE, CHUNK at a time; a refused read
# is tried again (bounded); the number of refused reads in $refused.
read_ids() {
	: >"$1"
	refused=0
	deadline=$(($(ms) + 30000))
	while [ "$(wc -l <"$1")" -lt "$N_IDS" ] && [ "$(ms)" -lt "$deadline" ]; do
		if ! snowflake next -n "$CHUNK" >>"$1" 2>>/tmp/read-errors; then
			refused=$((refused + 1))
			sleep 0.1
		fi
	done
	[ "$(wc -l <"$1")" -ge "$N_IDS" ]
}

# rec_owner: the owner the pair's record names, "-" when free.
rec_owner() { redis_rec_owner "snowflake:default:worker:$DC:$W"; }

show_logs() {
	for f in "$@"; do
		echo "---- $f ----"
		grep -v 'event=renewed' "$f" | tail -n 40
		echo "---- end of $f ----"
	done
}

if redis_server_start; then ok "redis-server on 127.0.0.1:6379 (appendfsync always)"; else bad "redis-server did not start"; cat /tmp/redis.log; fi

# The pool's marks are initialised once before any agent claims, on an agent
# that has --init-store (the fixed tree).  Today's agent has no such option
# and nothing to initialise: asking its --help lets one test run on both.
if snowflake-agent --help 2>&1 | grep -q -- '--init-store'; then
	# shellcheck disable=SC2086
	snowflake-agent $agent_opts --init-store >/tmp/init-store.log 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then ok "--init-store: the pool's marks initialised (exit 0)"
	else bad "--init-store: exit $rc"; cat /tmp/init-store.log; fi
else
	echo "  this snowflake-agent has no --init-store: nothing to initialise"
fi

prev_max=
lat_b=
# round HOW: one handoff of P from host A to host B.
#   kill    A ended by SIGKILL (its lease runs out in Redis); B's clock 5
#           minutes behind; IDs read with the CLI
#   term    the same with A ended by SIGTERM (the lease released)
#   replay  A killed; B's clock set back to where A read, ~1 s into A's
#           reads (a few seconds behind); both read once in every ms with
#           handoff-ids: B reads in the milliseconds A read in, so on a tree
#           that passes no time from A to B its IDs are A's again
round() {
	how=$1
	la=/tmp/agent-a.$how.log
	lb=/tmp/agent-b.$how.log
	fa=/tmp/a.$how.ids
	fb=/tmp/b.$how.ids
	fail0=$fail
	if [ "$how" = replay ]; then
		echo "  ---- round $how: host A, then host B with its clock back at A's reads ----"
	else
		echo "  ---- round $how: host A, then host B $STEP_S s behind ----"
	fi
	insmod /snowflake.ko strict=1 || bad "$how: insmod (host A)"
	agent host-a "$la"
	pid_a=$agent_pid
	t0=$(ms)
	if wait_reads ok 30; then ok "$how: agent A claimed, reads succeed ($(($(ms) - t0)) ms)"
	else bad "$how: agent A: reads never succeeded"; fi
	pair_a=$(claimed "$la")
	if [ "$how" = replay ]; then
		a0=$(handoff-ids now)
		out=$(handoff-ids read "$fa" "$REPLAY_MS" 64)
		ok "$how: host A read 64 IDs once a millisecond for $REPLAY_MS ms ($out)"
	elif read_ids "$fa"; then
		ok "$how: read $N_IDS IDs from host A ($refused refused reads)"
	else
		bad "$how: host A: $(wc -l <"$fa") IDs of $N_IDS read"
	fi

	if [ "$how" = term ]; then
		kill -TERM "$pid_a"
		wait "$pid_a"
		rc=$?
		if [ "$rc" = 0 ]; then ok "$how: agent A exited 0 on SIGTERM"; else bad "$how: agent A exited $rc"; fi
	else
		kill -KILL "$pid_a"
		wait "$pid_a" 2>/dev/null
	fi
	# A released the pair: its record is free at once.  A killed: the
	# record still names A; B takes it over only once it has seen that
	# very record unchanged for the TTL and its margin on its own clock
	# (CLOCK_BOOTTIME: the wall clock stepped below does not shorten it).
	# A's own validity ended by then (TTL - margin after its last renewal).
	t_end=$(ms)
	if [ "$how" = term ]; then
		while [ "$(rec_owner)" != - ] && [ $(($(ms) - t_end)) -lt $((TTL * 3)) ]; do sleep 0.05; done
		if [ "$(rec_owner)" = - ]; then ok "$how: A's record is free in Redis ($(($(ms) - t_end)) ms after A ended)"
		else bad "$how: A's record names '$(rec_owner)' in Redis $((TTL * 3)) ms after A's release, not free"; fi
	else
		o=$(rec_owner)
		if [[ $o == host-a:* ]]; then ok "$how: A's record still names A ($o) after the kill: B must wait it out"
		else bad "$how: after A's kill the record names '$o', not host A"; fi
		sleep $((TTL / 1000))
	fi
	rmmod snowflake || bad "$how: rmmod (host A)"

	# Host B: another host, its wall clock behind, no floor.
	before=$(handoff-ids now)
	if [ "$how" = replay ]; then
		# B's first read ~1 s after A's first: lat_b is the time B took
		# from the clock step to its first read in the rounds before.
		handoff-ids settime $((a0 + 1000 - ${lat_b:-2500}))
		want=$((before - a0 - 1000 + ${lat_b:-2500}))
	else
		date -s "@$((before / 1000 - STEP_S))" >/dev/null
		want=$((STEP_S * 1000))
	fi
	t_step=$(ms)
	step=$((before - $(handoff-ids now)))
	if [ $((step - want)) -ge -2000 ] && [ $((step - want)) -le 2000 ]; then
		ok "$how: the wall clock stepped back $step ms"
	else
		bad "$how: the wall clock stepped back $step ms, not $want"
	fi
	insmod /snowflake.ko strict=1 || bad "$how: insmod (host B)"
	agent host-b "$lb"
	pid_b=$agent_pid
	t0=$(ms)
	if wait_reads ok 30; then
		ok "$how: agent B claimed, reads succeed ($(($(ms) - t0)) ms)"
		# The replay round ends A by a kill, as this one: B's latency is
		# then the TTL and margin it waits the record out.
		[ "$how" != kill ] || lat_b=$(($(ms) - t_step))
	else
		bad "$how: agent B: reads never succeeded"
	fi
	pair_b=$(claimed "$lb")
	if [ "$pair_a" = "$DC $W" ] && [ "$pair_b" = "$DC $W" ] &&
		[ "$(cat $S/datacenter_id) $(cat $S/worker_id)" = "$DC $W" ]; then
		ok "$how: A and B both claimed the pair $DC:$W; the device has it"
	else
		bad "$how: pairs: A '$pair_a', B '$pair_b', device $(cat $S/datacenter_id) $(cat $S/worker_id)"
	fi
	if [ "$how" = replay ]; then
		out=$(handoff-ids read "$fb" "$REPLAY_MS" 64)
		ok "$how: host B read 64 IDs once a millisecond for $REPLAY_MS ms ($out)"
	elif read_ids "$fb"; then
		ok "$how: read $N_IDS IDs from host B ($refused refused reads)"
	else
		bad "$how: host B: $(wc -l <"$fb") IDs of $N_IDS read"
	fi

	# ids_a N min_a X max_a Y ids_b N min_b X max_b Y b_not_above_a K
	# b_equal_a E other_pair O
	# shellcheck disable=SC2046 # a list of words
	set -- $(handoff-ids compare "$fa" "$fb" $DC $W)
	if [ "$#" = 18 ]; then
		n_a=$2 min_a=$4 max_a=$6 n_b=$8 min_b=${10} max_b=${12} n_below=${14} same=${16} other=${18}
		echo "HANDOFF-FIGURE round=$how ids_a=$n_a ids_b=$n_b clock_step_ms=-$step min_b_minus_max_a=$((min_b - max_a)) ts_max_a=$(ts_of "$max_a") ts_min_b=$(ts_of "$min_b") ts_min_b_minus_max_a_ms=$(($(ts_of "$min_b") - $(ts_of "$max_a"))) b_not_above_a=$n_below b_equal_a=$same"
		if [ "$other" = 0 ]; then ok "$how: every ID of A and B has the pair $DC:$W"
		else bad "$how: $other IDs of A and B have another pair"; fi
		if [ -z "$prev_max" ]; then :
		elif [ "$min_a" -gt "$prev_max" ]; then
			ok "$how: every ID of A is above every ID of the holders before it"
		else
			bad "$how: A's min $min_a is not above the earlier holders' max $prev_max ($(($(ts_of "$min_a") - $(ts_of "$prev_max"))) ms)"
		fi
		if [ "$min_b" -gt "$max_a" ]; then
			ok "$how: every ID of B is above every ID of A (min B - max A = $((min_b - max_a)))"
		else
			bad "$how: $n_below of B's $n_b IDs are not above A's max: min B $min_b (ts $(ts_of "$min_b")), max A $max_a (ts $(ts_of "$max_a")), min B - max A = $((min_b - max_a)) ($(($(ts_of "$min_b") - $(ts_of "$max_a"))) ms)"
		fi
		if [ "$same" = 0 ]; then ok "$how: no ID of B equals an ID of A"
		else bad "$how: $same of B's $n_b IDs repeat IDs of A"; fi
		prev_max=$max_b
	else
		bad "$how: comparing the IDs of A and B: $*"
	fi

	kill -TERM "$pid_b"
	wait "$pid_b"
	rc=$?
	if [ "$rc" = 0 ]; then ok "$how: agent B exited 0 on SIGTERM"; else bad "$how: agent B exited $rc"; fi
	rmmod snowflake || bad "$how: rmmod (host B)"
	[ "$fail" = "$fail0" ] || show_logs "$la" "$lb"
}

round kill
round term
round replay
if [ -s /tmp/read-errors ]; then
	echo "  read errors: $(sort /tmp/read-errors | uniq -c | head -n 3 | tr '\n' ' ')"
fi
kill -KILL "$redis_pid" 2>/dev/null
echo "HANDOFF-GUEST-COUNTS $pass $fail"
dmesg | grep snowflake | tail -n 10
vm_done
