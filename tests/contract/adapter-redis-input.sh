#!/bin/bash
# The Redis adapter's part of the contract suite: what a Redis store holds
# or says is input (issue 23), snowflake-agent in --dry-run against a real
# redis-server (appendonly yes, appendfsync always) on 127.0.0.1, each
# check a reproduction of one finding, where it asserts more than the
# contract's scenario of it (tests/contract/contract.py) or is Redis's own:
#   - a 1.4.0 mark key (a pair with no record) that is not the 20 digits
#     1.4.0 wrote (-1, 1000, abc, 25 digits, 2^64-1, above the layout): never
#     served (event=mark_invalid with its key and its text), no record
#     made; --init-store leaves it (exit 1) unless --init-mark-ms is given,
#     migrates a valid one into a record, and never lowers a record's mark;
#     a record's mark edited in place (its version kept) under a holder is
#     replaced by its next raise
#   - a Redis that can bring a mark back lower (no AOF fsynced at every
#     write; a master with a replica; a replica) is refused (exit 5,
#     event=redis_unsafe) unless --redis-allow-non-durable
#     (event=redis_not_durable); with it, a record from before the server's
#     restart (an RDB snapshot reloaded) is never trusted (event=mark_stale)
#   - a reply trickled a byte per 300 ms cannot hold a renewal past the
#     fence ("no whole reply within the deadline"); a 300 MiB reply is
#     refused ("reply larger than 1 MiB") with bounded memory (the
#     contract's fault proxy, faultproxy.py, in between)
#   - SIGTERM during --init-store of 262144 pairs ends it at once (exit 1,
#     interrupted=1, every record written whole)
#   - a configuration line over 1023 bytes: "FILE:N: line longer than"
# The quarantine per pair, SIGTERM while replies trickle and SIGTERM during
# the claim walk are the contract's scenarios quarantine_per_pair, trickle
# and sigterm_walk (MIGRATION.md).  Run by tests/contract/run.sh.
# AGENT=path tests another build (e.g. the agent of an older commit).
# Prints "agent-redis-input: N passed, M failed".
set -uo pipefail
NAME=agent-redis-input
# shellcheck source=tests/contract/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need_cmds "" redis-server redis-cli python3
[ -n "${AGENT:-}" ] || build_agent

make_tmp agent-redis-input

# start_server NAME PORT ARGS...: redis-server in $tmp/NAME, its pid in $last_pid.
start_server() {
	local name=$1 p=$2 i
	shift 2
	mkdir -p "$tmp/$name"
	redis-server --bind 127.0.0.1 --port "$p" --dir "$tmp/$name" --logfile "$tmp/$name.log" \
		--daemonize no "$@" &
	last_pid=$!
	servers+=("$last_pid")
	for i in $(seq 100); do
		[ "$(redis-cli -p "$p" ping 2>/dev/null)" = PONG ] && return 0
		sleep 0.05
	done
	return 1
}

port=$(free_port)
start_server main "$port" --save '' --appendonly yes --appendfsync always || { bad "redis-server did not start"; finish; }
rcli() { redis-cli -p "$port" "$@"; }
# rmark KEY [PORT]: the mark of the record at KEY (docs/deployment-redis.md:
# a hash, its text "sf2 ... mark=M owner=O" in the field rec), nothing when absent.
rmark() { redis-cli -p "${2:-$port}" hget "$1" rec | sed -n 's/^sf2 .* mark=\([^ ]*\) owner=.*$/\1/p'; }
TTL=2000
base=(--config /dev/null --redis-host 127.0.0.1 --redis-timeout-ms 300 --ttl-ms "$TTL"
	--prefix rin --dry-run --log-level debug --state-file '' --settle-ms 0)
flags=("${base[@]}" --redis-port "$port")

# agent NAME ARGS...: an agent in the background, log $tmp/NAME.log, pid in $last_pid.
agent() {
	local name=$1
	shift
	"$AGENT" "$@" 2>>"$tmp/$name.log" &
	last_pid=$!
	agent_pids+=("$last_pid")
}

echo "==== invalid 1.4.0 marks are never served ===="
big=$(printf '9%.0s' $(seq 25))
i=0
for v in -1 1000 abc "$big" 18446744073709551615 99999999999999999999; do
	i=$((i + 1))
	cl=(--cluster "bad$i" --datacenter-ids 0 --worker-ids 0)
	rcli set "rin:bad$i:mark:0:0" "$v" >/dev/null
	agent "bad$i" "${flags[@]}" "${cl[@]}"
	a=$last_pid
	wait_log "$tmp/bad$i.log" "event=mark_invalid" 5
	sleep 1
	stop "$a"
	check "1.4.0 mark '${v:0:22}': event=mark_invalid with its key, nothing claimed, the mark unchanged" \
		bash -c 'grep -q "event=mark_invalid datacenter=0 worker=0 key=rin:$1:mark:0:0 value=\"${2:0:20}" "$3" &&
			! grep -q "event=claimed" "$3" && [ -z "$(redis-cli -p $4 get rin:$1:worker:0:0)" ] &&
			[ "$(redis-cli -p $4 get rin:$1:mark:0:0)" = "$2" ]' _ "bad$i" "$v" "$tmp/bad$i.log" "$port"
done

echo "==== --init-store and 1.4.0's marks ===="
cl=(--cluster init --datacenter-ids 0 --worker-ids 0-2)
rcli set rin:init:mark:0:0 -1 >/dev/null
rcli set rin:init:mark:0:1 00000000009999999999 >/dev/null
"$AGENT" "${flags[@]}" "${cl[@]}" --init-store 2>"$tmp/init1.log"
rc=$?
check "--init-store without --init-mark-ms leaves an invalid mark, migrates a valid one: exit $rc, said so ($(grep -o 'created=.*failed=[0-9]*' "$tmp/init1.log"))" \
	bash -c '[ "$1" = 1 ] && [ "$(redis-cli -p $2 get rin:init:mark:0:0)" = -1 ] &&
		[ "$(redis-cli -p $2 exists rin:init:worker:0:0)" = 0 ] &&
		[ "$(redis-cli -p $2 hget rin:init:worker:0:1 rec | sed -n "s/.* mark=\([0-9]*\) .*/\1/p")" = 00000000009999999999 ] &&
		grep -q "event=mark_invalid.*action=left" "$3" && grep -q "event=mark_migrated datacenter=0 worker=1" "$3" &&
		grep -q "created=2 present=0 replaced=0 invalid=1" "$3"' \
	_ "$rc" "$port" "$tmp/init1.log"
"$AGENT" "${flags[@]}" "${cl[@]}" --init-store --init-mark-ms 5000000000 2>"$tmp/init2.log"
rc=$?
check "--init-store --init-mark-ms replaces it by a record, says so, and never lowers a record's mark (exit $rc)" \
	bash -c '[ "$1" = 0 ] && [ "$2" = 00000000005000000000 ] && [ "$3" = 00000000009999999999 ] &&
		[ "$4" = 00000000000000000000 ] &&
		grep -q "event=mark_invalid.*action=replaced" "$5" && grep -q "replaced=1 invalid=0" "$5"' \
	_ "$rc" "$(rmark rin:init:worker:0:0)" "$(rmark rin:init:worker:0:1)" "$(rmark rin:init:worker:0:2)" \
	"$tmp/init2.log"

echo "==== an invalid mark under a holder ===="
cl=(--cluster hold --datacenter-ids 0 --worker-ids 0)
"$AGENT" "${flags[@]}" "${cl[@]}" --init-store 2>/dev/null
agent hold "${flags[@]}" "${cl[@]}"
a=$last_pid
wait_log "$tmp/hold.log" "event=unfenced" 10 || bad "the holder never served"
# the record's mark edited in place: its text, not its version (an
# operator's HSET of the field), so the holder's next write replaces it
t=$(rcli hget rin:hold:worker:0:0 rec)
rcli hset rin:hold:worker:0:0 rec "$(sed 's/ mark=[0-9]* / mark=abc /' <<<"$t")" >/dev/null
n0=$(grep -c "event=mark_invalid" "$tmp/hold.log")
sleep 3
stop "$a"
m=$(rmark rin:hold:worker:0:0)
check "its next raise replaces it (mark now $m), the holder kept serving (exit $rc)" \
	bash -c '[[ $1 =~ ^[0-9]{20}$ ]] && [ "$2" = 0 ] && ! grep -q "event=fenced.*reason=lease" "$3"' _ "$m" "$rc" "$tmp/hold.log"
: "$n0"

echo "==== a Redis that can bring a mark back lower ===="
p2=$(free_port)
start_server nd "$p2" --save '' --appendonly no || bad "the second redis-server did not start"
nd=$last_pid
cl=(--cluster nd --datacenter-ids 0 --worker-ids 0 --redis-port "$p2")
timeout 10 "$AGENT" "${base[@]}" "${cl[@]}" 2>"$tmp/nd.log"
rc=$?
check "appendonly no: refused, exit 5 ($rc: $(grep -o 'event=redis_unsafe.*' "$tmp/nd.log" | head -c 90))" \
	bash -c '[ "$1" = 5 ] && grep -q "event=redis_unsafe.*appendonly=no" "$2"' _ "$rc" "$tmp/nd.log"
redis-cli -p "$p2" config set appendonly yes >/dev/null
redis-cli -p "$p2" config set appendfsync everysec >/dev/null
timeout 10 "$AGENT" "${base[@]}" "${cl[@]}" 2>"$tmp/nd2.log"
rc=$?
check "appendfsync everysec: refused, exit 5" \
	bash -c '[ "$1" = 5 ] && grep -q "event=redis_unsafe.*appendfsync=everysec" "$2"' _ "$rc" "$tmp/nd2.log"
p3=$(free_port)
start_server replica "$p3" --save '' --appendonly yes --appendfsync always --replicaof 127.0.0.1 "$port" ||
	bad "the replica did not start"
deadline=$(($(ms) + 10000))
until rcli info replication | grep -q '^connected_slaves:1'; do
	[ "$(ms)" -ge "$deadline" ] && break
	sleep 0.1
done
timeout 10 "$AGENT" "${flags[@]}" --cluster rep --datacenter-ids 0 --worker-ids 0 2>"$tmp/rep.log"
rc=$?
check "a master with a replica (a failover could bring marks back): refused, exit 5" \
	bash -c '[ "$1" = 5 ] && grep -q "event=redis_unsafe.*connected_slaves=1" "$2"' _ "$rc" "$tmp/rep.log"
timeout 10 "$AGENT" "${base[@]}" --redis-port "$p3" --cluster rep --datacenter-ids 0 --worker-ids 0 2>"$tmp/rep2.log"
rc=$?
check "a replica: refused, exit 5" bash -c '[ "$1" = 5 ] && grep -q "event=redis_unsafe.*role=slave" "$2"' _ "$rc" "$tmp/rep2.log"
kill -KILL "${servers[-1]}"
wait "${servers[-1]}" 2>/dev/null

# --redis-allow-non-durable on a Redis with RDB snapshots: SAVE, raises,
# kill -9, restart: the snapshot's record is lower than the last raise,
# and must not be trusted (stale: quarantined as an invalid record).
kill -KILL "$nd"
wait "$nd" 2>/dev/null
rm -rf "$tmp/nd"
start_server nd "$p2" --save '' --appendonly no || bad "the RDB redis-server did not start"
nd=$last_pid
ndf=("${base[@]}" "${cl[@]}" --redis-allow-non-durable --mark-step-ms 5000 --redis-min-uptime-ms 0)
"$AGENT" "${ndf[@]}" --init-store 2>"$tmp/nd-init.log"
agent ndh "${ndf[@]}"
a=$last_pid
if wait_log "$tmp/ndh.log" "event=unfenced" 10; then
	check "--redis-allow-non-durable: served, said what it gives up (event=redis_not_durable)" \
		grep -q "event=redis_not_durable.*appendonly=no" "$tmp/ndh.log"
else
	bad "--redis-allow-non-durable: never served"
fi
redis-cli -p "$p2" save >/dev/null
saved=$(rmark rin:nd:worker:0:0 "$p2")
sleep 4
raised=$(rmark rin:nd:worker:0:0 "$p2")
# The engine says a store's condition once (ag_condition()): the recheck
# of every TTL meets it again, at debug, and no backend keeps a flag.
check "--redis-allow-non-durable: said once (warn), met again at each recheck (debug)" \
	bash -c '[ "$(grep -c "warn: event=redis_not_durable" "$1")" = 1 ] &&
		grep -q "debug: event=redis_not_durable" "$1"' _ "$tmp/ndh.log"
kill -KILL "$nd"
wait "$nd" 2>/dev/null
stop "$a"
start_server nd "$p2" --save '' --appendonly no || bad "the RDB redis-server did not restart"
nd=$last_pid
back=$(rmark rin:nd:worker:0:0 "$p2")
agent ndh2 "${ndf[@]}"
a=$last_pid
wait_log "$tmp/ndh2.log" "event=mark_invalid" 10
sleep 1
stop "$a"
check "restarted from its snapshot (mark $raised back to $back): the record is stale, never served, nothing claimed" \
	bash -c '[ -n "$1" ] && [ "$1" = "$2" ] && [[ $3 > $1 ]] && grep -q "event=mark_stale" "$4" &&
		grep -q "event=mark_invalid" "$4" && ! grep -q "event=claimed" "$4"' \
	_ "$back" "$saved" "$raised" "$tmp/ndh2.log"

echo "==== trickled and oversized replies (a proxy in between) ===="
# The contract's fault proxy (faultproxy.py): what Redis sends back goes
# by its mode: pass, trickle (one byte per 300 ms), inflate (a 300 MiB
# bulk string instead).
pp=$(free_port)
python3 "$(dirname "${BASH_SOURCE[0]}")/faultproxy.py" --upstream "127.0.0.1:$port" --listen "$pp" \
	--control "$tmp/proxy.sock" >/dev/null &
servers+=($!)
# proxy LINE...: one control command.
proxy() {
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall((" ".join(sys.argv[2:]) + "\n").encode())
s.recv(4096)' "$tmp/proxy.sock" "$@"
}
for _ in $(seq 100); do [ "$(redis-cli -p "$pp" ping 2>/dev/null)" = PONG ] && break; sleep 0.05; done
cl=(--cluster px --datacenter-ids 0 --worker-ids 0 --redis-port "$pp" --redis-timeout-ms 500)
"$AGENT" "${base[@]}" "${cl[@]}" --init-store 2>/dev/null
agent trickle "${base[@]}" "${cl[@]}"
a=$last_pid
wait_log "$tmp/trickle.log" "event=unfenced" 10 || bad "the agent behind the proxy never served"
proxy mode trickle 300
t_tr=$(ms)
wait_log "$tmp/trickle.log" "event=fenced" 20
t_f=$(ms)
check "replies trickled a byte per 300 ms: the renewal gives up and the agent fences within TTL + 1 s ($((t_f - t_tr)) ms)" \
	bash -c '[ $(($2 - $1)) -le $(($3 + 1000)) ] && grep -q "no whole reply within the deadline" "$4"' _ "$t_tr" "$t_f" "$TTL" "$tmp/trickle.log"
sleep 0.5
stop "$a"
proxy mode inflate 314572800 "$(printf '$314572800\r\n' | od -An -tx1 | tr -d ' \n')"
agent inflate "${base[@]}" "${cl[@]}"
a=$last_pid
wait_log "$tmp/inflate.log" "reply larger than 1 MiB" 20
sleep 0.5
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$a/status" 2>/dev/null)
stop "$a"
check "a 300 MiB reply: refused (reply larger than 1 MiB), the agent's peak memory ${hwm:-?} KiB < 64 MiB" \
	bash -c '[ -n "$1" ] && [ "$1" -lt 65536 ] && grep -q "reply larger than 1 MiB" "$2"' _ "$hwm" "$tmp/inflate.log"
proxy mode pass

echo "==== SIGTERM during --init-store ===="
big=(--cluster big --dry-run-bits 9/9 --redis-db 3 --log-level info)
"$AGENT" "${flags[@]}" "${big[@]}" --init-store 2>"$tmp/big-init.log" &
a=$!
sleep 1
t_t=$(ms)
stop "$a"
t_e=$(ms)
n=$(redis-cli -p "$port" -n 3 dbsize)
odd=$(redis-cli -p "$port" -n 3 --scan --pattern 'rin:big:worker:*' | head -n 300 |
	while read -r k; do redis-cli -p "$port" -n 3 hget "$k" rec; done |
	grep -cvE '^sf2 nonce=[0-9a-f]{16} beat=0 ttl=0 mark=0{20} owner=-$')
check "--init-store of 262144 pairs: SIGTERM ends it (exit $rc, $((t_e - t_t)) ms, $n keys made, the records whole: $odd odd)" \
	bash -c '[ "$1" = 1 ] && [ $(($3 - $2)) -le 1500 ] && [ "$4" -lt 262144 ] && [ "$5" = 0 ] &&
		grep -q "event=store_initialised.*interrupted=1" "$6"' _ "$rc" "$t_t" "$t_e" "$n" "$odd" "$tmp/big-init.log"

echo "==== a configuration line over 1023 bytes ===="
{ echo "ttl-ms = 3000"; printf 'owner = %02000d\n' 0; } >"$tmp/long.conf"
"$AGENT" --config "$tmp/long.conf" --print-config >/dev/null 2>"$tmp/long.err"
rc=$?
check "exit $rc: $(head -n1 "$tmp/long.err" | cut -c1-90)" \
	bash -c '[ "$1" = 2 ] && grep -q "long.conf:2: line longer than 1023 bytes" "$2"' _ "$rc" "$tmp/long.err"
finish
