#!/bin/bash
# snowflake-agent against a real redis-server on 127.0.0.1 (a random free
# port; no persistence), agents in --dry-run (no device):
#   - the configuration: file, flags, errors (exit 2)
#   - 32 agents contend for ids: all distinct (their logs and Redis' keys)
#   - kill -9 one: its id is not claimable while the lease lives, and is
#     once its TTL has run out
#   - SIGTERM: the lease is released at once (exit 0); restarted with its
#     state file, the agent claims the same id again
#   - a full pool: a clear message and exit 3
#   - Redis stopped (SIGSTOP): every agent fences before its lease could
#     expire (fence latency after the last renewal < TTL); Redis continued:
#     they all claim again, distinct
#   - Redis killed and restarted empty: every agent fences, then claims its
#     previous id again
# Then, unless AGENT_GUEST=0, the end-to-end test in a guest
# (scripts/agent-guest.sh).  Prints "agent: N passed, M failed".
set -uo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

N_AGENTS=${N_AGENTS:-32}
TTL=${AGENT_TTL_MS:-2000}
RTO=200	# redis-timeout-ms
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { # check DESCRIPTION CMD...
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}

finish() {
	echo "agent: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

for cmd in redis-server redis-cli python3; do
	command -v "$cmd" >/dev/null || { bad "$cmd is missing (scripts/deps.sh)"; finish; }
done

echo "==== building snowflake-agent ===="
if ! make -s -C "$ROOT/userspace" OUT="$BUILD/userspace" agent; then
	bad "building snowflake-agent"
	finish
fi
AGENT=$BUILD/userspace/snowflake-agent

tmp=$(mktemp -d "$BUILD/agent-test.XXXXXX")
redis_pid=
agent_pids=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local p
	for p in "${agent_pids[@]}"; do
		[ -n "$p" ] && kill -KILL "$p" 2>/dev/null
	done
	if [ -n "$redis_pid" ]; then
		kill -CONT "$redis_pid" 2>/dev/null
		kill -KILL "$redis_pid" 2>/dev/null
	fi
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rcli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }
ms() { date +%s%3N; }

start_redis() {
	local i
	redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
		--dir "$tmp" --logfile "$tmp/redis.log" --daemonize no &
	redis_pid=$!
	for i in $(seq 100); do
		[ "$(rcli ping 2>/dev/null)" = PONG ] && return 0
		sleep 0.05
	done
	return 1
}

# Common flags of the test agents.
PREFIX=sftest
flags=(--config /dev/null --redis-host 127.0.0.1 --redis-port "$port"
	--redis-timeout-ms "$RTO" --ttl-ms "$TTL" --prefix "$PREFIX" --cluster c1
	--datacenter-ids 0-1 --worker-ids 0-31 --dry-run --log-level debug)

# start_agent I: agent I in the background, log $tmp/agent.I.log.
start_agent() {
	local i=$1
	"$AGENT" "${flags[@]}" --state-file "$tmp/state.$i" 2>>"$tmp/agent.$i.log" &
	agent_pids[i]=$!
}

# The last "event=claimed" pair of agent I after byte offset OFF: "DC:W".
claimed_pair() {
	tail -c +"$((${2:-0} + 1))" "$tmp/agent.$1.log" |
		sed -n 's/.*event=claimed datacenter=\([0-9]*\) worker=\([0-9]*\).*/\1:\2/p' | tail -n1
}
owner_of() {
	sed -n 's/.*event=start owner=\([^ ]*\).*/\1/p' "$tmp/agent.$1.log" | tail -n1
}
size_of() { stat -c %s "$tmp/agent.$1.log"; }

# wait_all PATTERN SECONDS OFFSETS...: until every agent's log after its
# offset has PATTERN; prints the ones that never did.
wait_all() {
	local pat=$1 secs=$2 i deadline missing
	shift 2
	local -a off=("$@")
	deadline=$(($(ms) + secs * 1000))
	while :; do
		missing=()
		for i in "${!off[@]}"; do
			[ -n "${agent_pids[i]:-}" ] || continue
			tail -c +"$((off[i] + 1))" "$tmp/agent.$i.log" | grep -q -- "$pat" || missing+=("$i")
		done
		[ "${#missing[@]}" -eq 0 ] && return 0
		[ "$(ms)" -ge "$deadline" ] && { echo "  never '$pat': agents ${missing[*]}"; return 1; }
		sleep 0.05
	done
}

# wait_one I PATTERN SECONDS OFFSET
wait_one() {
	local deadline=$(($(ms) + $3 * 1000))
	until tail -c +"$(($4 + 1))" "$tmp/agent.$1.log" | grep -q -- "$2"; do
		[ "$(ms)" -ge "$deadline" ] && return 1
		sleep 0.05
	done
}

offsets() {
	local i
	for i in $(seq 0 $((N_AGENTS - 1))); do size_of "$i"; done
}

# All claimed pairs after the offsets are distinct and each key in Redis
# holds its agent's owner.
distinct_and_in_redis() {
	local i pair key val rc=0
	local -a off=("$@")
	declare -A seen=()
	for i in "${!off[@]}"; do
		[ -n "${agent_pids[i]:-}" ] || continue
		pair=$(claimed_pair "$i" "${off[i]}")
		if [ -z "$pair" ]; then echo "  agent $i claimed nothing"; rc=1; continue; fi
		if [ -n "${seen[$pair]:-}" ]; then
			echo "  agents ${seen[$pair]} and $i both claimed $pair"
			rc=1
		fi
		seen[$pair]=$i
		key="$PREFIX:c1:worker:${pair%:*}:${pair#*:}"
		val=$(rcli get "$key")
		if [ "$val" != "$(owner_of "$i")" ]; then
			echo "  $key holds '$val', not agent $i's owner"
			rc=1
		fi
	done
	return $rc
}

echo "==== configuration ===="
cat >"$tmp/agent.conf" <<EOF
# a comment
redis-host = 10.1.2.3
redis-port=7000
ttl-ms = 6000
worker-ids = 4-9
cluster = east
EOF
out=$("$AGENT" --config "$tmp/agent.conf" --redis-port 7001 --print-config 2>&1)
check "config file read, the command line wins" \
	grep -qx "redis-port = 7001" <<<"$out"
check "config file values" bash -c 'grep -qx "redis-host = 10.1.2.3" <<<"$1" &&
	grep -qx "ttl-ms = 6000" <<<"$1" && grep -qx "renew-ms = 2000" <<<"$1" &&
	grep -qx "margin-ms = 1200" <<<"$1" && grep -qx "worker-ids = 4-9" <<<"$1" &&
	grep -qx "cluster = east" <<<"$1"' _ "$out"
echo "bogus = 1" >>"$tmp/agent.conf"
"$AGENT" --config "$tmp/agent.conf" --print-config >/dev/null 2>"$tmp/err"
rc=$?
check "unknown key in the file: exit 2 naming file:line ($(head -c 80 "$tmp/err"))" \
	bash -c '[ "$1" -eq 2 ] && grep -q "agent.conf:7: unknown setting" "$2"' _ "$rc" "$tmp/err"
"$AGENT" --config /nonexistent/agent.conf --print-config >/dev/null 2>&1
check "a missing --config file: exit 2" test $? -eq 2
"$AGENT" --config /dev/null --ttl-ms 1000 --renew-ms 900 --print-config >/dev/null 2>"$tmp/err"
check "renew too close to the fence: exit 2" test $? -eq 2
"$AGENT" --config /dev/null --worker-ids 9-3 --print-config >/dev/null 2>&1
check "bad range: exit 2" test $? -eq 2
"$AGENT" --config /dev/null --bogus >/dev/null 2>&1
check "unknown option: exit 2" test $? -eq 2

"$AGENT" --config "$ROOT/packaging/agent.conf.example" --print-config >"$tmp/example.out" 2>&1
check "packaging/agent.conf.example is a valid configuration" \
	bash -c '[ "$1" -eq 0 ] && grep -qx "ttl-ms = 10000" "$2"' _ $? "$tmp/example.out"
# The unit itself: systemd-analyze verify of the installed unit in the
# packaging stage (scripts/packaging-test.sh).

echo "==== redis-server on 127.0.0.1:$port ===="
if ! start_redis; then
	bad "redis-server did not start"
	cat "$tmp/redis.log" 2>/dev/null
	finish
fi
ok "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') started"

echo "==== $N_AGENTS agents contend for ids (pool: 2 datacenters x 32 workers) ===="
t0=$(ms)
for i in $(seq 0 $((N_AGENTS - 1))); do
	: >"$tmp/agent.$i.log"
	start_agent "$i"
done
mapfile -t off0 < <(for i in $(seq 0 $((N_AGENTS - 1))); do echo 0; done)
if wait_all "event=claimed" 20 "${off0[@]}"; then
	ok "all $N_AGENTS agents claimed an id ($(($(ms) - t0)) ms)"
else
	bad "all $N_AGENTS agents claimed an id"
fi
check "the $N_AGENTS pairs are distinct and each key holds its agent's owner" \
	distinct_and_in_redis "${off0[@]}"
nkeys=$(rcli --scan --pattern "$PREFIX:c1:worker:*" | wc -l)
check "Redis holds exactly $N_AGENTS lease keys ($nkeys)" test "$nkeys" -eq "$N_AGENTS"
ttl_left=$(rcli pttl "$PREFIX:c1:worker:$(claimed_pair 0)" 2>/dev/null)
check "the leases have a TTL (pttl $ttl_left ms of $TTL)" \
	bash -c '[ "$1" -gt 0 ] && [ "$1" -le "$2" ]' _ "${ttl_left:-0}" "$TTL"
sleep "$(awk "BEGIN { print $TTL * 1.5 / 1000 }")"
check "renewed: every lease outlives its first TTL" distinct_and_in_redis "${off0[@]}"

echo "==== kill -9 one agent ===="
victim=0
pair=$(claimed_pair $victim)
key="$PREFIX:c1:worker:${pair%:*}:${pair#*:}"
kill -KILL "${agent_pids[victim]}"
wait "${agent_pids[victim]}" 2>/dev/null
t_kill=$(ms)
agent_pids[victim]=
check "its key $key is still held by the dead agent" test "$(rcli get "$key")" = "$(owner_of $victim)"
check "not claimable while its lease lives (SET NX refused)" \
	test -z "$(rcli set "$key" intruder NX PX "$TTL")"
left=$(rcli pttl "$key")
check "pttl $left ms left" test "${left:-0}" -gt 0
t_free=
while [ "$(($(ms) - t_kill))" -lt $((TTL * 3)) ]; do
	if [ "$(rcli set "$key" intruder NX PX "$TTL")" = OK ]; then
		t_free=$(ms)
		break
	fi
	sleep 0.02
done
if [ -n "$t_free" ]; then
	ok "claimable once the TTL ran out ($((t_free - t_kill)) ms after the kill, TTL $TTL ms)"
else
	bad "claimable once the TTL ran out"
fi
rcli del "$key" >/dev/null

echo "==== SIGTERM releases; a restart claims the same id ===="
i=1
pair=$(claimed_pair $i)
key="$PREFIX:c1:worker:${pair%:*}:${pair#*:}"
kill -TERM "${agent_pids[i]}"
wait "${agent_pids[i]}"
rc=$?
agent_pids[i]=
check "SIGTERM: exit 0" test "$rc" -eq 0
check "SIGTERM: the key is gone at once" test "$(rcli exists "$key")" = 0
check "SIGTERM: fenced before the release" \
	bash -c 'grep -o "event=fenced.*reason=agent-stopped\|event=released" "$1" | tail -n2 | head -n1 | grep -q fenced' _ "$tmp/agent.$i.log"
check "the state file remembers $pair" grep -qx "datacenter=${pair%:*} worker=${pair#*:}" "$tmp/state.$i"
off1=$(size_of $i)
start_agent $i
if wait_one $i "event=claimed" 10 "$off1"; then
	check "restarted: claims $pair again (preferred)" test "$(claimed_pair $i "$off1")" = "$pair"
else
	bad "restarted agent claims again"
fi

echo "==== a full pool ===="
for w in 0 1 2; do rcli set "$PREFIX:full:worker:0:$w" someone-else PX 60000 >/dev/null; done
"$AGENT" "${flags[@]}" --cluster full --datacenter-ids 0 --worker-ids 0-2 --state-file '' \
	2>"$tmp/full.log"
rc=$?
check "exit 3 when every id is held" test "$rc" -eq 3
check "the message says so ($(grep -o 'event=pool_full.*' "$tmp/full.log" | head -c 120))" \
	grep -q "event=pool_full datacenters=0-0 workers=0-2 pairs=3 .*every id is held by another owner" "$tmp/full.log"

echo "==== redis-db and redis-password ===="
"$AGENT" "${flags[@]}" --cluster dbtest --redis-db 5 --datacenter-ids 0 --worker-ids 7 \
	--state-file '' 2>"$tmp/db.log" &
dbpid=$!
agent_pids[90]=$dbpid
for _ in $(seq 100); do grep -q "event=claimed" "$tmp/db.log" && break; sleep 0.05; done
check "--redis-db 5: the lease key is in database 5" \
	test "$(rcli -n 5 exists "$PREFIX:dbtest:worker:0:7")" = 1
check "--redis-db 5: and not in database 0" test "$(rcli exists "$PREFIX:dbtest:worker:0:7")" = 0
kill -TERM "$dbpid"
wait "$dbpid"
check "--redis-db 5: released on SIGTERM (exit $?)" test "$(rcli -n 5 exists "$PREFIX:dbtest:worker:0:7")" = 0
agent_pids[90]=
"$AGENT" "${flags[@]}" --cluster pwtest --redis-password wrong --state-file '' \
	--metrics-file "$tmp/pw.prom" 2>"$tmp/pw.log" &
pwpid=$!
agent_pids[91]=$pwpid
for _ in $(seq 100); do grep -q "event=redis_down" "$tmp/pw.log" && break; sleep 0.05; done
sleep 0.5
kill -TERM "$pwpid"
wait "$pwpid"
agent_pids[91]=
check "--redis-password against a Redis without one: AUTH fails, logged ($(grep -o 'event=redis_down.*' "$tmp/pw.log" | head -n1 | head -c 100))" \
	grep -q 'event=redis_down.*AUTH' "$tmp/pw.log"
check "--redis-password: nothing claimed" test "$(rcli --scan --pattern "$PREFIX:pwtest:*" | wc -l)" = 0
# metric NAME FILE: the value of a metric without labels in an exposition.
metric() { sed -n "s/^$1 //p" "$2"; }
check "--metrics-file: the failed AUTHs are store errors ($(metric snowflake_agent_store_errors_total "$tmp/pw.prom")), no lease" \
	test "$(metric snowflake_agent_store_errors_total "$tmp/pw.prom")" -ge 1 -a \
	"$(metric snowflake_agent_lease_held "$tmp/pw.prom")" = 0

echo "==== --metrics-file ===="
"$AGENT" "${flags[@]}" --cluster mtest --datacenter-ids 1 --worker-ids 9 --state-file '' \
	--metrics-file "$tmp/agent.prom" 2>"$tmp/m.log" &
mpid=$!
agent_pids[92]=$mpid
for _ in $(seq 200); do grep -q "event=renewed" "$tmp/m.log" && break; sleep 0.05; done
sleep 0.2
cp "$tmp/agent.prom" "$tmp/held.prom" 2>/dev/null
kill -TERM "$mpid"
wait "$mpid"
agent_pids[92]=
if ! command -v promtool >/dev/null; then
	bad "promtool is missing (Debian's prometheus; scripts/deps.sh)"
else
	for f in held.prom agent.prom pw.prom; do
		check "promtool check metrics: the agent's $f is clean" \
			sh -c "promtool check metrics <'$tmp/$f' && test -s '$tmp/$f'"
	done
fi
check "--metrics-file while held: lease_held 1, one claim, renewals ($(metric snowflake_agent_renewals_total "$tmp/held.prom")), time left" \
	test "$(metric snowflake_agent_lease_held "$tmp/held.prom")" = 1 -a \
	"$(metric snowflake_agent_claims_total "$tmp/held.prom")" = 1 -a \
	"$(metric snowflake_agent_renewals_total "$tmp/held.prom")" -ge 1 -a \
	"$(metric snowflake_agent_renewal_latency_seconds_count "$tmp/held.prom")" -ge 1 -a \
	"$(metric snowflake_agent_lease_remaining_seconds "$tmp/held.prom" | tr -d .)" -gt 0
check "--metrics-file: the pair as labels" \
	grep -qx 'snowflake_agent_info{cluster="mtest",datacenter_id="1",worker_id="9"} 1' "$tmp/held.prom"
check "--metrics-file after SIGTERM: no lease, fenced, counted" \
	test "$(metric snowflake_agent_lease_held "$tmp/agent.prom")" = 0 -a \
	"$(metric snowflake_agent_fenced "$tmp/agent.prom")" = 1 -a \
	"$(metric snowflake_agent_fences_total "$tmp/agent.prom")" -ge 1

# fence_latencies OFFSETS...: the largest since_renew_ms of the fences after
# the offsets; fails when one is not below the TTL.
max_latency=0
fence_latencies() {
	local i v rc=0
	local -a off=("$@")
	for i in "${!off[@]}"; do
		[ -n "${agent_pids[i]:-}" ] || continue
		v=$(tail -c +"$((off[i] + 1))" "$tmp/agent.$i.log" |
			sed -n 's/.*event=fence_latency .*since_renew_ms=\([0-9]*\).*/\1/p' | head -n1)
		if [ -z "$v" ]; then echo "  agent $i: no fence_latency"; rc=1; continue; fi
		[ "$v" -gt "$max_latency" ] && max_latency=$v
		if [ "$v" -ge "$TTL" ]; then
			echo "  agent $i fenced $v ms after its last renewal: not before the TTL ($TTL)"
			rc=1
		fi
	done
	return $rc
}

echo "==== Redis stopped (SIGSTOP) ===="
mapfile -t off < <(offsets)
kill -STOP "$redis_pid"
t_stop=$(ms)
if wait_all "event=fenced" $((TTL * 3 / 1000 + 2)) "${off[@]}"; then
	ok "every agent fenced ($(($(ms) - t_stop)) ms after SIGSTOP)"
else
	bad "every agent fenced"
fi
max_latency=0
check "every fence came before the lease could expire" fence_latencies "${off[@]}"
echo "  worst fence latency after the last renewal: $max_latency ms (TTL $TTL, margin $((TTL / 5)))"
fig_stop=$max_latency
mapfile -t off < <(offsets)
kill -CONT "$redis_pid"
t_cont=$(ms)
if wait_all "event=unfenced" 15 "${off[@]}"; then
	ok "SIGCONT: every agent claimed again and unfenced ($(($(ms) - t_cont)) ms)"
else
	bad "SIGCONT: every agent claimed again"
fi
check "SIGCONT: the pairs are distinct, the keys hold their owners" distinct_and_in_redis "${off[@]}"

echo "==== Redis killed, restarted empty ===="
declare -A before=()
for i in "${!agent_pids[@]}"; do
	[ -n "${agent_pids[i]:-}" ] && before[$i]=$(claimed_pair "$i")
done
mapfile -t off < <(offsets)
kill -KILL "$redis_pid"
wait "$redis_pid" 2>/dev/null
t_kill=$(ms)
if wait_all "event=fenced" $((TTL * 3 / 1000 + 2)) "${off[@]}"; then
	ok "every agent fenced ($(($(ms) - t_kill)) ms after the kill)"
else
	bad "every agent fenced after the kill"
fi
max_latency=0
check "every fence came before the lease could expire" fence_latencies "${off[@]}"
fig_kill=$max_latency
echo "  worst fence latency after the last renewal: $max_latency ms"
# Stopping with Redis dead: no lease to release, still a clean exit.
i=2
t_term=$(ms)
kill -TERM "${agent_pids[i]}"
wait "${agent_pids[i]}"
rc=$?
agent_pids[i]=
unset "before[$i]"
check "SIGTERM while Redis is dead: exit $rc in $(($(ms) - t_term)) ms" test "$rc" -eq 0
mapfile -t off < <(offsets)
if ! start_redis; then
	bad "redis-server did not restart"
	finish
fi
t_up=$(ms)
if wait_all "event=unfenced" 15 "${off[@]}"; then
	ok "restarted Redis: every agent claimed again ($(($(ms) - t_up)) ms)"
else
	bad "restarted Redis: every agent claimed again"
fi
total=0
for i in "${!agent_pids[@]}"; do [ -n "${agent_pids[i]:-}" ] && total=$((total + 1)); done
check "restarted Redis: distinct pairs, keys hold their owners" distinct_and_in_redis "${off[@]}"
young=0
for i in "${!off[@]}"; do
	[ -n "${agent_pids[i]:-}" ] || continue
	tail -c +"$((off[i] + 1))" "$tmp/agent.$i.log" | grep -q "event=redis_young" && young=$((young + 1))
done
check "restarted Redis: no agent claimed before Redis was up for one TTL (redis_young: $young of $total)" \
	test "$young" -eq "$total"
same=0 total=0
for i in "${!before[@]}"; do
	total=$((total + 1))
	[ "$(claimed_pair "$i" "${off[i]}")" = "${before[$i]}" ] && same=$((same + 1))
done
check "every agent claimed its previous pair again ($same of $total)" test "$same" -eq "$total"

echo "==== stopping every agent ===="
rcs=0
for i in "${!agent_pids[@]}"; do
	[ -n "${agent_pids[i]:-}" ] || continue
	kill -TERM "${agent_pids[i]}"
done
for i in "${!agent_pids[@]}"; do
	[ -n "${agent_pids[i]:-}" ] || continue
	wait "${agent_pids[i]}" || rcs=$((rcs + 1))
	agent_pids[i]=
done
check "every agent exited 0 on SIGTERM" test "$rcs" -eq 0
nkeys=$(rcli --scan --pattern "$PREFIX:c1:worker:*" | wc -l)
check "no lease key is left ($nkeys)" test "$nkeys" -eq 0

echo "figures: $N_AGENTS agents, TTL $TTL ms; worst fence latency after the last renewal: SIGSTOP $fig_stop ms, kill $fig_kill ms"

if [ "${AGENT_GUEST:-1}" != 0 ]; then
	echo "==== end to end in a guest (scripts/agent-guest.sh) ===="
	guest_out=$(bash "$ROOT/scripts/agent-guest.sh" 2>&1)
	grc=$?
	while IFS= read -r line; do
		case $line in
		"ok   "*) ok "guest: ${line#ok   }" ;;
		"FAIL "*) bad "guest: ${line#FAIL }" ;;
		agent-guest:*) ;;
		*) echo "$line" ;;
		esac
	done <<<"$guest_out"
	if ! grep -q '^agent-guest: [0-9]* passed' <<<"$guest_out"; then
		bad "guest: scripts/agent-guest.sh gave no result (exit $grc)"
	fi
fi
finish
