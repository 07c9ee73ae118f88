#!/bin/sh
# /init of the agent guest (tests/agent-guest/run.sh BACKEND): one scenario
# for every store.  The module with strict=1, the store's server on the
# guest's loopback (BACKEND in /etc/agent-guest-backend; what a store adds
# is in /etc/agent-guest-stores.sh, tests/agent-guest/stores.sh), and
# snowflake-agent (not dry-run):
#   - a module without strict=1: the agent exits 6 and leaves it fenced
#   - reads refused until the agent holds a lease; then served, with the
#     claimed pair, the store holding the lease for this agent
#   - the agent stopped (SIGSTOP): the kernel refuses reads at the lease's
#     deadline by itself (lease_expired, not fenced); SIGCONT: served again,
#     larger IDs
#   - the server stopped (SIGSTOP): the agent fences before the lease could
#     expire (the fence latency after the last renewal, below the TTL);
#     continued: served again, larger IDs, the same pair
#   - the server killed (SIGKILL) and restarted on its files: fenced as
#     above; served again, larger IDs, the same pair (the state file's)
#   - SIGTERM: exit 0, the device stays fenced, the lease released
#   - an agent blocked in a log write (a full pipe): its CLOCK_BOOTTIME
#     watchdog fences the device at the deadline all the same
# Prints "ok   ..." / "FAIL ..." lines, AGENT-FIGURE lines and
# AGENT-GUEST-COUNTS for the host.

# shellcheck source=tests/lib/init-common.sh
. /etc/init-common.sh
# shellcheck source=tests/lib/agent-common.sh
. /etc/agent-common.sh
# shellcheck source=tests/agent-guest/stores.sh
. /etc/agent-guest-stores.sh

BACKEND=$(cat /etc/agent-guest-backend)
S=/sys/class/misc/snowflake
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
store setup
# mark-step-ms 10 s: the ceiling stays well ahead of the device's clock at
# every renewal, so a stopped agent's device meets the deadline before the
# ceiling (with the default step, one TTL, the ceiling can come first:
# refused all the same, by the kernel, but not what the deadline part shows).
AG="$AG --ttl-ms $TTL --mark-step-ms 10000"
# larger WHAT NEW OLD: NEW is an ID above OLD.
larger() {
	if [ -n "$2" ] && [ -n "$3" ] && [ "$2" -gt "$3" ] 2>/dev/null; then
		ok "$1: IDs above the earlier ones ($2 > $3)"
	else
		bad "$1: ID '$2' not above '$3'"
	fi
}
# store_up WHAT NAME: the server started (not in a subshell: $store_pid is
# set); the figure store_NAME_ms.
store_up() {
	t0=$(ms)
	if store start >/tmp/store-start.out 2>&1; then
		ok "$1$(cat /tmp/store-start.out) ($(($(ms) - t0)) ms to start)"
	else
		bad "$1$STORE did not start"
		sed 's/^/  /' /tmp/store-start.out
	fi
	echo "AGENT-FIGURE store_$2_ms=$(($(ms) - t0))"
}
# store_down STOP|KILL WHAT NAME: the server sent SIGSTOP or SIGKILL
# (WHAT: "stopped", "killed"): reads are refused (ENOTCONN) and the agent
# fenced before its lease could expire: either at its fence time, less than
# a TTL after the last renewal was sent (its fence_latency line), or earlier,
# when the store's library saw the connection drop (store-connection-lost;
# the library may see it only after the kernel's deadline, sent + TTL -
# margin, refused reads: the device read as soon as reads are refused is
# fenced, or its lease expired).
# Only what the agent logged after the signal counts.  The figure
# store_NAME_to_refused_ms; the ID read before in $id_before.
store_down() {
	id_before=$(read_id)
	from=$(log_lines)
	kill -"$1" "$store_pid"
	[ "$1" = KILL ] && wait "$store_pid" 2>/dev/null
	t_down=$(ms)
	if wait_reads fail $((TTL * 3 / 1000)); then
		ok "$STORE $2: reads fail with ENOTCONN ($(($(ms) - t_down)) ms after SIG$1)"
	else
		bad "$STORE $2: reads never failed"
	fi
	t_refused=$(ms)
	state="fenced=$(cat $S/fenced) lease_expired=$(cat $S/lease_expired)"
	lat=$(fence_latency "$from")
	reason=$(fence_reason "$from")
	if [ -n "$lat" ] && [ "$lat" -lt "$TTL" ]; then
		ok "$STORE $2: fenced ${lat} ms after the last renewal was sent: before the ${TTL} ms lease could expire"
	elif [ -z "$lat" ] && [ "$reason" = store-connection-lost ] && [ "$state" != "fenced=0 lease_expired=0" ]; then
		ok "$STORE $2: fenced on the store's lost connection; refused by that or by the lease's deadline, whichever came first ($state)"
	else
		bad "$STORE $2: fence latency '$lat' (reason '$reason', $state) not below the TTL $TTL"
	fi
	echo "AGENT-FIGURE store_$3_to_refused_ms=$((t_refused - t_down)) fence_latency_ms=$lat fence_reason=$reason"
}

echo "SNOWFLAKE-KERNEL $(uname -r) cpus=$(nproc) backend=$BACKEND"

# Without strict=1 the device issues IDs with its own ids before any lease:
# the agent refuses to start (exit 6), and fences the device on its way out.
insmod /snowflake.ko
# shellcheck disable=SC2086 # $AG: the agent and its options
$AG --state-file '' 2>/tmp/agent-nonstrict.log
rc=$?
if [ "$rc" = 6 ] && grep -q "event=not_strict" /tmp/agent-nonstrict.log; then
	ok "a device without strict=1: the agent refuses to start (exit 6)"
else
	bad "a device without strict=1: agent exit $rc"
	cat /tmp/agent-nonstrict.log
fi
[ "$(cat $S/fenced)" = 1 ] && ok "and left it fenced" || bad "the non-strict device was left unfenced"
rmmod snowflake
insmod /snowflake.ko strict=1
echo "SNOWFLAKE-INSMOD rc=$?"
if out=$(read_id); then bad "strict=1: reads refused before the agent runs (got $out)"
else ok "strict=1: reads refused before the agent runs"; fi

store_up "" start
# A new key space: the timestamp marks of the pool, once.
# shellcheck disable=SC2086
if $AG --init-store 2>/tmp/init.log && what=$(store init_check); then
	ok "--init-store: $what"
else
	bad "--init-store failed: $what"
	sed 's/^/  /' /tmp/init.log
fi

# The agent: its pair in the state file, for the restarts below.
# shellcheck disable=SC2086
$AG --state-file /tmp/agent.state --log-level debug 2>/tmp/agent.log &
agent_pid=$!
t0=$(ms)
if wait_reads ok 120; then
	ok "the agent claimed a pair: reads succeed ($(($(ms) - t0)) ms after its start)"
else
	bad "reads never succeeded"
fi
id1=$last_id
pair=$(claimed /tmp/agent.log)
if [ -n "$pair" ] && [ "$pair" = "$(cat $S/datacenter_id) $(cat $S/worker_id)" ]; then
	ok "the device has the claimed ids ($pair)"
else
	bad "the device has ids other than the claimed ($pair)"
fi
# shellcheck disable=SC2086 # $pair: DC W
holder=$(store holder $pair)
self=$(store self)
if [ -n "$holder" ] && [ "$holder" = "$self" ]; then
	ok "$STORE holds the pair's lease, for this agent ($holder)"
else
	bad "$STORE holds the pair's lease for '$holder', not for this agent ('$self')"
fi
held=$(store held)
[ "$held" = 1 ] && ok "$STORE holds one live lease" || bad "$STORE holds '$held' live leases, not 1"
[ "$(cat $S/fenced)" = 0 ] && ok "not fenced while the lease is held" || bad "fenced while the lease is held"
store extra

# The agent stopped: neither its loop nor its watchdog's signal handler
# runs.  The device stops issuing at the lease's deadline all by itself (the
# kernel's deadline, SNOWFLAKE_IDS_DEADLINE, set with the pair at every
# renewal), not fenced by anyone; once the agent runs again it has a lease
# again (its own, or the pair claimed again) and the device serves, with
# larger IDs.
id_before=$(read_id)
expiries0=$(cat $S/statistics/lease_expiries)
kill -STOP "$agent_pid"
t_stop=$(ms)
if wait_reads fail $((TTL * 3 / 1000)); then
	t_refused=$(ms)
	deadline_ms=$(($(cat $S/lease_deadline_ns) / 1000000))
	ok "deadline: the agent stopped, reads refused with nothing done by it ($((t_refused - t_stop)) ms after SIGSTOP)"
	echo "AGENT-FIGURE deadline_to_refused_ms=$((t_refused - deadline_ms)) stop_to_refused_ms=$((t_refused - t_stop))"
	state="fenced=$(cat $S/fenced) lease_expired=$(cat $S/lease_expired) refusing=$(cat $S/refusing) lease_expiries=$(cat $S/statistics/lease_expiries)"
	if [ "$state" = "fenced=0 lease_expired=1 refusing=1 lease_expiries=$((expiries0 + 1))" ]; then
		ok "deadline: the kernel refused, not a fence ($state)"
	else
		bad "deadline: unexpected state: $state"
	fi
	# /proc/uptime is CLOCK_BOOTTIME in 10 ms steps.
	if [ "$t_refused" -ge $((deadline_ms - 10)) ]; then
		ok "deadline: not refused before the deadline"
	else
		bad "deadline: refused $((deadline_ms - t_refused)) ms before the deadline"
	fi
else
	bad "deadline: the agent stopped and the device kept serving"
fi
kill -CONT "$agent_pid"
t_cont=$(ms)
if wait_reads ok 60; then
	ok "deadline: the agent runs again and the device serves ($(($(ms) - t_cont)) ms after SIGCONT)"
else
	bad "deadline: never served again after SIGCONT"
fi
id2=$last_id
larger "deadline: after SIGCONT" "$id2" "$id_before"

# The server stopped: the lease cannot be renewed.
fences0=$(cat $S/statistics/fences)
store_down STOP stopped stop
[ "$(cat $S/fenced)" = 1 ] && ok "$STORE stopped: sysfs fenced is 1" || bad "$STORE stopped: sysfs fenced is not 1"
fences1=$(cat $S/statistics/fences)
[ "$fences1" -gt "$fences0" ] && ok "$STORE stopped: statistics/fences counted it ($fences0 -> $fences1)" ||
	bad "$STORE stopped: statistics/fences did not count ($fences0 -> $fences1)"
kill -CONT "$store_pid"
t_cont=$(ms)
if wait_reads ok 60; then
	ok "$STORE continued: the agent serves again ($(($(ms) - t_cont)) ms)"
else
	bad "$STORE continued: reads never succeeded again"
fi
larger "$STORE continued" "$last_id" "$id_before"
pair2=$(claimed /tmp/agent.log)
[ "$pair2" = "$pair" ] && ok "$STORE continued: the same pair again ($pair2)" || bad "$STORE continued: another pair: $pair2, not $pair"

# The server killed, and restarted on its files.
store_down KILL killed kill
store_up "restarted: " restart
t_up=$(ms)
if wait_reads ok 60; then
	ok "$STORE restarted: reads succeed again ($(($(ms) - t_up)) ms)"
else
	bad "$STORE restarted: reads never succeeded"
fi
id3=$last_id
larger "$STORE restarted" "$id3" "$id_before"
pair3=$(claimed /tmp/agent.log)
[ "$pair3" = "$pair" ] && ok "$STORE restarted: the same pair again ($pair3): the state file's" ||
	bad "$STORE restarted: another pair: $pair3, not $pair"

# SIGTERM: fenced, lease released, exit 0.
kill -TERM "$agent_pid"
wait "$agent_pid"
rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: the agent exited 0" || bad "SIGTERM: the agent exited $rc"
if wait_reads fail 1; then ok "stopped agent: the device stays fenced"; else bad "stopped agent: reads still work"; fi
grep -q 'event=released' /tmp/agent.log && ok "stopped agent: it released the lease (event=released)" ||
	bad "stopped agent: no event=released"
# shellcheck disable=SC2086
holder=$(store holder $pair)
held=$(store held)
if [ -z "$holder" ] && [ "$held" = 0 ]; then
	ok "stopped agent: $STORE holds no lease any more"
else
	bad "stopped agent: $STORE holds $held leases, the pair's for '$holder'"
fi

# An agent blocked in a log write (a full pipe, like a stalled journald):
# its CLOCK_BOOTTIME watchdog still fences the device at the lease's
# deadline, from a signal handler.
mkfifo /tmp/logfifo
cat /tmp/logfifo >/tmp/agent2.log &
cat_pid=$!
# shellcheck disable=SC2086
$AG --state-file '' --log-level debug 2>/tmp/logfifo &
agent_pid=$!
if wait_reads ok 60; then ok "watchdog: a second agent serves"; else bad "watchdog: the second agent never served"; fi
kill -STOP "$cat_pid"
dd if=/dev/zero of=/tmp/logfifo bs=4096 count=32 2>/dev/null &
dd_pid=$!
t_block=$(ms)
if wait_reads fail $((TTL * 3 / 1000)); then
	ok "watchdog: the agent blocked in a log write, the device fenced all the same ($(($(ms) - t_block)) ms)"
else
	bad "watchdog: the agent blocked in a log write and the device kept serving"
fi
kill -CONT "$cat_pid"
if wait_reads ok 60; then ok "watchdog: unblocked, the agent serves again"; else bad "watchdog: never served again"; fi
kill -TERM "$agent_pid"
wait "$agent_pid"
rc=$?
[ "$rc" = 0 ] && ok "watchdog: the second agent exited 0 on SIGTERM" || bad "watchdog: exit $rc"
wait "$dd_pid" 2>/dev/null
kill "$cat_pid" 2>/dev/null

echo "AGENT-FIGURE ids $id1 $id2 $id3"
echo "---- agent log ----"
grep -v "$NOISE" /tmp/agent.log
if [ "$fail" -gt 0 ]; then
	echo "---- $STORE_LOG (its last 40 lines) ----"
	tail -n 40 "$STORE_LOG"
fi
echo "---- end of agent log ----"
kill -KILL "$store_pid" 2>/dev/null
rmmod snowflake
echo "SNOWFLAKE-RMMOD rc=$?"
echo "AGENT-GUEST-COUNTS $pass $fail"
dmesg | grep snowflake | tail -n 20
vm_done
