#!/bin/bash
# The PostgreSQL part of a dkms-SUITE stage, run inside the SUITE root
# (tests/dkms-suite/run.sh: kroot_run, the root with postgresql-PGMAJOR and
# clients/postgresql's Build-Depends, the work directory on /mnt/work with
# the deb stage's libsnowflake1 and libsnowflake-dev and a copy of
# clients/postgresql in src/).  What runs without the module (no
# /dev/snowflake in a chroot: the host never loads it): the extension
# built with PGXS against PGMAJOR (no compiler warning), the Debian package
# postgresql-PGMAJOR-snowflake built with pg_buildext and installed with
# apt, a PostgreSQL PGMAJOR started as the postgres user on a unix socket in
# a fresh directory, CREATE EXTENSION snowflake, the no-device error, on 18
# and later pg_get_loaded_modules(), and pg_regress's devices test
# (clients/postgresql/sql/devices.sql).  The tests that need the device run
# in the db stage's Debian 12 guest.
# Usage: pg.sh PGMAJOR.  Each result is a line "PG ok|notok WHAT", details
# "PG # ...".
set -uo pipefail

PG=${1:?usage: pg.sh PGMAJOR}
say() { echo "PG $*"; }
info() { sed 's/^/PG #   /'; }
W=/mnt/work
B=/usr/lib/postgresql/$PG/bin
APT=(apt-get -q -y -o Dpkg::Use-Pty=0 -o APT::Color=0 --no-install-recommends)
cd "$W" || exit 1

if "${APT[@]}" install ./libsnowflake1_*.deb ./libsnowflake-dev_*.deb >"$W/libsnowflake.log" 2>&1; then
	say "ok apt-get install ./libsnowflake1 ./libsnowflake-dev (the deb stage's)"
else
	tail -n 20 "$W/libsnowflake.log" | info
	say "notok apt-get install ./libsnowflake1 ./libsnowflake-dev"
	exit 0
fi

# PGXS, as PostgreSQL's contrib modules build: no warning from PGMAJOR's headers.
cp -a src/postgresql pgxs
if make -C pgxs PG_CONFIG="$B/pg_config" >"$W/pgxs.log" 2>&1 && ! grep -q 'warning:' "$W/pgxs.log"; then
	say "ok make PG_CONFIG=$B/pg_config: snowflake.so for $("$B/pg_config" --version), no warning"
else
	grep -E 'warning:|error:' "$W/pgxs.log" | head -n 20 | info
	say "notok make PG_CONFIG=$B/pg_config (PGXS)"
fi

# The Debian package, as Debian builds it: debian/control from control.in
# for the versions debian/pgversions allows that the suite has (pg_buildext
# updatecontrol), then dpkg-buildpackage (dh --with pgxs: pg_buildext).
if (cd src/postgresql && pg_buildext updatecontrol && dpkg-buildpackage -us -uc -b) >"$W/build.log" 2>&1 &&
	deb=$(ls src/postgresql-"$PG"-snowflake_*_amd64.deb 2>/dev/null) && [ -n "$deb" ]; then
	say "ok pg_buildext updatecontrol, dpkg-buildpackage -us -uc -b: ${deb#src/} (pg_buildext supported-versions: $(cd src/postgresql && pg_buildext supported-versions 2>&1 | xargs))"
else
	tail -n 30 "$W/build.log" | info
	say "notok dpkg-buildpackage: no postgresql-$PG-snowflake"
	exit 0
fi
if "${APT[@]}" install "./$deb" >"$W/install.log" 2>&1 &&
	[ -f "/usr/lib/postgresql/$PG/lib/snowflake.so" ] && [ -f "/usr/share/postgresql/$PG/extension/snowflake.control" ]; then
	say "ok apt-get install ./${deb#src/}: snowflake.so and snowflake.control in $PG's directories"
else
	tail -n 20 "$W/install.log" | info
	say "notok apt-get install ./${deb#src/}"
	exit 0
fi

# A PostgreSQL PGMAJOR of its own: the postgres user, a unix socket in a fresh
# directory, no TCP; the start bounded by pg_ctl -t, the server stopped by
# its pid (postmaster.pid) at the end.
D=$(mktemp -d "/tmp/sf-pg$PG.XXXXXX")
chown postgres: "$D"
as_pg() { runuser -u postgres -- "$@"; }
if ! as_pg "$B/initdb" -A trust -U postgres -D "$D/data" >"$W/initdb.log" 2>&1 ||
	! as_pg "$B/pg_ctl" -D "$D/data" -l "$D/server.log" -w -t 60 \
		-o "-k $D -c listen_addresses=''" start >"$W/pg_ctl.log" 2>&1; then
	cat "$W/initdb.log" "$W/pg_ctl.log" "$D/server.log" 2>/dev/null | tail -n 20 | info
	say "notok PostgreSQL $PG started (initdb, pg_ctl start)"
	exit 0
fi
pid=$(head -n 1 "$D/data/postmaster.pid")
say "ok PostgreSQL $PG started as postgres on $D/.s.PGSQL.5432 (pid $pid)"
export PGHOST=$D PGOPTIONS='-c statement_timeout=60000'
# q SQL...: psql's output (verbose errors: the SQLSTATE), never a stop.
q() {
	local a=() s
	for s in "$@"; do a+=(-c "$s"); done
	as_pg "$B/psql" -X -q -A -t -v VERBOSITY=verbose "${a[@]}" 2>&1
}

out=$(q 'CREATE EXTENSION snowflake' \
	"SELECT extversion FROM pg_extension WHERE extname = 'snowflake'" \
	"SELECT count(*) FROM pg_proc WHERE pronamespace = 'snowflake'::regnamespace")
if [ "$(echo "$out" | xargs)" = "1.1 11" ]; then
	say "ok CREATE EXTENSION snowflake: version 1.1 (1.0 and its update script), the 11 functions of the schema snowflake"
else
	echo "$out" | info
	say "notok CREATE EXTENSION snowflake"
fi

# The device is missing here: the error says so, with its SQLSTATE and
# what to do; a table whose default is snowflake.nextval() gets no row.
out=$(q 'SELECT snowflake.nextval()')
echo "$out" | info
if grep -q '^ERROR:  58P01: snowflake: /dev/snowflake: no such device (open)$' <<<"$out" &&
	grep -q '^HINT:  Load the module: modprobe snowflake (Debian: install snowflake-dkms' <<<"$out"; then
	say "ok snowflake.nextval() with no /dev/snowflake: 58P01, the hint says modprobe snowflake"
else
	say "notok snowflake.nextval() with no /dev/snowflake: not 58P01 with the modprobe hint"
fi
out=$(q 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake.nextval(), v int)' \
	'INSERT INTO t (v) SELECT generate_series(1, 1000)' 'SELECT count(*) AS rows FROM t')
if grep -q '^ERROR:  58P01: ' <<<"$out" && [ "$(tail -n 1 <<<"$out")" = 0 ]; then
	say "ok INSERT ... SELECT generate_series(1, 1000) into a DEFAULT snowflake.nextval() table: 58P01, 0 rows"
else
	echo "$out" | info
	say "notok INSERT with no device: not 58P01 and 0 rows"
fi
out=$(q 'SELECT snowflake.uuidv7()')
if grep -q '^ERROR:  58P01: snowflake: /dev/uuidv7: no such device (open)$' <<<"$out"; then
	say "ok snowflake.uuidv7() with no /dev/uuidv7: 58P01"
else
	echo "$out" | info
	say "notok snowflake.uuidv7() with no /dev/uuidv7: not 58P01"
fi
# 18's module information (PG_MODULE_MAGIC_EXT), once the library is
# loaded (no pg_get_loaded_modules() before 18).
if [ "$PG" -ge 18 ]; then
	out=$(q "LOAD 'snowflake'" "SELECT module_name || ' ' || version FROM pg_get_loaded_modules() WHERE file_name = 'snowflake.so'")
	if [ "$(tail -n 1 <<<"$out")" = "snowflake 1.1" ]; then
		say "ok pg_get_loaded_modules(): snowflake 1.1"
	else
		echo "$out" | info
		say "notok pg_get_loaded_modules(): no 'snowflake 1.1'"
	fi
fi

# PostgreSQL's harness on what needs no device: PGXS's installcheck with
# the devices test alone (the snowflake test needs the module).
cp -a src/postgresql "$D/src"
chown -R postgres: "$D/src"
if as_pg make -C "$D/src" installcheck PG_CONFIG="$B/pg_config" REGRESS=devices >"$W/regress.log" 2>&1; then
	say "ok pg_regress (make installcheck REGRESS=devices) on $PG: $(grep -E 'tests? passed|All [0-9]+ tests|ok +1 ' "$W/regress.log" | head -n 1 | xargs)"
else
	tail -n 15 "$W/regress.log" | info
	[ -f "$D/src/regression.diffs" ] && head -n 60 "$D/src/regression.diffs" | info
	say "notok pg_regress (make installcheck REGRESS=devices) on $PG"
fi

# Stopped by its pid: SIGINT (fast shutdown), gone within 30 s.
kill -INT "$pid"
for _ in $(seq 300); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
	kill -KILL "$pid"
	say "notok PostgreSQL $PG (pid $pid) stopped within 30 s of SIGINT"
else
	say "ok PostgreSQL $PG (pid $pid) stopped by SIGINT"
fi
