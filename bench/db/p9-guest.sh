#!/bin/bash
# P9 (issue 32), in the guest of scripts/bench-db.sh: the root of
# tests/db (Debian 13: PostgreSQL 17, MariaDB 11.8, postgresql-17-snowflake and
# mariadb-plugin-snowflake installed with apt), booted with systemd on the
# real module.  One server of each, the same table shape: a ROWS-row
# INSERT ... SELECT with each key's default, its time and the size of the
# key's index; where the time of snowflake.nextval() goes (the calls alone,
# without the INSERT); the device alone.  ROUNDS interleaved rounds, the
# order rotated each round (below).  Prints "BENCH p9 ..." lines on the
# console, then "BENCH done", and powers off.  Measures, never asserts.
#
# Usage: p9-guest.sh [ROWS ROUNDS]: with arguments (the db stage's guest,
# tests/db/guest.sh: its smoke run, a few rows) it prints the lines and
# returns; without, ROWS and ROUNDS come from /usr/local/share/sf-db/.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C.UTF-8
ROWS=${1:-$(cat /usr/local/share/sf-db/rows)}
ROUNDS=${2:-$(cat /usr/local/share/sf-db/rounds 2>/dev/null || echo 1)}

pg() { runuser -u postgres -- psql -X -q -A -t -v ON_ERROR_STOP=1 -d p9 "$@"; }
my() { mariadb -N -B p9 "$@"; }
ms() { echo $(($(date +%s%N) / 1000000)); }
# until_ok (the systemd guests' helpers, tests/deb/guest-lib.sh).
TAG=SFP9 T_OUT=/tmp/sfp9.out
# shellcheck source=tests/deb/guest-lib.sh
. /usr/local/lib/sf-guest-lib.sh

# The root is the initramfs, a tmpfs: room for the tables and the WAL,
# which is kept small (every key pays the same checkpoints).
mount -o remount,size=2600M /
until_ok 120 systemctl is-active "postgresql@$(cat /usr/local/share/sf-db/pg)-main.service"
until_ok 120 systemctl is-active mariadb.service
snowflake config --datacenter 0 --worker 1 >/dev/null
runuser -u postgres -- psql -X -q -c "ALTER SYSTEM SET max_wal_size = '256MB'" -c 'SELECT pg_reload_conf()' -c 'CREATE DATABASE p9'
# Instagram's function (2011, "Sharding & IDs at Instagram"), as copied:
# nextval % 1024 and clock_timestamp(), shard 5.
pg -c "CREATE EXTENSION snowflake; CREATE SEQUENCE insta_seq;
CREATE FUNCTION insta_next_id(OUT result bigint) AS \$\$
DECLARE
	our_epoch bigint := 1314220021721;
	seq_id bigint;
	now_millis bigint;
	shard_id int := 5;
BEGIN
	SELECT nextval('insta_seq') % 1024 INTO seq_id;
	SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
	result := (now_millis - our_epoch) << 23;
	result := result | (shard_id << 10);
	result := result | (seq_id);
END;
\$\$ LANGUAGE PLPGSQL;"
echo "BENCH p9 meta rows=$ROWS rounds=$ROUNDS kernel=$(uname -r) postgresql=\"$(pg -c 'SHOW server_version')\" mariadb=\"$(mariadb --version | sed -n 1p)\""

# MariaDB's functions, as the package creates them.
mariadb </usr/share/snowflake/mariadb/snowflake.sql
mariadb -e 'CREATE DATABASE p9'
pg -c 'CREATE SEQUENCE bs_seq' >/dev/null

# pg_one ROUND POS NAME COLUMN: one fresh table, its key COLUMN, ROWS rows:
# the time and the size of the key's index.
pg_one() {
	local r=$1 pos=$2 name=$3 col=$4 t0 t1 err
	pg -c "DROP TABLE IF EXISTS t_$name; CREATE TABLE t_$name (id $col PRIMARY KEY, n int);
		CHECKPOINT" >/dev/null
	t0=$(ms)
	if err=$(pg -c "INSERT INTO t_$name (n) SELECT generate_series(1, $ROWS)" 2>&1); then
		t1=$(ms)
		echo "BENCH p9 db=postgresql key=$name round=$r pos=$pos rows=$ROWS ms=$((t1 - t0)) index_bytes=$(pg -c "SELECT pg_relation_size('t_${name}_pkey')") table_bytes=$(pg -c "SELECT pg_relation_size('t_$name')")"
		pg -c "DROP TABLE t_$name"
	else
		echo "BENCH p9 db=postgresql key=$name round=$r pos=$pos rows=$ROWS failed=\"$(grep -m1 ERROR <<<"$err")\""
	fi
}
# my_one ROUND POS NAME TYPE DEFAULT: the same in MariaDB.
my_one() {
	local r=$1 pos=$2 name=$3 type=$4 def=$5 t0 t1 err
	my -e "DROP TABLE IF EXISTS t_$name; CREATE TABLE t_$name (id $type $def PRIMARY KEY, n INT)"
	t0=$(ms)
	if err=$(my -e "INSERT INTO t_$name (n) SELECT seq FROM seq_1_to_$ROWS" 2>&1); then
		t1=$(ms)
		my -e "ANALYZE TABLE t_$name" >/dev/null
		echo "BENCH p9 db=mariadb key=$name round=$r pos=$pos rows=$ROWS ms=$((t1 - t0)) index_bytes=$(my -e "SELECT data_length FROM information_schema.tables WHERE table_schema = 'p9' AND table_name = 't_$name'")"
		my -e "DROP TABLE t_$name"
	else
		echo "BENCH p9 db=mariadb key=$name round=$r pos=$pos rows=$ROWS failed=\"$(grep -m1 ERROR <<<"$err")\""
	fi
}
# Where the time goes: the calls alone (no table, no index).
call_ms() {
	local t0
	t0=$(ms)
	pg -c "SELECT count($1) FROM generate_series(1, $ROWS)" >/dev/null
	echo $(($(ms) - t0))
}
# The measurements of one round, one per line: a key default's table, the
# calls alone, the device alone.  MariaDB's snowflake_uuidv7(): a loadable
# function's string is binary; CAST makes it text, which the UUID type
# parses (a binary string would have to be the 16 bytes).
steps=(
	"pg_one snowflake 'bigint DEFAULT snowflake.nextval()'"
	"pg_one bigserial bigserial"
	"pg_one gen_random_uuid 'uuid DEFAULT gen_random_uuid()'"
	"pg_one instagram 'bigint DEFAULT insta_next_id()'"
	"pg_one snowflake_uuidv7 'uuid DEFAULT snowflake.uuidv7()'"
	"my_one snowflake_next 'BIGINT NOT NULL' 'DEFAULT snowflake_next()'"
	"my_one auto_increment BIGINT AUTO_INCREMENT"
	"my_one uuid UUID 'NOT NULL DEFAULT UUID()'"
	"my_one snowflake_uuidv7 UUID 'NOT NULL DEFAULT (CAST(snowflake_uuidv7() AS CHAR))'"
	calls
	device
)
calls() {
	echo "BENCH p9 calls round=$1 pos=$2 rows=$ROWS none_ms=$(call_ms '*') snowflake_ms=$(call_ms 'snowflake.nextval()') sequence_ms=$(call_ms "nextval('bs_seq')") instagram_ms=$(call_ms 'insta_next_id()') gen_random_uuid_ms=$(call_ms 'gen_random_uuid()')"
}
# The device's own cost per ID in reads of up to 4096 (the CLI's batch):
# what a per-backend batch would save at most.
device() {
	local t0
	t0=$(ms)
	snowflake next -n "$ROWS" >/dev/null 2>&1 && echo "BENCH p9 device round=$1 pos=$2 batch_ms=$(($(ms) - t0)) rows=$ROWS"
}
# Interleaved rounds (issue 43, item 5): every measurement once a round,
# round r starting r-1 places further along the list, so that a slow
# stretch of the host (a shared machine, TCG) falls on different keys in
# different rounds instead of on all the rounds of one key, and no key is
# always measured first or always after the same one.  The report takes
# each key's median and its range.
n=${#steps[@]}
for r in $(seq 1 "$ROUNDS"); do
	for i in $(seq 0 $((n - 1))); do
		read -r fn args <<<"${steps[$(((i + r - 1) % n))]}"
		eval "$fn $r $i $args"
	done
done
echo "BENCH done"
[ $# -gt 0 ] || systemctl poweroff
