# shellcheck shell=sh
# Sourced by the agent guests' /init (init-agent.sh, init-agent-zk.sh,
# init-agent-mysql.sh), after init-common.sh: what they share of reading the
# device and of the agent's log.

# ms: the guest's uptime in ms.
ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }

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

# fence_latency: the since_renew_ms of the agent's last fence_latency line
# in /tmp/agent.log.
fence_latency() {
	sed -n 's/.*event=fence_latency .*since_renew_ms=\([0-9]*\).*/\1/p' /tmp/agent.log | tail -n1
}
