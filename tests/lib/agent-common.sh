# shellcheck shell=sh
# Sourced by the agent guests' /init (tests/agent-guest/init.sh,
# tests/vmclone/init-agent.sh, tests/handoff/init.sh), after
# init-common.sh: what they share of Redis, of reading the device and of the
# agent's log.

# ms: the guest's uptime in ms.
ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }

# redis_rec_owner KEY: the owner that pair record KEY names (its rec field
# "sf2 ... owner=O", docs/deployment-redis.md "The record"), "-" when free,
# nothing when there is no record.
redis_rec_owner() {
	redis-cli -h 127.0.0.1 -p 6379 hget "$1" rec 2>/dev/null | sed -n 's/.* owner=\([^ ]*\)$/\1/p'
}

# redis_server_start: redis-server on 127.0.0.1:6379, every write persisted
# before it is answered (appendonly yes, appendfsync always: the agent
# refuses a Redis that could bring a mark back lower), its files in /tmp (a
# restart reloads them); its pid in $redis_pid.  0 once it answers PING
# (10 s at most), 1 otherwise.
redis_server_start() {
	redis-server --bind 127.0.0.1 --port 6379 --save '' --appendonly yes --appendfsync always \
		--dir /tmp --logfile /tmp/redis.log --daemonize no &
	# shellcheck disable=SC2034 # read by the sourcing /init
	redis_pid=$!
	_rs_i=0
	while [ $_rs_i -lt 200 ]; do
		[ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ] && return 0
		sleep 0.05
		_rs_i=$((_rs_i + 1))
	done
	return 1
}

# read_id: one ID on stdout, 0; or the CLI's error on stdout, nonzero.
read_id() { snowflake next 2>&1; }

# wait_reads ok|fail SECONDS: until reads succeed (fail with ENOTCONN);
# the last ID read in $last_id.  The refusal is matched by the stable
# start of libsnowflake's ENOTCONN message.  (Its own variables start with
# _wr_: the sourcing /init's are its own.)
wait_reads() {
	_wr_want=$1
	_wr_deadline=$(($(ms) + $2 * 1000))
	while [ "$(ms)" -lt "$_wr_deadline" ]; do
		if _wr_out=$(read_id); then
			# shellcheck disable=SC2034 # read by the sourcing /init
			[ "$_wr_want" = ok ] && { last_id=$_wr_out; return 0; }
		else
			case $_wr_out in
			*"reads refused: strict mode without a worker id"*)
				[ "$_wr_want" = fail ] && return 0 ;;
			*) echo "  unexpected read error: $_wr_out" ;;
			esac
		fi
		sleep 0.05
	done
	return 1
}

# claimed LOG: the last pair the agent of LOG claimed, "DC W".
claimed() { sed -n 's/.*event=claimed datacenter=\([0-9]*\) worker=\([0-9]*\).*/\1 \2/p' "$1" | tail -n1; }

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
