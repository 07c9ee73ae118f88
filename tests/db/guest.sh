#!/bin/bash
# In the Debian 13 root of tests/db/run.sh (PostgreSQL 17, MariaDB 11.8,
# the snowflake packages and postgresql-17-snowflake,
# mariadb-plugin-snowflake installed with apt), booted with systemd as PID 1:
# the database functions on the real module.  Every result is a console line
# "SFDB ok|notok WHAT" (details "SFDB # ..."), then "SFDB done" and a
# poweroff.
#
# The module is loaded by snowflake-floor.service with strict=1
# (/etc/modprobe.d/sfdb-test.conf): it refuses IDs until a worker id is
# assigned, which the first checks use (ENOTCONN); then
# `snowflake config --worker 1` assigns one, as an agent would.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_PAGER='' SYSTEMD_COLORS=0 LC_ALL=C.UTF-8

TAG=SFDB T_OUT=/tmp/sfdb.out
# say, t, info, until_ok
# shellcheck source=tests/deb/guest-lib.sh
. /usr/local/lib/sf-guest-lib.sh
SHARE=/usr/local/share/sf-db
ROWS=$(cat $SHARE/rows)
PGV=$(cat $SHARE/pg)
export PGV
PG_CONFIG=/usr/lib/postgresql/$PGV/bin/pg_config

# psql as postgres, quiet, unaligned, stop at the first error.
pg() { runuser -u postgres -- psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
# my: the MariaDB client as root (unix socket authentication).
my() { mariadb -N -B "$@"; }
# pg_state SQL: the SQLSTATE, message and hint of SQL's error (psql's
# verbose form), or "no error".
pg_err() {
	local out
	if out=$(runuser -u postgres -- psql -X -q -A -t -v VERBOSITY=verbose -v ON_ERROR_STOP=1 \
		-d "${DB:-postgres}" -c "$1" 2>&1); then
		echo "no error: $out"
	else
		echo "$out"
	fi
}
# expect_err WHAT SQLSTATE WORD SQL: SQL fails with SQLSTATE, and its
# message or hint names WORD.
expect_err() {
	local what=$1 state=$2 word=$3 out
	out=$(pg_err "$4")
	# shellcheck disable=SC2001 # a prefix on every line
	sed "s/^/$TAG #     /" <<<"$out"
	if grep -q "^ERROR:  $state: " <<<"$out" && grep -qF -- "$word" <<<"$out"; then
		say "ok $what: SQLSTATE $state"
	else
		say "notok $what: SQLSTATE $state naming '$word' expected"
	fi
}
# my_expect_err WHAT WORD SQL: the MariaDB statement fails, naming WORD.
my_expect_err() {
	local what=$1 word=$2 out
	out=$(my -e "$3" 2>&1) && out="no error: $out"
	# shellcheck disable=SC2001 # a prefix on every line
	sed "s/^/$TAG #     /" <<<"$out"
	if [[ $out != "no error"* ]] && grep -qF -- "$word" <<<"$out"; then
		say "ok $what"
	else
		say "notok $what: an error naming '$word' expected"
	fi
}
# up: seconds since boot (the wall clock steps here; this does not).
up() { cut -d. -f1 /proc/uptime; }
# eq WHAT GOT WANT
eq() {
	if [ "$2" = "$3" ]; then say "ok $1: $2"; else say "notok $1: $2, $3 expected"; fi
}

# The root is the initramfs (a tmpfs of half the RAM, most of it the
# root's files): room for the servers' data and WAL.
mount -o remount,size=2600M / 2>/dev/null || mount -o remount,size=2600M /
info df -m /
say "# kernel $(uname -r), $(runuser -u postgres -- psql -X -A -t -c 'SHOW server_version' 2>&1), $(mariadb --version 2>&1 | head -n1)"
t "postgresql.service is active" until_ok 120 systemctl is-active "postgresql@$PGV-main.service"
t "mariadb.service is active" until_ok 120 systemctl is-active mariadb.service
# shellcheck disable=SC2016 # the inner shell expands it
t "the device is there, strict, refusing (no worker id yet)" \
	sh -c 'test -c /dev/snowflake && test "$(cat /sys/class/misc/snowflake/strict)" = 1 && ! snowflake next >/dev/null 2>&1'
info id postgres
info id mysql
info ls -l /dev/snowflake /dev/uuidv7

# ---- PostgreSQL: CREATE EXTENSION, the errors -----------------------------------
t "CREATE EXTENSION snowflake (as installed by postgresql-$PGV-snowflake)" \
	pg -c 'CREATE EXTENSION snowflake'
expect_err "a strict device without a lease: the error says the agent holds none" \
	55000 "snowflake-agent" 'SELECT snowflake.nextval()'
pg -c 'CREATE TABLE half (id bigint DEFAULT snowflake.nextval(), v int)'
expect_err "an INSERT with the default on a refusing device fails whole" \
	55000 "no lease" 'INSERT INTO half (v) SELECT generate_series(1, 100)'
eq "rows left by the failed INSERT" "$(pg -c 'SELECT count(*) FROM half' 2>&1)" 0
# MariaDB, before the worker id too.
t "mariadb < /usr/share/snowflake/mariadb/snowflake.sql (CREATE FUNCTION ... SONAME)" \
	sh -c 'mariadb < /usr/share/snowflake/mariadb/snowflake.sql'
my_expect_err "MariaDB: snowflake_next() on a refusing device names the agent" \
	"snowflake-agent" 'SELECT snowflake_next()'

# The worker id, as the agent would assign it.
t "snowflake config --datacenter 0 --worker 1" snowflake config --datacenter 0 --worker 1
t "an ID is served now" snowflake next

# Permission: the server's user not allowed (a node of the device that only
# root may open): the error names the group and the user.
minor=$(cut -d: -f2 /sys/class/misc/snowflake/dev)
mknod -m 0600 /run/sf-noperm c 10 "$minor"
expect_err "a device the server's user may not open: the hint says usermod -aG snowflake postgres" \
	42501 "usermod -aG snowflake postgres" \
	"SET snowflake.device = '/run/sf-noperm'; SELECT snowflake.nextval()"
expect_err "no device (the module not loaded): the hint says modprobe" \
	58P01 "modprobe snowflake" "SET snowflake.device = '/dev/snowflake-none'; SELECT snowflake.nextval()"
expect_err "a foreign device (/dev/null)" 42809 "not a snowflake device" \
	"SET snowflake.device = '/dev/null'; SELECT snowflake.nextval()"

# ---- pg_regress ------------------------------------------------------------------
rm -rf /tmp/pgsrc && cp -a $SHARE/postgresql /tmp/pgsrc && chown -R postgres: /tmp/pgsrc
if runuser -u postgres -- make -C /tmp/pgsrc installcheck PG_CONFIG="$PG_CONFIG" \
	>/tmp/sfdb.regress 2>&1; then
	say "ok pg_regress (make installcheck): $(grep -E 'tests passed|All [0-9]+ tests' /tmp/sfdb.regress | head -n1)"
else
	say "notok pg_regress (make installcheck)"
	sed "s/^/$TAG #   /" /tmp/sfdb.regress | tail -n 20
	[ -f /tmp/pgsrc/regression.diffs ] && head -n 80 /tmp/pgsrc/regression.diffs | sed "s/^/$TAG #   /"
	[ -f /tmp/pgsrc/results/snowflake.out ] && sed "s/^/$TAG OUT /" /tmp/pgsrc/results/snowflake.out
fi

# ---- the extension's mutants (tests/db/mutants, tests/db/lib.sh db_mutants) ----
# Those whose check is pg_regress (NAME.check); the MariaDB functions' are
# run on the one-hour tick below.
# Each in place of the installed snowflake.so (every new backend loads it
# from the disk), pg_regress again: it must fail in the snowflake test, the
# devices test passing (the server and the harness worked); then the
# package's library back.
LIB=$($PG_CONFIG --pkglibdir)/snowflake.so
cp "$LIB" /tmp/snowflake.so.pkg
for m in "$SHARE"/mutants/*.so; do
	[ -e "$m" ] || continue
	name=$(basename "$m" .so)
	[ "$(cat "$SHARE/mutants/$name.check")" = pg_regress ] || continue
	install -m 0644 "$m" "$LIB"
	runuser -u postgres -- make -C /tmp/pgsrc installcheck PG_CONFIG="$PG_CONFIG" \
		>/tmp/sfdb.mutant 2>&1
	if grep -Eq '(^|[^a-z_])snowflake +\.\.\. FAILED|^not ok [0-9]+ +- snowflake' /tmp/sfdb.mutant &&
		grep -Eq '(^|[^a-z_])devices +\.\.\. ok|^ok [0-9]+ +- devices' /tmp/sfdb.mutant; then
		say "ok mutant $name: killed by pg_regress (the snowflake test failed, devices passed)"
	else
		say "notok mutant $name: SURVIVED pg_regress, or the run failed elsewhere"
		sed "s/^/$TAG #   /" /tmp/sfdb.mutant | tail -n 20
	fi
	install -m 0644 /tmp/snowflake.so.pkg "$LIB"
done
t "the package's snowflake.so is back (cmp)" cmp -s /tmp/snowflake.so.pkg "$LIB"

# ---- 1,000,000 rows, the wall clock stepped back one hour mid-statement ---------
pg -c 'CREATE TABLE big (n int, id bigint DEFAULT snowflake.nextval())'
start=$(up)
runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 \
	-c "INSERT INTO big (n) SELECT generate_series(1, $ROWS)" >/tmp/sfdb.big 2>&1 &
ins=$!
# Mid-statement: the rows are going in (the table's file grows), then step.
until_ok 300 sh -c "[ \$(runuser -u postgres -- psql -X -A -t -c \"SELECT pg_relation_size('big')\") -gt 8000000 ]"
running_before=0
kill -0 "$ins" 2>/dev/null && running_before=1
before=$(date +%s)
date -s "@$((before - 3600))" >/dev/null
stepped=$(date +%s)
running_after=0
kill -0 "$ins" 2>/dev/null && running_after=1
say "# the wall clock stepped from $(date -u -d "@$before" +%T) back to $(date -u +%T), $(($(up) - start)) s into the INSERT"
rc=0
wait "$ins" || rc=$?
secs=$(($(up) - start))
say "# after it, the wall clock says $(date -u +%T) and the last ID's time is $(pg -c "SELECT to_char(snowflake.timestamp(max(id)) AT TIME ZONE 'UTC', 'HH24:MI:SS') FROM big")"
date -s "@$(($(date +%s) + 3600))" >/dev/null
eq "the INSERT was running before and after the step" "$running_before$running_after" 11
if [ $((before - stepped)) -ge 3590 ] && [ $((before - stepped)) -le 3610 ]; then
	say "ok the wall clock did step back: $((before - stepped)) s"
else
	say "notok the wall clock did not step back an hour: $((before - stepped)) s"
fi
sed "s/^/$TAG #   /" /tmp/sfdb.big
eq "INSERT INTO big (n) SELECT generate_series(1, $ROWS) with the step: exit status" "$rc" 0
say "# figure: $ROWS rows in $secs s under TCG"
eq "rows, distinct IDs" "$(pg -c 'SELECT count(*), count(DISTINCT id) FROM big')" "$ROWS|$ROWS"
eq "IDs out of insert order (an ID not above the one before it)" \
	"$(pg -c 'SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS p FROM big) s WHERE id <= p')" 0
pg -c 'DROP TABLE big'

# ---- 8 concurrent sessions --------------------------------------------------------
pg -c 'CREATE TABLE conc (s int, n int, id bigint DEFAULT snowflake.nextval())'
pids=()
for s in 1 2 3 4 5 6 7 8; do
	runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 \
		-c "INSERT INTO conc (s, n) SELECT $s, g FROM generate_series(1, 20000) g" >/tmp/sfdb.c$s 2>&1 &
	pids+=($!)
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
eq "8 sessions inserting 20,000 rows each at once: failed sessions" "$bad" 0
eq "rows, distinct IDs" "$(pg -c 'SELECT count(*), count(DISTINCT id) FROM conc')" "160000|160000"
eq "IDs out of order within a session" \
	"$(pg -c 'SELECT count(*) FROM (SELECT id, lag(id) OVER (PARTITION BY s ORDER BY n) AS p FROM conc) x WHERE id <= p')" 0
# They overlapped: in ID order, the session changes far more often than the
# 7 times of 8 sessions run one after another (the control below, which
# this check must fail).
bounds="SELECT count(*) FROM (SELECT s, lag(s) OVER (ORDER BY id) AS p FROM %s) x WHERE s <> p"
# shellcheck disable=SC2059 # the table's name into the query
b=$(pg -c "$(printf "$bounds" conc)")
if [ "$b" -gt 70 ] 2>/dev/null; then
	say "ok 8 sessions at once on $(nproc) CPUs: their IDs interleave ($b changes of session in ID order; 8 sessions in turn make 7)"
else
	say "notok 8 sessions at once: only $b changes of session in ID order (more than 70 expected: they did not overlap)"
fi
pg -c 'CREATE TABLE seq8 (s int, n int, id bigint DEFAULT snowflake.nextval())'
for s in 1 2 3 4 5 6 7 8; do
	pg -c "INSERT INTO seq8 (s, n) SELECT $s, g FROM generate_series(1, 2000) g"
done
# shellcheck disable=SC2059
b=$(pg -c "$(printf "$bounds" seq8)")
eq "the control: 8 sessions in turn give 7 changes of session (the check above fails on them)" "$b" 7
eq "the guest has 2 CPUs" "$(nproc)" 2

# ---- the merge of two game servers' databases ------------------------------------
# Two servers: two databases, each written while the device had its own
# worker id (1, then 2), as two hosts of one cluster would.  The first is
# dumped (pg_dump) and loaded beside the second's tables; then each row is
# merged in: a key that is already there is a conflict.
merge_db() {
	local db=$1 w=$2
	snowflake config --worker "$w" >/dev/null
	pg -c "CREATE DATABASE $db" &&
		pg -d "$db" -c 'CREATE EXTENSION snowflake;
		CREATE TABLE players (id bigint PRIMARY KEY DEFAULT snowflake.nextval(), name text);
		CREATE TABLE players_serial (id bigserial PRIMARY KEY, name text);
		INSERT INTO players (name) SELECT '"'$db-'"' || g FROM generate_series(1, 100000) g;
		INSERT INTO players_serial (name) SELECT '"'$db-'"' || g FROM generate_series(1, 100000) g;'
}
t "server 1 (worker 1): 100,000 players with each key" merge_db game1 1
t "server 2 (worker 2): 100,000 players with each key" merge_db game2 2
eq "server 1's and 2's snowflake IDs carry their worker ids" \
	"$(pg -d game1 -c 'SELECT DISTINCT (snowflake.decode(id)).worker FROM players')/$(pg -d game2 -c 'SELECT DISTINCT (snowflake.decode(id)).worker FROM players')" "1/2"
t "pg_dump of server 1, loaded into server 2 (schema server1)" sh -c \
	"runuser -u postgres -- pg_dump -d game1 -t players -t players_serial -x -O >/tmp/game1.sql &&
	 sed -i 's/\\bpublic\\./server1./g; /CREATE EXTENSION/d' /tmp/game1.sql &&
	 runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -d game2 -c 'CREATE SCHEMA server1' -f /tmp/game1.sql"
conf() { # TABLE: server 1's rows whose key server 2 has already
	pg -d game2 -c "WITH ins AS (INSERT INTO $1 SELECT * FROM server1.$1 ON CONFLICT (id) DO NOTHING RETURNING 1)
		SELECT 100000 - count(*) FROM ins"
}
eq "merge: key conflicts with snowflake.nextval()" "$(conf players)" 0
c=$(conf players_serial)
if [ "$c" -gt 0 ] 2>/dev/null; then say "ok merge: key conflicts with bigserial: $c (of 100000)"; else say "notok merge: bigserial showed no conflict ($c)"; fi
eq "server 2 after the merge: players" "$(pg -d game2 -c 'SELECT count(*) FROM players')" 200000

# ---- MariaDB ---------------------------------------------------------------------
eq "MariaDB: snowflake_next() is an ID of worker 2" \
	"$(my -e 'SELECT snowflake_worker(snowflake_next())' 2>&1)" 2
t "MariaDB: a table with DEFAULT snowflake_next(), 100,000 rows (INSERT ... SELECT seq)" my -e "
	CREATE DATABASE sf; USE sf;
	CREATE TABLE t (id BIGINT NOT NULL PRIMARY KEY DEFAULT snowflake_next(), n INT);
	INSERT INTO t (n) SELECT seq FROM seq_1_to_100000;"
eq "MariaDB: rows, distinct IDs" "$(my -e 'SELECT count(*), count(DISTINCT id) FROM sf.t')" "$(printf '100000\t100000')"
eq "MariaDB: IDs out of insert order" \
	"$(my -e 'SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS p FROM sf.t) x WHERE id <= p')" 0
eq "MariaDB: the decoded time is now (seconds off)" \
	"$(my -e 'SELECT abs(snowflake_unix_ms(snowflake_next()) DIV 1000 - unix_timestamp()) < 5')" 1
eq "MariaDB: snowflake_uuidv7() is a version 7 UUID" \
	"$(my -e 'SELECT substr(snowflake_uuidv7(), 15, 1)')" 7
eq "MariaDB: a number that is not an ID of the layout decodes to NULL" \
	"$(my -e 'SELECT snowflake_worker(-1) IS NULL')" 1
my_expect_err "MariaDB: snowflake_next(1): a wrong argument count is refused" "takes 0 arguments" 'SELECT snowflake_next(1)'
# AUTO_INCREMENT's merge: two servers' tables (two databases), both from 1.
t "MariaDB: two servers' players with AUTO_INCREMENT and with snowflake_next()" my -e "
	CREATE DATABASE s1; CREATE DATABASE s2;
	CREATE TABLE s1.ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, n INT);
	CREATE TABLE s2.ai (id BIGINT AUTO_INCREMENT PRIMARY KEY, n INT);
	CREATE TABLE s1.sf (id BIGINT NOT NULL PRIMARY KEY DEFAULT snowflake_next(), n INT);
	CREATE TABLE s2.sf (id BIGINT NOT NULL PRIMARY KEY DEFAULT snowflake_next(), n INT);
	USE s1;
	INSERT INTO s1.ai (n) SELECT seq FROM seq_1_to_10000; INSERT INTO s2.ai (n) SELECT seq FROM seq_1_to_10000;
	INSERT INTO s1.sf (n) SELECT seq FROM seq_1_to_10000; INSERT INTO s2.sf (n) SELECT seq FROM seq_1_to_10000;"
t "MariaDB: mariadb-dump of server 1 loaded into server 2 (database s1copy)" sh -c \
	"mariadb-dump s1 >/tmp/s1.sql && mariadb -e 'CREATE DATABASE s1copy' && mariadb s1copy </tmp/s1.sql"
eq "MariaDB: server 1's rows in the dump" "$(my -e 'SELECT count(*) FROM s1copy.sf; SELECT count(*) FROM s1copy.ai' | paste -sd/)" 10000/10000
# my_conflicts TABLE: server 1's rows whose key server 2 has already.
my_conflicts() { my -e "INSERT IGNORE INTO s2.$1 SELECT * FROM s1copy.$1; SELECT 10000 - row_count()"; }
eq "MariaDB merge: key conflicts with snowflake_next()" "$(my_conflicts sf)" 0
eq "MariaDB merge: key conflicts with AUTO_INCREMENT" "$(my_conflicts ai)" 10000
# A new connection on a new server thread opens the device itself (no
# cached thread, which keeps its open descriptor: thread_cache_size 0).
# Permission: the device closed to the server's user (mode 0600, no ACL).
my -e 'SET GLOBAL thread_cache_size = 0'
getfacl -p /dev/snowflake >/tmp/sfdb.acl 2>/dev/null
mode=$(stat -c %a /dev/snowflake)
chmod 0600 /dev/snowflake
setfacl -b /dev/snowflake 2>/dev/null
my_expect_err "MariaDB: the server's user may not open the device: says usermod -aG snowflake mysql" \
	"usermod -aG snowflake mysql" 'SELECT snowflake_next()'
expect_err "PostgreSQL: a new session, the device closed to postgres" 42501 "usermod -aG snowflake postgres" \
	'SELECT snowflake.nextval()'
chmod "$mode" /dev/snowflake
setfacl --restore=/tmp/sfdb.acl 2>/dev/null
t "MariaDB: served again once the device is open to it" my -e 'SELECT snowflake_next()'

# ---- the documents' SQL examples ---------------------------------------------------
# Every ```sql block of README.md and docs/databases.md, as written, in a
# database of its own; its first line names its server (-- PostgreSQL,
# -- MariaDB).
n=0
for doc in README.md databases.md; do
	awk -v doc="$doc" '
		$0 == "```sql" { inb = 1; n++; f = sprintf("/tmp/sfdb-doc-%s-%d.sql", doc, n); next }
		inb && $0 == "```" { inb = 0; close(f); next }
		inb { print > f }
	' "$SHARE/$doc"
done
for f in /tmp/sfdb-doc-*.sql; do
	[ -e "$f" ] || continue
	n=$((n + 1))
	name=${f#/tmp/sfdb-doc-}
	case $(head -n 1 "$f") in
	"-- PostgreSQL")
		t "$name (PostgreSQL), as written" sh -c "runuser -u postgres -- createdb doc$n &&
			runuser -u postgres -- psql -X -v ON_ERROR_STOP=1 -d doc$n -f $f" ;;
	"-- MariaDB")
		t "$name (MariaDB), as written" sh -c "mariadb -e 'CREATE DATABASE doc$n' && mariadb doc$n <$f" ;;
	*) say "notok $name: its first line names no server (-- PostgreSQL, -- MariaDB)" ;;
	esac
	info cat "$T_OUT"
done
if [ "$n" -gt 0 ]; then say "ok the documents' SQL examples: $n blocks"; else say "notok no SQL example found in the documents"; fi

# ---- P9's program (make bench's, scripts/bench-db.sh), a few rows -------------
# Its figures mean nothing here; the host turns its lines into P9's table.
# Two rounds: the host checks that the second is the first rotated.
if /usr/local/share/sf-db/p9-guest.sh 2000 2 >/tmp/sfdb.p9 2>&1 && grep -q '^BENCH done' /tmp/sfdb.p9; then
	say "ok P9's program ran (2,000 rows a key, two rounds)"
else
	say "notok P9's program (bench/db/p9-guest.sh)"
fi
sed "s/^/$TAG P9 /" /tmp/sfdb.p9

# ---- a one-hour tick: a wait cancelled, a failed read that stores no 0 (issue 43) ----
# The module loaded again with a tick of one hour and 4 IDs (sequence_bits=2),
# its epoch 10 s ago: the layout changes only before the first ID (EBUSY
# after it) and the unload needs every descriptor closed, so the servers,
# snowflake-floor.service (floord) and the metrics timer stop first.  The
# worker id is given at load (worker_id=1): one assigned later moves the next
# ID to the next tick, an hour away.  IDs are read a bounded number of times
# (2 by the CLI, 2 by the INSERT below: the tick used up), every client runs
# under timeout, and a read a check left waiting (the fix absent) is ended by
# a fence (it wakes a waiting read and fails it, ENOTCONN), lifted once the
# client has ended.  Then the module is loaded back as the boot loaded it.
tick0=$(up)
ms() { date +%s%3N; }
# ends_within PID MS: PID ended within MS ms (polled every 50 ms); the ms
# waited in $waited.
ends_within() {
	local t0
	t0=$(ms)
	while kill -0 "$1" 2>/dev/null && [ $(($(ms) - t0)) -lt "$2" ]; do sleep 0.05; done
	waited=$(($(ms) - t0))
	! kill -0 "$1" 2>/dev/null
}
# release PID: the client PID still waiting: the fence ends its read.
release() {
	if kill -0 "$1" 2>/dev/null; then
		say "# still waiting: the device fenced to end the read"
		snowflake config --fence 1 >/dev/null
		ends_within "$1" 20000 || kill "$1" 2>/dev/null
		snowflake config --fence 0 >/dev/null
	fi
	wait "$1" 2>/dev/null || true
}
unload() { [ ! -e /sys/module/snowflake ] || modprobe -r snowflake; }
# num WORD: the number after WORD in a line of stdin.
num() { grep -o "$1 [0-9][0-9]*" | grep -o '[0-9]*$' | head -n 1; }
servers() {
	local u
	for u in mariadb.service "postgresql@$PGV-main.service"; do
		timeout 120 systemctl "$1" "$u" || say "# systemctl $1 $u failed"
	done
}
for u in snowflake-metrics.timer snowflake-metrics.service snowflake-floor.service; do
	timeout 60 systemctl stop "$u" 2>/dev/null || true
done
servers stop
t "the module unloaded (the servers and floord stopped)" until_ok 60 unload
epoch=$(($(ms) - 10000))
t "modprobe snowflake time_unit_ms=3600000 sequence_bits=2 epoch_ms=$epoch worker_id=1" \
	modprobe snowflake time_unit_ms=3600000 sequence_bits=2 epoch_ms="$epoch" worker_id=1
timeout 30 udevadm settle || true
eq "the layout: time_unit_ms, sequence_bits, worker_id, refusing" \
	"$(snowflake config | awk '$1 ~ /^(time_unit_ms|sequence_bits|worker_id|refusing)$/ { printf "%s ", $2 }')" "3600000 2 1 0 "
eq "IDs read by the CLI (timeout 10 snowflake next -n 2): 2 of the tick's 4" \
	"$(timeout 10 snowflake next -n 2 | wc -l)" 2
servers start
# shellcheck disable=SC2016 # the inner shell expands it (PGV exported)
t "PostgreSQL and MariaDB are active again" until_ok 120 sh -c \
	'systemctl is-active postgresql@$PGV-main.service && systemctl is-active mariadb.service'

# MariaDB, sql_mode='': a multi-row INSERT through DEFAULT snowflake_next()
# whose first 2 rows take the tick's last IDs and whose third waits for the
# next tick, until the device is fenced: that read fails mid-statement.  The
# statement must fail whole (no row, the cause named), not store 0 in the
# NOT NULL key with a warning (1048).
# my_nonstrict TABLE N: that INSERT into a new TABLE, fenced once it waits
# with N rows in (the tick's IDs left: 2 here, 0 once the tick is used up)
# and 1.5 s old (its first read waits, not its init, which the fence fails);
# its exit status in rc, "rows<TAB>keys 0" stored in $stored.
my_nonstrict() {
	my -e "CREATE TABLE $1 (id BIGINT NOT NULL DEFAULT snowflake_next(), n INT, KEY (id)) ENGINE=InnoDB"
	timeout 60 mariadb -N -B -e "SET sql_mode = ''; INSERT INTO $1 (n) VALUES (1), (2), (3); SHOW WARNINGS" \
		>/tmp/sfdb.victim 2>&1 &
	vp=$!
	until_ok 30 sh -c "[ \"\$(mariadb -N -B -e \"SELECT (SELECT count(*) FROM information_schema.processlist
		WHERE info LIKE 'INSERT INTO $1 %' AND time_ms > 1500) = 1 AND
		IFNULL((SELECT max(trx_rows_modified) FROM information_schema.innodb_trx), 0) = $2\")\" = 1 ]" ||
		say "# the INSERT did not reach its row $(($2 + 1)) ($2 rows modified) within 30 s"
	sleep 0.5
	snowflake config --fence 1 >/dev/null
	rc=0
	ends_within "$vp" 10000 || say "# the INSERT did not end within 10 s of the fence"
	wait "$vp" || rc=$?
	snowflake config --fence 0 >/dev/null
	sed "s/^/$TAG #     /" /tmp/sfdb.victim
	stored=$(my -e "SELECT count(*), count(id = 0 OR NULL) FROM $1")
}
my_nonstrict_ok() {
	if [ "$rc" -ne 0 ] && grep -q 'no lease' /tmp/sfdb.victim; then
		say "ok MariaDB, sql_mode='': the INSERT whose $1 read fails (fenced) fails, naming the cause"
	else
		say "notok MariaDB, sql_mode='': the INSERT whose $1 read fails did not fail (exit $rc)"
	fi
	eq "MariaDB, sql_mode='': rows of that INSERT stored, and keys 0 among them" "$stored" "$(printf '0\t0')"
}
my_nonstrict sf.k 2
my_nonstrict_ok third
t "the tick used up: a non-blocking read gets EAGAIN" sh -c \
	'timeout 10 dd if=/dev/snowflake of=/dev/null bs=8 count=1 iflag=nonblock 2>&1 | grep "Resource temporarily unavailable"'

# PostgreSQL: the waiting statement reports its end (SQLSTATE, the ms since
# it began, the server's time).
pgq() { timeout "$1" runuser -u postgres -- psql -X -q -A -t "${@:2}" 2>&1; }
victim="DO \$\$ BEGIN PERFORM snowflake.nextval(); EXCEPTION WHEN query_canceled THEN
	RAISE NOTICE 'SQLSTATE % (%) after % ms, at %', SQLSTATE, SQLERRM,
		round(extract(epoch FROM clock_timestamp() - statement_timestamp()) * 1000),
		floor(extract(epoch FROM clock_timestamp()) * 1000); END \$\$"
# waiting PATTERN: a backend other than this one runs a query LIKE PATTERN.
pg_waiting() {
	until_ok 30 sh -c "[ \"\$(runuser -u postgres -- psql -X -A -t -c \"SELECT count(*) FROM pg_stat_activity
		WHERE state = 'active' AND query LIKE '$1' AND pid <> pg_backend_pid()\")\" = 1 ]" ||
		say "# no backend running '$1' within 30 s"
	sleep 0.5
}
# pg_cancel_backend() from another session: the victim's end less the cancel's time.
pgq 60 -c "$victim" >/tmp/sfdb.victim &
vp=$!
pg_waiting 'DO%snowflake.nextval%'
at=$(pgq 30 -c "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000) FROM pg_stat_activity
	WHERE query LIKE 'DO%snowflake.nextval%' AND pid <> pg_backend_pid() AND pg_cancel_backend(pid)")
ends_within "$vp" 5000 || true
release "$vp"
sed "s/^/$TAG #     /" /tmp/sfdb.victim
end=$(num at </tmp/sfdb.victim)
if grep -q 'SQLSTATE 57014' /tmp/sfdb.victim && [ -n "$end" ] && [ -n "$at" ] && [ $((end - at)) -lt 1000 ]; then
	say "ok PostgreSQL: pg_cancel_backend() ends the wait within $((end - at)) ms (SQLSTATE 57014)"
else
	say "notok PostgreSQL: pg_cancel_backend() did not end the wait within 1 s (cancel at ${at:-?}, end ${end:-none})"
fi
# pg_terminate_backend(): the waiting session ends.
pgq 60 -c 'SELECT snowflake.nextval()' >/tmp/sfdb.victim &
vp=$!
pg_waiting 'SELECT snowflake.nextval()'
pgq 30 -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	WHERE query = 'SELECT snowflake.nextval()' AND pid <> pg_backend_pid()" >/dev/null
ended=0
ends_within "$vp" 5000 && ended=1
d=$waited
release "$vp"
sed "s/^/$TAG #     /" /tmp/sfdb.victim
if [ "$ended" = 1 ] && [ "$d" -lt 1000 ] && grep -q 'terminating connection' /tmp/sfdb.victim; then
	say "ok PostgreSQL: pg_terminate_backend() ends the waiting session within $d ms"
else
	say "notok PostgreSQL: pg_terminate_backend() did not end the waiting session within 1 s (waited $d ms)"
fi
# statement_timeout: the server's own timer ends the wait (SQLSTATE 57014,
# "statement timeout"): the victim's end less its start and the 300 ms.
pgq 60 -c "SET statement_timeout = '300ms'" -c "$victim" >/tmp/sfdb.victim &
vp=$!
ends_within "$vp" 5000 || true
release "$vp"
sed "s/^/$TAG #     /" /tmp/sfdb.victim
after=$(num after </tmp/sfdb.victim)
if grep -q 'SQLSTATE 57014 (canceling statement due to statement timeout)' /tmp/sfdb.victim &&
	[ -n "$after" ] && [ $((after - 300)) -lt 1000 ]; then
	say "ok PostgreSQL: statement_timeout = '300ms' ends the wait $((after - 300)) ms after the timeout (SQLSTATE 57014, statement timeout)"
else
	say "notok PostgreSQL: statement_timeout = '300ms' did not end the wait within 1 s of the timeout, with SQLSTATE 57014 (after ${after:-none} ms)"
fi

# MariaDB: a waiting SELECT snowflake_next() ended by KILL QUERY from
# another connection and by max_statement_time: the statement fails with
# the server's error (not a NULL "successfully": issue 43), within 1 s.
# The victim prints the server's time (ms) before and after the statement
# (--force: on after the error; it reads its statements from stdin, as
# -e stops at the first error even with --force).
now_ms="floor(unix_timestamp(sysdate(3)) * 1000)"
my_victim() {
	timeout 60 mariadb -N -B --force >/tmp/sfdb.victim 2>&1 <<<"$1 SELECT concat('start ', $now_ms);
		SELECT snowflake_next(); SELECT concat('end ', $now_ms);" &
	vp=$!
}
# my_result: the victim's lines; its result row (NULL or an ID), if any, in $row.
my_result() {
	sed "s/^/$TAG #     /" /tmp/sfdb.victim
	row=$(grep -E '^(NULL|-?[0-9]+)$' /tmp/sfdb.victim | head -n 1)
	end=$(num end </tmp/sfdb.victim)
}
# my_kill_query: KILL QUERY from another connection ends a waiting SELECT
# snowflake_next(): "" in $why when it failed with ERROR 1317 within 1 s,
# else what went wrong; $late 1 when the SELECT was found waiting, killed,
# and still waiting 1 s after the KILL; $fenced 1 when still waiting 5 s
# after it (the fence ended it).
my_kill_query() {
	local gone=0
	why="" late=0 fenced=0
	my_victim ""
	# Killed once it waits (1.5 s in): not before the function is called.
	until_ok 30 sh -c "[ \"\$(mariadb -N -B -e \"SELECT count(*) FROM information_schema.processlist
		WHERE info = 'SELECT snowflake_next()' AND time_ms > 1500\")\" = 1 ]" ||
		say "# no connection running SELECT snowflake_next() for 1.5 s within 30 s"
	id=$(my -e "SELECT id FROM information_schema.processlist WHERE info = 'SELECT snowflake_next()'")
	at=$(my -e "SELECT $now_ms; KILL QUERY ${id:-0}" 2>&1 | head -n 1)
	ends_within "$vp" 1000 && gone=1
	ends_within "$vp" 4000 || fenced=1
	release "$vp"
	my_result
	if grep -q '^ERROR 1317 .*Query execution was interrupted' /tmp/sfdb.victim && [ -z "$row" ] &&
		[ -n "$end" ] && [ -n "$at" ] && [ $((end - at)) -lt 1000 ]; then
		return
	fi
	why="KILL QUERY ${id:-?} (at ${at:-?}): the waiting SELECT snowflake_next() did not fail with ERROR 1317 within 1 s (result '${row}', end ${end:-none})"
	[ -n "$id" ] && [ -n "$at" ] && [ "$gone" = 0 ] && late=1
}
my_kill_query_ok() {
	if [ -z "$why" ]; then
		say "ok MariaDB: KILL QUERY $id ends the waiting SELECT snowflake_next() within $((end - at)) ms (ERROR 1317, interrupted)"
	else
		say "notok MariaDB: $why"
	fi
}
my_kill_query
my_kill_query_ok
my_victim "SET max_statement_time = 0.3;"
ends_within "$vp" 5000 || true
release "$vp"
my_result
start=$(num start </tmp/sfdb.victim)
if grep -q '^ERROR 1969 .*max_statement_time exceeded' /tmp/sfdb.victim && [ -z "$row" ] &&
	[ -n "$end" ] && [ -n "$start" ] && [ $((end - start - 300)) -lt 1000 ]; then
	say "ok MariaDB: max_statement_time = 0.3 ends the waiting SELECT snowflake_next() $((end - start - 300)) ms after the timeout (ERROR 1969)"
else
	say "notok MariaDB: max_statement_time = 0.3: the waiting SELECT snowflake_next() did not fail with ERROR 1969 within 1 s of the timeout (result '${row}', start ${start:-none}, end ${end:-none})"
fi

# The MariaDB functions' mutants (tests/db/mutants, db_mutants): each in
# place of the snowflake_udf.so mariadb-plugin-snowflake installed (my_swap),
# the one check of its defect run alone on the used-up tick (NAME.check):
# mariadb-kill, KILL QUERY (killed: the SELECT still waiting 1 s after the
# KILL); mariadb-nonstrict, the non-strict INSERT fenced at its first row
# (killed: a key 0 stored).  Then the package's library back, and both
# checks pass again with it.
MYLIB=$(dpkg -L mariadb-plugin-snowflake | grep '/snowflake_udf\.so$')
# my_loaded FILE: mariadbd has MYLIB mapped, and FILE is what is there.
my_loaded() {
	grep "$MYLIB" "/proc/$(pidof mariadbd)/maps" 2>/dev/null | grep -qv '(deleted)' && cmp -s "$1" "$MYLIB"
}
# my_swap FILE: FILE in place of MYLIB and loaded: the six functions
# dropped and the tables closed (FLUSH TABLES: a column's DEFAULT holds
# its function), the library unloaded, FILE installed, the functions
# created again (CREATE FUNCTION loads it).  A library still loaded after
# 10 s (the new one would not load: the same path) is loaded by a
# restart of the server instead, which loads a function's library at its
# start (seconds more).
my_swap() {
	my -e "DROP FUNCTION snowflake_next; DROP FUNCTION snowflake_uuidv7;
		DROP FUNCTION snowflake_unix_ms; DROP FUNCTION snowflake_datacenter;
		DROP FUNCTION snowflake_worker; DROP FUNCTION snowflake_sequence; FLUSH TABLES"
	until_ok 10 sh -c "! grep -q '$MYLIB' /proc/\$(pidof mariadbd)/maps" ||
		say "# $MYLIB still loaded 10 s after the DROP"
	install -m 0644 "$1" "$MYLIB"
	mariadb </usr/share/snowflake/mariadb/snowflake.sql || say "# snowflake.sql failed"
	my_loaded "$1" && return
	say "# $1 not loaded by CREATE FUNCTION: the server restarted"
	timeout 120 systemctl restart mariadb.service || say "# systemctl restart mariadb.service failed"
	until_ok 60 sh -c 'systemctl is-active mariadb.service && mariadb -e "SELECT 1"' >/dev/null
}
cp "$MYLIB" /tmp/snowflake_udf.so.pkg
nm=0
for m in "$SHARE"/mutants/*.so; do
	[ -e "$m" ] || continue
	name=$(basename "$m" .so)
	c=$(cat "$SHARE/mutants/$name.check")
	case $c in mariadb-kill | mariadb-nonstrict) ;; *) continue ;; esac
	nm=$((nm + 1))
	my_swap "$m"
	if ! my_loaded "$m"; then
		say "notok mutant $name: not loaded by mariadbd in place of $MYLIB"
	elif [ "$c" = mariadb-kill ]; then
		my_kill_query
		if [ "$late" = 1 ]; then
			say "ok mutant $name: killed by KILL QUERY: the SELECT still waited 1 s after the KILL$([ "$fenced" = 0 ] || echo '; 5 s after it, the fence ended it')"
		else
			say "notok mutant $name: not killed by KILL QUERY (${why:-it ended the wait with ERROR 1317 within 1 s})"
		fi
	else
		my_nonstrict "sf.k_$nm" 0
		zeros=$(cut -f2 <<<"$stored")
		if [ "${zeros:-0}" -gt 0 ] 2>/dev/null; then
			say "ok mutant $name: killed by the non-strict INSERT: $zeros keys 0 stored (rows, keys 0: $(tr '\t' ' ' <<<"$stored"); exit $rc)"
		else
			say "notok mutant $name: not killed by the non-strict INSERT (rows, keys 0: $(tr '\t' ' ' <<<"$stored"); exit $rc)"
		fi
	fi
done
if [ "$nm" -gt 0 ]; then
	my_swap /tmp/snowflake_udf.so.pkg
	t "the package's snowflake_udf.so is back (cmp) and loaded by mariadbd" my_loaded /tmp/snowflake_udf.so.pkg
	say "# the checks again with the package's library, after the mutants"
	my_nonstrict sf.k_back 0
	my_nonstrict_ok first
	my_kill_query
	my_kill_query_ok
fi

# The layout back: the module loaded with the boot's options (strict=1),
# worker 2 as before.
servers stop
t "the module unloaded again" until_ok 60 unload
t "modprobe snowflake (the boot's options)" timeout 60 modprobe snowflake
t "snowflake config --worker 2" timeout 30 snowflake config --datacenter 0 --worker 2
eq "the layout back: time_unit_ms, sequence_bits" \
	"$(snowflake config | awk '$1 ~ /^(time_unit_ms|sequence_bits)$/ { printf "%s ", $2 }')" "1 12 "
t "an ID is served" timeout 10 snowflake next
say "# figure: the one-hour tick's checks took $(($(up) - tick0)) s"

# ---- the agent's MariaDB store on this MariaDB (the host's 10.11: the
# agent-guest lane) ----
# snowflake-agent (built in this root: tests/db/lib.sh), --backend mysql against the
# guest's mariadbd on 127.0.0.1:3306 (Debian's configuration): a cluster
# initialised, the pair (3, 5) claimed, IDs served within the window the
# lease gave the device, then SIGTERM: the lease released.
S=/sys/class/misc/snowflake
servers start
# shellcheck disable=SC2016 # the inner shell expands it (PGV exported)
t "PostgreSQL and MariaDB are active again (for the agent's store)" until_ok 120 sh -c \
	'systemctl is-active "postgresql@$PGV-main.service" && systemctl is-active mariadb.service'
t "MariaDB: the agent's user (CREATE USER, GRANT ON snowflake.*)" my -e "
	CREATE USER 'snowflake'@'127.0.0.1' IDENTIFIED BY 'guestpw';
	GRANT CREATE, SELECT, INSERT, UPDATE ON snowflake.* TO 'snowflake'@'127.0.0.1'"
printf '%s\n' 'backend = mysql' 'mysql-host = 127.0.0.1' 'mysql-user = snowflake' \
	'mysql-password = guestpw' 'cluster = sfdb' 'ttl-ms = 3000' >/etc/sfdb-agent.conf
chmod 0600 /etc/sfdb-agent.conf
AG="/usr/local/sbin/snowflake-agent --config /etc/sfdb-agent.conf --datacenter-ids 3 --worker-ids 5"
# shellcheck disable=SC2086 # $AG: the command and its options
t "snowflake-agent --backend mysql --init-store (cluster sfdb, pair 3/5)" timeout 60 $AG --init-store
lease="SELECT %s FROM snowflake.snowflake_lease WHERE cluster = 'sfdb' AND datacenter = 3 AND worker = 5"
# shellcheck disable=SC2059 # the column into the query
# A new pair's mark is 0: no holder has stamped anything yet.
eq "the store: the pair's row, its mark" "$(my -e "$(printf "$lease" 'count(*), mark')")" "$(printf '1\t0')"
# shellcheck disable=SC2086
timeout 120 $AG --log-level info 2>/tmp/sfdb.agent &
apid=$!
# The device had worker 2 from snowflake config: served only once it has
# the lease's pair.
if until_ok 60 sh -c "[ \"\$(cat $S/datacenter_id)/\$(cat $S/worker_id)\" = 3/5 ] && snowflake next"; then
	say "ok the agent claimed the pair: the device has 3/5 and snowflake next serves"
else
	say "notok the agent did not claim the pair within 60 s"
	sed "s/^/$TAG #     /" /tmp/sfdb.agent | tail -n 20
fi
eq "the device's pair is the lease's" "$(cat $S/datacenter_id)/$(cat $S/worker_id)" 3/5
# shellcheck disable=SC2059
eq "the store holds the pair's lease (a live row with an owner)" \
	"$(my -e "$(printf "$lease" "count(*)") AND owner <> '' AND expiry > UTC_TIMESTAMP(6)")" 1
id=$(timeout 10 snowflake next)
ms=$(my -e "SELECT snowflake_unix_ms(${id:-0})")
ceil=$(cat $S/lease_ceiling_ms)
# shellcheck disable=SC2059
mark=$(my -e "$(printf "$lease" mark)")
say "# ID $id: stamped $ms ms; the lease's ceiling $ceil, the store's mark $mark"
if [ -n "$ms" ] && [ "$ceil" -gt 0 ] && [ "$ms" -le "$ceil" ] && [ "$ceil" -le "$mark" ] &&
	[ "$(my -e "SELECT snowflake_worker($id)")" = 5 ]; then
	say "ok snowflake next: an ID of worker 5 stamped within the lease's window (at most its ceiling, which the store's mark covers)"
else
	say "notok snowflake next within the lease's window: stamped ${ms:-?}, ceiling $ceil, mark ${mark:-?}"
fi
kill -TERM "$apid"
arc=0
wait "$apid" || arc=$?
eq "the agent stopped with SIGTERM: exit status" "$arc" 0
t "the agent's log says the lease was released (event=released)" grep -q 'event=released' /tmp/sfdb.agent
# shellcheck disable=SC2059
eq "the store holds no live lease of the pair" \
	"$(my -e "$(printf "$lease" "count(*)") AND expiry > UTC_TIMESTAMP(6)")" 0
t "the device fenced after the agent (reads refused)" sh -c '! timeout 10 snowflake next'
grep -v 'event=renewed' /tmp/sfdb.agent | tail -n 8 | sed "s/^/$TAG #     /"

say "done"
systemctl poweroff
