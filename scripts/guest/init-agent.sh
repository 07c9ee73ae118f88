#!/bin/sh
# /init of the agent end-to-end guest (scripts/agent-guest.sh): the module
# with strict=1, redis-server on loopback, snowflake-agent (not dry-run).
# Reads must fail until the agent holds a lease, fail with ENOTCONN once
# Redis is gone for longer than the lease allows (fenced), and succeed again,
# with larger IDs, once Redis is back.  Prints "ok   ..." / "FAIL ..." lines
# and AGENT-FIGURE lines for the host.

# shellcheck source=scripts/guest/init-common.sh
. /etc/init-common.sh
# shellcheck source=scripts/guest/agent-common.sh
. /etc/agent-common.sh

TTL=3000
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

echo "SNOWFLAKE-KERNEL $(uname -r) cpus=$(nproc)"
# Without strict=1 the device issues IDs with its own ids before any lease:
# the agent refuses to start (exit 6), and fences the device on its way out.
insmod /snowflake.ko
snowflake-agent --config /dev/null --state-file '' --datacenter-ids 1 2>/tmp/agent-nonstrict.log
rc=$?
if [ "$rc" = 6 ] && grep -q "event=not_strict" /tmp/agent-nonstrict.log; then
	ok "a device without strict=1: the agent refuses to start (exit 6)"
else
	bad "a device without strict=1: agent exit $rc"
	cat /tmp/agent-nonstrict.log
fi
[ "$(cat /sys/class/misc/snowflake/fenced)" = 1 ] && ok "and left it fenced" || bad "the non-strict device was left unfenced"
rmmod snowflake
insmod /snowflake.ko strict=1
echo "SNOWFLAKE-INSMOD rc=$?"



start_redis() {
	redis-server --bind 127.0.0.1 --port 6379 --save '' --appendonly yes --appendfsync always \
		--dir /tmp --logfile /tmp/redis.log --daemonize no &
	redis_pid=$!
	i=0
	while [ $i -lt 200 ]; do
		[ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}


if out=$(read_id); then bad "strict=1: reads refused before the agent runs (got $out)"
else ok "strict=1: reads refused before the agent runs"; fi

if start_redis; then ok "redis-server on 127.0.0.1:6379"; else bad "redis-server did not start"; cat /tmp/redis.log; fi
# A new key space: the timestamp marks of the pool (datacenter 1), once.
if snowflake-agent --config /dev/null --datacenter-ids 1 --init-store 2>/tmp/init.log; then
	ok "snowflake-agent --init-store: $(grep -o 'created=[0-9]*' /tmp/init.log)"
else
	bad "snowflake-agent --init-store failed"; cat /tmp/init.log
fi

snowflake-agent --config /dev/null --ttl-ms "$TTL" --redis-timeout-ms 300 \
	--state-file /tmp/agent.state --datacenter-ids 1 --log-level debug 2>/tmp/agent.log &
agent_pid=$!
t0=$(ms)
if wait_reads ok 60; then
	ok "the agent claimed an id: reads succeed ($(($(ms) - t0)) ms after its start)"
else
	bad "reads never succeeded"
fi
id1=$last_id
pair=$(sed -n 's/.*event=claimed datacenter=\([0-9]*\) worker=\([0-9]*\).*/\1 \2/p' /tmp/agent.log | tail -n1)
if [ "$pair" = "$(cat /sys/class/misc/snowflake/datacenter_id) $(cat /sys/class/misc/snowflake/worker_id)" ]; then
	ok "the device has the claimed ids ($pair)"
else
	bad "the device has ids other than the claimed ($pair)"
fi
if [ "$(redis-cli get "snowflake:default:worker:${pair% *}:${pair#* }")" != "" ]; then
	ok "the lease key is in Redis"
else
	bad "no lease key in Redis"
fi
[ "$(cat /sys/class/misc/snowflake/fenced)" = 0 ] && ok "not fenced while the lease is held" ||
	bad "fenced while the lease is held"
id_a=$(read_id)

# Redis stopped: the lease cannot be renewed.
fences0=$(cat /sys/class/misc/snowflake/statistics/fences)
kill -STOP "$redis_pid"
t_stop=$(ms)
if wait_reads fail $((TTL * 3 / 1000)); then
	ok "Redis stopped: reads fail with ENOTCONN ($(($(ms) - t_stop)) ms after SIGSTOP)"
else
	bad "Redis stopped: reads never failed"
fi
echo "AGENT-FIGURE stop_to_refused_ms=$(($(ms) - t_stop))"
lat=$(fence_latency)
if [ -n "$lat" ] && [ "$lat" -lt "$TTL" ]; then
	ok "fenced ${lat} ms after the last renewal was sent: before the ${TTL} ms lease could expire"
else
	bad "fence latency '$lat' not below the TTL $TTL"
fi
echo "AGENT-FIGURE fence_latency_ms=$lat"
[ "$(cat /sys/class/misc/snowflake/fenced)" = 1 ] && ok "sysfs fenced is 1" || bad "sysfs fenced is not 1"
fences1=$(cat /sys/class/misc/snowflake/statistics/fences)
[ "$fences1" -gt "$fences0" ] && ok "statistics/fences counted it ($fences0 -> $fences1)" ||
	bad "statistics/fences did not count ($fences0 -> $fences1)"
kill -CONT "$redis_pid"
t_cont=$(ms)
if wait_reads ok 30; then
	ok "Redis continued: the agent claimed again, reads succeed ($(($(ms) - t_cont)) ms)"
else
	bad "Redis continued: reads never succeeded again"
fi
id2=$last_id
if [ "$id2" -gt "$id_a" ]; then ok "IDs after the fence are above the earlier ones"; else bad "ID $id2 not above $id_a"; fi

# Redis killed and restarted empty.
kill -KILL "$redis_pid"
wait "$redis_pid" 2>/dev/null
t_kill=$(ms)
if wait_reads fail $((TTL * 3 / 1000)); then
	ok "Redis killed: reads fail with ENOTCONN ($(($(ms) - t_kill)) ms after the kill)"
else
	bad "Redis killed: reads never failed"
fi
lat=$(fence_latency)
if [ -n "$lat" ] && [ "$lat" -lt "$TTL" ]; then
	ok "fenced ${lat} ms after the last renewal"
else
	bad "fence latency '$lat' not below the TTL $TTL"
fi
id_b=$id2
if start_redis; then ok "redis-server restarted"; else bad "redis-server did not restart"; fi
t_up=$(ms)
if wait_reads ok 30; then
	ok "Redis restarted: reads succeed again ($(($(ms) - t_up)) ms)"
else
	bad "Redis restarted: reads never succeeded"
fi
id3=$last_id
if [ "$id3" -gt "$id_b" ]; then ok "IDs after Redis came back are above the earlier ones ($id3 > $id_b)"; else bad "ID $id3 not above $id_b"; fi
pair2=$(sed -n 's/.*event=claimed datacenter=\([0-9]*\) worker=\([0-9]*\).*/\1 \2/p' /tmp/agent.log | tail -n1)
[ "$pair2" = "$pair" ] && ok "the same ids again ($pair2): the state file's" || bad "other ids: $pair2, not $pair"

# SIGTERM: fenced, lease released, exit 0.
kill -TERM "$agent_pid"
wait "$agent_pid"
rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: the agent exited 0" || bad "SIGTERM: the agent exited $rc"
if wait_reads fail 1; then ok "stopped agent: the device stays fenced"; else bad "stopped agent: reads still work"; fi
if [ -z "$(redis-cli get "snowflake:default:worker:${pair% *}:${pair#* }")" ]; then
	ok "stopped agent: the lease key was released"
else
	bad "stopped agent: the lease key is still there"
fi
# An agent blocked in a log write (a full pipe, like a stalled journald):
# its CLOCK_BOOTTIME watchdog still fences the device at the lease's
# deadline, from a signal handler.
mkfifo /tmp/logfifo
cat /tmp/logfifo >/tmp/agent2.log &
cat_pid=$!
snowflake-agent --config /dev/null --ttl-ms "$TTL" --redis-timeout-ms 300 --state-file '' \
	--datacenter-ids 1 --log-level debug 2>/tmp/logfifo &
agent_pid=$!
if wait_reads ok 30; then ok "watchdog: a second agent serves"; else bad "watchdog: the second agent never served"; fi
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
if wait_reads ok 30; then ok "watchdog: unblocked, the agent serves again"; else bad "watchdog: never served again"; fi
kill -TERM "$agent_pid"
wait "$agent_pid"
rc=$?
[ "$rc" = 0 ] && ok "watchdog: the second agent exited 0 on SIGTERM" || bad "watchdog: exit $rc"
wait "$dd_pid" 2>/dev/null
kill "$cat_pid" 2>/dev/null
# The agent itself stopped (SIGSTOP): neither its loop nor its watchdog's
# signal handler runs.  The device stops issuing at the lease's deadline all
# by itself (the kernel's deadline, SNOWFLAKE_IDS_DEADLINE, set with the pair
# at every renewal), not fenced by anyone; once the agent runs again it has
# a lease again and the device serves, with larger IDs.
S=/sys/class/misc/snowflake
# Its mark 10 s ahead (mark-step-ms): the ceiling stays above what the
# device reaches before the deadline, so the deadline is what refuses.
snowflake-agent --config /dev/null --ttl-ms "$TTL" --redis-timeout-ms 300 --state-file '' \
	--datacenter-ids 1 --log-level debug --mark-step-ms 10000 2>/tmp/agent3.log &
agent_pid=$!
if wait_reads ok 30; then ok "deadline: a third agent serves"; else bad "deadline: the third agent never served"; fi
id_before=$last_id
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
if wait_reads ok 30; then
	ok "deadline: the agent runs again and the device serves ($(($(ms) - t_cont)) ms after SIGCONT)"
else
	bad "deadline: never served again after SIGCONT"
fi
if [ "$last_id" -gt "$id_before" ]; then ok "deadline: IDs after it are above the earlier ones"; else bad "deadline: ID $last_id not above $id_before"; fi
kill -TERM "$agent_pid"
wait "$agent_pid"
rc=$?
[ "$rc" = 0 ] && ok "deadline: the third agent exited 0 on SIGTERM" || bad "deadline: exit $rc"
echo "AGENT-FIGURE ids $id1 $id2 $id3"
echo "---- agent log ----"
grep -v 'event=renewed\|redis still down' /tmp/agent.log
echo "---- end of agent log ----"
kill -KILL "$redis_pid" 2>/dev/null
rmmod snowflake
echo "SNOWFLAKE-RMMOD rc=$?"
echo "AGENT-GUEST-COUNTS $pass $fail"
dmesg | grep snowflake | tail -n 20
vm_done
