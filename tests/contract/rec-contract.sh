#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The record store's contract (issue 40, docs/lease-record.md): the one
# suite of tests/contract/rec_contract.c (read, cas, versions that never
# repeat, sizes, records in a wrong form, 1.4.0's key, refusals, a store
# unable to write, garbage, huge and no replies, then the record engine of
# record.c over the backend) run against a real store.  Today: Redis (ag_redis_rec_ops).  Another store is
# an adapter: its server started here, its agent options and its hooks
# (delete a record, write a 1.4.0 key, refuse, make read-only), never a
# copy of the scenarios.  A private redis-server on 127.0.0.1 (a free port,
# its own directory under $BUILD, stopped by pid at the end), every step
# time-bounded.  Not in `make check` yet.
#
#   tests/contract/rec-contract.sh       prints "rec-contract: N passed, M failed"
set -uo pipefail
NAME=rec-contract
# shellcheck source=tests/contract/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1

need_cmds ": redis-server" redis-server redis-cli socat python3 pkg-config
make_tmp rec-contract
build_agent

# The driver: agent.c included, the agent's other objects and libraries linked.
cflags=(-std=gnu11 -O1 -g -Wall -Wextra -Werror -Iuserspace/include -Iuapi -Iuserspace/agent
	'-DSNOWFLAKE_VERSION="rec-contract"' "-DAGENT_C=\"$ROOT/userspace/agent/agent.c\"")
read -r -a pc_c <<<"$(pkg-config --cflags hiredis libcurl json-c)"
read -r -a pc_l <<<"$(pkg-config --libs hiredis libcurl json-c)"
libs=("${pc_l[@]}")
pkg-config --exists libmariadb && read -r -a my_l <<<"$(pkg-config --libs libmariadb)" && libs+=("${my_l[@]}")
echo '#include <zookeeper/zookeeper.h>' | ${CC:-cc} -E -x c - >/dev/null 2>&1 && libs+=(-lzookeeper_mt -pthread)
objs=()
for o in "$BUILD"/userspace/agent/*.o; do
	[ "${o##*/}" = agent.o ] || objs+=("$o")
done
DRIVER=$tmp/rec_contract
if ! ${CC:-cc} "${cflags[@]}" "${pc_c[@]}" tests/contract/rec_contract.c "${objs[@]}" \
	"$BUILD/userspace/libsnowflake.a" "${libs[@]}" -o "$DRIVER" 2>"$tmp/build.log"; then
	cat "$tmp/build.log"
	bad "building rec_contract"
	finish
fi

# The store.
port=$(free_port)
mkdir -p "$tmp/redis"
redis-server --bind 127.0.0.1 --port "$port" --dir "$tmp/redis" --save "" --appendonly yes \
	--appendfsync always --maxmemory-policy noeviction --daemonize no >"$tmp/redis.log" 2>&1 &
servers+=($!)
rcli() { timeout 5 redis-cli -h 127.0.0.1 -p "$port" "$@"; }
t=$(($(ms) + 20000))
until [ "$(rcli PING 2>/dev/null)" = PONG ]; do
	[ "$(ms)" -lt "$t" ] || { bad "redis-server did not answer within 20 s"; finish; }
	sleep 0.05
done

cluster=rc$$
# The hooks' own variables, expanded when a hook runs (rec_contract.c sets them).
# shellcheck disable=SC2016
key='sfrc:'$cluster':worker:$SF_DC:$SF_W'
store=(--backend redis --redis-host 127.0.0.1 --redis-port "$port" --redis-timeout-ms 300)
common=(--prefix sfrc --cluster "$cluster" --datacenter-ids 0-0 --worker-ids 0-3
	--ttl-ms 1500 --renew-ms 300 --margin-ms 300 --owner contract --dry-run)
cli="timeout 5 redis-cli -h 127.0.0.1 -p $port"

# run LABEL SECONDS DRIVER-ARGS... -- AGENT-OPTIONS: the driver's TAP lines counted.
run() {
	local label=$1 secs=$2 line
	shift 2
	timeout -k 2 "$secs" "$DRIVER" "$@" >"$tmp/$label.tap" 2>"$tmp/$label.log"
	echo "# $label (exit $?)"
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "$label: ${line#ok }" ;;
		"not ok "*) bad "$label: ${line#not ok }" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$tmp/$label.tap"
	grep -q '^1\.\.' "$tmp/$label.tap" || { bad "$label: the driver did not finish (its log:)"; tail -n 20 "$tmp/$label.log"; }
}

# A record hash in a form the backend never writes, as $SF_CASE says (expanded
# when the hook runs).
# shellcheck disable=SC2016
bad='case $SF_CASE in long) v=7 t=sf2$(head -c 509 /dev/zero | tr "\\0" x) ;; ver0) v=0 ;;
	verlead) v=007 ;; verbig) v=9007199254740992 ;; vertext) v=1x ;; *) exit 9 ;; esac
	'"$cli"' HSET "'"$key"'" ver "$v" rec "${t:-sf2 nonce=0000000000000001 beat=0 ttl=0 mark=00000000000000001000 owner=-}" | grep -qx 2'
run basic 60 --hook-delete "$cli DEL \"$key\" | grep -qx 1" --hook-bad "$bad" \
	--hook-legacy "$cli SET \"$key\" 'host-a:0123456789abcdef0123456789abcdef' PX 60000 | grep -qx OK" \
	-- "${store[@]}" "${common[@]}"

# Refused: the client may touch other keys only (an ACL: NOPERM).
rcli ACL SETUSER default resetkeys '~other:*' >/dev/null
run refused 20 --expect refused -- "${store[@]}" "${common[@]}"
rcli ACL SETUSER default allkeys >/dev/null

# Unable: a read-only replica (of a master that is not there).
rcli REPLICAOF 127.0.0.1 "$(free_port)" >/dev/null
run unable 20 --expect unable -- "${store[@]}" "${common[@]}" --redis-allow-non-durable
rcli REPLICAOF NO ONE >/dev/null
# ... a master that may not write without a replica (NOREPLICAS) ...
rcli CONFIG SET min-replicas-to-write 1 >/dev/null
run noreplicas 20 --expect unable -- "${store[@]}" "${common[@]}"
rcli CONFIG SET min-replicas-to-write 0 >/dev/null
# ... a replica that answers nothing while its master is away (MASTERDOWN).
rcli CONFIG SET replica-serve-stale-data no >/dev/null
rcli REPLICAOF 127.0.0.1 "$(free_port)" >/dev/null
run masterdown 20 --expect masterdown -- "${store[@]}" "${common[@]}" --redis-allow-non-durable
rcli REPLICAOF NO ONE >/dev/null
rcli CONFIG SET replica-serve-stale-data yes >/dev/null

# Restart: a second Redis that may lose writes (RDB only, redis-allow-non-durable),
# restarted by a hook from a snapshot taken by another (its pid in a file,
# stopped at the end).
port2=$(free_port)
mkdir -p "$tmp/redis2"
cat >"$tmp/redis2.sh" <<EOT
#!/bin/bash
# The second Redis: (re)started from its snapshot, answering within 20 s.
p=\$(cat "$tmp/redis2.pid" 2>/dev/null)
if [ -n "\$p" ]; then
	kill -KILL "\$p"
	t=\$((\$(date +%s%3N) + 10000))
	while kill -0 "\$p" 2>/dev/null; do [ "\$(date +%s%3N)" -lt "\$t" ] || exit 1; sleep 0.05; done
fi
redis-server --bind 127.0.0.1 --port $port2 --dir "$tmp/redis2" --save "" --appendonly no \
	--maxmemory-policy noeviction --daemonize no >>"$tmp/redis2.log" 2>&1 </dev/null &
echo \$! >"$tmp/redis2.pid"
t=\$((\$(date +%s%3N) + 20000))
until [ "\$(timeout 5 redis-cli -h 127.0.0.1 -p $port2 PING 2>/dev/null)" = PONG ]; do
	[ "\$(date +%s%3N)" -lt "\$t" ] || exit 1
	sleep 0.05
done
EOT
# shellcheck disable=SC2317 # called by lib.sh's cleanup
cleanup_pids() { cat "$tmp/redis2.pid" 2>/dev/null; }
if bash "$tmp/redis2.sh"; then
	store2=(--backend redis --redis-host 127.0.0.1 --redis-port "$port2" --redis-timeout-ms 300
		--redis-allow-non-durable)
	run restart 30 --expect restart --hook-save "timeout 5 redis-cli -h 127.0.0.1 -p $port2 SAVE | grep -qx OK" \
		--hook-restart "bash $tmp/redis2.sh" -- "${store2[@]}" "${common[@]}"
else
	bad "the second redis-server did not answer within 20 s"
fi

# Faulty: through tests/contract/faultproxy.py: garbage (a reply replaced by "?" and 16
# bytes), a huge reply (a bulk string of 3 MB announced, 2 MB sent), no reply (held).
python3 tests/contract/faultproxy.py --upstream "127.0.0.1:$port" --control "$tmp/fp.sock" \
	>"$tmp/fp.port" 2>"$tmp/fp.log" &
servers+=($!)
t=$(($(ms) + 10000))
until [ -s "$tmp/fp.port" ] && [ -S "$tmp/fp.sock" ]; do
	[ "$(ms)" -lt "$t" ] || { bad "faultproxy did not start"; finish; }
	sleep 0.05
done
pport=$(head -n1 "$tmp/fp.port")
fp() { echo "echo '$1' | timeout 5 socat - UNIX-CONNECT:$tmp/fp.sock | grep -q '^ok'"; }
proxied=(--backend redis --redis-host 127.0.0.1 --redis-port "$pport" --redis-timeout-ms 300)
run garbage 20 --expect faulty --hook-fault "$(fp 'mode inflate 16 3f')" --hook-pass "$(fp 'mode pass')" \
	-- "${proxied[@]}" "${common[@]}"
run huge 20 --expect faulty --hook-fault "$(fp 'mode inflate 2000000 2433303030303030300d0a')" --hook-pass "$(fp 'mode pass')" \
	-- "${proxied[@]}" "${common[@]}"
run silent 20 --expect faulty --hook-fault "$(fp 'mode hold')" --hook-pass "$(fp 'mode pass')" \
	-- "${proxied[@]}" "${common[@]}"
# The engine over a write whose reply is dropped after the store ran it (the
# first request holding a record's text, "sf2 nonce=").
run unknown 20 --expect unknown --hook-fault "$(fp 'drop 736632206e6f6e63653d')" \
	--hook-pass "$(fp 'mode pass')" -- "${proxied[@]}" "${common[@]}"
finish
