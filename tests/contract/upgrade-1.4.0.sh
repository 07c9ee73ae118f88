#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The rolling upgrade from 1.4.0 on Redis and etcd (issue 40 item 3,
# docs/lease-record.md "1.4.0 beside it"): 1.4.0's agent, built from the
# repository's history (OLD_REV: the last commit before Redis and etcd
# moved to records), and this tree's, on one store and one pair, agents in
# --dry-run, one history judged by tests/lease/check.py:
#   - forward: 1.4.0's --init-store and agent A serving (its marks raised
#     20 s ahead); this agent B (its clock 5 s behind) never claims while
#     A's key lives (event=held_by_1_4_0); A stopped (SIGTERM: its key
#     deleted), B takes the pair with its record made from A's mark
#     (event=mark_migrated), its floor above A's last ceiling
#   - back: this agent holding, then released, 1.4.0's agent never claims
#     the pair (its claim needs the name free: the record is there)
#   - no two owners ever held the pair at once, nor stamped one timestamp
# Private servers on 127.0.0.1, stopped by pid; every wait bounded.
# Prints "upgrade-1.4.0: N passed, M failed".
set -uo pipefail
NAME=upgrade-1.4.0
# shellcheck source=tests/contract/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1
OLD_REV=${OLD_REV:-6bd60d2}

need_cmds "" redis-server etcd python3
build_agent
make_tmp upgrade
mkdir -p "$tmp/old"
if ! git -C "$ROOT" archive "$OLD_REV" VERSION userspace uapi | tar -x -C "$tmp/old" ||
	! make -s -C "$tmp/old/userspace" OUT="$tmp/old/build" agent >"$tmp/old.log" 2>&1; then
	tail -n 20 "$tmp/old.log" 2>/dev/null
	bad "cannot build the agent of $OLD_REV (a clone without that commit?)"
	finish
fi
OLD=$tmp/old/build/snowflake-agent

# start_store STORE: its server, its agent options in st=().
start_store() {
	local port pp t
	port=$(free_port)
	pp=$(free_port)
	mkdir -p "$tmp/$1"
	if [ "$1" = redis ]; then
		redis-server --bind 127.0.0.1 --port "$port" --dir "$tmp/$1" --save '' --appendonly yes \
			--appendfsync always --maxmemory-policy noeviction --daemonize no >"$tmp/$1.log" 2>&1 &
		servers+=($!)
		st=(--backend redis --redis-host 127.0.0.1 --redis-port "$port" --redis-min-uptime-ms 0)
		t=$(($(ms) + 20000))
		until [ "$(timeout 5 redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; do
			[ "$(ms)" -lt "$t" ] || return 1
			sleep 0.05
		done
	else
		etcd --name u0 --data-dir "$tmp/$1/data" --listen-client-urls "http://127.0.0.1:$port" \
			--advertise-client-urls "http://127.0.0.1:$port" --listen-peer-urls "http://127.0.0.1:$pp" \
			--initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "u0=http://127.0.0.1:$pp" \
			>"$tmp/$1.log" 2>&1 &
		servers+=($!)
		st=(--backend etcd --etcd-endpoints "http://127.0.0.1:$port")
		t=$(($(ms) + 20000))
		until timeout 5 env ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$port" endpoint health >/dev/null 2>&1; do
			[ "$(ms)" -lt "$t" ] || return 1
			sleep 0.1
		done
	fi
}

for STORE in redis etcd; do
	echo "==== $STORE ===="
	start_store "$STORE" || { bad "$STORE did not start"; continue; }
	d=$tmp/$STORE
	f=(--config /dev/null "${st[@]}" --prefix up --cluster c --datacenter-ids 0 --worker-ids 0
		--ttl-ms 2000 --dry-run --state-file '' --log-level debug --history "$d/history")
	"$OLD" "${f[@]}" --init-store 2>"$d/init.log" || bad "$STORE: 1.4.0's --init-store"
	"$OLD" "${f[@]}" --mark-step-ms 20000 2>"$d/a.log" &
	a=$!
	agent_pids+=("$a")
	wait_log "$d/a.log" "event=unfenced" 10 || bad "$STORE: 1.4.0's agent never served"
	"$AGENT" "${f[@]}" --dry-run-clock-offset-ms -5000 2>"$d/b.log" &
	b=$!
	agent_pids+=("$b")
	wait_log "$d/b.log" "event=held_by_1_4_0" 10
	sleep 3
	check "$STORE: this agent never claims while 1.4.0's key lives (event=held_by_1_4_0)" \
		bash -c 'grep -q "event=held_by_1_4_0" "$1" && ! grep -q "event=claimed" "$1"' _ "$d/b.log"
	stop "$a"
	check "$STORE: 1.4.0's agent stopped: exit $rc, released" \
		bash -c '[ "$1" = 0 ] && grep -q "event=released" "$2"' _ "$rc" "$d/a.log"
	wait_log "$d/b.log" "event=unfenced" 15
	ceil=$(grep -o 'ceiling_ms=[0-9]*' "$d/a.log" | tail -n1 | cut -d= -f2)
	floor=$(grep -o 'event=unfenced.*floor_ms=[0-9]*' "$d/b.log" | head -n1 | sed 's/.*floor_ms=//')
	check "$STORE: this agent takes the pair with 1.4.0's mark (event=mark_migrated), its floor $floor above 1.4.0's last ceiling $ceil" \
		bash -c 'grep -q "event=mark_migrated datacenter=0 worker=0" "$1" && [ -n "$2" ] && [ -n "$3" ] &&
			[ "$2" -gt "$3" ]' _ "$d/b.log" "${floor:-}" "${ceil:-}"
	# back: 1.4.0's agent beside this one holding, then after its release
	"$OLD" "${f[@]}" 2>"$d/c.log" &
	c=$!
	agent_pids+=("$c")
	wait_log "$d/c.log" "event=pool_full" 10
	stop "$b"
	check "$STORE: this agent stopped: exit $rc, released" \
		bash -c '[ "$1" = 0 ] && grep -q "event=released" "$2"' _ "$rc" "$d/b.log"
	sleep 4
	stop "$c"
	check "$STORE: 1.4.0's agent never claims a pair that has a record, held or free ($(grep -c 'event=pool_full' "$d/c.log") pool_full)" \
		bash -c 'grep -q "event=pool_full" "$1" && ! grep -q "event=claimed" "$1"' _ "$d/c.log"
	python3 "$ROOT/tests/lease/check.py" --label "upgrade-$STORE" "$d/history" >"$d/check.out" 2>&1
	crc=$?
	check "$STORE: lease-check: $(grep -o '[0-9]* overlaps, [0-9]* timestamp overlaps' "$d/check.out")" \
		bash -c '[ "$1" = 0 ] && grep -q " 0 overlaps, 0 timestamp overlaps" "$2"' _ "$crc" "$d/check.out"
done
finish
