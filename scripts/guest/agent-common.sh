# shellcheck shell=sh
# Sourced by the agent guests' /init (tests/agent-guest/init.sh,
# scripts/guest/init-vmclone-agent.sh), after init-common.sh: what they
# share of the store, of reading the device and of the agent's log.

# ms: the guest's uptime in ms.
ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }

# redis_server_start: redis-server on 127.0.0.1:6379, every write persisted before
# it is answered (appendonly yes, appendfsync always: the agent refuses a
# Redis that could bring a mark back lower), its files in /tmp (a restart
# reloads them); its pid in $redis_pid.  0 once it answers PING (10 s at
# most), 1 otherwise.
redis_server_start() {
	redis-server --bind 127.0.0.1 --port 6379 --save '' --appendonly yes --appendfsync always \
		--dir /tmp --logfile /tmp/redis.log --daemonize no &
	# shellcheck disable=SC2034 # read by the sourcing /init
	redis_pid=$!
	i=0
	while [ $i -lt 200 ]; do
		[ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# read_id: one ID on stdout, 0; or the CLI's error on stdout, nonzero.
read_id() { snowflake next 2>&1; }

# wait_reads ok|fail SECONDS: until reads succeed (fail with ENOTCONN);
# the last ID read in $last_id.  The refusal is matched by the stable
# start of libsnowflake's ENOTCONN message.
wait_reads() {
	want=$1
	deadline=$(($(ms) + $2 * 1000))
	while [ "$(ms)" -lt "$deadline" ]; do
		if out=$(read_id); then
			# shellcheck disable=SC2034 # read by the sourcing /init
			[ "$want" = ok ] && { last_id=$out; return 0; }
		else
			case $out in
			*"reads refused: strict mode without a worker id"*)
				[ "$want" = fail ] && return 0 ;;
			*) echo "  unexpected read error: $out" ;;
			esac
		fi
		sleep 0.05
	done
	return 1
}

# log_lines: how many lines /tmp/agent.log has now (a mark for the two
# below, so that they see only what the agent logged after it).
log_lines() { wc -l </tmp/agent.log; }

# fence_latency [FROM]: the since_renew_ms of the agent's last
# fence_latency line in /tmp/agent.log (after line FROM).
fence_latency() {
	tail -n +$((${1:-0} + 1)) /tmp/agent.log |
		sed -n 's/.*event=fence_latency .*since_renew_ms=\([0-9]*\).*/\1/p' | tail -n1
}

# fence_reason [FROM]: the reason of the agent's last fenced line in
# /tmp/agent.log (after line FROM).
fence_reason() {
	tail -n +$((${1:-0} + 1)) /tmp/agent.log |
		sed -n 's/.*event=fenced datacenter=.* reason=\([a-z-]*\).*/\1/p' | tail -n1
}
