#!/bin/bash
# snowflake-agent against a real redis-server on 127.0.0.1 (a random free
# port; appendonly yes, appendfsync always) and a real etcd, agents in
# --dry-run (no device): what is particular to these two stores and to the
# agent's configuration; the scenarios every store shares are the contract
# suite's (tests/contract/contract.py; MIGRATION.md lists where each check
# of the old scripts/agent-test.sh lives now).
#   - the configuration: file, flags, errors (exit 2)
#   - 32 agents contend for ids: all distinct (their logs and Redis' records)
#   - SIGTERM: the lease is released at once (exit 0); restarted with its
#     state file, the agent claims the same id again
#   - a full pool: a clear message, and the agent keeps trying (backoff)
#     until a pair is free
#   - SIGHUP and SIGQUIT stop it like SIGTERM: fenced, released, exit 0
#   - two agents with the same --owner and the same state file (a cloned
#     image) hold distinct pairs: the owner is a label, each run draws its own
#   - a Redis that may evict leases (maxmemory-policy) is refused: exit 5; a
#     wrong or missing password: exit 4; --redis-db
#   - name resolution is bounded by redis-timeout-ms (a DNS server that
#     never answers, in a private network and mount namespace)
#   - --metrics-file
#   - etcd (one member): claim past a dead first endpoint, renew, the record given back on
#     SIGTERM, taken over after kill -9 (seen unchanged for TTL + margin),
#     authentication (exit 4 when refused);
#     over TLS with a CA made here (an unknown CA is refused)
#   - prefer = hostname, machine-id: two agents of one host derive one
#     pair: the first gets it, the second takes another; prefer = ip in
#     network namespaces of its own: with 10.0.0.5 the pair derived from
#     it, with no IPv4 but loopback none (event=prefer_unavailable)
#   - every agent's history, judged by tests/lease/check.py: no two owners
#     ever held one pair at once
# What Redis holds or says is input: tests/contract/adapter-redis-input.sh,
# run by tests/contract/run.sh too.  The helpers: tests/contract/lib.sh.
# Run by tests/contract/run.sh.  Prints "agent: N passed, M failed".
set -uo pipefail
NAME=agent
# shellcheck source=tests/contract/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

N_AGENTS=${N_AGENTS:-32}
TTL=${AGENT_TTL_MS:-2000}
RTO=500	# redis-timeout-ms: a whole call, and each write waits for an fsync (appendfsync always) on a loaded disk

need_cmds "" redis-server redis-cli python3 unshare ip etcd etcdctl openssl

echo "==== building snowflake-agent ===="
build_agent

make_tmp agent-test
redis_pid=
redis2_pid=
etcd_pid=
# shellcheck disable=SC2317 # called by the EXIT trap (tests/contract/lib.sh)
cleanup_pids() { echo "$redis_pid $redis2_pid $etcd_pid"; }

port=$(free_port)
rcli() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }
# A pair is one record (docs/lease-record.md; Redis: a hash, its text in
# the field rec; etcd: the key's value), "sf2 ... owner=O", O "-" when free.
# rowner KEY [REDIS-CLI-ARGS...]: its holder, nothing when free or absent.
rowner() {
	local k=$1
	shift
	rcli "$@" hget "$k" rec | sed -n 's/^sf2 .* owner=\(.*\)$/\1/p' | grep -vx -- -
}
# rset KEY OWNER TTL: an operator's record at KEY (mark 0) at a new version
# from the store's counter (OWNER "-" and TTL 0: free).
rset() {
	rcli EVAL "local v = redis.call('INCR', KEYS[2]) redis.call('HSET', KEYS[1], 'ver', string.format('%d', v), 'rec', ARGV[1]) return v" \
		2 "$1" "${1%%:worker:*}:rev" "sf2 nonce=0000000000000001 beat=0 ttl=$3 mark=00000000000000000000 owner=$2" >/dev/null
}

start_redis() {
	local i
	redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly yes --appendfsync always \
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
# Every agent appends to one history, judged at the end.
HIST=$tmp/history
flags=(--config /dev/null --redis-host 127.0.0.1 --redis-port "$port"
	--redis-timeout-ms "$RTO" --ttl-ms "$TTL" --prefix "$PREFIX" --cluster c1
	--datacenter-ids 0-1 --worker-ids 0-31 --dry-run --log-level debug --history "$HIST")

# init_space FLAGS...: snowflake-agent --init-store with the agents' flags
# (the pool's marks created at 0: a new key space).
init_space() {
	"$AGENT" "${flags[@]}" "$@" --init-store 2>>"$tmp/init.log" ||
		bad "--init-store $* failed: $(tail -n1 "$tmp/init.log")"
}

# start_agent I: agent I in the background, log $tmp/agent.I.log.  Odd
# agents keep a state file; even ones have none (the last pair held is
# still preferred, in memory).
start_agent() {
	local i=$1 state=
	[ $((i % 2)) -eq 1 ] && state=$tmp/state.$i
	"$AGENT" "${flags[@]}" --state-file "$state" 2>>"$tmp/agent.$i.log" &
	agent_pids[i]=$!
}


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
			grep -q -- "$pat" <(tail -c +"$((off[i] + 1))" "$tmp/agent.$i.log") || missing+=("$i")
		done
		[ "${#missing[@]}" -eq 0 ] && return 0
		[ "$(ms)" -ge "$deadline" ] && { echo "  never '$pat': agents ${missing[*]}"; return 1; }
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
		val=$(rowner "$key")
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
# packaging stage (tests/packaging/run.sh).

echo "==== redis-server on 127.0.0.1:$port ===="
if ! start_redis; then
	bad "redis-server did not start"
	cat "$tmp/redis.log" 2>/dev/null
	finish
fi
ok "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') started"

echo "==== $N_AGENTS agents contend for ids (pool: 2 datacenters x 32 workers) ===="
init_space
check "--init-store: the 64 records of the pool ($(grep -o 'created=[0-9]*' "$tmp/init.log" | tail -n1))" \
	test "$(rcli --scan --pattern "$PREFIX:c1:worker:*" | wc -l)" = 64
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
check "the $N_AGENTS pairs are distinct and each record holds its agent's owner" \
	distinct_and_in_redis "${off0[@]}"
nkeys=$(for k in $(rcli --scan --pattern "$PREFIX:c1:worker:*"); do rowner "$k"; done | grep -c .)
check "Redis holds exactly $N_AGENTS held records ($nkeys)" test "$nkeys" -eq "$N_AGENTS"
ttl_left=$(rcli pttl "$PREFIX:c1:worker:$(claimed_pair 0)" 2>/dev/null)
check "the records have no TTL of Redis' (pttl $ttl_left), the holder's ttl in the record" \
	bash -c '[ "$1" = -1 ] && redis-cli -h 127.0.0.1 -p "$2" hget "$3" rec | grep -q " ttl=$4 "' _ \
	"${ttl_left:-0}" "$port" "$PREFIX:c1:worker:$(claimed_pair 0)" "$TTL"
sleep "$(awk "BEGIN { print $TTL * 1.5 / 1000 }")"
check "renewed: every lease outlives its first TTL" distinct_and_in_redis "${off0[@]}"

echo "==== SIGTERM releases; a restart claims the same id ===="
i=1
pair=$(claimed_pair $i)
key="$PREFIX:c1:worker:${pair%:*}:${pair#*:}"
kill -TERM "${agent_pids[i]}"
wait "${agent_pids[i]}"
rc=$?
agent_pids[i]=
check "SIGTERM: exit 0" test "$rc" -eq 0
check "SIGTERM: the record is free at once" test -z "$(rowner "$key")"
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

echo "==== SIGHUP and SIGQUIT stop it like SIGTERM ===="
for sig in HUP QUIT; do
	i=$([ "$sig" = HUP ] && echo 3 || echo 5)
	pair=$(claimed_pair $i)
	key="$PREFIX:c1:worker:${pair%:*}:${pair#*:}"
	kill -"$sig" "${agent_pids[i]}"
	wait "${agent_pids[i]}"
	rc=$?
	agent_pids[i]=
	check "SIG$sig: exit 0 (not killed by the signal: $rc)" test "$rc" -eq 0
	check "SIG$sig: the record $key is free at once" test -z "$(rowner "$key")"
	check "SIG$sig: fenced before the release" \
		bash -c 'grep -o "event=fenced.*reason=agent-stopped\|event=released" "$1" | tail -n2 | head -n1 | grep -q fenced' _ "$tmp/agent.$i.log"
done

echo "==== a full pool: the agent keeps trying ===="
init_space --cluster full --datacenter-ids 0 --worker-ids 0-2
for w in 0 1 2; do rset "$PREFIX:full:worker:0:$w" someone-else 60000; done
"$AGENT" "${flags[@]}" --cluster full --datacenter-ids 0 --worker-ids 0-2 --state-file '' \
	2>"$tmp/agent.92.log" &
agent_pids[92]=$!
for _ in $(seq 100); do grep -q "event=pool_full" "$tmp/agent.92.log" && break; sleep 0.05; done
check "the message says so ($(grep -o 'event=pool_full.*' "$tmp/agent.92.log" | head -n1 | head -c 120))" \
	grep -q "event=pool_full datacenters=0-0 workers=0-2 pairs=3 .*every id is held by another owner" "$tmp/agent.92.log"
sleep "$(awk "BEGIN { print $TTL * 1.5 / 1000 }")"
check "still running after $((TTL * 3 / 2)) ms of a full pool (no exit 3)" kill -0 "${agent_pids[92]}"
tries=$(grep -c "event=pool_full" "$tmp/agent.92.log")
check "tried again with a backoff ($tries tries in $((TTL * 3 / 2)) ms)" \
	bash -c '[ "$1" -ge 2 ] && [ "$1" -le 10 ]' _ "$tries"
rset "$PREFIX:full:worker:0:1" - 0
if wait_one 92 "event=claimed datacenter=0 worker=1" 10 0; then
	ok "a pair freed: claimed (0:1)"
else
	bad "a pair freed: never claimed"
fi
kill -TERM "${agent_pids[92]}"
wait "${agent_pids[92]}"
check "full-pool agent: exit 0 on SIGTERM" test $? -eq 0
agent_pids[92]=
rset "$PREFIX:full:worker:0:0" - 0
rset "$PREFIX:full:worker:0:2" - 0

echo "==== redis-db ===="
init_space --cluster dbtest --redis-db 5 --datacenter-ids 0 --worker-ids 7
"$AGENT" "${flags[@]}" --cluster dbtest --redis-db 5 --datacenter-ids 0 --worker-ids 7 \
	--state-file '' 2>"$tmp/db.log" &
dbpid=$!
agent_pids[90]=$dbpid
for _ in $(seq 100); do grep -q "event=claimed" "$tmp/db.log" && break; sleep 0.05; done
check "--redis-db 5: the record held in database 5" \
	test -n "$(rowner "$PREFIX:dbtest:worker:0:7" -n 5)"
check "--redis-db 5: and not in database 0" test "$(rcli exists "$PREFIX:dbtest:worker:0:7")" = 0
kill -TERM "$dbpid"
wait "$dbpid"
check "--redis-db 5: released on SIGTERM (exit $?)" test -z "$(rowner "$PREFIX:dbtest:worker:0:7" -n 5)"
agent_pids[90]=


echo "==== passwords ===="
rc=$(run_bounded 5 "$tmp/pw.log" "$AGENT" "${flags[@]}" --cluster pwtest --redis-password wrong --state-file '')
check "--redis-password against a Redis without one: exit 4, not retried ($rc: $(grep -o 'event=redis_auth_failed.*' "$tmp/pw.log" | head -n1 | head -c 110))" \
	bash -c '[ "$1" = 4 ] && grep -q "event=redis_auth_failed.*AUTH" "$2"' _ "$rc" "$tmp/pw.log"
check "--redis-password: nothing claimed" test "$(rcli --scan --pattern "$PREFIX:pwtest:*" | wc -l)" = 0
check "--redis-password on the command line: a warning that every local user can read it" \
	grep -q 'event=secret_on_command_line option=--redis-password ' "$tmp/pw.log"
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/r2"
redis-server --bind 127.0.0.1 --port "$port2" --save '' --appendonly yes --appendfsync always --dir "$tmp/r2" \
	--requirepass s3cret --maxmemory 64mb --maxmemory-policy volatile-lru \
	--logfile "$tmp/redis2.log" --daemonize no &
redis2_pid=$!
for _ in $(seq 100); do
	[ "$(redis-cli -h 127.0.0.1 -p "$port2" -a s3cret --no-auth-warning ping 2>/dev/null)" = PONG ] && break
	sleep 0.05
done
r2() { redis-cli -h 127.0.0.1 -p "$port2" -a s3cret --no-auth-warning "$@"; }
flags2=("${flags[@]}" --redis-port "$port2" --cluster r2 --state-file '')
rc=$(run_bounded 5 "$tmp/pw2.log" "$AGENT" "${flags2[@]}" --redis-password wrong)
check "a wrong password: exit 4 ($rc: $(grep -o 'event=redis_auth_failed.*' "$tmp/pw2.log" | head -n1 | head -c 100))" \
	bash -c '[ "$1" = 4 ] && grep -q "event=redis_auth_failed" "$2"' _ "$rc" "$tmp/pw2.log"
rc=$(run_bounded 5 "$tmp/pw3.log" "$AGENT" "${flags2[@]}")
check "no password where one is needed: exit 4 ($rc: $(grep -o 'event=redis_auth_failed.*' "$tmp/pw3.log" | head -n1 | head -c 100))" \
	bash -c '[ "$1" = 4 ] && grep -q "event=redis_auth_failed.*NOAUTH" "$2"' _ "$rc" "$tmp/pw3.log"

echo "==== a Redis that may evict leases ===="
rc=$(run_bounded 5 "$tmp/evict.log" "$AGENT" "${flags2[@]}" --redis-password s3cret)
check "maxmemory-policy volatile-lru: refused, exit 5 ($rc: $(grep -o 'event=redis_unsafe.*' "$tmp/evict.log" | head -n1 | head -c 120))" \
	bash -c '[ "$1" = 5 ] && grep -q "event=redis_unsafe.*maxmemory-policy is volatile-lru, not noeviction" "$2"' _ "$rc" "$tmp/evict.log"
check "maxmemory-policy volatile-lru: nothing claimed" test "$(r2 --scan --pattern "$PREFIX:r2:*" | wc -l)" = 0
r2 config set maxmemory-policy noeviction >/dev/null
"$AGENT" "${flags2[@]}" --redis-password s3cret --init-store 2>>"$tmp/init.log" || bad "--init-store on r2"
"$AGENT" "${flags2[@]}" --redis-password s3cret --redis-min-uptime-ms 0 2>"$tmp/pw4.log" &
agent_pids[94]=$!
for _ in $(seq 100); do grep -q "event=claimed" "$tmp/pw4.log" && break; sleep 0.05; done
check "the right password and noeviction: claimed" grep -q "event=claimed" "$tmp/pw4.log"
kill -TERM "${agent_pids[94]}"
wait "${agent_pids[94]}"
check "and released on SIGTERM (exit $?)" \
	test "$(for k in $(r2 --scan --pattern "$PREFIX:r2:worker:*"); do r2 hget "$k" rec; done | grep -vc " owner=-$")" = 0
agent_pids[94]=
r2 config set maxmemory-policy allkeys-lru >/dev/null
rc=$(run_bounded 5 "$tmp/evict2.log" "$AGENT" "${flags2[@]}" --redis-password s3cret)
check "maxmemory-policy allkeys-lru: refused too, exit 5 ($rc)" test "$rc" = 5
kill -KILL "$redis2_pid"
wait "$redis2_pid" 2>/dev/null
redis2_pid=

echo "==== two agents with the same --owner and state file (a cloned image) ===="
init_space --cluster clone --datacenter-ids 0 --worker-ids 0-1
for i in 95 96; do
	echo "datacenter=0 worker=0" >"$tmp/state.clone.$i"
	: >"$tmp/agent.$i.log"
	"$AGENT" "${flags[@]}" --cluster clone --datacenter-ids 0 --worker-ids 0-1 --owner cloned \
		--state-file "$tmp/state.clone.$i" 2>>"$tmp/agent.$i.log" &
	agent_pids[i]=$!
	wait_one "$i" "event=claimed" 10 0 || bad "agent $i never claimed"
done
p95=$(claimed_pair 95) p96=$(claimed_pair 96)
check "same --owner: distinct pairs ($p95, $p96)" test "$p95" != "$p96"
o95=$(owner_of 95) o96=$(owner_of 96)
check "same --owner: each run has its own owner ($o95, $o96)" \
	bash -c '[ "$1" != "$2" ] && [[ $1 == cloned:* ]] && [[ $2 == cloned:* ]]' _ "$o95" "$o96"
sleep "$(awk "BEGIN { print $TTL * 1.5 / 1000 }")"
check "same --owner: the records hold each its own owner after renewals" bash -c '
	[ "$(redis-cli -p "$1" hget "$2:clone:worker:${3%:*}:${3#*:}" rec | sed -n "s/.* owner=//p")" = "$4" ] &&
	[ "$(redis-cli -p "$1" hget "$2:clone:worker:${5%:*}:${5#*:}" rec | sed -n "s/.* owner=//p")" = "$6" ]' \
	_ "$port" "$PREFIX" "$p95" "$o95" "$p96" "$o96"
for i in 95 96; do kill -TERM "${agent_pids[i]}"; wait "${agent_pids[i]}"; agent_pids[i]=; done

echo "==== name resolution is bounded ===="
# A private network and mount namespace: a DNS server on 127.0.0.1:53 that
# never answers, and a resolv.conf naming it (glibc alone would wait 5 s x
# 2 attempts per query).  The agent must give up within redis-timeout-ms.
cat >"$tmp/resolv.conf" <<EOF2
nameserver 127.0.0.1
options timeout:5 attempts:2
EOF2
# shellcheck disable=SC2016 # expanded by the inner bash
unshare -mn bash -c '
	ip link set lo up
	mount --bind "$1/resolv.conf" /etc/resolv.conf
	python3 -c "import socket,time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((\"127.0.0.1\", 53)); open(\"$1/dns.ready\", \"w\").close(); time.sleep(30)" &
	dns=$!
	for _ in $(seq 100); do [ -e "$1/dns.ready" ] && break; sleep 0.05; done
	"$2" --config /dev/null --redis-host no-such-host.invalid --redis-timeout-ms 300 --dry-run \
		--state-file "" --log-level debug 2>"$1/dns.log" &
	agent=$!
	sleep 2
	kill -TERM $agent
	t=$(date +%s%3N)
	wait $agent
	echo "rc=$? stop_ms=$(($(date +%s%3N) - t))" >"$1/dns.rc"
	kill $dns
	wait $dns 2>/dev/null
' _ "$tmp" "$AGENT"
check "a DNS server that never answers: the lookup gave up in time ($(grep -o 'error=.*' "$tmp/dns.log" | head -n1 | head -c 100))" \
	grep -q 'event=redis_down.*resolving no-such-host.invalid took longer than 300 ms' "$tmp/dns.log"
check "and SIGTERM still stops it promptly ($(cat "$tmp/dns.rc" 2>/dev/null))" \
	bash -c 'grep -q "rc=0 " "$1" && [ "$(sed -n "s/.*stop_ms=//p" "$1")" -lt 1500 ]' _ "$tmp/dns.rc"

# metric NAME FILE: the value of a metric without labels in an exposition.
metric() { sed -n "s/^$1 //p" "$2"; }
echo "==== --metrics-file ===="
init_space --cluster mtest --datacenter-ids 1 --worker-ids 9
"$AGENT" "${flags[@]}" --cluster mtest --datacenter-ids 1 --worker-ids 9 --state-file '' \
	--metrics-file "$tmp/agent.prom" 2>"$tmp/m.log" &
mpid=$!
agent_pids[92]=$mpid
# Serving (after settle-ms) and renewed since: a lease held and given to the device.
for _ in $(seq 400); do
	grep -q "event=renewed" <(sed -n '/event=unfenced/,$p' "$tmp/m.log") && break
	sleep 0.05
done
sleep 0.2
cp "$tmp/agent.prom" "$tmp/held.prom" 2>/dev/null
kill -TERM "$mpid"
wait "$mpid"
agent_pids[92]=
if ! command -v promtool >/dev/null; then
	bad "promtool is missing (Debian's prometheus; scripts/deps.sh)"
else
	for f in held.prom agent.prom; do
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
check "--metrics-file: the mark raised ($(metric snowflake_agent_mark_raises_total "$tmp/held.prom") raises, mark $(metric snowflake_agent_mark_timestamp_seconds "$tmp/held.prom") s)" \
	test "$(metric snowflake_agent_mark_raises_total "$tmp/held.prom")" -ge 1 -a \
	"$(metric snowflake_agent_mark_timestamp_seconds "$tmp/held.prom" | cut -d. -f1)" -gt 1000000000
check "--metrics-file: the pair as labels" \
	grep -qx 'snowflake_agent_info{cluster="mtest",datacenter_id="1",worker_id="9"} 1' "$tmp/held.prom"
check "--metrics-file after SIGTERM: no lease, fenced, counted" \
	test "$(metric snowflake_agent_lease_held "$tmp/agent.prom")" = 0 -a \
	"$(metric snowflake_agent_fenced "$tmp/agent.prom")" = 1 -a \
	"$(metric snowflake_agent_fences_total "$tmp/agent.prom")" -ge 1

echo "==== etcd: one member (the fault-injection proof with three is the lease stage) ===="
ecport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
epport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
deadport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
etcd --name t0 --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$ecport" \
	--advertise-client-urls "http://127.0.0.1:$ecport" --listen-peer-urls "http://127.0.0.1:$epport" \
	--initial-advertise-peer-urls "http://127.0.0.1:$epport" \
	--initial-cluster "t0=http://127.0.0.1:$epport" >"$tmp/etcd.log" 2>&1 &
etcd_pid=$!
ectl() { ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$ecport" "$@"; }
# eowner KEY: the holder of an etcd record, nothing when free or absent.
eowner() { ectl get --print-value-only "$1" | sed -n 's/^sf2 .* owner=\(.*\)$/\1/p' | grep -vx -- -; }
for _ in $(seq 100); do ectl endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
check "etcd $(etcd --version | sed -n 's/^etcd Version: //p') started" ectl endpoint health
eflags=("${flags[@]}" --backend etcd --etcd-timeout-ms 300 --cluster etcd --datacenter-ids 0
	--worker-ids 0-1 --state-file '' --etcd-endpoints "http://127.0.0.1:$deadport,http://127.0.0.1:$ecport")
"$AGENT" "${eflags[@]}" --init-store 2>>"$tmp/init.log" || bad "--init-store on etcd"
check "etcd: --init-store made the records" test "$(ectl get --prefix --keys-only "$PREFIX:etcd:worker:" | grep -c .)" = 2
: >"$tmp/agent.80.log"
"$AGENT" "${eflags[@]}" 2>>"$tmp/agent.80.log" &
agent_pids[80]=$!
if wait_one 80 "event=unfenced" 15 0; then
	ok "etcd: claimed and served, past a dead first endpoint ($(claimed_pair 80))"
else
	bad "etcd: never served"
fi
p80=$(claimed_pair 80)
ekey="$PREFIX:etcd:worker:${p80%:*}:${p80#*:}"
check "etcd: the record $ekey holds the agent's owner" test "$(eowner "$ekey")" = "$(owner_of 80)"
check "etcd: the record is bound to no lease" bash -c '! ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$1" get "$2" -w json | grep -q "\"lease\":[1-9]"' _ "$ecport" "$ekey"
sleep "$(awk "BEGIN { print $TTL * 1.5 / 1000 }")"
check "etcd: renewed, the record still the agent's past its TTL" test "$(eowner "$ekey")" = "$(owner_of 80)"
kill -TERM "${agent_pids[80]}"
wait "${agent_pids[80]}"
rc=$?
agent_pids[80]=
check "etcd: SIGTERM: exit 0, the record given back (free at once) ($rc)" \
	bash -c '[ "$1" = 0 ] && [ -z "$2" ]' _ "$rc" "$(eowner "$ekey")"
"$AGENT" "${eflags[@]}" 2>"$tmp/agent.81.log" &
agent_pids[81]=$!
wait_one 81 "event=claimed" 10 0 || bad "etcd: agent 81 never claimed"
p81=$(claimed_pair 81)
ekey="$PREFIX:etcd:worker:${p81%:*}:${p81#*:}"
kill -KILL "${agent_pids[81]}"
wait "${agent_pids[81]}" 2>/dev/null
agent_pids[81]=
t_kill=$(ms)
sleep "$(awk "BEGIN { print $TTL * 2 / 1000 }")"
check "etcd: kill -9: the record stays the killed agent's (no store lease ends it)" test -n "$(eowner "$ekey")"
: >"$tmp/agent.85.log"
"$AGENT" "${eflags[@]}" --datacenter-ids "${p81%:*}" --worker-ids "${p81#*:}" 2>>"$tmp/agent.85.log" &
agent_pids[85]=$!
t_start=$(ms)
if wait_one 85 "event=claimed" $((TTL * 4 / 1000)) 0; then
	check "etcd: kill -9: another agent takes the pair over once it saw the record unchanged for TTL + margin ($(($(ms) - t_start)) ms, TTL $TTL)" \
		bash -c 'grep -q "event=record_expired" "$1" && [ "$2" -ge "$3" ]' _ "$tmp/agent.85.log" "$(($(ms) - t_start))" "$TTL"
else
	bad "etcd: kill -9: nobody took the pair over within 4 TTL"
fi
kill -TERM "${agent_pids[85]}"
wait "${agent_pids[85]}"
agent_pids[85]=
ectl user add root:r00tpw >/dev/null 2>&1
ectl auth enable >/dev/null 2>&1
rc=$(run_bounded 5 "$tmp/eauth.log" "$AGENT" "${eflags[@]}" --etcd-user root --etcd-password wrong)
check "etcd: a wrong password: exit 4 ($rc: $(grep -o 'event=etcd_auth_failed.*' "$tmp/eauth.log" | head -n1 | head -c 100))" \
	bash -c '[ "$1" = 4 ] && grep -q "event=etcd_auth_failed" "$2"' _ "$rc" "$tmp/eauth.log"
rc=$(run_bounded 5 "$tmp/eauth2.log" "$AGENT" "${eflags[@]}")
check "etcd: no user where authentication is on: exit 4 ($rc: $(grep -o 'event=etcd_auth_failed.*' "$tmp/eauth2.log" | head -n1 | head -c 100))" \
	bash -c '[ "$1" = 4 ] && grep -q "event=etcd_auth_failed" "$2"' _ "$rc" "$tmp/eauth2.log"
: >"$tmp/agent.82.log"
"$AGENT" "${eflags[@]}" --etcd-user root --etcd-password r00tpw 2>>"$tmp/agent.82.log" &
agent_pids[82]=$!
if wait_one 82 "event=claimed" 10 0; then ok "etcd: the right password: claimed"; else bad "etcd: the right password: never claimed"; fi
kill -TERM "${agent_pids[82]}"
wait "${agent_pids[82]}"
check "etcd: with authentication: exit 0 on SIGTERM, released" \
	bash -c '[ "$1" = 0 ] && grep -q "event=released" "$2"' _ $? "$tmp/agent.82.log"
agent_pids[82]=
kill -KILL "$etcd_pid"
wait "$etcd_pid" 2>/dev/null
etcd_pid=

echo "==== etcd over TLS ===="
# A CA and a server certificate for 127.0.0.1, made here; the agent trusts
# the CA with --etcd-cacert, and refuses the server without it.
mkdir -p "$tmp/tls"
(cd "$tmp/tls" &&
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=sftest-ca &&
	openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 &&
	printf 'subjectAltName=IP:127.0.0.1\n' >ext &&
	openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
		-extfile ext) >"$tmp/tls/openssl.log" 2>&1 || bad "openssl: making the test certificates"
ecport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
epport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
etcd --name tls0 --data-dir "$tmp/etcd-tls" --listen-client-urls "https://127.0.0.1:$ecport" \
	--advertise-client-urls "https://127.0.0.1:$ecport" --cert-file "$tmp/tls/srv.pem" \
	--key-file "$tmp/tls/srv.key" --listen-peer-urls "http://127.0.0.1:$epport" \
	--initial-advertise-peer-urls "http://127.0.0.1:$epport" \
	--initial-cluster "tls0=http://127.0.0.1:$epport" >"$tmp/etcd-tls.log" 2>&1 &
etcd_pid=$!
for _ in $(seq 100); do
	ETCDCTL_API=3 etcdctl --endpoints "https://127.0.0.1:$ecport" --cacert "$tmp/tls/ca.pem" \
		endpoint health >/dev/null 2>&1 && break
	sleep 0.1
done
tflags=("${flags[@]}" --backend etcd --etcd-timeout-ms 300 --cluster etcdtls --datacenter-ids 0
	--worker-ids 0 --state-file '' --settle-ms 0 --etcd-endpoints "https://127.0.0.1:$ecport")
"$AGENT" "${tflags[@]}" --etcd-cacert "$tmp/tls/ca.pem" --init-store 2>>"$tmp/init.log" ||
	bad "--init-store over TLS"
: >"$tmp/agent.83.log"
"$AGENT" "${tflags[@]}" --etcd-cacert "$tmp/tls/ca.pem" 2>>"$tmp/agent.83.log" &
agent_pids[83]=$!
if wait_one 83 "event=claimed" 10 0; then ok "etcd over TLS, the CA given: claimed"; else bad "etcd over TLS: never claimed"; fi
kill -TERM "${agent_pids[83]}"
wait "${agent_pids[83]}"
check "etcd over TLS: released on SIGTERM (exit $?)" grep -q "event=released" "$tmp/agent.83.log"
agent_pids[83]=
: >"$tmp/agent.84.log"
"$AGENT" "${tflags[@]}" 2>>"$tmp/agent.84.log" &
agent_pids[84]=$!
wait_one 84 "event=etcd_down" 10 0
sleep 0.5
kill -TERM "${agent_pids[84]}"
wait "${agent_pids[84]}"
agent_pids[84]=
check "etcd over TLS, an unknown CA: refused, nothing claimed ($(grep -o 'error=.*' "$tmp/agent.84.log" | head -n1 | head -c 80))" \
	bash -c '! grep -q "event=claimed" "$1" && grep -q "event=etcd_down.*certificate" "$1"' _ "$tmp/agent.84.log"
kill -KILL "$etcd_pid"
wait "$etcd_pid" 2>/dev/null
etcd_pid=

echo "==== prefer: a pair derived from the host, only a hint ===="
# Two agents of one host derive one pair: the first gets it, the second
# finds it held and takes another (two hosts preferring one pair).
for how in hostname machine-id; do
	pf=(--cluster "pref-$how" --datacenter-ids 0-1 --worker-ids 0-7 --state-file '' --settle-ms 0
		--prefer "$how")
	init_space "${pf[@]}"
	for i in 100 101; do : >"$tmp/agent.$i.log"; done
	"$AGENT" "${flags[@]}" "${pf[@]}" 2>>"$tmp/agent.100.log" &
	agent_pids[100]=$!
	wait_one 100 "event=unfenced" 10 0 || bad "prefer=$how: the first agent never served"
	{
		want=$(sed -n 's/.*event=preferred datacenter=\([0-9]*\) worker=\([0-9]*\) prefer=.*/\1:\2/p' "$tmp/agent.100.log" | head -n1)
		check "prefer=$how: the first agent claimed the pair derived from the host ($want: $(grep -o 'event=preferred.*' "$tmp/agent.100.log" | head -n1 | cut -c1-90))" \
			bash -c '[ -n "$1" ] && [ "$1" = "$2" ]' _ "$want" "$(claimed_pair 100)"
		"$AGENT" "${flags[@]}" "${pf[@]}" 2>>"$tmp/agent.101.log" &
		agent_pids[101]=$!
		wait_one 101 "event=unfenced" 10 0 || bad "prefer=$how: the second agent never served"
		w2=$(sed -n 's/.*event=preferred datacenter=\([0-9]*\) worker=\([0-9]*\) prefer=.*/\1:\2/p' "$tmp/agent.101.log" | head -n1)
		check "prefer=$how: the second prefers the same pair, finds it held, serves another ($w2 busy, $(claimed_pair 101))" \
			bash -c '[ "$1" = "$2" ] && grep -q "event=preferred_busy datacenter=${1%:*} worker=${1#*:}" "$3" && [ -n "$4" ] && [ "$4" != "$1" ]' \
			_ "$want" "$w2" "$tmp/agent.101.log" "$(claimed_pair 101)"
		check "prefer=$how: the held pair's key still holds the first agent's owner" \
			test "$(rowner "$PREFIX:pref-$how:worker:${want%:*}:${want#*:}")" = "$(owner_of 100)"
	}
	for i in 100 101; do
		[ -n "${agent_pids[i]:-}" ] || continue
		kill -TERM "${agent_pids[i]}"
		wait "${agent_pids[i]}"
		agent_pids[i]=
	done
done

echo "==== prefer = ip: with an IPv4 address, and with none but loopback ===="
# Whatever this host's addresses: each case in a network namespace of its
# own (unshare -n: its own loopback and redis-server), with a veth pair
# holding 10.0.0.5/24, or nothing but lo.  10.0.0.5 = 167772165, modulo the
# pool's 16 pairs 5, counted datacenter by datacenter: 1:2.  No IPv4: said
# (event=prefer_unavailable), no pair preferred, one served all the same.
# prefer_ns DIR [ADDR]: the agent's log in DIR/agent.log.
prefer_ns() {
	mkdir -p "$1"
	# shellcheck disable=SC2016 # the script's own variables
	unshare -n bash -c '
		ip link set lo up
		if [ -n "$3" ]; then
			ip link add sfv0 type veth peer name sfv1 && ip addr add "$3/24" dev sfv0 &&
				ip link set sfv1 up && ip link set sfv0 up || exit 9
		fi
		redis-server --bind 127.0.0.1 --port 6399 --save "" --appendonly yes --appendfsync always \
			--dir "$2" --daemonize no >"$2/redis.log" 2>&1 &
		r=$!
		for i in $(seq 100); do [ "$(redis-cli -p 6399 ping 2>/dev/null)" = PONG ] && break; sleep 0.05; done
		f=(--config /dev/null --redis-host 127.0.0.1 --redis-port 6399 --redis-timeout-ms 500
			--ttl-ms 2000 --settle-ms 0 --prefix sftest --cluster pref --datacenter-ids 0-1
			--worker-ids 0-7 --state-file "" --dry-run --log-level debug --prefer ip)
		"$1" "${f[@]}" --init-store 2>"$2/init.log"
		"$1" "${f[@]}" 2>"$2/agent.log" &
		a=$!
		for i in $(seq 100); do grep -q event=unfenced "$2/agent.log" && break; sleep 0.1; done
		kill -TERM "$a"
		wait "$a"
		echo "agent exit $?" >>"$2/agent.log"
		kill -KILL "$r"
		wait "$r" 2>/dev/null
		exit 0' _ "$AGENT" "$1" "${2:-}"
}
if prefer_ns "$tmp/prefer-v4" 10.0.0.5; then
	l=$tmp/prefer-v4/agent.log
	check "prefer=ip, 10.0.0.5: prefers 1:2 from it ($(grep -o 'event=preferred [^:]*' "$l" | head -n1)), claims it, serves, exits 0" \
		bash -c 'grep -q "event=preferred datacenter=1 worker=2 prefer=ip from=10.0.0.5" "$1" &&
			grep -q "event=claimed datacenter=1 worker=2 " "$1" && grep -q "event=unfenced" "$1" &&
			grep -q "^agent exit 0$" "$1"' _ "$l"
else
	bad "prefer=ip, 10.0.0.5: the network namespace could not be made (unshare -n, veth)"
fi
if prefer_ns "$tmp/prefer-none"; then
	l=$tmp/prefer-none/agent.log
	check "prefer=ip, no IPv4 but loopback: said so ($(grep -o 'event=prefer_unavailable.*' "$l" | head -n1 | cut -c1-60)), none preferred, a pair served, exit 0" \
		bash -c 'grep -q "event=prefer_unavailable prefer=ip" "$1" && ! grep -q "event=preferred " "$1" &&
			grep -q "event=unfenced" "$1" && grep -q "^agent exit 0$" "$1"' _ "$l"
else
	bad "prefer=ip, no IPv4: the network namespace could not be made (unshare -n)"
fi

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
nkeys=$(for k in $(rcli --scan --pattern "$PREFIX:c1:worker:*"); do rowner "$k"; done | grep -c .)
check "no record is left held ($nkeys)" test "$nkeys" -eq 0

echo "==== the history of every agent of this run ===="
python3 "$ROOT/tests/lease/check.py" --label agent-test "$HIST" >"$tmp/check.out" 2>&1
crc=$?
cat "$tmp/check.out"
check "lease-check: no two owners ever held one pair at once, nor stamped one timestamp" test "$crc" -eq 0
longest=$(awk '$1 == "interval" { f = $5; u = $6; sub(/from=/, "", f); sub(/until=/, "", u); if (u - f > m) m = u - f } END { print int(m / 1000000) }' "$HIST")
check "no interval is longer than TTL - margin ($longest ms <= $((TTL - TTL / 5)))" \
	test "$longest" -le $((TTL - TTL / 5))

echo "figures: $N_AGENTS agents, TTL $TTL ms; $(grep -oE '[0-9]+ intervals of' "$tmp/check.out" | sed 's/ of//'), $(grep -oE '[0-9]+ overlaps, [0-9]+ timestamp overlaps' "$tmp/check.out")"

finish
