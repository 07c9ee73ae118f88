#!/bin/bash
# The fault-injection proof of snowflake-agent (issue 11): against a real
# 3-member etcd cluster, then a single redis-server, then a 3-server
# ZooKeeper ensemble, then a single mariadbd (issue 18: an operator clearing
# the lease rows is its deletion fault), all on 127.0.0.1, 16 agents
# (--dry-run, one shared --history) contend for 10 pairs while
# tests/lease/faults.py injects faults at random for LEASE_SECONDS (180)
# per store: agents stopped past their TTL or killed and restarted, store
# members (the etcd leader and followers) killed and restarted or stopped
# (ZooKeeper: also two of three stopped, no quorum, past the session
# timeout).
# Every agent start is a new host with its own clock (offsets mostly within
# +-30 s, sometimes +-10 min), and deleting every lease key is one of the
# store faults.  tests/lease/check.py then judges every history: no two
# owners may ever have held one pair at once, nor stamped one timestamp.
# About 3.5 minutes, the four stores at once.  Then the negative control: the same harness
# and checker against the agent of 1dba72a (before the timestamp window),
# LEASE_CONTROL_SECONDS (150; beside the stores, so no longer) against Redis: the checker must find timestamp
# overlaps there (LEASE_CONTROL=0 skips it).
# Prints "figures: lease ..." lines (per store: the longest wait for a free
# pair while the store answered, since its last fault, against TTL + settle
# + 1 s, and the store-down time the harness measured) and "lease: N
# passed, M failed".
set -uo pipefail
# The shared harness: this one line names it.
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

SECS=${LEASE_SECONDS:-180}
pass=0
fail=0
for cmd in etcd redis-server python3 mariadbd mariadb-install-db; do
	command -v "$cmd" >/dev/null || { echo "FAIL $cmd is missing (scripts/deps.sh)"; fail=1; }
done
for f in /usr/share/zookeeper/bin/zkServer.sh /usr/lib/zookeeper/bin/cli_mt; do
	case " ${LEASE_STORES:-zookeeper} " in *" zookeeper "*) ;; *) continue ;; esac
	[ -x "$f" ] || { echo "FAIL $f is missing (scripts/deps.sh: zookeeperd, zookeeper-bin)"; fail=1; }
done
if [ "$fail" -ne 0 ]; then
	echo "lease: $pass passed, $fail failed"
	exit 1
fi
echo "==== building snowflake-agent ===="
if ! make -s -C "$ROOT/userspace" OUT="$BUILD/userspace" agent; then
	echo "lease: 0 passed, 1 failed"
	exit 1
fi
# harness NAME OUT SECONDS ARGS...: one run of tests/lease/faults.py in
# the background, its output in OUT.log; count NAME OUT then prints that log
# and counts its ok/FAIL lines into pass and fail.  The stores' runs go on
# at once, each with its own servers and ports: a run is mostly waiting
# (agents between renewals, faults between their times), so four at once
# take about as long as one (LEASE_PARALLEL=0: one after another).
declare -A started=()
harness() {
	local name=$1 out=$2 secs=$3
	shift 3
	started[$name]=$(now)
	python3 "$ROOT/tests/lease/faults.py" --out "$out" --seconds "$secs" "$@" >"$out.log" 2>&1 &
	pids[$name]=$!
	[ "${LEASE_PARALLEL:-1}" = 1 ] || wait "${pids[$name]}"
}
count() {
	local name=$1 out=$2 line
	wait "${pids[$name]}"
	cat "$out.log"
	line=$(grep -E "^lease-faults [a-z]+: [0-9]+ passed, [0-9]+ failed" "$out.log" | tail -n1)
	if [ -n "$line" ]; then
		pass=$((pass + $(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line")))
		fail=$((fail + $(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")))
	else
		echo "FAIL $name: the harness gave no result"
		fail=$((fail + 1))
	fi
	echo "$name: $(($(now) - ${started[$name]}))s"
}
declare -A pids=()
runs=()

for store in ${LEASE_STORES:-etcd redis zookeeper mysql}; do
	out=$BUILD/lease-$store
	rm -rf "$out"
	echo "==== $store: ${SECS}s of faults (logs in ${out#"$ROOT"/}) ===="
	harness "$store" "$out" "$SECS" --store "$store" --agent "$BUILD/userspace/snowflake-agent"
	runs+=("$store $out")
done
# The negative control: the agent before the timestamp window, built from
# the repository's history, under the same clock domains.
LEGACY_REV=1dba72a
if [ "${LEASE_CONTROL:-1}" = 1 ]; then
	src=$BUILD/lease-legacy-src
	out=$BUILD/lease-legacy
	rm -rf "$src" "$out"
	mkdir -p "$src"
	echo "==== control: the agent of $LEGACY_REV (no timestamp window), redis, ${LEASE_CONTROL_SECONDS:-150}s ===="
	if ! git -C "$ROOT" archive "$LEGACY_REV" VERSION userspace uapi | tar -x -C "$src" ||
		! make -s -C "$src/userspace" OUT="$src/build" agent >"$src.log" 2>&1; then
		tail -n 20 "$src.log" 2>/dev/null
		echo "FAIL control: cannot build the agent of $LEGACY_REV (a clone without that commit?)"
		fail=$((fail + 1))
	else
		harness control "$out" "${LEASE_CONTROL_SECONDS:-150}" --store redis --legacy \
			--agent "$src/build/snowflake-agent"
		runs+=("control $out")
	fi
fi
for r in "${runs[@]}"; do
	read -r name out <<<"$r"
	echo "==== $name (${out#"$ROOT"/}) ===="
	count "$name" "$out"
done
echo "lease: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
