#!/bin/bash
# The agent stage: snowflake-agent end to end in guests (the real module in
# strict mode, a store on the guest's loopback, the agent not in dry-run),
# once per store: scripts/agent-guest.sh (Redis), agent-zk-guest.sh
# (ZooKeeper), agent-mysql-guest.sh (MariaDB).  The host tests of the agent
# against every store are the contract stage's (tests/contract/run.sh).
# Their ok/FAIL lines count here.  Prints "agent: N passed, M failed".
set -uo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# guest NAME SCRIPT: a guest's ok/FAIL lines count here.
guest() {
	local name=$1 script=$2 out rc line
	echo "==== $name (scripts/$script) ===="
	out=$(bash "$ROOT/scripts/$script" 2>&1)
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok   "*) ok "$name: ${line#ok   }" ;;
		"FAIL "*) bad "$name: ${line#FAIL }" ;;
		*": "[0-9]*" passed, "[0-9]*" failed") ;;
		*) echo "$line" ;;
		esac
	done <<<"$out"
	if ! grep -qE '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' <<<"$out"; then
		bad "$name: scripts/$script gave no result (exit $rc)"
	fi
}

guest guest agent-guest.sh
guest "zookeeper guest" agent-zk-guest.sh
guest "mysql guest" agent-mysql-guest.sh
echo "agent: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
