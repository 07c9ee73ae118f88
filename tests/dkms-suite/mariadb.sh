#!/bin/bash
# The MariaDB part of a dkms-SUITE stage (--mariadb: dkms-trixie, MariaDB
# 11.8), run inside the SUITE root after pg.sh (tests/dkms-suite/run.sh:
# kroot_run, the root with mariadb-server and clients/mariadb's
# Build-Depends, libsnowflake-dev installed by pg.sh, a copy of
# clients/mariadb in /mnt/work/src/).  What runs without the module (no
# /dev/snowflake in a chroot): the Debian package mariadb-plugin-snowflake
# built with dpkg-buildpackage and installed with apt, a mariadbd of its
# own (the mysql user, a unix socket in a fresh directory, no TCP),
# snowflake.sql's CREATE FUNCTION ... SONAME, a call refused for its
# arguments, the no-device errors.  The tests that need the device run in
# the db stage's Debian 12 guest.
# Each result is a line "MY ok|notok WHAT", details "MY # ...".
set -uo pipefail

say() { echo "MY $*"; }
info() { sed 's/^/MY #   /'; }
W=/mnt/work
APT=(apt-get -q -y -o Dpkg::Use-Pty=0 -o APT::Color=0 --no-install-recommends)
cd "$W" || exit 1

if (cd src/mariadb && dpkg-buildpackage -us -uc -b) >"$W/my-build.log" 2>&1 &&
	deb=$(ls src/mariadb-plugin-snowflake_*_amd64.deb 2>/dev/null) && [ -n "$deb" ]; then
	say "ok dpkg-buildpackage -us -uc -b: ${deb#src/}"
else
	tail -n 30 "$W/my-build.log" | info
	say "notok dpkg-buildpackage: no mariadb-plugin-snowflake"
	exit 0
fi
# The server's plugin directory (not mariadb_config's, the client library's).
plugindir=$(mariadbd --no-defaults --verbose --help 2>/dev/null | awk '$1 == "plugin-dir" { print $2 }')
plugindir=${plugindir%/}
if "${APT[@]}" install "./$deb" >"$W/my-install.log" 2>&1 &&
	[ -f "$plugindir/snowflake_udf.so" ] && [ -f /usr/share/snowflake/mariadb/snowflake.sql ]; then
	say "ok apt-get install ./${deb#src/}: snowflake_udf.so in $plugindir"
else
	tail -n 20 "$W/my-install.log" | info
	say "notok apt-get install ./${deb#src/}: no $plugindir/snowflake_udf.so"
	exit 0
fi

# A mariadbd of its own: the mysql user, a unix socket in a fresh
# directory, no TCP; up within 60 s (mariadb-admin ping), stopped by its
# pid at the end.
D=$(mktemp -d /tmp/sf-mariadb.XXXXXX)
chown mysql: "$D"
if ! mariadb-install-db --no-defaults --user=mysql --datadir="$D/data" --skip-test-db \
	>"$W/my-install-db.log" 2>&1; then
	tail -n 20 "$W/my-install-db.log" | info
	say "notok mariadb-install-db"
	exit 0
fi
mariadbd --no-defaults --user=mysql --datadir="$D/data" --socket="$D/sock" --skip-networking \
	--pid-file="$D/pid" --plugin-dir="$plugindir" --log-error="$D/error.log" &
pid=$!
my() { mariadb --no-defaults -S "$D/sock" -u root -N -B "$@" 2>&1; }
for _ in $(seq 600); do
	mariadb-admin --no-defaults -S "$D/sock" -u root ping >/dev/null 2>&1 && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if ! mariadb-admin --no-defaults -S "$D/sock" -u root ping >/dev/null 2>&1; then
	tail -n 20 "$D/error.log" | info
	kill -KILL "$pid" 2>/dev/null
	say "notok mariadbd started (pid $pid) within 60 s"
	exit 0
fi
say "ok mariadbd $(my -e 'SELECT version()') started as mysql on $D/sock (pid $pid)"

out=$(my </usr/share/snowflake/mariadb/snowflake.sql && my -e \
	"SELECT count(*) FROM mysql.func WHERE dl = 'snowflake_udf.so'")
if [ "$out" = 6 ]; then
	say "ok mariadb < snowflake.sql: the 6 functions (CREATE FUNCTION ... SONAME 'snowflake_udf.so')"
else
	echo "$out" | info
	say "notok mariadb < snowflake.sql: not 6 functions in mysql.func"
fi
# expect_err WHAT WORD SQL: the statement fails, naming WORD.
expect_err() {
	local out
	out=$(my -e "$3") && out="no error: $out"
	echo "$out" | info
	if [[ $out != "no error"* ]] && grep -qF -- "$2" <<<"$out"; then
		say "ok $1"
	else
		say "notok $1: an error naming '$2' expected"
	fi
}
expect_err "snowflake_next(1): refused for its argument count" \
	"snowflake_next() takes 0 arguments" 'SELECT snowflake_next(1)'
expect_err "snowflake_next() with no /dev/snowflake: says modprobe snowflake" \
	"snowflake: no /dev/snowflake: load the module (modprobe snowflake)" 'SELECT snowflake_next()'
expect_err "snowflake_uuidv7() with no /dev/uuidv7: says modprobe snowflake" \
	"snowflake: no /dev/uuidv7: load the module (modprobe snowflake)" 'SELECT snowflake_uuidv7()'
out=$(my -e 'CREATE DATABASE sf; CREATE TABLE sf.t (id BIGINT UNSIGNED PRIMARY KEY, v INT);
	INSERT INTO sf.t SELECT snowflake_next(), seq FROM sf.seq_1_to_1000')
rows=$(my -e 'SELECT count(*) FROM sf.t')
if grep -qF 'snowflake: no /dev/snowflake' <<<"$out" && [ "$rows" = 0 ]; then
	say "ok INSERT ... SELECT snowflake_next(), seq FROM seq_1_to_1000 with no device: refused, 0 rows"
else
	echo "$out" "$rows" | info
	say "notok INSERT with no device: not refused with 0 rows"
fi

# Stopped by its pid: SIGTERM, gone within 30 s.
kill -TERM "$pid"
for _ in $(seq 300); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
	kill -KILL "$pid"
	say "notok mariadbd (pid $pid) stopped within 30 s of SIGTERM"
else
	say "ok mariadbd (pid $pid) stopped by SIGTERM"
fi
