#!/bin/sh
# /init of the ZooKeeper end-to-end guest (scripts/agent-zk-guest.sh): the
# module with strict=1, a standalone ZooKeeper server on loopback (Java),
# snowflake-agent --backend zookeeper (not dry-run).  Reads fail until the
# agent holds a lease; with the agent stopped (SIGSTOP) the kernel refuses
# reads at the lease's deadline by itself; continued, the agent serves
# again with larger IDs.  The server stopped: the device is fenced; the
# server continued: served again, larger IDs.  Prints "ok   ..." / "FAIL
# ..." lines and AGENT-FIGURE lines for the host.

# shellcheck source=scripts/guest/init-common.sh
. /etc/init-common.sh
# shellcheck source=scripts/guest/agent-common.sh
. /etc/agent-common.sh

TTL=4000
S=/sys/class/misc/snowflake
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

echo "SNOWFLAKE-KERNEL $(uname -r) cpus=$(nproc)"
insmod /snowflake.ko strict=1
echo "SNOWFLAKE-INSMOD rc=$?"



# The server: standalone, tickTime 500 ms (sessions of 1..10 s).
mkdir -p /tmp/zk
cat >/tmp/zoo.cfg <<EOF
tickTime=500
dataDir=/tmp/zk
clientPort=2181
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr
EOF
t0=$(ms)
echo "127.0.0.1 localhost $(hostname)" >/etc/hosts
cp=
for j in /opt/zookeeper/*.jar; do cp=$cp${cp:+:}$j; done
/opt/jre/bin/java -Xmx64m -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
	-Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$cp" \
	org.apache.zookeeper.server.ZooKeeperServerMain /tmp/zoo.cfg >/tmp/zk.log 2>&1 &
zk_pid=$!
up=0
while [ $(($(ms) - t0)) -lt 300000 ]; do
	if echo srvr | nc 127.0.0.1 2181 2>/dev/null | grep -q '^Mode: standalone'; then
		up=1
		break
	fi
	kill -0 "$zk_pid" 2>/dev/null || break
	sleep 0.5
done
if [ "$up" = 1 ]; then
	ok "ZooKeeper $(echo srvr | nc 127.0.0.1 2181 | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') on 127.0.0.1:2181 ($(($(ms) - t0)) ms to start)"
	echo "AGENT-FIGURE zk_start_ms=$(($(ms) - t0))"
else
	bad "ZooKeeper did not start"
	tail -n 20 /tmp/zk.log
fi

AG="snowflake-agent --config /dev/null --backend zookeeper --zookeeper-hosts 127.0.0.1:2181 --zookeeper-timeout-ms 1000 --ttl-ms $TTL --state-file /tmp/agent.state --datacenter-ids 1 --log-level debug"
# shellcheck disable=SC2086 # $AG: the agent and its flags
if $AG --init-store 2>/tmp/init.log; then
	ok "--init-store: the pool's marks in ZooKeeper ($(sed -n 's/.*\(created=[0-9]*\).*/\1/p' /tmp/init.log))"
else
	bad "--init-store failed"
	cat /tmp/init.log
fi
if out=$(read_id); then bad "strict=1: reads refused before the agent runs (got $out)"
else ok "strict=1: reads refused before the agent runs"; fi

# shellcheck disable=SC2086
$AG 2>/tmp/agent.log &
agent_pid=$!
t0=$(ms)
if wait_reads ok 120; then
	ok "the agent claimed an id: reads succeed ($(($(ms) - t0)) ms after its start)"
else
	bad "reads never succeeded"
fi
id1=$last_id
pair=$(sed -n 's/.*event=claimed datacenter=\([0-9]*\) worker=\([0-9]*\).*/\1 \2/p' /tmp/agent.log | tail -n1)
if [ "$pair" = "$(cat $S/datacenter_id) $(cat $S/worker_id)" ]; then
	ok "the device has the claimed ids ($pair)"
else
	bad "the device has ids other than the claimed ($pair)"
fi
grep -q 'event=zookeeper_session .*timeout_ms=4000' /tmp/agent.log &&
	ok "the session's negotiated timeout is the TTL (4000 ms)" ||
	bad "no session with a 4000 ms timeout in the agent's log"

# The agent stopped: the kernel refuses reads at the lease's deadline, by
# itself (not a fence); continued, the agent takes a lease again (its old
# session, or a new one once the ensemble expired it) and IDs grow.
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
if [ -n "$id2" ] && [ -n "$id_before" ] && [ "$id2" -gt "$id_before" ]; then
	ok "deadline: IDs after it are above the earlier ones"
else
	bad "deadline: ID $id2 not above $id_before"
fi

# The server stopped: no renewal, the device fenced (by the agent: the
# library's lost connection, or the watchdog at the fence time).
fences0=$(cat $S/statistics/fences)
kill -STOP "$zk_pid"
t_stop=$(ms)
if wait_reads fail $((TTL * 3 / 1000)); then
	ok "ZooKeeper stopped: reads fail with ENOTCONN ($(($(ms) - t_stop)) ms after SIGSTOP)"
else
	bad "ZooKeeper stopped: reads never failed"
fi
[ "$(cat $S/fenced)" = 1 ] && ok "ZooKeeper stopped: sysfs fenced is 1" || bad "ZooKeeper stopped: not fenced"
fences1=$(cat $S/statistics/fences)
[ "$fences1" -gt "$fences0" ] && ok "statistics/fences counted it ($fences0 -> $fences1)" ||
	bad "statistics/fences did not count ($fences0 -> $fences1)"
sleep 1
reason=$(sed -n 's/.*event=fenced datacenter=.* reason=\([a-z-]*\).*/\1/p' /tmp/agent.log | tail -n1)
echo "AGENT-FIGURE zk_stop_to_refused_ms=$(($(ms) - t_stop)) fence_reason=$reason"
kill -CONT "$zk_pid"
t_cont=$(ms)
if wait_reads ok 60; then
	ok "ZooKeeper continued: the agent serves again ($(($(ms) - t_cont)) ms)"
else
	bad "ZooKeeper continued: reads never succeeded again"
fi
id3=$last_id
if [ -n "$id3" ] && [ "$id3" -gt "$id2" ]; then ok "IDs after the server came back are above the earlier ones"; else bad "ID $id3 not above $id2"; fi

kill -TERM "$agent_pid"
wait "$agent_pid"
rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: the agent exited 0" || bad "SIGTERM: the agent exited $rc"
if wait_reads fail 1; then ok "stopped agent: the device stays fenced"; else bad "stopped agent: reads still work"; fi
grep -q 'event=released' /tmp/agent.log && ok "stopped agent: the key was deleted (released)" ||
	bad "stopped agent: no event=released"
echo "AGENT-FIGURE ids $id1 $id2 $id3"
echo "---- agent log ----"
grep -v 'event=renewed\|zookeeper: \|still down' /tmp/agent.log
echo "---- end of agent log ----"
kill -KILL "$zk_pid" 2>/dev/null
rmmod snowflake
echo "SNOWFLAKE-RMMOD rc=$?"
echo "AGENT-GUEST-COUNTS $pass $fail"
dmesg | grep snowflake | tail -n 20
vm_done
