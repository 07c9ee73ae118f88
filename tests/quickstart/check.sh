#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In the quickstart guest (tests/quickstart/run.sh), as root, after a
# section that follows the Quick start (FOLLOW there): did the section do
# what it says?  Prints what it read; exit status 1 (and why) when not.
#
#   quickstart-check identity D W   the device serves datacenter D, worker
#                                   W (set: worker_set 1), and modprobe's
#                                   configuration gives them to its next
#                                   load (the section's --save)
#   quickstart-check agent B        snowflake-agent.service is active, its
#                                   current run started with backend B and
#                                   logged event=unfenced, the device is
#                                   strict, has a worker id and is not
#                                   fenced
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
bad=0
no() {
	echo "NOT: $*"
	bad=1
}
# has CONFIG LINE: snowflake config printed LINE.
has() { grep -qx "$2" <<<"$1" || no "snowflake config: not '$2'"; }

config=$(snowflake config 2>&1) || no "snowflake config failed"
case $1 in
identity)
	dc=$2 wk=$3
	[ "$dc" != none ] || no "the section sets no datacenter id"
	[ "$wk" != none ] || no "the section sets no worker id"
	opts=$(modprobe -c | grep -E '^options snowflake ')
	printf '%s\n' "$config" | grep -E '^(datacenter_id|worker_id|worker_set|strict) '
	printf 'modprobe -c: %s\n' "$opts"
	has "$config" "datacenter_id $dc"
	has "$config" "worker_id $wk"
	has "$config" "worker_set 1"
	# The last value of each option in modprobe's configuration wins.
	last() { grep -oE "(^| )$1=[0-9]+" <<<"$opts" | tail -n 1 | sed 's/.*=//'; }
	[ "$(last datacenter_id)" = "$dc" ] || no "modprobe's configuration: datacenter_id not $dc at the next load"
	[ "$(last worker_id)" = "$wk" ] || no "modprobe's configuration: worker_id not $wk at the next load"
	;;
agent)
	inv=$(systemctl show -p InvocationID --value snowflake-agent.service)
	log=$(journalctl -q -o cat --no-pager "_SYSTEMD_INVOCATION_ID=$inv" 2>/dev/null)
	[ "$2" != none ] || no "the section's agent.conf names no backend"
	grep -q "event=start .*backend=$2 " <<<"$log" || no "its current run did not start with backend=$2"
	grep -E 'event=(start|claimed|unfenced|fenced|lease_lost|[a-z]+_unsafe|[a-z]+_not_durable)' <<<"$log" | tail -n 5
	printf '%s\n' "$config" | grep -E '^(datacenter_id|worker_id|worker_set|strict|fenced) '
	systemctl is-active -q snowflake-agent.service || no "snowflake-agent.service is not active: $(systemctl is-active snowflake-agent.service)"
	if [ -z "$inv" ] || ! grep -q 'event=unfenced' <<<"$log"; then
		no "its current run (invocation ${inv:-none}) logged no event=unfenced"
		tail -n 15 <<<"$log"
	fi
	has "$config" "strict 1"
	has "$config" "worker_set 1"
	has "$config" "fenced 0"
	;;
*)
	no "usage: quickstart-check identity D W | agent BACKEND"
	;;
esac
exit "$bad"
