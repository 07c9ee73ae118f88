#!/bin/bash
# snowflake-agent with backend = mysql against a real mariadbd on 127.0.0.1
# (its own data directory and a random free port; Debian's MariaDB 10.11),
# agents in --dry-run (no device):
#   - --init-store creates the database, the table and one row per pair;
#     the table is the one of docs/snowflake-mysql.sql
#   - 8 agents for 8 pairs: all distinct, each row holds its agent's owner
#     and an expiry in the future on the SERVER's clock (at most one TTL);
#     the row's mark is at or above its holder's ceiling
#   - SIGTERM releases (expiry in the past, the owner kept); kill -9: the
#     row stays held until its expiry, then another agent claims it
#   - clear errors: a wrong password, a user without UPDATE (exit 4); no
#     table, no database (event=mysql_no_schema, nothing claimed, exit 0
#     on SIGTERM); a table that is not InnoDB (exit 5); a table that is not
#     the agent's (exit 2); a port without a server (event=mysql_down); a
#     server that never answers: the connection given up after
#     mysql-timeout-ms
#   - a read-only server (a replica, a failover): renewals refused, every
#     agent fences; writable again: they serve again
#   - every history, judged by tests/lease/check.py
# The scenarios every store shares (one free pair raced for, the server
# stopped or killed and restarted, leases cleared, rows deleted, a clock
# behind, --init-store never lowering, ...) are the contract suite's
# (tests/contract/, MIGRATION.md there).
# The guest: the stage agent-guest, tests/agent-guest/run.sh mysql.  Run by
# tests/contract/run.sh.  Prints "agent-mysql: N passed, M failed".
set -uo pipefail
NAME=agent-mysql
# shellcheck source=tests/contract/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TTL=2000
MTO=300	# mysql-timeout-ms

need_cmds ": mariadb-server" mariadbd mariadb mariadb-install-db python3
echo "==== building snowflake-agent ===="
build_agent
if "$AGENT" --config /dev/null --backend mysql --dry-run --init-store 2>&1 | grep -q "built without it"; then
	bad "snowflake-agent was built without MySQL (libmariadb-dev missing: scripts/deps.sh)"
	finish
fi

make_tmp agent-mysql-test
my_pid=
# shellcheck disable=SC2317 # called by the EXIT trap (tests/contract/lib.sh)
cleanup_pids() { echo "$my_pid ${silent_pid:-}"; }
port=$(free_port)
SOCK=$tmp/mysql.sock
# root over the server's socket: the operator's and the test's view.
sql() { mariadb --no-defaults -S "$SOCK" -uroot -N -B -e "$*"; }

# The server's time zone is not UTC (+05:00): the agent's times are
# UTC_TIMESTAMP(6), whatever the session's zone (an agent using NOW() would
# write expiries 5 hours ahead, which the checks below see).
start_mysql() {
	local i
	mariadbd --no-defaults --datadir="$tmp/data" --user="$(id -un)" --bind-address=127.0.0.1 \
		--default-time-zone=+05:00 \
		--port="$port" --socket="$SOCK" --pid-file="$tmp/mysql.pid" --skip-name-resolve \
		--innodb-buffer-pool-size=32M --innodb-log-file-size=8M \
		--log-error="$tmp/mariadbd.err" >/dev/null 2>&1 &
	my_pid=$!
	for i in $(seq 300); do
		sql 'SELECT 1' >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

echo "==== configuration ===="
cat >"$tmp/cfg.conf" <<EOF
backend = mysql
mysql-host = db.example
mysql-port = 3307
mysql-user = ids
mysql-password = s3cret
mysql-database = idsdb
mysql-table = leases_v1
mysql-timeout-ms = 250
EOF
out=$("$AGENT" --config "$tmp/cfg.conf" --print-config 2>&1)
check "the mysql keys from a file: backend, host, port, user, database, table, timeout; the password shown as (set)" \
	bash -c 'for l in "backend = mysql" "mysql-host = db.example" "mysql-port = 3307" "mysql-user = ids" "mysql-password = (set)" "mysql-database = idsdb" "mysql-table = leases_v1" "mysql-timeout-ms = 250"; do grep -qxF "$l" <<<"$1" || exit 1; done; ! grep -q s3cret <<<"$1"' _ "$out"
out=$("$AGENT" --config "$tmp/cfg.conf" --mysql-port 3308 --print-config 2>&1)
check "the command line wins over the file (mysql-port 3308)" grep -qxF "mysql-port = 3308" <<<"$out"
bad_rc=0
for v in "--mysql-port=0" "--mysql-port=70000" "--mysql-timeout-ms=5" "--mysql-table=a;b" "--mysql-table=a\`b" "--mysql-database=" "--mysql-user="; do
	"$AGENT" --config /dev/null --backend mysql "$v" --print-config >/dev/null 2>&1
	rc=$?
	[ "$rc" = 2 ] || { echo "  $v: exit $rc, not 2"; bad_rc=1; }
done
check "bad mysql values exit 2 (port 0 and 70000, timeout 5, table a;b and a\`b, no database, no user)" test "$bad_rc" = 0
out=$("$AGENT" --config /dev/null --backend mysql --mysql-timeout-ms 3000 --ttl-ms 3000 --print-config 2>&1)
check "renew-ms + mysql-timeout-ms must fit the lease: exit 2 naming mysql-timeout-ms" grep -q "mysql-timeout-ms 3000 must be below" <<<"$out"

echo "==== mariadbd on 127.0.0.1:$port ===="
if ! mariadb-install-db --no-defaults --datadir="$tmp/data" --user="$(id -un)" \
	--auth-root-authentication-method=normal --skip-test-db --innodb-log-file-size=8M \
	>"$tmp/install-db.log" 2>&1; then
	tail -n 20 "$tmp/install-db.log"
	bad "mariadb-install-db"
	finish
fi
if start_mysql; then
	ok "mariadbd $(sql 'SELECT VERSION()') started"
else
	tail -n 20 "$tmp/mariadbd.err"
	bad "mariadbd did not start"
	finish
fi
# The agents' user and the operator's --init-store user (docs/deployment-mysql.md).
sql "CREATE USER 'sfagent'@'127.0.0.1' IDENTIFIED BY 'agentpw';
     GRANT SELECT, UPDATE ON sfdb.* TO 'sfagent'@'127.0.0.1';
     CREATE USER 'sfadmin'@'127.0.0.1' IDENTIFIED BY 'adminpw';
     GRANT CREATE, SELECT, INSERT, UPDATE ON sfdb.* TO 'sfadmin'@'127.0.0.1';
     GRANT ALL ON sfnodb.* TO 'sfagent'@'127.0.0.1';
     CREATE USER 'sfro'@'127.0.0.1' IDENTIFIED BY 'ropw';
     GRANT SELECT ON sfdb.* TO 'sfro'@'127.0.0.1'" || bad "creating the users"
printf 'mysql-password = agentpw\n' >"$tmp/agent.conf"
printf 'mysql-password = adminpw\n' >"$tmp/admin.conf"

HIST=$tmp/history
flags=(--backend mysql --mysql-host 127.0.0.1 --mysql-port "$port" --mysql-database sfdb
	--mysql-timeout-ms "$MTO" --ttl-ms "$TTL" --prefix sftest --cluster c1
	--datacenter-ids 0 --worker-ids 0-7 --dry-run --log-level debug --history "$HIST")
aflags=(--config "$tmp/agent.conf" --mysql-user sfagent "${flags[@]}")
# shellcheck disable=SC2120 # its callers now pass none
init_space() { # --init-store as sfadmin, with the agents' flags and more
	"$AGENT" --config "$tmp/admin.conf" --mysql-user sfadmin "${flags[@]}" "$@" --init-store \
		2>>"$tmp/init.log"
}

# start_agent I FLAGS...: agent I in the background, log $tmp/agent.I.log.
start_agent() {
	local i=$1
	shift
	"$AGENT" "${aflags[@]}" --state-file "$tmp/state.$i" "$@" 2>>"$tmp/agent.$i.log" &
	agent_pids[i]=$!
}
stop_agent() { # stop_agent I: SIGTERM; its exit status
	local rc
	kill -TERM "${agent_pids[$1]}"
	wait "${agent_pids[$1]}"
	rc=$?
	agent_pids[$1]=
	return $rc
}
# wait_all PATTERN SECONDS AGENTS...: each agent's log after its offset
# (off[I]) has PATTERN.
wait_all() {
	local pat=$1 secs=$2 i deadline missing
	shift 2
	deadline=$(($(ms) + secs * 1000))
	while :; do
		missing=()
		for i in "$@"; do
			grep -q -- "$pat" <(tail -c +"$((off[i] + 1))" "$tmp/agent.$i.log") || missing+=("$i")
		done
		[ "${#missing[@]}" -eq 0 ] && return 0
		[ "$(ms)" -ge "$deadline" ] && { echo "  never '$pat': agents ${missing[*]}"; return 1; }
		sleep 0.05
	done
}
T=sfdb.snowflake_lease
row() { # row DC W COLUMNS: the pair's columns in key space sftest:c1
	sql "SELECT $3 FROM $T WHERE prefix = 'sftest' AND cluster = 'c1' AND datacenter = $1 AND worker = $2"
}

echo "==== --init-store ===="
init_space || bad "--init-store: $(tail -n1 "$tmp/init.log")"
check "--init-store: the database, the table and 8 rows with mark 0 ($(grep -o 'created=[0-9]* present=[0-9]*' "$tmp/init.log" | tail -n1))" \
	test "$(sql "SELECT COUNT(*), SUM(mark), SUM(owner = '') FROM $T")" = "$(printf '8\t0\t8')"
sql "CREATE DATABASE sfdoc; USE sfdoc; SOURCE $ROOT/docs/snowflake-mysql.sql;" || bad "docs/snowflake-mysql.sql does not load"
check "the agent's table is the one of docs/snowflake-mysql.sql" \
	test "$(sql 'SHOW CREATE TABLE sfdb.snowflake_lease' | cut -f2)" = "$(sql 'SHOW CREATE TABLE sfdoc.snowflake_lease' | cut -f2)"

echo "==== 8 agents for 8 pairs ===="
for i in $(seq 0 7); do start_agent "$i"; done
off=()
for i in $(seq 0 7); do off[i]=0; done
wait_all "event=unfenced" 20 $(seq 0 7) || bad "8 agents: not all served"
declare -A seen=()
dup=0 rows_ok=0
for i in $(seq 0 7); do
	p=$(claimed_pair "$i")
	[ -n "$p" ] && [ -n "${seen[$p]:-}" ] && dup=$((dup + 1))
	seen[$p]=$i
	[ -n "$p" ] && [ "$(row "${p%:*}" "${p#*:}" owner)" = "$(owner_of "$i")" ] && rows_ok=$((rows_ok + 1))
done
check "8 agents hold 8 distinct pairs (${#seen[@]} pairs, $dup doubled), each row holds its agent's owner ($rows_ok of 8)" \
	test "${#seen[@]}" = 8 -a "$dup" = 0 -a "$rows_ok" = 8
left=$(sql "SELECT MIN(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expiry)), MAX(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expiry)) FROM $T")
check "every expiry is ahead of the server's clock by at most one TTL (${left/$'\t'/..} us)" \
	bash -c 'read -r lo hi <<<"$1"; [ "$lo" -gt 0 ] && [ "$hi" -le $(($2 * 1000)) ]' _ "$left" "$TTL"
p4=$(claimed_pair 4)
ceil=$(sed -n 's/.*event=unfenced.*ceiling_ms=\([0-9]*\).*/\1/p' "$tmp/agent.4.log" | tail -n1)
mk=$(row "${p4%:*}" "${p4#*:}" mark)
check "the row's mark is at or above its holder's ceiling (mark $mk, ceiling $ceil)" \
	bash -c '[ -n "$2" ] && [ "$1" -ge "$2" ]' _ "$mk" "$ceil"

echo "==== SIGTERM releases; kill -9 holds until the expiry ===="
p3=$(claimed_pair 3) o3=$(owner_of 3)
stop_agent 3
rc=$?
check "SIGTERM: exit $rc, the row released (expiry in the past, owner kept)" \
	bash -c '[ "$1" = 0 ] && [ "$2" = 1 ] && [ "$3" = "$4" ]' _ "$rc" \
	"$(row "${p3%:*}" "${p3#*:}" 'expiry < UTC_TIMESTAMP(6)')" "$(row "${p3%:*}" "${p3#*:}" owner)" "$o3"
off[3]=$(size_of 3)
start_agent 3
wait_one 3 "event=unfenced" 15 "${off[3]}" || bad "restart: agent 3 never served"
check "a restart claims the same pair again (the state file: $(claimed_pair 3 "${off[3]}"))" test "$(claimed_pair 3 "${off[3]}")" = "$p3"
p5=$(claimed_pair 5) o5=$(owner_of 5)
kill -KILL "${agent_pids[5]}"
wait "${agent_pids[5]}" 2>/dev/null
agent_pids[5]=
t_kill=$(ms)
check "kill -9: the row still holds the owner, its expiry ahead" \
	test "$(row "${p5%:*}" "${p5#*:}" "owner = '$o5' AND expiry > UTC_TIMESTAMP(6)")" = 1
# A new agent (no state file, the pool full but for the dead one's pair).
off[8]=0
start_agent 8 --state-file ''
wait_one 8 "event=claimed" 15 || bad "agent 8 never claimed the dead agent's pair"
t_claim=$(ms)
# Its row's expiry is its last renewal + TTL, and that renewal came at most
# renew-ms (TTL/3) before the kill: the claim not before TTL - renew-ms.
check "the dead agent's pair ($p5) taken by another after its expiry ($((t_claim - t_kill)) ms after the kill, TTL $TTL, renew $((TTL / 3)))" \
	bash -c '[ "$1" = "$2" ] && [ "$3" -ge $(($4 - $4 / 3)) ]' _ "$(claimed_pair 8)" "$p5" "$((t_claim - t_kill))" "$TTL"

echo "==== clear errors ===="
rc=$(run_bounded 5 "$tmp/e1.log" "$AGENT" --config /dev/null --mysql-user sfagent --mysql-password wrong "${flags[@]}")
check "a wrong password: exit 4 ($rc: $(grep -o 'event=mysql_auth_failed.*' "$tmp/e1.log" | cut -c1-110))" \
	bash -c '[ "$1" = 4 ] && grep -q "event=mysql_auth_failed.*Access denied" "$2"' _ "$rc" "$tmp/e1.log"
printf 'mysql-password = ropw\n' >"$tmp/ro.conf"
rc=$(run_bounded 5 "$tmp/e2.log" "$AGENT" --config "$tmp/ro.conf" --mysql-user sfro "${flags[@]}" --state-file '')
check "a user without UPDATE: exit 4 ($rc: $(grep -o 'event=mysql_auth_failed.*' "$tmp/e2.log" | cut -c1-110))" \
	bash -c '[ "$1" = 4 ] && grep -q "event=mysql_auth_failed.*UPDATE command denied" "$2"' _ "$rc" "$tmp/e2.log"
for what in table database; do
	if [ "$what" = table ]; then extra=(--mysql-table nosuch); else extra=(--mysql-database sfnodb); fi
	"$AGENT" "${aflags[@]}" "${extra[@]}" --state-file '' 2>"$tmp/e3.log" &
	agent_pids[20]=$!
	sleep 1.5
	stop_agent 20
	rc=$?
	check "no $what: event=mysql_no_schema naming --init-store, nothing claimed, exit $rc on SIGTERM" \
		bash -c '[ "$1" = 0 ] && grep -q "event=mysql_no_schema.*--init-store" "$2" && ! grep -q "event=claimed" "$2"' _ "$rc" "$tmp/e3.log"
done
sql "CREATE TABLE sfdb.myisam LIKE sfdb.snowflake_lease; ALTER TABLE sfdb.myisam ENGINE=MyISAM;
     CREATE TABLE sfdb.other (id INT PRIMARY KEY) ENGINE=InnoDB"
rc=$(run_bounded 5 "$tmp/e4.log" "$AGENT" "${aflags[@]}" --mysql-table myisam --state-file '')
check "a MyISAM table: exit 5 ($rc: $(grep -o 'event=mysql_unsafe.*' "$tmp/e4.log" | cut -c1-100))" \
	bash -c '[ "$1" = 5 ] && grep -q "event=mysql_unsafe.*not InnoDB" "$2"' _ "$rc" "$tmp/e4.log"
rc=$(run_bounded 5 "$tmp/e5.log" "$AGENT" "${aflags[@]}" --mysql-table other --state-file '')
check "a table that is not the agent's: exit 2 ($rc: $(grep -o 'event=mysql_bad_schema.*' "$tmp/e5.log" | cut -c1-100))" \
	bash -c '[ "$1" = 2 ] && grep -q "event=mysql_bad_schema" "$2"' _ "$rc" "$tmp/e5.log"
rc=$(run_bounded 5 "$tmp/e6.log" "$AGENT" "${aflags[@]}" --mysql-table 'a;b' --state-file '')
check "a table name that is no identifier: exit 2 ($rc)" test "$rc" = 2
deadport=$(free_port)
"$AGENT" "${aflags[@]}" --mysql-port "$deadport" --state-file '' 2>"$tmp/e7.log" &
agent_pids[21]=$!
sleep 1
stop_agent 21
rc=$?
check "no server on the port: event=mysql_down, nothing claimed, exit $rc on SIGTERM" \
	bash -c '[ "$1" = 0 ] && grep -q "event=mysql_down.*Can.t connect" "$2" && ! grep -q "event=claimed" "$2"' _ "$rc" "$tmp/e7.log"
# A server that accepts connections and never says a word: every call
# ends within mysql-timeout-ms (the non-blocking API, our own poll).
silent=$(free_port)
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
conns = []
end = time.monotonic() + 30
while time.monotonic() < end:
    s.settimeout(0.5)
    try:
        conns.append(s.accept()[0])
    except socket.timeout:
        pass
' "$silent" &
silent_pid=$!
for _ in $(seq 100); do
	python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2)' "$silent" 2>/dev/null && break
	sleep 0.1
done
: >"$tmp/agent.22.log"
t0=$(ms)
start_agent 22 --mysql-port "$silent" --state-file ''
wait_one 22 "event=mysql_down" 5
t1=$(ms)
sleep 1
stop_agent 22
rc=$?
t2=$(ms)
check "a server that never answers: the connection given up after mysql-timeout-ms ($((t1 - t0)) ms, timeout $MTO), nothing claimed, SIGTERM: exit $rc in $((t2 - t1 - 1000)) ms" \
	bash -c '[ "$1" = 0 ] && [ "$2" -lt $(($3 + 1000)) ] && [ "$2" -ge "$3" ] && grep -q "event=mysql_down.*connecting took longer" "$4" && ! grep -q "event=claimed" "$4"' \
	_ "$rc" "$((t1 - t0))" "$MTO" "$tmp/agent.22.log"
kill "$silent_pid" 2>/dev/null
wait "$silent_pid" 2>/dev/null
silent_pid=

ALL=(0 1 2 3 4 6 7 8)	# 5 was killed, 8 took its pair
declare -A before=()
snapshot() { # the pairs held now, and the log offsets
	local i
	for i in "${ALL[@]}"; do
		before[$i]=$(claimed_pair "$i")
		off[i]=$(size_of "$i")
	done
}
same_pairs() { # every agent claimed its previous pair again after its offset
	local i n=0
	for i in "${ALL[@]}"; do
		[ "$(claimed_pair "$i" "${off[i]}")" = "${before[$i]}" ] && n=$((n + 1))
	done
	echo "$n"
}

echo "==== a read-only server ===="
snapshot
sql "SET GLOBAL read_only = 1"
t_ro=$(ms)
if wait_all "event=fenced" $((TTL * 3 / 1000 + 2)) "${ALL[@]}"; then
	ok "read_only = 1: every agent fenced ($(($(ms) - t_ro)) ms)"
else
	bad "read_only = 1: every agent fenced"
fi
check "read_only = 1: the agents said why (a read-only server)" \
	grep -q "read-only server" "$tmp/agent.0.log"
sql "SET GLOBAL read_only = 0"
if wait_all "event=unfenced" 20 "${ALL[@]}"; then ok "read_only = 0: every agent serves again"; else bad "read_only = 0: every agent serves again"; fi

echo "==== stopping every agent ===="
rcs=0
for i in "${ALL[@]}"; do stop_agent "$i" || rcs=$((rcs + 1)); done
check "every agent exited 0 on SIGTERM" test "$rcs" = 0
held=$(sql "SELECT COUNT(*) FROM $T WHERE cluster = 'c1' AND expiry > UTC_TIMESTAMP(6)")
check "no lease is left held ($held)" test "$held" = 0

echo "==== the history of every agent of this run ===="
python3 "$ROOT/tests/lease/check.py" --label agent-mysql "$HIST" >"$tmp/check.out" 2>&1
crc=$?
cat "$tmp/check.out"
check "lease-check: no two owners ever held one pair at once, nor stamped one timestamp" test "$crc" -eq 0
echo "figures: mysql: 8 agents, TTL $TTL ms; $(grep -o '[0-9]* intervals' "$tmp/check.out" | head -n1), $(grep -o '[0-9]* overlaps, [0-9]* timestamp overlaps' "$tmp/check.out" | head -n1)"

finish
