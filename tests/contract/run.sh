#!/bin/bash
# The contract stage (make check STAGES=contract): snowflake-agent against
# the real servers of every store, on this host (no guest):
#   - tests/contract/contract.py: the scenario list of the agent's contract
#     (G1-G6 of userspace/agent/agent.h), once per store (etcd 3 members,
#     Redis, ZooKeeper 3 servers, MariaDB), with the fault proxy
#     tests/contract/faultproxy.py; its table scenario x store and each
#     store's liveness figure
#   - the mutants (tests/contract/mutants/*.patch: every agent defect found
#     so far, brought back by a small patch): built by
#     tests/contract/mutants.sh beside the stores' start, then each run by
#     contract.py on every scenario its patch names, on each of its stores,
#     in the servers the scenarios used; the table mutant x scenario x
#     store: killed only by a failure its patch's Reason matches (other,
#     SURVIVED, moot, error, a patch without a Reason, or one that no
#     longer applies or builds, is a failure)
#   - contract.py's own count: its exit status and its TAP lines against
#     its closing count (contract.py --tally), for the static agent too
#   - tests/contract/selftest.py: the harness's own rules, without a store
#   - the per-store adapter tests, what only one store or the configuration
#     has (their helpers in tests/contract/lib.sh):
#     tests/contract/adapter-redis-etcd.sh, adapter-zookeeper.sh,
#     adapter-mysql.sh (their guests are the agent stage's), and
#     adapter-redis-input.sh (what Redis holds or says is input),
#     rec-contract.sh (the record store) and upgrade-1.4.0.sh (1.4.0's
#     agent beside this one on Redis and etcd)
# MIGRATION.md says where each check of the old per-backend scripts lives.
# TAP lines, then "contract: N passed, M failed".
set -uo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"

HERE=$ROOT/tests/contract
# counted WHAT FILE RC: contract.py's output FILE checked against its own
# count (contract.py --tally: TAP lines 1..N, oks and not-oks as the closing
# line says) and its exit status RC (0 exactly when it counted no failure).
counted() {
	local what=$1 file=$2 rc=$3 why failed
	if ! why=$(python3 "$HERE/contract.py" --tally "$file" 2>&1); then
		notok "$what: its count does not hold: $why"
		return
	fi
	failed=$(sed -n 's/^contract: [0-9]* passed, \([0-9]*\) failed$/\1/p' "$file" | tail -n1)
	if [[ ! $rc =~ ^[0-9]+$ ]] || { [ "$rc" = 0 ] && [ "$failed" != 0 ]; } ||
		{ [ "$rc" != 0 ] && [ "$failed" = 0 ]; }; then
		notok "$what: exit status $rc with $failed failed"
	fi
}
finish() {
	echo "contract: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}
for cmd in python3 redis-server etcd java mariadbd mariadb-install-db; do
	command -v "$cmd" >/dev/null || { notok "$cmd is missing (scripts/deps.sh)"; finish; }
done
for f in /usr/share/zookeeper/bin/zkServer.sh /usr/lib/zookeeper/bin/cli_mt; do
	[ -x "$f" ] || { notok "$f is missing (scripts/deps.sh: zookeeperd, zookeeper-bin)"; finish; }
done
if ! make -s -C "$ROOT/userspace" OUT="$BUILD/userspace" agent; then
	notok "building snowflake-agent"
	finish
fi
AGENT=$BUILD/userspace/snowflake-agent

out=$BUILD/contract
rm -rf "$out"
mkdir -p "$out"
# The harness's own rules first (tests/contract/selftest.py: n/a only from
# NA_TABLE, a crashed agent fails, a history without intervals fails, the
# proxy's report names the request), no store needed.
while IFS= read -r line; do
	case $line in
	"ok "[0-9]*) ok "harness: $(cut -d' ' -f3- <<<"$line")" ;;
	"not ok "[0-9]*) notok "harness: $(cut -d' ' -f4- <<<"$line")" ;;
	"contract-selftest: "*) sline=$line ;;
	*) echo "$line" ;;
	esac
done < <(timeout 120 python3 "$HERE/selftest.py" 2>&1)
[ -n "${sline:-}" ] || notok "tests/contract/selftest.py gave no result"
# The mutants build while the stores start (nice: two compilers at most).
bg_start "$out/mutants.rc" bash "$HERE/mutants.sh" "$out/mutants" >"$out/mutants.log" 2>&1
mutants_pid=$!

# What runs beside the contract's last stores (late_work): the static
# agent's ZooKeeper reply bound and the per-store adapter tests, one after
# another, from when two of the four stores' children have finished (their
# result.json written: one CPU left to them) or the contract has ended.
# Their output is kept in files and counted after the contract's lines.
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"
ADAPTERS=("redis+etcd adapter:tests/contract/adapter-redis-etcd.sh"
	"zookeeper adapter:tests/contract/adapter-zookeeper.sh"
	"mysql adapter:tests/contract/adapter-mysql.sh"
	"redis input:tests/contract/adapter-redis-input.sh"
	"record store:tests/contract/rec-contract.sh"
	"upgrade from 1.4.0:tests/contract/upgrade-1.4.0.sh")
late_work() {
	local st=$out/static-stage i n s
	while :; do
		n=0
		for s in etcd redis zookeeper mysql; do
			[ -e "$out/$s/result.json" ] && n=$((n + 1))
		done
		[ "$n" -ge 2 ] && break
		kill -0 "$contract_pid" 2>/dev/null || break
		sleep 1
	done
	# The ZooKeeper reply bound in the static agent the guests run (issue
	# 31: the bound must not depend on how the library is linked):
	# vm_add_agent's very build, through the proxy's oversized replies.
	mkdir -p "$st/usr/sbin" "$st/usr/bin"
	if ! vm_add_agent "$st" "$out/static" >"$out/static-build.log" 2>&1; then
		echo "static-build-failed" >"$out/static.status"
	elif ! grep -qa zookeeper_init2 "$out/static/snowflake-agent"; then
		echo "static-no-zookeeper" >"$out/static.status"
	else
		echo "built" >"$out/static.status"
		python3 "$HERE/contract.py" --agent "$out/static/snowflake-agent" --out "$out/static-run" \
			--stores zookeeper --only oversized,oversized_spin >"$out/static.out" 2>&1
		echo $? >"$out/static.rc"
	fi
	for i in "${!ADAPTERS[@]}"; do
		AGENT_GUEST=0 bash "$ROOT/${ADAPTERS[$i]#*:}" >"$out/adapter-$i.out" 2>&1
	done
}

echo "# the contract of every store (tests/contract/contract.py; logs in $out)"
python3 "$HERE/contract.py" --agent "$AGENT" --out "$out" --mutants "$out/mutants" \
	>"$out/contract.out" 2>&1 &
contract_pid=$!
late_work &
late_pid=$!
wait "$contract_pid"
crc=$?
# Its TAP lines counted here; the rest (the table, the figures) as it is.
while IFS= read -r line; do
	case $line in
	"ok "[0-9]*) ok "$(cut -d' ' -f3- <<<"$line")" ;;
	"not ok "[0-9]*) notok "$(cut -d' ' -f4- <<<"$line")" ;;
	"contract: "[0-9]*" passed, "*) cline=$line ;;
	*) echo "$line" ;;
	esac
done <"$out/contract.out"
[ -n "${cline:-}" ] || notok "tests/contract/contract.py gave no result"
# contract.py's own count and exit status: its TAP lines 1..N as many oks
# and not-oks as its closing line says, and exit 0 exactly when none failed.
counted "tests/contract/contract.py" "$out/contract.out" "$crc"
bg_wait "$mutants_pid" "$out/mutants.rc" ||
	notok "tests/contract/mutants.sh failed (exit $?, $out/mutants.log)"
wait "$late_pid"

case $(cat "$out/static.status" 2>/dev/null) in
static-build-failed) notok "static agent: vm_add_agent failed ($out/static-build.log)" ;;
static-no-zookeeper)
	notok "static agent: built without the ZooKeeper store (libzookeeper_mt.a: scripts/deps.sh)" ;;
built)
	echo "# the static agent's ZooKeeper reply bound"
	scline=
	while IFS= read -r line; do
		case $line in
		"ok "[0-9]*" zookeeper "*) ok "static agent: $(cut -d' ' -f3- <<<"$line")" ;;
		"not ok "[0-9]*) notok "static agent: $(cut -d' ' -f4- <<<"$line")" ;;
		"contract: "[0-9]*" passed, "*) scline=$line ;;
		esac
	done <"$out/static.out"
	[ -n "$scline" ] || notok "static agent: tests/contract/contract.py gave no result"
	counted "static agent: tests/contract/contract.py" "$out/static.out" \
		"$(cat "$out/static.rc" 2>/dev/null || echo none)"
	# Its two scenarios each counted: a run that counted nothing fails.
	for s in oversized oversized_spin; do
		grep -Eq "^ok [0-9]+ zookeeper $s: " "$out/static.out" ||
			notok "static agent: no passing line of zookeeper $s ($out/static.out)"
	done
	;;
*) notok "static agent: its run never started ($out/static.status)" ;;
esac

# adapter I: the per-store test ADAPTERS[I] (NAME:SCRIPT), as late_work
# ran it; its ok/FAIL lines counted here.
adapter() {
	local name=${ADAPTERS[$1]%%:*} script=${ADAPTERS[$1]#*:} line res=
	echo "# $name ($script)"
	while IFS= read -r line; do
		case $line in
		"ok   "*) ok "$name: ${line#ok   }" ;;
		"FAIL "*) notok "$name: ${line#FAIL }" ;;
		*": "[0-9]*" passed, "[0-9]*" failed") res=$line ;;
		*) echo "$line" ;;
		esac
	done <"$out/adapter-$1.out"
	[ -n "$res" ] || notok "$name: $script gave no result"
}
for i in "${!ADAPTERS[@]}"; do
	adapter "$i"
done
finish
