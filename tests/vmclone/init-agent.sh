#!/bin/sh
# Guest /init of tests/vmclone/run.sh's agent scenario: the module with
# strict=1, redis-server on loopback and snowflake-agent holding a pair.  A
# poller reads one ID every 50 ms into /tmp/poll (a line per read: "ok ID"
# or "refused"); the host saves the VM (VMCLONE-SNAPSHOT-NOW) while we
# sleep, the parent goes on, and the clone resumes here with its own copy of
# Redis, of the agent and of the poller.  Then the poll log, the pair and the
# agent's log go to the console for the host to compare.
# shellcheck source=tests/lib/init-common.sh
. /etc/init-common.sh
# shellcheck source=tests/lib/agent-common.sh
. /etc/agent-common.sh

S=/sys/class/misc/snowflake
if ! insmod /snowflake.ko strict=1; then
	echo "VMCLONE-ERROR insmod failed"
	vm_done
fi
redis_server_start || echo "VMCLONE-ERROR redis-server did not start: $(tail -n 5 /tmp/redis.log)"
# A new key space: the pool's timestamp marks, once.
snowflake-agent --config /dev/null --datacenter-ids 1 --init-store 2>/tmp/init.log ||
	echo "VMCLONE-ERROR --init-store failed: $(cat /tmp/init.log)"
snowflake-agent --config /dev/null --ttl-ms 3000 --redis-timeout-ms 300 --state-file '' \
	--datacenter-ids 1 --log-level debug 2>/tmp/agent.log &
wait_reads ok 60
echo "VMCLONE-PAIR before $(cat $S/datacenter_id) $(cat $S/worker_id)"
(
	while :; do
		if id=$(snowflake next 2>/dev/null); then echo "ok $id"; else echo refused; fi
		sleep 0.05
	done
) >/tmp/poll &
poll_pid=$!
sleep 2
echo "VMCLONE-SNAPSHOT-NOW"
sleep 15
kill "$poll_pid"
echo "VMCLONE-FORKS $(cat $S/statistics/vm_forks)"
echo "VMCLONE-PAIR after $(cat $S/datacenter_id) $(cat $S/worker_id)"
sed 's/^/VMCLONE-POLL /' /tmp/poll
grep -E 'event=(vm_fork|claimed|fenced|unfenced)' /tmp/agent.log | sed 's/^/VMCLONE-AGENT /'
echo "VMCLONE-DONE"
vm_done
