#!/bin/bash
# The fault-injection proof of snowflake-agent (issue 11): against a real
# 3-member etcd cluster, then a single redis-server, all on 127.0.0.1, 16
# agents (--dry-run, one shared --history) contend for 10 pairs while
# scripts/lease-faults.py injects faults at random for LEASE_SECONDS (180)
# per store: agents stopped past their TTL or killed and restarted, store
# members (the etcd leader and followers) killed and restarted or stopped.
# scripts/lease-check.py then judges every history: no two owners may ever
# have held one pair at once.  About 3.5 minutes per store.
# Prints "figures: lease ..." lines and "lease: N passed, M failed".
set -uo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${LEASE_SECONDS:-180}
pass=0
fail=0
for cmd in etcd redis-server python3; do
	command -v "$cmd" >/dev/null || { echo "FAIL $cmd is missing (scripts/deps.sh)"; fail=1; }
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
for store in ${LEASE_STORES:-etcd redis}; do
	out=$BUILD/lease-$store
	rm -rf "$out"
	echo "==== $store: ${SECS}s of faults (logs in ${out#"$ROOT"/}) ===="
	start=$(now)
	python3 "$ROOT/scripts/lease-faults.py" --store "$store" --agent "$BUILD/userspace/snowflake-agent" \
		--out "$out" --seconds "$SECS" | tee "$out.log"
	line=$(grep -E "^lease-faults $store: [0-9]+ passed, [0-9]+ failed" "$out.log" | tail -n1)
	if [ -n "$line" ]; then
		pass=$((pass + $(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line")))
		fail=$((fail + $(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")))
	else
		echo "FAIL $store: the harness gave no result"
		fail=$((fail + 1))
	fi
	echo "$store: $(($(now) - start))s"
done
echo "lease: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
