#!/bin/bash
# snowflake-agent --backend zookeeper against a real ZooKeeper server on
# 127.0.0.1 (Debian's zkServer.sh, standalone, tickTime 500 ms: sessions of
# 1..10 s; a random free port), agents in --dry-run (no device).  Nodes are
# looked at and deleted with the C client's own cli_mt (another session):
#   - the configuration: the zookeeper keys, bad values (exit 2), a host
#     list that is not one (exit 2), a name that does not resolve (retried)
#   - --init-store: the marks, persistent znodes under zookeeper-root
#   - 8 agents for 6 pairs: 6 distinct pairs; each key an ephemeral znode of
#     its agent's session (ephemeralOwner), holding its owner
#   - renewed: the keys outlive the session timeout
#   - SIGTERM: fenced, the key deleted at once, exit 0
#   - kill -9: the key stays while the session lives, gone after it
#   - the server killed: the agent fences at once, on the library's lost
#     connection (reason store-connection-lost, long before its fence
#     time); the server restarted within the session timeout: the same
#     session takes its key back (no new claim)
#   - the mark: "MARK OWNER" at or above every ceiling
#   - a ttl-ms above the server's maxSessionTimeout: exit 2; a chroot in
#     zookeeper-hosts: the nodes under it; a chroot that does not exist:
#     exit 2
#   - digest authentication: the nodes' ACL is the agent's user; a wrong
#     password or none: exit 4
#   - every history, judged by tests/lease/check.py
# The scenarios every store shares (key deleted or replaced, an agent
# stopped past its TTL, --init-store never lowering, ...) are the contract
# suite's (tests/contract/, MIGRATION.md there).
# Prints "agent-zk: N passed, M failed".
set -uo pipefail
NAME=agent-zk
# shellcheck source=tests/contract/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TTL=${AGENT_TTL_MS:-2000}
ZKT=400	# zookeeper-timeout-ms
ZKSERVER=/usr/share/zookeeper/bin/zkServer.sh
ZKCLI=/usr/lib/zookeeper/bin/cli_mt

for f in "$ZKSERVER" "$ZKCLI"; do
	[ -x "$f" ] || { bad "$f is missing (scripts/deps.sh: zookeeperd, zookeeper-bin)"; finish; }
done
need_cmds "" java
build_agent
grep -qa zookeeper_init2 "$AGENT" || { bad "snowflake-agent was built without ZooKeeper (libzookeeper-mt-dev)"; finish; }

make_tmp agent-zk-test
zk_pid=
# shellcheck disable=SC2317 # called by the EXIT trap (tests/contract/lib.sh)
cleanup_pids() { echo "$zk_pid"; }

port=$(free_port)
HOSTS=127.0.0.1:$port
mkdir -p "$tmp/zk"
cat >"$tmp/zoo.cfg" <<EOF
tickTime=500
dataDir=$tmp/zk
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr
EOF

# zkc CMD...: one command of cli_mt, in a session of its own.
zkc() { timeout 10 "$ZKCLI" -h "$HOSTS" -c "$*" 2>&1; }
# The data of a node (empty when there is none), its ephemeralOwner.
zget() { zkc get "$1" | awk '/value_len = /{ getline; print; exit }'; }
zowner() { zkc get "$1" | sed -n 's/.*ephemeralOwner = \(.*\)/\1/p'; }

start_zk() {
	local i
	# start-foreground execs java: the pid is the server's.
	JMXDISABLE=true JVMFLAGS="-Xmx96m -XX:+UseSerialGC -XX:TieredStopAtLevel=1" \
		"$ZKSERVER" start-foreground "$tmp/zoo.cfg" >>"$tmp/zk.log" 2>&1 &
	zk_pid=$!
	for i in $(seq 150); do
		python3 - "$port" <<-'EOF' 2>/dev/null && return 0
			import socket, sys
			s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.5)
			s.sendall(b"srvr")
			sys.exit(0 if b"Mode: standalone" in s.recv(4096) else 1)
		EOF
		sleep 0.1
	done
	return 1
}

HIST=$tmp/history
flags=(--config /dev/null --backend zookeeper --zookeeper-hosts "$HOSTS" --zookeeper-timeout-ms "$ZKT"
	--ttl-ms "$TTL" --prefix sfzk --cluster c1 --datacenter-ids 0 --worker-ids 0-5 --dry-run
	--log-level debug --history "$HIST" --state-file '')

start_agent() { # start_agent I FLAGS...
	local i=$1
	shift
	: >>"$tmp/agent.$i.log"
	"$AGENT" "${flags[@]}" "$@" 2>>"$tmp/agent.$i.log" &
	agent_pids[i]=$!
}
stop_agent() { # stop_agent I: SIGTERM, wait; its exit status in $rc
	kill -TERM "${agent_pids[$1]}"
	wait "${agent_pids[$1]}"
	rc=$?
	agent_pids[$1]=
}
session_of() { sed -n 's/.*event=zookeeper_session session=0x\([0-9a-f]*\).*/\1/p' "$tmp/agent.$1.log" | tail -n1; }
keypath() { echo "/snowflake/sfzk:$2:worker:${1%:*}:${1#*:}"; }
markpath() { echo "/snowflake/sfzk:$2:mark:${1%:*}:${1#*:}"; }

echo "==== configuration ===="
out=$("$AGENT" "${flags[@]}" --zookeeper-root /a/b --print-config 2>&1)
check "the zookeeper keys (backend, hosts, root, timeout)" bash -c 'grep -qx "backend = zookeeper" <<<"$1" &&
	grep -qx "zookeeper-hosts = $2" <<<"$1" && grep -qx "zookeeper-root = /a/b" <<<"$1" &&
	grep -qx "zookeeper-timeout-ms = $3" <<<"$1"' _ "$out" "$HOSTS" "$ZKT"
for v in relative /a/ /a//b; do
	"$AGENT" --config /dev/null --zookeeper-root "$v" --print-config >/dev/null 2>&1
	check "zookeeper-root '$v': exit 2" test $? -eq 2
done
"$AGENT" --config /dev/null --zookeeper-user u --print-config >/dev/null 2>&1
check "zookeeper-user without zookeeper-password: exit 2" test $? -eq 2
rc=$(run_bounded 5 "$tmp/badhosts.log" "$AGENT" "${flags[@]}" --zookeeper-hosts nonsense)
check "zookeeper-hosts that is no host:port list: exit 2 ($rc: $(grep -o 'zookeeper-hosts nonsense.*' "$tmp/badhosts.log" | head -n1 | cut -c1-70))" \
	bash -c '[ "$1" = 2 ] && grep -q "not a valid host:port list" "$2"' _ "$rc" "$tmp/badhosts.log"
rc=$(run_bounded 3 "$tmp/nxhost.log" "$AGENT" "${flags[@]}" --zookeeper-hosts no-such-host.invalid:2181)
check "a name that does not resolve: said, and retried ($rc: $(grep -o 'error=.*' "$tmp/nxhost.log" | head -n1 | cut -c1-70))" \
	bash -c '[ "$1" = KILLED ] && grep -q "event=zookeeper_down .*cannot resolve no-such-host.invalid" "$2"' _ "$rc" "$tmp/nxhost.log"

echo "==== --init-store while the server is starting ===="
# The agent first, its server a second later (then its JVM's start): every
# pair is created and the exit is 0.  It used to give a pair up after one
# zookeeper-timeout-ms (400 ms here) without a connection, go on with the
# next ones and exit 1 (event=zookeeper_down error="not connected", then
# e.g. created=1 ... failed=3).  No server at all: exit 1, the reason said, and not a wait
# as long again for every pair.
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/zk2"
sed -e "s|^dataDir=.*|dataDir=$tmp/zk2|" -e "s|^clientPort=.*|clientPort=$port2|" "$tmp/zoo.cfg" >"$tmp/zoo2.cfg"
iflags=(--zookeeper-hosts "127.0.0.1:$port2" --cluster starting --worker-ids 0-3)
"$AGENT" "${flags[@]}" "${iflags[@]}" --init-store 2>"$tmp/init-starting.log" &
agent_pids[98]=$!
sleep 1
# agent_pids[97]: the EXIT trap kills it too.
JMXDISABLE=true JVMFLAGS="-Xmx96m -XX:+UseSerialGC -XX:TieredStopAtLevel=1" \
	"$ZKSERVER" start-foreground "$tmp/zoo2.cfg" >>"$tmp/zk2.log" 2>&1 &
agent_pids[97]=$!
t=$(($(ms) + 60000))
while kill -0 "${agent_pids[98]}" 2>/dev/null && [ "$(ms)" -lt "$t" ]; do sleep 0.1; done
kill -KILL "${agent_pids[98]}" 2>/dev/null
wait "${agent_pids[98]}"
rc=$?
agent_pids[98]=
check "--init-store started before the server: it waits, every pair created, exit 0 ($rc: $(grep -o 'created=.*failed=[0-9]*' "$tmp/init-starting.log"))" \
	bash -c '[ "$1" = 0 ] && grep -q "event=store_initialised .* pairs=4 created=4 .* failed=0" "$2"' _ "$rc" "$tmp/init-starting.log"
kill -KILL "${agent_pids[97]}"
wait "${agent_pids[97]}" 2>/dev/null
agent_pids[97]=
rc=$(run_bounded 60 "$tmp/init-none.log" "$AGENT" "${flags[@]}" "${iflags[@]}" --init-store)
check "--init-store without a server: exit 1, the reason said, given up once ($rc: $(grep -o 'did not answer within [0-9]* ms' "$tmp/init-none.log"))" \
	bash -c '[ "$1" = 1 ] && grep -q "did not answer within 10000 ms .*stopped at datacenter=0 worker=0" "$2" &&
	grep -q "event=store_initialised .* pairs=4 created=0 .* failed=1 " "$2"' _ "$rc" "$tmp/init-none.log"

echo "==== a ZooKeeper server on $HOSTS ===="
if ! start_zk; then
	bad "the ZooKeeper server did not start"
	tail -n 20 "$tmp/zk.log"
	finish
fi
ok "ZooKeeper $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null) started (standalone, tickTime 500 ms)"
"$AGENT" "${flags[@]}" --init-store 2>"$tmp/init.log"
check "--init-store: the 6 marks ($(grep -o 'created=[0-9]*' "$tmp/init.log"))" \
	test "$(zkc ls /snowflake | grep -c 'sfzk:c1:mark:')" = 6
mk=$(zget "$(markpath 0:0 c1)")
check "a new mark is 20 digits of 0 ($mk)" test "$mk" = 00000000000000000000
check "the mark is persistent (ephemeralOwner 0)" test "$(zowner "$(markpath 0:0 c1)")" = 0

echo "==== 8 agents for 6 pairs ===="
for i in $(seq 0 7); do start_agent "$i"; done
sleep "$(awk "BEGIN { print $TTL * 2.5 / 1000 }")"
declare -A seen=()
held=0 dup=0
for i in $(seq 0 7); do
	p=$(claimed_pair "$i")
	[ -n "$p" ] || continue
	grep -q "event=unfenced" "$tmp/agent.$i.log" || continue
	held=$((held + 1))
	[ -n "${seen[$p]:-}" ] && dup=$((dup + 1))
	seen[$p]=$i
done
check "6 agents serve, 6 distinct pairs ($held serving, $dup duplicates)" test "$held" = 6 -a "$dup" = 0
i=${seen[0:0]:-${seen[0:1]}}
p=$(claimed_pair "$i")
check "the key of $p is an ephemeral znode of agent $i's session ($(zowner "$(keypath "$p" c1)"))" \
	test "$(zowner "$(keypath "$p" c1)")" = "$(session_of "$i")"
check "the key holds the agent's owner" test "$(zget "$(keypath "$p" c1)")" = "$(owner_of "$i")"
check "pool full: the 2 others say so" test "$(grep -l 'event=pool_full' "$tmp"/agent.[0-7].log | wc -l)" -ge 2
sleep "$(awk "BEGIN { print $TTL * 1.5 / 1000 }")"
check "renewed: the key outlives the session timeout" test "$(zowner "$(keypath "$p" c1)")" = "$(session_of "$i")"
mk=$(zget "$(markpath "$p" c1)")
ceil=$(sed -n 's/.*event=unfenced.*ceiling_ms=\([0-9]*\).*/\1/p' "$tmp/agent.$i.log" | tail -n1)
check "the mark is 'MARK OWNER', at or above the device's last ceiling ($mk; ceiling $ceil)" \
	bash -c '[ "${1#* }" = "$3" ] && [ -n "$2" ] && [ "$((10#${1%% *}))" -ge "$2" ]' _ "$mk" "$ceil" "$(owner_of "$i")"

echo "==== SIGTERM, kill -9 ===="
si=$(session_of "$i")
stop_agent "$i"
# Gone from agent i's session at once: absent, or already claimed by one of
# the agents waiting for a pair (the pool is full; their next walk may come
# first), never still i's ephemeral node.
own=$(zowner "$(keypath "$p" c1)")
check "SIGTERM: exit 0, the key deleted at once (rc $rc; the key's session now ${own:-none}, was $si)" \
	bash -c '[ "$1" = 0 ] && [ -n "$3" ] && [ "$2" != "$3" ]' _ "$rc" "$own" "$si"
check "SIGTERM: fenced before the release" \
	bash -c 'grep -o "event=fenced.*reason=agent-stopped\|event=released" "$1" | tail -n2 | head -n1 | grep -q fenced' _ "$tmp/agent.$i.log"
j=${seen[0:2]:-${seen[0:3]}}
pj=$(claimed_pair "$j")
sj=$(session_of "$j")
kill -KILL "${agent_pids[j]}"
wait "${agent_pids[j]}" 2>/dev/null
agent_pids[j]=
t_kill=$(ms)
check "kill -9: the key stays while the session lives" test "$(zowner "$(keypath "$pj" c1)")" = "$sj"
while [ "$(zowner "$(keypath "$pj" c1)")" = "$sj" ] && [ "$(($(ms) - t_kill))" -lt $((TTL * 4)) ]; do sleep 0.1; done
check "kill -9: the key of session $sj is gone once the session expired ($(($(ms) - t_kill)) ms, timeout $TTL)" \
	test "$(zowner "$(keypath "$pj" c1)")" != "$sj"
for k in $(seq 0 7); do [ -n "${agent_pids[k]:-}" ] && stop_agent "$k"; done

echo "==== the server killed: fenced at once; back within the session timeout: the same session ===="
# A long lease (10 s, fence 8 s after a renewal): a fence on the lost
# connection comes long before the fence time.
lflags=(--cluster dis --worker-ids 0 --ttl-ms 10000 --zookeeper-timeout-ms 1000)
"$AGENT" "${flags[@]}" "${lflags[@]}" --init-store 2>>"$tmp/init.log"
start_agent 20 "${lflags[@]}"
wait_one 20 "event=unfenced" 30 || bad "disconnection: the agent never served"
s20=$(session_of 20)
off=$(size_of 20)
kill -KILL "$zk_pid"
wait "$zk_pid" 2>/dev/null
zk_pid=
if wait_one 20 "event=fenced" 5 "$off"; then
	reason=$(tail -c +"$((off + 1))" "$tmp/agent.20.log" | sed -n 's/.*event=fenced.* reason=\([a-z-]*\).*/\1/p' | head -n1)
	check "the server killed: the agent fenced on the lost connection (reason $reason), not at its fence time" \
		test "$reason" = store-connection-lost
else
	bad "the server killed: the agent never fenced"
fi
off=$(size_of 20)
start_zk || bad "the ZooKeeper server did not restart"
if wait_one 20 "event=unfenced" 20 "$off"; then
	ok "the server back: the agent serves again"
else
	bad "the server back: the agent never served again"
fi
check "the same session ($s20) took its key back: no new session, no settling" \
	bash -c '[ "$4" = "$1" ] && ! tail -c +"$(($2 + 1))" "$3" | grep -q "event=settling\|zookeeper_session_expired"' \
	_ "$s20" "$off" "$tmp/agent.20.log" "$(session_of 20)"
check "the key is still that session's" test "$(zowner "$(keypath 0:0 dis)")" = "$s20"
stop_agent 20

echo "==== session timeout, chroot ===="
rc=$(run_bounded 5 "$tmp/longttl.log" "$AGENT" "${flags[@]}" --cluster lt --ttl-ms 20000)
check "ttl-ms 20000 above maxSessionTimeout (10 s): exit 2 ($rc: $(grep -o 'event=zookeeper_timeout_too_short [^:]*' "$tmp/longttl.log" | head -n1))" \
	bash -c '[ "$1" = 2 ] && grep -q "event=zookeeper_timeout_too_short negotiated_ms=10000" "$2"' _ "$rc" "$tmp/longttl.log"
rc=$(run_bounded 5 "$tmp/nochroot.log" "$AGENT" "${flags[@]}" --zookeeper-hosts "$HOSTS/nosuchchroot")
check "a chroot that does not exist: exit 2 ($rc: $(grep -o 'event=zookeeper_no_chroot' "$tmp/nochroot.log" | head -n1))" \
	bash -c '[ "$1" = 2 ] && grep -q "event=zookeeper_no_chroot" "$2"' _ "$rc" "$tmp/nochroot.log"
zkc create /sfchroot >/dev/null
cflags=(--zookeeper-hosts "$HOSTS/sfchroot" --cluster ch --worker-ids 0 --settle-ms 0)
"$AGENT" "${flags[@]}" "${cflags[@]}" --init-store 2>>"$tmp/init.log"
start_agent 40 "${cflags[@]}"
wait_one 40 "event=unfenced" 15 || bad "chroot: never served"
check "chroot: the key is /sfchroot/snowflake/... of the agent's session" \
	test "$(zowner "/sfchroot$(keypath 0:0 ch)")" = "$(session_of 40)"
stop_agent 40

echo "==== digest authentication ===="
aflags=(--cluster auth --worker-ids 0 --zookeeper-root /sfauth --zookeeper-user sf)
"$AGENT" "${flags[@]}" "${aflags[@]}" --zookeeper-password s3cret --init-store 2>>"$tmp/init.log"
check "the root made by an authenticated agent refuses others (cli_mt without auth: ls -> no auth)" \
	bash -c 'grep -q "rc = -102" <<<"$1"' _ "$(zkc ls /sfauth)"
rc=$(run_bounded 5 "$tmp/auth1.log" "$AGENT" "${flags[@]}" "${aflags[@]}" --zookeeper-password wrong)
check "a wrong password: exit 4 ($rc: $(grep -o 'event=zookeeper_auth_failed[^:]*' "$tmp/auth1.log" | head -n1))" \
	bash -c '[ "$1" = 4 ] && grep -q "event=zookeeper_auth_failed" "$2"' _ "$rc" "$tmp/auth1.log"
rc=$(run_bounded 5 "$tmp/auth2.log" "$AGENT" "${flags[@]}" --cluster auth --worker-ids 0 --zookeeper-root /sfauth)
check "no credentials: exit 4 ($rc)" \
	bash -c '[ "$1" = 4 ] && grep -q "event=zookeeper_auth_failed" "$2"' _ "$rc" "$tmp/auth2.log"
check "a password on the command line: the warning that every local user can read it" \
	grep -q 'event=secret_on_command_line option=--zookeeper-password' "$tmp/auth1.log"
start_agent 50 "${aflags[@]}" --zookeeper-password s3cret --settle-ms 0
if wait_one 50 "event=unfenced" 15; then ok "the right password: claimed and served"; else bad "the right password: never served"; fi
stop_agent 50
check "with authentication: exit 0 on SIGTERM, released ($rc)" \
	bash -c '[ "$1" = 0 ] && grep -q "event=released" "$2"' _ "$rc" "$tmp/agent.50.log"

echo "==== the history of every agent of this run ===="
python3 "$ROOT/tests/lease/check.py" --label agent-zk "$HIST" >"$tmp/check.out" 2>&1
crc=$?
cat "$tmp/check.out"
check "lease-check: no two owners ever held one pair at once, nor stamped one timestamp" test "$crc" -eq 0
finish
