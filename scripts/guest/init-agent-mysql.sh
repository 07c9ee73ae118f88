#!/bin/sh
# /init of the MySQL/MariaDB end-to-end guest (scripts/agent-mysql-guest.sh):
# the module with strict=1, mariadbd on loopback (its data directory made
# on the host), snowflake-agent with backend = mysql (not dry-run).
#   - --init-store makes the table and the pairs' rows
#   - reads fail until the agent holds a lease, then succeed with its pair
#   - the agent stopped (SIGSTOP): the kernel refuses reads at the lease's
#     deadline by itself; SIGCONT: the agent renews, larger IDs
#   - mariadbd stopped: the agent fences before the lease could expire;
#     continued: reads succeed again, larger IDs
#   - SIGTERM: fenced, the lease released in the table, exit 0
# Prints "ok   ..." / "FAIL ..." lines and AGENT-FIGURE lines for the host.

# shellcheck source=scripts/guest/init-common.sh
. /etc/init-common.sh
# shellcheck source=scripts/guest/agent-common.sh
. /etc/agent-common.sh

TTL=3000
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
S=/sys/class/misc/snowflake
# mark-step-ms 10 s: the ceiling stays at least 5 s ahead of the device's
# clock at every renewal, so a stopped agent's device meets the deadline
# (2.4 s after the last renewal) before the ceiling (with the default step,
# one TTL, the ceiling can come first: refused all the same, by the kernel,
# but not what this test shows).
AG="snowflake-agent --config /etc/agent.conf --backend mysql --mysql-timeout-ms 400 --ttl-ms $TTL --mark-step-ms 10000 --datacenter-ids 1 --worker-ids 0-3"
sql() { mariadb --no-defaults -S /run/mysqld.sock -uroot -N -B -e "$*"; }

echo "SNOWFLAKE-KERNEL $(uname -r) cpus=$(nproc)"
insmod /snowflake.ko strict=1
echo "SNOWFLAKE-INSMOD rc=$?"


t0=$(ms)
mariadbd --no-defaults --datadir=/var/lib/mysql --user=root --bind-address=127.0.0.1 \
	--port=3306 --socket=/run/mysqld.sock --pid-file=/run/mysqld.pid --skip-name-resolve \
	--innodb-buffer-pool-size=16M --innodb-log-file-size=4M --lc-messages-dir=/usr/share/mysql \
	--log-error=/tmp/mariadbd.err >/dev/null 2>&1 &
my_pid=$!
i=0
while [ $i -lt 600 ] && ! sql 'SELECT 1' >/dev/null 2>&1; do sleep 0.1; i=$((i + 1)); done
if sql 'SELECT 1' >/dev/null 2>&1; then
	ok "mariadbd $(sql 'SELECT VERSION()') on 127.0.0.1:3306 ($(($(ms) - t0)) ms)"
else
	bad "mariadbd did not start"
	tail -n 20 /tmp/mariadbd.err
fi
echo "AGENT-FIGURE mariadbd_start_ms=$(($(ms) - t0))"

if out=$(read_id); then bad "strict=1: reads refused before the agent runs (got $out)"
else ok "strict=1: reads refused before the agent runs"; fi

if $AG --init-store 2>/tmp/init.log && [ "$(sql 'SELECT COUNT(*) FROM snowflake.snowflake_lease')" = 4 ]; then
	ok "--init-store: the table and 4 rows"
else
	bad "--init-store failed"
	sed "s/^/  /" /tmp/init.log
fi

$AG --state-file /tmp/agent.state --log-level debug 2>/tmp/agent.log &
agent_pid=$!
t0=$(ms)
if wait_reads ok 60; then
	ok "the agent claimed a pair: reads succeed ($(($(ms) - t0)) ms after its start)"
else
	bad "reads never succeeded"
fi
pair=$(sed -n 's/.*event=claimed datacenter=\([0-9]*\) worker=\([0-9]*\).*/\1 \2/p' /tmp/agent.log | tail -n1)
if [ -n "$pair" ] && [ "$pair" = "$(cat $S/datacenter_id) $(cat $S/worker_id)" ]; then
	ok "the device has the claimed ids ($pair)"
else
	bad "the device has ids other than the claimed ($pair)"
fi
owner=$(sed -n 's/.*event=start owner=\([^ ]*\).*/\1/p' /tmp/agent.log)
row_owner=$(sql "SELECT owner FROM snowflake.snowflake_lease WHERE datacenter = ${pair% *} AND worker = ${pair#* } AND expiry > UTC_TIMESTAMP(6)")
[ -n "$owner" ] && [ "$row_owner" = "$owner" ] && ok "the pair's row holds the agent's owner, its expiry ahead" ||
	bad "the pair's row holds '$row_owner', not '$owner'"

# The agent stopped: neither its loop nor its watchdog runs; the kernel
# refuses reads at the lease's deadline (SNOWFLAKE_IDS_DEADLINE) by itself.
id_before=$(read_id)
expiries0=$(cat $S/statistics/lease_expiries)
kill -STOP "$agent_pid"
t_stop=$(ms)
if wait_reads fail $((TTL * 3 / 1000)); then
	t_refused=$(ms)
	deadline_ms=$(($(cat $S/lease_deadline_ns) / 1000000))
	ok "the agent stopped (SIGSTOP): reads refused with nothing done by it ($((t_refused - t_stop)) ms after SIGSTOP)"
	echo "AGENT-FIGURE deadline_to_refused_ms=$((t_refused - deadline_ms)) stop_to_refused_ms=$((t_refused - t_stop))"
	state="fenced=$(cat $S/fenced) lease_expired=$(cat $S/lease_expired) lease_expiries=$(cat $S/statistics/lease_expiries)"
	if [ "$state" = "fenced=0 lease_expired=1 lease_expiries=$((expiries0 + 1))" ]; then
		ok "the kernel refused at the deadline, not a fence ($state)"
	else
		bad "unexpected state: $state"
	fi
	# /proc/uptime is CLOCK_BOOTTIME in 10 ms steps.
	if [ "$t_refused" -ge $((deadline_ms - 10)) ]; then
		ok "not refused before the deadline"
	else
		bad "refused $((deadline_ms - t_refused)) ms before the deadline"
	fi
else
	bad "the agent stopped and the device kept serving"
fi
kill -CONT "$agent_pid"
t_cont=$(ms)
if wait_reads ok 30; then
	ok "SIGCONT: the agent renews and the device serves ($(($(ms) - t_cont)) ms)"
else
	bad "SIGCONT: never served again"
fi
if [ "$last_id" -gt "$id_before" ]; then ok "SIGCONT: IDs above the earlier ones ($last_id > $id_before)"; else bad "SIGCONT: ID $last_id not above $id_before"; fi

# mariadbd stopped: the agent cannot renew and fences before the lease could expire.
id_before=$(read_id)
kill -STOP "$my_pid"
t_stop=$(ms)
if wait_reads fail $((TTL * 3 / 1000)); then
	ok "mariadbd stopped: reads fail with ENOTCONN ($(($(ms) - t_stop)) ms after SIGSTOP)"
else
	bad "mariadbd stopped: reads never failed"
fi
lat=$(fence_latency)
if [ -n "$lat" ] && [ "$lat" -lt "$TTL" ]; then
	ok "fenced ${lat} ms after the last renewal was sent: before the ${TTL} ms lease could expire"
else
	bad "fence latency '$lat' not below the TTL $TTL"
fi
echo "AGENT-FIGURE fence_latency_ms=$lat"
kill -CONT "$my_pid"
t_cont=$(ms)
if wait_reads ok 30; then
	ok "mariadbd continued: reads succeed again ($(($(ms) - t_cont)) ms)"
else
	bad "mariadbd continued: reads never succeeded again"
fi
if [ "$last_id" -gt "$id_before" ]; then ok "IDs after the fence are above the earlier ones"; else bad "ID $last_id not above $id_before"; fi
pair2=$(sed -n 's/.*event=claimed datacenter=\([0-9]*\) worker=\([0-9]*\).*/\1 \2/p' /tmp/agent.log | tail -n1)
[ "$pair2" = "$pair" ] && ok "the same pair again ($pair2)" || bad "another pair: $pair2, not $pair"

kill -TERM "$agent_pid"
wait "$agent_pid"
rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: the agent exited 0" || bad "SIGTERM: the agent exited $rc"
if wait_reads fail 1; then ok "stopped agent: the device stays fenced"; else bad "stopped agent: reads still work"; fi
held=$(sql "SELECT COUNT(*) FROM snowflake.snowflake_lease WHERE expiry > UTC_TIMESTAMP(6)")
[ "$held" = 0 ] && ok "stopped agent: the lease released in the table" || bad "stopped agent: $held leases still held"
echo "---- agent log ----"
grep -v 'event=renewed\|mysql still down' /tmp/agent.log
echo "---- end of agent log ----"
kill -KILL "$my_pid" 2>/dev/null
rmmod snowflake
echo "SNOWFLAKE-RMMOD rc=$?"
echo "AGENT-GUEST-COUNTS $pass $fail"
dmesg | grep snowflake | tail -n 20
vm_done
