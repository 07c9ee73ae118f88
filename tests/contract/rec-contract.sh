#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The record store's contract (issue 40, docs/lease-record.md): the one
# suite of tests/contract/rec_contract.c (read, cas, versions that never
# repeat, sizes, records in a wrong form, 1.4.0's key, refusals, a store
# unable to write, garbage, huge and no replies, then the record engine of
# record.c over the backend) run against each real store that has a
# backend: Redis (ag_redis_rec_ops), etcd (ag_etcd_rec_ops), ZooKeeper
# (ag_zk_rec_ops), MySQL/MariaDB (ag_mysql_rec_ops).  A store is an
# adapter here: its server started, its agent options and its hooks
# (delete a record, write a 1.4.0 key, write a record in a wrong form,
# refuse, make it unable to write), never a copy of the scenarios.  What a
# store cannot have is said as a line "n/a  STORE MODE: why" (counted, not
# a pass); what the store's documentation says it does not exclude, as a
# line "limit  STORE MODE: what" (counted, not a pass: the driver fails when
# the store does not show it).  Private servers on 127.0.0.1 (free ports, their directories
# under $BUILD, stopped by pid at the end), every step time-bounded.
#
#   tests/contract/rec-contract.sh [STORE...]   (redis etcd zookeeper mysql: the default)
#       prints "rec-contract: N passed, M failed"
set -uo pipefail
NAME=rec-contract
# shellcheck source=tests/contract/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1

ZK_SERVER=/usr/share/zookeeper/bin/zkServer.sh
ZK_CLI=/usr/lib/zookeeper/bin/cli_mt
ZK_JCLI=/usr/share/zookeeper/bin/zkCli.sh
STORES=("$@")
[ "${#STORES[@]}" -gt 0 ] || STORES=(redis etcd zookeeper mysql)
for s in "${STORES[@]}"; do
	case $s in
	redis) need_cmds ": redis-server" redis-server redis-cli ;;
	etcd) need_cmds ": etcd" etcd etcdctl ;;
	zookeeper)
		need_cmds ": zookeeper" java
		for f in "$ZK_SERVER" "$ZK_CLI" "$ZK_JCLI"; do
			[ -x "$f" ] || { bad "$f is missing (scripts/deps.sh: zookeeperd, zookeeper-bin)"; finish; }
		done ;;
	mysql) need_cmds ": mariadb-server" mariadbd mariadb mariadb-install-db ;;
	*) bad "no store $s (redis, etcd, zookeeper, mysql)"; finish ;;
	esac
done
need_cmds "" socat python3 pkg-config
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

cluster=rc$$
common=(--prefix sfrc --cluster "$cluster" --datacenter-ids 0-0 --worker-ids 0-3
	--ttl-ms 1500 --renew-ms 300 --margin-ms 300 --owner contract --dry-run)
n_na=0 n_limit=0
# shellcheck disable=SC2317 # called by lib.sh's cleanup
cleanup_pids() { cat "$tmp/redis2.pid" "$tmp"/zk-eph.*.pid 2>/dev/null; }
# na WHAT: a scenario or a case the store cannot have, and why (not a pass).
na() { n_na=$((n_na + 1)); echo "n/a  $*"; }
# limit WHAT: what the store's documentation says it does not exclude, shown (not a pass).
limit() { n_limit=$((n_limit + 1)); echo "limit  $*"; }
# A faultproxy in front of 127.0.0.1:$1, its control socket $tmp/$2.sock;
# its port in $pport.  fp CMD: a hook that sends CMD to it.
start_proxy() {
	python3 tests/contract/faultproxy.py --upstream "127.0.0.1:$1" --control "$tmp/$2.sock" \
		>"$tmp/$2.port" 2>"$tmp/$2.log" &
	servers+=($!)
	fp_sock=$tmp/$2.sock
	local t=$(($(ms) + 10000))
	until [ -s "$tmp/$2.port" ] && [ -S "$tmp/$2.sock" ]; do
		[ "$(ms)" -lt "$t" ] || { bad "faultproxy did not start"; return 1; }
		sleep 0.05
	done
	pport=$(head -n1 "$tmp/$2.port")
}
fp() { echo "echo '$1' | timeout 5 socat - UNIX-CONNECT:$fp_sock | grep -q '^ok'"; }
# run_faulty [--unsent-unable] HUGE DROP AGENT-OPTIONS...: through the faultproxy
# started last, the replies garbage ("?" and 16 bytes), huge (the hex bytes HUGE,
# the store's own header of a reply of 3 MB, then 2 MB sent) and none (held), each
# after a first good read ("faulty"; --unsent-unable, the driver's option, for a
# store whose call cut before it was sent answers RS_UNABLE: ZooKeeper); then the
# engine over a write whose reply is dropped after the store ran it (the first
# request holding the hex bytes DROP: "unknown").
run_faulty() {
	local unsent=()
	if [ "$1" = --unsent-unable ]; then
		unsent=(--unsent-unable)
		shift
	fi
	local huge=$1 drop=$2
	shift 2
	run garbage 20 --expect faulty "${unsent[@]}" --hook-fault "$(fp 'mode inflate 16 3f')" \
		--hook-pass "$(fp 'mode pass')" -- "$@" "${common[@]}"
	run huge 20 --expect faulty "${unsent[@]}" --hook-fault "$(fp "mode inflate 2000000 $huge")" \
		--hook-pass "$(fp 'mode pass')" -- "$@" "${common[@]}"
	run silent 20 --expect faulty "${unsent[@]}" --hook-fault "$(fp 'mode hold')" \
		--hook-pass "$(fp 'mode pass')" -- "$@" "${common[@]}"
	run unknown 20 --expect unknown --hook-fault "$(fp "drop $drop")" --hook-pass "$(fp 'mode pass')" \
		-- "$@" "${common[@]}"
}

# run MODE SECONDS DRIVER-ARGS... -- AGENT-OPTIONS: the driver's TAP lines counted,
# labelled "$STORE MODE"; its "n/a - " lines counted as n/a.
run() {
	local label="$STORE $1" secs=$2 line f=$tmp/$STORE.$1
	shift 2
	timeout -k 2 "$secs" "$DRIVER" "$@" >"$f.tap" 2>"$f.log"
	echo "# $label (exit $?)"
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "$label: ${line#ok }" ;;
		"not ok "*) bad "$label: ${line#not ok }" ;;
		"n/a - "*) na "$label: ${line#n/a - }" ;;
		"limit - "*) limit "$label: ${line#limit - }" ;;
		"#"*) echo "$line" ;;
		esac
	done <"$f.tap"
	grep -q '^1\.\.' "$f.tap" || { bad "$label: the driver did not finish (its log:)"; tail -n 20 "$f.log"; }
}

# Redis: a hash per pair, the version from one counter of the store.
redis_store() {
	local port port2 key store store2 cli bad proxied t
	port=$(free_port)
	mkdir -p "$tmp/redis"
	redis-server --bind 127.0.0.1 --port "$port" --dir "$tmp/redis" --save "" --appendonly yes \
		--appendfsync always --maxmemory-policy noeviction --daemonize no >"$tmp/redis.log" 2>&1 &
	servers+=($!)
	rcli() { timeout 5 redis-cli -h 127.0.0.1 -p "$port" "$@"; }
	t=$(($(ms) + 20000))
	until [ "$(rcli PING 2>/dev/null)" = PONG ]; do
		[ "$(ms)" -lt "$t" ] || { bad "redis-server did not answer within 20 s"; return; }
		sleep 0.05
	done

	# The hooks' own variables, expanded when a hook runs (rec_contract.c sets them).
	# shellcheck disable=SC2016
	key='sfrc:'$cluster':worker:$SF_DC:$SF_W'
	store=(--backend redis --redis-host 127.0.0.1 --redis-port "$port" --redis-timeout-ms 300)
	cli="timeout 5 redis-cli -h 127.0.0.1 -p $port"

	# A record hash in a form the backend never writes, as $SF_CASE says (expanded
	# when the hook runs).
	# shellcheck disable=SC2016
	bad='case $SF_CASE in long) v=7 t=sf2$(head -c 509 /dev/zero | tr "\\0" x) ;; ver0) v=0 ;;
		verlead) v=007 ;; verbig) v=9007199254740992 ;; vertext) v=1x ;; *) exit 9 ;; esac
		'"$cli"' HSET "'"$key"'" ver "$v" rec "${t:-sf2 nonce=0000000000000001 beat=0 ttl=0 mark=00000000000000001000 owner=-}" | grep -qx 2'
	run basic 60 --hook-delete "$cli DEL \"$key\" | grep -qx 1" --hook-bad "$bad" \
		--hook-legacy "$cli SET \"$key\" 'host-a:0123456789abcdef0123456789abcdef' PX 60000 | grep -qx OK" \
		--hook-legacy-record "$cli SET \"$key\" 'sf2 nonce=0000000000000001 beat=0 ttl=0 mark=00000000000000001000 owner=-' PX 60000 | grep -qx OK" \
		--hook-legacy-mark "$cli SET \"${key/:worker:/:mark:}\" \"\$SF_MARK\" | grep -qx OK" \
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
	cat >"$tmp/redis2.sh" <<-EOT
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
	start_proxy "$port" fp || return
	proxied=(--backend redis --redis-host 127.0.0.1 --redis-port "$pport" --redis-timeout-ms 300)
	# The engine over a write whose reply is dropped after the store ran it (the
	# first request holding a record's text, "sf2 nonce=").
	run_faulty 2433303030303030300d0a 736632206e6f6e63653d "${proxied[@]}"
}

# etcd: a plain key per pair, its mod_revision the version.  One private
# member; a second, with a tiny quota, for a store unable to write.
# start_etcd NAME [ETCD-OPTIONS...]: its client port in $eport, answering
# within 20 s (1 when not).
start_etcd() {
	local n=$1 pp t
	shift
	eport=$(free_port)
	pp=$(free_port)
	etcd --name "$n" --data-dir "$tmp/$n" --listen-client-urls "http://127.0.0.1:$eport" \
		--advertise-client-urls "http://127.0.0.1:$eport" --listen-peer-urls "http://127.0.0.1:$pp" \
		--initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "$n=http://127.0.0.1:$pp" \
		"$@" >"$tmp/$n.log" 2>&1 &
	servers+=($!)
	t=$(($(ms) + 20000))
	until timeout 5 env ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$eport" endpoint health >/dev/null 2>&1; do
		[ "$(ms)" -lt "$t" ] || { bad "etcd $n did not answer within 20 s"; return 1; }
		sleep 0.1
	done
}
etcd_store() {
	local eport key store ectl bad legacy leased proxied e2 nospace why
	start_etcd rce0 || return
	# The hooks' own variables, expanded when a hook runs (rec_contract.c sets them).
	# shellcheck disable=SC2016
	key='sfrc:'$cluster':worker:$SF_DC:$SF_W'
	store=(--backend etcd --etcd-endpoints "http://127.0.0.1:$eport" --etcd-timeout-ms 300)
	ectl="timeout 5 env ETCDCTL_API=3 etcdctl --endpoints 127.0.0.1:$eport"
	# A record in a form the backend never writes: only a text too long; etcd
	# sets the version (mod_revision) itself.
	why="etcd sets a key's version (its mod_revision) itself: none can be written by hand"
	# shellcheck disable=SC2016
	bad='case $SF_CASE in long) '"$ectl"' put "'"$key"'" "sf2$(head -c 509 /dev/zero | tr "\\0" x)" | grep -qx OK ;;
		ver0|verlead|verbig|vertext) echo "'"$why"'"; exit 77 ;; *) exit 9 ;; esac'
	# 1.4.0's key: the owner, bound to a lease.
	# shellcheck disable=SC2016
	legacy='l=$('"$ectl"' lease grant 60 | sed -n "s/^lease \([0-9a-f]*\) granted.*/\1/p") && [ -n "$l" ] &&
		'"$ectl"' put --lease="$l" "'"$key"'" host-a:0123456789abcdef0123456789abcdef | grep -qx OK'
	# ... and a record's text bound to a lease (no agent writes one).
	# shellcheck disable=SC2016
	leased='l=$('"$ectl"' lease grant 60 | sed -n "s/^lease \([0-9a-f]*\) granted.*/\1/p") && [ -n "$l" ] &&
		'"$ectl"' put --lease="$l" "'"$key"'" "sf2 nonce=0000000000000001 beat=0 ttl=0 mark=00000000000000001000 owner=-" | grep -qx OK'
	run basic 60 --hook-delete "$ectl del \"$key\" | grep -qx 1" --hook-bad "$bad" \
		--hook-legacy "$legacy" --hook-legacy-record "$leased" \
		--hook-legacy-mark "$ectl put \"${key/:worker:/:mark:}\" \"\$SF_MARK\" | grep -qx OK" \
		-- "${store[@]}" "${common[@]}"

	na "$STORE noreplicas: etcd has no replica setting of its own (a store unable to write: unable)"
	na "$STORE masterdown: a member without a quorum answers nothing (no readable reply: silent)"
	na "$STORE restart: etcd answers a write once its raft log is fsynced, so a restart keeps every version handed out; a restore from a snapshot (which repeats revisions) is an operator's act, with the agents stopped"

	# Faulty, through tests/contract/faultproxy.py: garbage (a reply replaced
	# by "?" and 16 bytes), a huge reply (an HTTP reply of 3 MB announced, 2 MB
	# sent), no reply (held).
	start_proxy "$eport" efp || return
	proxied=(--backend etcd --etcd-endpoints "http://127.0.0.1:$pport" --etcd-timeout-ms 300)
	# The engine over a write whose reply is dropped after the store ran it: the
	# first request holding a record's text, its value's base64 beginning
	# "sf2 nonce" (c2YyIG5vbmNl).
	run_faulty "$(printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3000000\r\n\r\n' | od -An -tx1 | tr -d ' \n')" \
		"$(printf c2YyIG5vbmNl | od -An -tx1 | tr -d ' \n')" "${proxied[@]}"

	# Refused: etcd's RBAC, a user whose role grants another pair's key only.
	if $ectl user add root:r00tpw >/dev/null && $ectl role add root >/dev/null &&
		$ectl user grant-role root root >/dev/null && $ectl user add sfrc:sfrcpw >/dev/null &&
		$ectl role add sfrc >/dev/null &&
		$ectl role grant-permission sfrc readwrite --prefix=true "sfrc:$cluster:worker:0:1" >/dev/null &&
		$ectl user grant-role sfrc sfrc >/dev/null && $ectl auth enable >/dev/null; then
		# etcd checks a password with bcrypt: under load its first reply (the
		# token) can take longer than 300 ms, so this run's bound is 2 s.
		run refused 20 --expect refused -- "${store[@]}" "${common[@]}" \
			--etcd-user sfrc --etcd-password sfrcpw --etcd-timeout-ms 2000 --ttl-ms 6000 --margin-ms 1000
		$ectl --user root:r00tpw auth disable >/dev/null || bad "etcd: auth disable"
	else
		bad "etcd: RBAC set up (a user sfrc granted sfrc:$cluster:worker:0:1 only)"
	fi

	# Unable: a second member over its quota (NOSPACE: writes refused, reads answered).
	e2=$eport
	start_etcd rce1 --quota-backend-bytes 65536 || return
	head -c 100000 /dev/zero | tr '\0' x >"$tmp/rce1.big"
	timeout 5 env ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$eport" put fill "$(cat "$tmp/rce1.big")" >/dev/null 2>&1
	nospace=$(timeout 5 env ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$eport" alarm list 2>&1)
	if [ "${nospace#*alarm:NOSPACE}" != "$nospace" ]; then
		run unable 20 --expect unable -- --backend etcd --etcd-endpoints "http://127.0.0.1:$eport" \
			--etcd-timeout-ms 300 "${common[@]}"
	else
		bad "etcd: a member over its quota raised NOSPACE ($nospace)"
	fi
	eport=$e2
}

# ZooKeeper: a persistent node per pair, its mzxid the version.  A private
# ensemble of three servers (as tests/contract/stores.py's: tickTime 500 ms),
# hard quotas enforced (a store unable to write), two of them stopped at
# the end (no quorum).  Nodes are made and deleted with the C client's
# cli_mt (another session), ACLs and quotas set with the Java zkCli.sh (one
# run: cli_mt has neither).
# zk_py CODE PORT...: python CODE with z, tests/contract/stores.py's
# ZooKeeper over the servers whose client ports are PORT... (its mode() and
# wait_up(): what a server says to "srvr").
zk_py() {
	local code=$1
	shift
	python3 -c 'import sys
sys.path.insert(0, "tests/contract")
import stores
z = stores.ZooKeeper(None, [])
z.cports = [int(p) for p in sys.argv[1:]]
z.m = [True] * len(z.cports)
'"$code" "$@"
}
zookeeper_store() {
	local i j t out hosts root key path store zc jc bad eph proxied refroot qroot cports=() peers=() zpids=()
	for i in 0 1 2; do
		cports+=("$(free_port)")
		peers+=("$(free_port):$(free_port)")
	done
	for i in 0 1 2; do
		mkdir -p "$tmp/zk$i/data"
		echo $((i + 1)) >"$tmp/zk$i/data/myid"
		{
			printf '%s\n' tickTime=500 initLimit=20 syncLimit=6 "dataDir=$tmp/zk$i/data" \
				"clientPort=${cports[i]}" clientPortAddress=127.0.0.1 admin.enableServer=false \
				4lw.commands.whitelist=srvr maxClientCnxns=0
			for j in 0 1 2; do echo "server.$((j + 1))=127.0.0.1:${peers[j]}"; done
		} >"$tmp/zk$i/zoo.cfg"
	done
	# start-foreground execs java: the pid is the server's.
	for i in 0 1 2; do
		JMXDISABLE=true ZOO_LOG_DIR="$tmp/zk$i" \
			JVMFLAGS="-Xmx96m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Dzookeeper.enforceQuota=true" \
			"$ZK_SERVER" start-foreground "$tmp/zk$i/zoo.cfg" >"$tmp/zk$i.log" 2>&1 &
		servers+=($!)
		zpids+=($!)
	done
	zk_py 'sys.exit(0 if z.wait_up(120) else 1)' "${cports[@]}" ||
		{ bad "the ZooKeeper ensemble did not elect a leader within 120 s"; return; }
	hosts=127.0.0.1:${cports[0]},127.0.0.1:${cports[1]},127.0.0.1:${cports[2]}
	root=/rc$cluster
	# The hooks' own variables, expanded when a hook runs (rec_contract.c sets them).
	# shellcheck disable=SC2016
	key='sfrc:'$cluster':worker:$SF_DC:$SF_W'
	path=$root/$key
	store=(--backend zookeeper --zookeeper-hosts "$hosts" --zookeeper-root "$root" --zookeeper-timeout-ms 800)
	zc="timeout 10 $ZK_CLI -h $hosts"
	# A node in a form the backend never writes: only a text too long; ZooKeeper
	# sets a node's versions itself.
	why="ZooKeeper sets a node's versions (its mzxid, its data version) itself: none can be written by hand"
	# shellcheck disable=SC2016
	bad='case $SF_CASE in long) '"$zc"' -c "create '"$path"'" >/dev/null 2>&1
			'"$zc"' -c "set '"$path"' sf2$(head -c 509 /dev/zero | tr "\\0" x)" 2>&1 | grep -q "rc = 0" ;;
		ver0|verlead|verbig|vertext) echo "'"$why"'"; exit 77 ;; *) exit 9 ;; esac'
	# 1.4.0's key: an ephemeral node of another session (a cli_mt of its own, its
	# stdin held open by a sleep: both stopped by pid at the end), its data DATA.
	cat >"$tmp/zk-eph.sh" <<-EOT
		#!/bin/bash
		# zk-eph.sh PATH DATA: PATH an ephemeral node holding DATA, answered within 10 s.
		n=\$(date +%s%N)
		mkfifo "$tmp/zk-eph.\$n.in" || exit 1
		sleep 60 >"$tmp/zk-eph.\$n.in" 2>/dev/null &
		echo \$! >"$tmp/zk-eph.\$n.pid"
		"$ZK_CLI" -h "$hosts" <"$tmp/zk-eph.\$n.in" >"$tmp/zk-eph.\$n.log" 2>&1 &
		echo \$! >>"$tmp/zk-eph.\$n.pid"
		printf 'create +e %s\nset %s %s\n' "\$1" "\$1" "\$2" >"$tmp/zk-eph.\$n.in"
		t=\$((\$(date +%s%3N) + 10000))
		until out=\$($zc -c "get \$1" 2>&1) && grep -q "ephemeralOwner = [1-9a-f]" <<<"\$out" &&
			grep -qxF "\$2" <<<"\$out"; do
			[ "\$(date +%s%3N)" -lt "\$t" ] || exit 1
			sleep 0.1
		done
	EOT
	eph="bash $tmp/zk-eph.sh $path"
	run basic 60 --hook-delete "$zc -c \"delete $path\" 2>&1 | grep -q 'rc = 0\$'" --hook-bad "$bad" \
		--hook-legacy "$eph host-a:0123456789abcdef0123456789abcdef" \
		--hook-legacy-record "$eph 'sf2 nonce=0000000000000001 beat=0 ttl=0 mark=00000000000000001000 owner=-'" \
		--limit-aba "ZooKeeper's compare names the node's data version, which a node deleted by hand, created again and written as often has again (docs/deployment-zookeeper.md, the record: excluded by \"no operator deletes a record while agents run\")" \
		-- "${store[@]}" "${common[@]}"

	na "$STORE noreplicas: ZooKeeper has no replica setting of its own; a write needs a quorum (quorum, below)"
	na "$STORE restart: ZooKeeper answers a write once a quorum has it in its fsynced log, so a restart keeps every zxid handed out; a restore of an older data directory is an operator's act, with the agents stopped"

	# Refused: a root this client may read but not create in (world:anyone:r),
	# its record of pair 0:0 readable by another digest user only.  Unable: a
	# root over its hard quota of 10 bytes (QuotaExceeded; reads answered).
	refroot=/rcref$cluster
	qroot=/rcq$cluster
	for i in "$refroot" "$refroot/sfrc:$cluster:worker:0:0" "$qroot"; do
		out=$($zc -c "create $i" 2>&1)
		grep -q "rc = 0" <<<"$out" || bad "zookeeper: create $i ($(tail -n 2 <<<"$out" | tr '\n' ' '))"
	done
	jc=$(printf '%s\n' "setquota -B 10 $qroot" \
		"setAcl $refroot/sfrc:$cluster:worker:0:0 digest:other:AAAAAAAAAAAAAAAAAAAAAAAAAAA=:cdrwa" \
		"setAcl $refroot world:anyone:r" "getAcl $refroot" quit |
		CLIENT_JVMFLAGS="-Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1" ZOO_LOG_DIR="$tmp" \
			timeout 60 "$ZK_JCLI" -server "$hosts" 2>&1)
	if grep -q "^: r$" <<<"$jc"; then
		run refused 20 --expect refused -- --backend zookeeper --zookeeper-hosts "$hosts" \
			--zookeeper-root "$refroot" --zookeeper-timeout-ms 800 "${common[@]}"
		run unable 20 --expect unable -- --backend zookeeper --zookeeper-hosts "$hosts" \
			--zookeeper-root "$qroot" --zookeeper-timeout-ms 800 "${common[@]}"
	else
		bad "zookeeper: zkCli.sh set an ACL and a quota ($(tail -n 3 <<<"$jc" | tr '\n' ' '))"
	fi

	# Faulty, through tests/contract/faultproxy.py in front of the first server:
	# garbage (a reply replaced by "?" and 16 bytes: a length prefix the agent's
	# relay cuts), a huge reply (a prefix of 256 MB, 2 MB sent), no reply (held).
	# The fault may cut the session's connection before a call is sent (a ping's
	# reply comes first): that call answers RS_UNABLE (no session), never RS_OK.
	start_proxy "${cports[0]}" zfp || return
	proxied=(--backend zookeeper --zookeeper-hosts "127.0.0.1:$pport" --zookeeper-root "$root"
		--zookeeper-timeout-ms 800)
	# The engine over a write whose reply is dropped after the store ran it (the
	# first request holding a record's text, "sf2 nonce=").
	run_faulty --unsent-unable 10000000 736632206e6f6e63653d "${proxied[@]}"

	# Quorum lost: two of the three stopped; the last serves no session.
	kill "${zpids[1]}" "${zpids[2]}"
	t=$(($(ms) + 20000))
	until zk_py 'sys.exit(0 if z.mode(0) is None else 1)' "${cports[0]}"; do
		[ "$(ms)" -lt "$t" ] || { bad "zookeeper: the last server still serves without a quorum"; return; }
		sleep 0.2
	done
	run quorum 20 --expect masterdown -- "${store[@]}" "${common[@]}"
}

# MySQL/MariaDB: the pair's row of 1.4.0's table with two more columns (rec,
# ver), the version from a counter row of the same table.  One private
# mariadbd (its data directory under $tmp, a free port on 127.0.0.1, root
# over its socket for the hooks), the table made first the 1.4.0 way
# (docs/snowflake-mysql.sql), so that the record's columns come from
# --init-store; users with the grants each run needs.
mysql_store() {
	local port sock d t store hook proxied u
	d=$tmp/mysql
	sock=$d/sock
	[ "${#sock}" -lt 100 ] || { bad "mysql: the socket path $sock is too long"; return; }
	mkdir -p "$d/tmp"
	if ! timeout 180 mariadb-install-db --no-defaults --datadir="$d/data" --tmpdir="$d/tmp" --user="$(id -un)" \
		--auth-root-authentication-method=normal --skip-test-db --innodb-log-file-size=8M >"$d/install.log" 2>&1; then
		tail -n 20 "$d/install.log"
		bad "mariadb-install-db"
		return
	fi
	port=$(free_port)
	mariadbd --no-defaults --datadir="$d/data" --tmpdir="$d/tmp" --user="$(id -un)" --bind-address=127.0.0.1 \
		--port="$port" --socket="$sock" --pid-file="$d/pid" --skip-name-resolve --innodb-buffer-pool-size=32M \
		--innodb-log-file-size=8M --innodb-flush-log-at-trx-commit=1 --default-time-zone=+05:00 \
		--log-error="$d/err" >/dev/null 2>&1 &
	servers+=($!)
	q() { timeout 10 mariadb --no-defaults -S "$sock" -uroot -N -B "$@"; }
	t=$(($(ms) + 30000))
	until q -e 'SELECT 1' >/dev/null 2>&1; do
		[ "$(ms)" -lt "$t" ] || { tail -n 20 "$d/err"; bad "mariadbd did not answer within 30 s"; return; }
		sleep 0.1
	done
	# 1.4.0's table, a row of 1.4.0's of another cluster in it (kept as it is), the users.
	if ! q -e "CREATE DATABASE snowflake; USE snowflake; SOURCE $ROOT/docs/snowflake-mysql.sql;
		INSERT INTO snowflake_lease (prefix, cluster, datacenter, worker, owner, expiry, mark)
			VALUES ('sfrc', 'other$cluster', 0, 0, 'host-b:0123', '2999-01-01', 1234);
		CREATE USER sfrc@'127.0.0.1' IDENTIFIED BY 'pw';
		GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER ON snowflake.* TO sfrc@'127.0.0.1';
		CREATE USER sfcol@'127.0.0.1' IDENTIFIED BY 'pw';
		GRANT SELECT (prefix, cluster, datacenter, worker, owner, expiry, mark),
			INSERT (prefix, cluster, datacenter, worker, owner, expiry, mark),
			UPDATE (owner, expiry, mark) ON snowflake.snowflake_lease TO sfcol@'127.0.0.1';
		CREATE USER sfsel@'127.0.0.1' IDENTIFIED BY 'pw';
		GRANT SELECT, INSERT ON snowflake.* TO sfsel@'127.0.0.1'"; then
		bad "mysql: the schema and the users"
		return
	fi
	printf 'mysql-password = pw\n' >"$d/agent.conf"
	# mysql-timeout-ms 800: a MariaDB commit is an fsync, slow on a loaded host (the
	# contract lane runs beside others); the faults below end a call by its timeout.
	store=(--config "$d/agent.conf" --backend mysql --mysql-host 127.0.0.1 --mysql-port "$port"
		--mysql-timeout-ms 800)

	# The hooks: one script, root over the socket, the pair in SF_DC, SF_W.
	cat >"$d/hook.sh" <<-EOT
	#!/bin/bash
	q() { timeout 5 mariadb --no-defaults -S "$sock" -uroot -N -B snowflake -e "\$1"; }
	cols="(prefix, cluster, datacenter, worker, owner, expiry, mark, rec, ver)"
	vals="'sfrc', '$cluster', \$SF_DC, \$SF_W"
	rec="sf2 nonce=0000000000000001 beat=0 ttl=0 mark=00000000000000001000 owner=-"
	own="host-a:0123456789abcdef0123456789abcdef"
	case \$1 in
	delete) [ "\$(q "DELETE FROM snowflake_lease WHERE prefix = 'sfrc' AND cluster = '$cluster' AND datacenter = \$SF_DC AND worker = \$SF_W; SELECT ROW_COUNT()")" = 1 ] ;;
	legacy) q "INSERT INTO snowflake_lease \$cols VALUES (\$vals, '\$own', UTC_TIMESTAMP(6) + INTERVAL 60 SECOND, 1000, NULL, NULL)" ;;
	legacy-record) q "INSERT INTO snowflake_lease \$cols VALUES (\$vals, '\$own', UTC_TIMESTAMP(6) + INTERVAL 60 SECOND, 1000, '\$rec', 5)" ;;
	legacy-expired) q "INSERT INTO snowflake_lease \$cols VALUES (\$vals, '\$own', UTC_TIMESTAMP(6) - INTERVAL 1 SECOND, 1000, NULL, NULL)" ;;
	# 1.4.0's renewal (mysql.c renew_batch()) of that holder: exit 0 when it matched no row.
	legacy-late) [ "\$(q "UPDATE snowflake_lease SET expiry = UTC_TIMESTAMP(6) + INTERVAL 2 SECOND, mark = GREATEST(mark, 2000) WHERE prefix = 'sfrc' AND cluster = '$cluster' AND datacenter = \$SF_DC AND worker = \$SF_W AND owner = '\$own'; SELECT ROW_COUNT()")" = 0 ] ;;
	bad) case \$SF_CASE in
		long) echo "the rec column is VARBINARY(511) (checked at every connection): the server holds no longer text"; exit 77 ;;
		verlead|vertext) echo "ver is a BIGINT UNSIGNED column (checked at every connection): the server holds a number, not its text"; exit 77 ;;
		ver0) v=0 ;;
		verbig) v=9223372036854775808 ;;
		*) exit 9 ;;
		esac
		q "INSERT INTO snowflake_lease \$cols VALUES (\$vals, '', '9999-12-31 23:59:59.999999', 0, '\$rec', \$v)" ;;
	free) sed -e "s/'snowflake', 'orders'/'sfrc', '$cluster'/" \
		-e "s/prefix = 'snowflake' AND cluster = 'orders' AND datacenter = 1 AND worker = 7/prefix = 'sfrc' AND cluster = '$cluster' AND datacenter = \$SF_DC AND worker = \$SF_W/" \
		"$d/free.sql" >"$d/free.\$\$.sql" && grep -q "worker = \$SF_W AND" "$d/free.\$\$.sql" &&
		q "SOURCE $d/free.\$\$.sql" ;;
	*) exit 9 ;;
	esac
	EOT
	hook="bash $d/hook.sh"
	# The guide's emergency procedure, as written there.
	sed -n '/<!-- rec-free-by-hand/,/^```$/p' docs/deployment-mysql.md | sed '1,2d;$d' >"$d/free.sql"
	[ -s "$d/free.sql" ] || bad "mysql: the emergency procedure of docs/deployment-mysql.md not found"

	# 1.4.0's table, without the record's columns: the store cannot hold records (said).
	run noschema 20 --expect noschema -- "${store[@]}" --mysql-user sfrc "${common[@]}"
	check "mysql noschema: said as event=mysql_no_record_columns" grep -q "event=mysql_no_record_columns" "$tmp/mysql.noschema.log"
	# --init-store adds them (an instant ALTER); then every scenario.
	run basic 60 --hook-delete "$hook delete" --hook-bad "$hook bad" --hook-legacy "$hook legacy" \
		--hook-legacy-record "$hook legacy-record" --hook-legacy-expired "$hook legacy-expired" \
		--hook-legacy-late "$hook legacy-late" --hook-free "$hook free" \
		-- "${store[@]}" --mysql-user sfrc "${common[@]}" --init-store
	check "mysql basic: --init-store added the record's columns (event=mysql_record_columns_added)" \
		grep -q "event=mysql_record_columns_added" "$tmp/mysql.basic.log"
	# The guide's ALTER, as written there, on another 1.4.0 table: the columns --init-store made.
	sed -n '/^ALTER TABLE snowflake_lease ADD COLUMN rec/p' docs/deployment-mysql.md | sed 's/snowflake_lease/doc_lease/' >"$d/alter.sql"
	u="SELECT GROUP_CONCAT(CONCAT_WS(' ', COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, ORDINAL_POSITION) ORDER BY ORDINAL_POSITION) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'snowflake' AND TABLE_NAME"
	q snowflake -e "CREATE TABLE doc_lease LIKE snowflake_lease; ALTER TABLE doc_lease DROP COLUMN rec, DROP COLUMN ver; SOURCE $d/alter.sql;" ||
		bad "mysql: the ALTER of docs/deployment-mysql.md ($(cat "$d/alter.sql"))"
	t=$(q -e "$u = 'snowflake_lease'")
	check "mysql: the ALTER of docs/deployment-mysql.md makes the columns --init-store made (${t##*,owner})" \
		test "${t##*rec varbinary(511) YES NULL 8,ver bigint(20) unsigned YES NULL 9}" = "" -a "$(q -e "$u = 'doc_lease'")" = "$t"
	u=$(q snowflake -e "SELECT owner, expiry, mark, rec IS NULL, ver IS NULL FROM snowflake_lease WHERE cluster = 'other$cluster'" 2>&1)
	check "mysql basic: 1.4.0's row of another cluster kept as it was ($u)" test "$u" = "$(printf 'host-b:0123\t2999-01-01 00:00:00.000000\t1234\t1\t1')"
	u=$(q snowflake -e "SELECT (SELECT ver FROM snowflake_lease WHERE cluster = '$cluster' AND datacenter = 4294967295 AND worker = 4294967295) >= MAX(ver), COUNT(*) FROM snowflake_lease WHERE cluster = '$cluster' AND worker < 4294967295" 2>&1)
	check "mysql basic: the counter row is at or above every record's version ($u)" test "${u%%$'\t'*}" = 1
	# A 1.4.0 agent (this one's 1.4.0 backend, ag_mysql_ops) beside the record of pair
	# 0:3 that the engine gave back: it never claims a record row (expiry 9999-12-31).
	u=$(q snowflake -e "SELECT rec FROM snowflake_lease WHERE cluster = '$cluster' AND datacenter = 0 AND worker = 3" 2>&1)
	"$AGENT" "${store[@]}" --mysql-user sfrc --prefix sfrc --cluster "$cluster" --datacenter-ids 0-0 \
		--worker-ids 3-3 --ttl-ms 1500 --renew-ms 300 --margin-ms 300 --owner old --dry-run 2>"$d/old.log" &
	agent_pids[0]=$!
	sleep 3
	kill -TERM "${agent_pids[0]}" 2>/dev/null
	wait "${agent_pids[0]}" 2>/dev/null
	agent_pids[0]=
	# shellcheck disable=SC2016 # expanded by the inner bash
	check "mysql: a 1.4.0 agent never claims a record's row (${u:0:40}...: $(grep -c 'event=claimed' "$d/old.log") claims)" \
		bash -c '[ "${1#sf2 }" != "$1" ] && ! grep -q "event=claimed" "$2" && grep -q "event=start" "$2"' _ "$u" "$d/old.log"

	# Refused: grants of 1.4.0's columns only (the record's neither read nor written) ...
	run refused 20 --expect refused -- "${store[@]}" --mysql-user sfcol "${common[@]}"
	# ... a user without UPDATE on the table, then one without UPDATE on rec and ver.
	run refusedcas 20 --expect refusedcas -- "${store[@]}" --mysql-user sfsel "${common[@]}"
	q -e "CREATE USER sfcolw@'127.0.0.1' IDENTIFIED BY 'pw'; GRANT SELECT ON snowflake.* TO sfcolw@'127.0.0.1';
		GRANT INSERT, UPDATE (owner, expiry, mark) ON snowflake.snowflake_lease TO sfcolw@'127.0.0.1'" ||
		bad "mysql: the user sfcolw"
	STORE=mysql-column run refusedcas 20 --expect refusedcas -- "${store[@]}" --mysql-user sfcolw "${common[@]}"

	# Unable: the server read-only (a replica, a failover under way): reads answer.
	q -e "SET GLOBAL read_only = 1"
	run unable 20 --expect unable -- "${store[@]}" --mysql-user sfrc "${common[@]}"
	q -e "SET GLOBAL read_only = 0"
	# ... the counter row locked by another session for 3 s: the cas's lock wait ends
	# by innodb_lock_wait_timeout (1 s, the agent's session), before mysql-timeout-ms
	# (2000 here, with a TTL of 3000 for it to fit).
	q snowflake -e "START TRANSACTION; SELECT ver FROM snowflake_lease WHERE prefix = 'sfrc' AND cluster = '$cluster'
		AND datacenter = 4294967295 AND worker = 4294967295 FOR UPDATE; DO SLEEP(3); COMMIT" >"$d/lock.log" 2>&1 &
	u=$!
	sleep 0.5
	STORE=mysql-lockwait run unable 20 --expect unable -- "${store[@]}" --mysql-user sfrc "${common[@]}" \
		--ttl-ms 3000 --mysql-timeout-ms 2000
	wait "$u" || bad "mysql: the session holding the counter row's lock ($(cat "$d/lock.log"))"
	na "$STORE noreplicas: MariaDB has no refusal of a write for too few replicas (semi-synchronous replication waits, then commits)"
	na "$STORE masterdown: a MariaDB replica whose primary is away still answers reads (read-only: unable)"
	na "$STORE restart: InnoDB answers a commit once its redo log is flushed (innodb_flush_log_at_trx_commit = 1, checked at every connection: G5), so a restart keeps the counter and every version handed out; a restore from a backup is an operator's act, with the agents stopped"

	# Faulty, through tests/contract/faultproxy.py: garbage (a reply replaced by "?"
	# and 16 bytes), a huge reply (a packet of 3 MB announced, 2 MB sent: above
	# the client's 1 MiB packet limit), no reply (held).
	start_proxy "$port" myfp || return
	proxied=(--config "$d/agent.conf" --backend mysql --mysql-host 127.0.0.1 --mysql-port "$pport"
		--mysql-timeout-ms 800 --mysql-user sfrc)
	# The engine over a write whose reply is dropped after the server ran it: the
	# first request holding a record's text, sent as a hex literal ("sf2 nonce=").
	run_faulty c0c62d01 "$(printf 736632206e6f6e63653d | od -An -tx1 | tr -d ' \n')" "${proxied[@]}"
}

for STORE in "${STORES[@]}"; do
	echo "==== $STORE ===="
	case $STORE in
	redis) redis_store ;;
	etcd) etcd_store ;;
	zookeeper) zookeeper_store ;;
	mysql) mysql_store ;;
	esac
done
[ "$n_na" -eq 0 ] || echo "$NAME: $n_na n/a (the lines \"n/a\" above: what the store cannot have)"
[ "$n_limit" -eq 0 ] || echo "$NAME: $n_limit limit (the lines \"limit\" above: what a store's documentation says it does not exclude)"
finish
