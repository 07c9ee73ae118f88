#!/bin/bash
# P9 natively (issue 43, item 5): the key's cost in the database apart from
# the emulator.  This host never loads the module, so /dev/snowflake is
# stood in for by a file of IDs: the project's PostgreSQL extension
# (clients/postgresql, built with PGXS against this host's PostgreSQL 15)
# linked with the test build of libsnowflake (-DSF_TESTING:
# snowflake_open() accepts any file while SF_TESTING_ANY_FILE=1 is in the
# server's environment, as tests/userspace/run.sh points the CLI at a file
# or a FIFO).  What is measured is the database's own cost of a key: the
# function-call path, the library call, one read(2) of 8 bytes a row
# (here of the page cache, not of the device), against bigserial and a
# plain sequence in the same server.  The device's own reservation is not
# in it (BENCHMARKS.md, "The code's own cost, natively", has that).
#
# What cannot be measured so: every function that asks the device its
# layout (SNOWFLAKE_IOC_GET_CONFIG: snowflake.layout(), and decode(id),
# timestamp(id), from_timestamp(ts) without a layout given): a file has no
# such ioctl, and the extension says "is not a snowflake device".  The
# program calls each once and prints the error it got (BENCH p9native
# unmeasured).  MariaDB's snowflake_next() likewise: its init function
# asks the device's state (SNOWFLAKE_IOC_GET_STATS), so it is not run here.
#
# A private cluster: initdb in a temporary directory, a Unix socket there
# only (listen_addresses empty: no TCP), the server run as postgres when
# this runs as root, stopped by its pid at the end; every statement under
# timeout.  The functions are created from the extension's own scripts
# (sql/snowflake--1.0.sql, then --1.0--1.1.sql) as CREATE EXTENSION runs
# them, MODULE_PATHNAME the built library's path: nothing is installed on
# the host.
#
# Per round, each once, the order rotated one place a round (as
# bench/db/p9-guest.sh): a ROWS-row INSERT ... SELECT into a fresh table
# whose primary key is the key (after a CHECKPOINT), for the keys none (the
# series' own value given: the floor of the INSERT), snowflake.nextval(),
# bigserial, a sequence (CREATE SEQUENCE; DEFAULT nextval('seq')),
# snowflake.uuidv7() (a file of UUIDv7s for /dev/uuidv7) and
# gen_random_uuid(); and the calls alone (SELECT count(f()) FROM
# generate_series(1, ROWS)), snowflake.nextval() also on /dev/zero (the
# floor of a device read: the file's read goes through the page cache);
# and the library call alone, without the database
# (bench/db/p9-native-read.c: ROWS snowflake_next() on the same file, then
# on /dev/zero).  Times are psql's \timing of the statement.
# Prints BENCH p9native lines, then the table (bench/db/p9-report.py
# --native), which also refuses a run with a measurement missing or out of
# place.  Measures, never asserts a time.
#
# Usage: bench/db/p9-native.sh [ROWS [ROUNDS]] (default P9N_ROWS=1000000,
# P9N_ROUNDS=5; BENCH_SMOKE=1: 2000 rows, 2 rounds).  Output in OUT
# (build/bench/p9-native, build/bench-smoke/p9-native): p9native.txt (the
# BENCH lines), p9native.md (the table), the build and the server's log.
# Needs postgresql-15 and postgresql-server-dev-15 (scripts/deps.sh);
# PG_CONFIG chooses another server.  P9N_STMT_TIMEOUT (600 s) bounds each
# statement.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../tests/lib/lib.sh"

if [ "${BENCH_SMOKE:-0}" = 1 ]; then
	OUT=${P9N_OUT:-$BUILD/bench-smoke/p9-native}
	ROWS=${1:-${P9N_ROWS:-2000}}
	ROUNDS=${2:-${P9N_ROUNDS:-2}}
else
	OUT=${P9N_OUT:-$BUILD/bench/p9-native}
	ROWS=${1:-${P9N_ROWS:-1000000}}
	ROUNDS=${2:-${P9N_ROUNDS:-5}}
fi
STMT_TIMEOUT=${P9N_STMT_TIMEOUT:-600}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
case "$ROWS$ROUNDS" in *[!0-9]*) die "ROWS and ROUNDS are numbers (got '$ROWS' '$ROUNDS')" ;; esac
if [ "$ROWS" -lt 1 ] || [ "$ROUNDS" -lt 1 ]; then
	die "ROWS and ROUNDS are at least 1"
fi
[ -x "$PG_CONFIG" ] || die "no $PG_CONFIG: install postgresql-15 and postgresql-server-dev-15 (scripts/deps.sh)"
PG_BIN=$("$PG_CONFIG" --bindir)
for tool in "$PG_BIN/initdb" "$PG_BIN/postgres" "$PG_BIN/psql" gcc make nm python3 timeout setpriv; do
	command -v "$tool" >/dev/null || die "$tool is missing (scripts/deps.sh)"
done
mkdir -p "$OUT"
start=$(now)

# The test build of libsnowflake, not sanitized (the sanitized one,
# build/userspace/san, is the unit tests'): the library's sources with
# -DSF_TESTING, as a static archive linked into the extension.
msg "P9 native: building libsnowflake (SF_TESTING) and clients/postgresql (PGXS, $("$PG_CONFIG" --version))"
rm -rf "${OUT:?}/lib" "${OUT:?}/ext"
mkdir -p "$OUT/lib"
{
	for c in "$ROOT"/userspace/lib/*.c; do
		gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -fPIC -fvisibility=hidden -DSF_TESTING \
			-I"$ROOT/userspace/include" -I"$ROOT/uapi" -c -o "$OUT/lib/$(basename "$c" .c).o" "$c"
	done
	ar rcs "$OUT/lib/libsnowflake-testing.a" "$OUT"/lib/*.o
	gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -I"$ROOT/userspace/include" -I"$ROOT/uapi" \
		-o "$OUT/p9-native-read" "$ROOT/bench/db/p9-native-read.c" "$OUT/lib/libsnowflake-testing.a"
	# PGXS builds in its source directory: a copy of the extension's.
	cp -a "$ROOT/clients/postgresql" "$OUT/ext"
	rm -f "$OUT"/ext/*.o "$OUT"/ext/*.so "$OUT"/ext/*.bc
	make -C "$OUT/ext" PG_CONFIG="$PG_CONFIG" snowflake.so \
		SNOWFLAKE_CFLAGS="-I$ROOT/userspace/include -I$ROOT/uapi" \
		SNOWFLAKE_LIBS="$OUT/lib/libsnowflake-testing.a"
	# The test build's switch is in the library the server loads.
	nm "$OUT/ext/snowflake.so" | grep sf_testing_any_file >/dev/null
} >"$OUT/build.log" 2>&1 || {
	tail -n 30 "$OUT/build.log" >&2
	die "P9 native: the build failed (${OUT#"$ROOT"/}/build.log)"
}

# The server's directory: the data, the socket, the library, the files
# that stand in for the devices.  The server runs as postgres when this
# runs as root (initdb refuses root).
t=$(mktemp -d "${TMPDIR:-/tmp}/sf-p9native.XXXXXX")
chmod 0755 "$t"
# initdb and the server as postgres: a directory they can enter.
cd "$t"
spid=
cleanup() {
	if [ -n "$spid" ]; then
		kill -INT "$spid" 2>/dev/null || true
		for _ in $(seq 300); do
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$spid" 2>/dev/null || true
		wait "$spid" 2>/dev/null || true
	fi
	cd /
	[ ! -f "$t/server.log" ] || cp "$t/server.log" "$OUT/server.log"
	rm -rf "$t"
}
trap cleanup EXIT
as_pg=()
if [ "$(id -u)" = 0 ]; then
	getent passwd postgres >/dev/null || die "no user postgres to run the server as (postgresql-15 makes it)"
	as_pg=(setpriv --reuid=postgres --regid="$(id -g postgres)" --init-groups --reset-env)
fi
install -m 0644 "$OUT/ext/snowflake.so" "$t/snowflake.so"
# The stand-ins: ROWS + 1 increasing IDs of the default layout (41 bits of
# ms since 2010-11-04, datacenter 0, worker 1, the sequence counting), and
# as many UUIDv7s (this ms, a counter in rand_a and rand_b, version 7 and
# the RFC's variant).  A backend opens each file once and reads on from
# its start: every measurement is a new session, whose IDs are distinct.
python3 - "$ROWS" "$t" <<'PY'
import array, os, sys, time
n, d = int(sys.argv[1]) + 1, sys.argv[2]
ms = int(time.time() * 1000) - 1288834974657
base = (ms << 22) | (1 << 12)
array.array("Q", range(base, base + n)).tofile(open(os.path.join(d, "ids.bin"), "wb"))
now = int(time.time() * 1000)
with open(os.path.join(d, "uuids.bin"), "wb") as f:
    for i in range(n):
        hi = (now + (i >> 12)) << 16 | 0x7000 | (i & 0xfff)
        lo = (0b10 << 62) | i
        f.write(hi.to_bytes(8, "big") + lo.to_bytes(8, "big"))
PY
chmod 0644 "$t/ids.bin" "$t/uuids.bin"
[ -z "${as_pg[*]}" ] || chown postgres "$t"
"${as_pg[@]}" env PATH="$PATH" "$PG_BIN/initdb" -D "$t/data" -U postgres -A trust --no-sync -E UTF8 \
	--locale=C >"$OUT/initdb.log" 2>&1 || {
	tail -n 20 "$OUT/initdb.log" >&2
	die "P9 native: initdb failed"
}
port=$((30000 + $$ % 20000))
# max_wal_size as the guest's P9 (bench/db/p9-guest.sh): every key pays the
# same checkpoints.  SF_TESTING_ANY_FILE=1: the test build's switch.
"${as_pg[@]}" env PATH="$PATH" SF_TESTING_ANY_FILE=1 "$PG_BIN/postgres" -D "$t/data" -p "$port" \
	-c listen_addresses= -c unix_socket_directories="$t" -c max_wal_size=256MB \
	-c snowflake.device="$t/ids.bin" -c snowflake.uuid_device="$t/uuids.bin" \
	>"$t/server.log" 2>&1 &
spid=$!
# No NOTICE of a DROP ... IF EXISTS among the BENCH lines.
export PGOPTIONS="-c client_min_messages=warning"
pq() { timeout "$STMT_TIMEOUT" "$PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$t" -p "$port" -U postgres "$@"; }
for _ in $(seq 300); do
	pq -d postgres -c 'SELECT 1' >/dev/null 2>&1 && break
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.1
done
pq -d postgres -c 'SELECT 1' >/dev/null 2>&1 || {
	tail -n 20 "$t/server.log" >&2
	die "P9 native: the server did not start"
}
pg() { pq -d p9 "$@"; }
pq -d postgres -c 'CREATE DATABASE p9'
# The extension's scripts, as CREATE EXTENSION snowflake runs them.
{
	echo 'CREATE SCHEMA snowflake; SET search_path = snowflake;'
	for f in snowflake--1.0.sql snowflake--1.0--1.1.sql; do
		sed -e '/^\\echo /d' -e "s|MODULE_PATHNAME|$t/snowflake.so|" "$ROOT/clients/postgresql/sql/$f"
	done
} | pg -f - >/dev/null
pg -c 'CREATE SEQUENCE p9_seq; CREATE SEQUENCE bs_seq'
first=$(pg -c 'SELECT snowflake.nextval()')
[ "$first" = "$(python3 -c 'import struct,sys; print(struct.unpack("<q", open(sys.argv[1], "rb").read(8))[0])' "$t/ids.bin")" ] ||
	die "P9 native: snowflake.nextval() gave '$first', not the file's first ID"

echo "BENCH p9native meta rows=$ROWS rounds=$ROUNDS postgresql=\"$(pg -c 'SHOW server_version')\" source=file kernel=$(uname -r) host_cpus=$(nproc) host_loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\" commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo -dirty) date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" |
	tee "$OUT/p9native.txt.tmp"

# What needs the device's ioctls: called once each, the error printed (the
# file's path as FILE); the forms with the layout given read no device.
layout="'2010-11-04 01:42:54.657+00', 1, 41, 5, 5, 12"
for f in "snowflake.layout()|snowflake.layout()" "snowflake.decode(id)|snowflake.decode($first)" \
	"snowflake.timestamp(id)|snowflake.timestamp($first)" \
	"snowflake.from_timestamp(ts)|snowflake.from_timestamp(now())" \
	"snowflake.timestamp(id, layout)|snowflake.timestamp($first, $layout)" \
	"snowflake.from_timestamp(ts, layout)|snowflake.from_timestamp(now(), $layout)"; do
	if err=$(pg -c "SELECT ${f#*|}" 2>&1); then
		echo "BENCH p9native measurable fn=\"${f%%|*}\" got=\"$err\""
	else
		echo "BENCH p9native unmeasured fn=\"${f%%|*}\" needs=SNOWFLAKE_IOC_GET_CONFIG error=\"$(grep -m1 ERROR <<<"$err" | sed "s|$t/ids.bin|FILE|; s/^ERROR: *//" | tr -d '"')\""
	fi
done | tee -a "$OUT/p9native.txt.tmp"

# ms STATEMENT [FIRST]: the statement's time (psql's \timing, the last
# statement's), in ms; FIRST run before it in the same session.
ms() {
	local out args=(-c '\timing on')
	[ -z "${2:-}" ] || args+=(-c "$2")
	out=$(pg "${args[@]}" -c "$1") || return 1
	sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out" | tail -n 1
}
# pg_one ROUND POS NAME COLUMN [VALUE]: one fresh table, its key COLUMN,
# ROWS rows (the key's own value VALUE when given): the time and the sizes.
pg_one() {
	local r=$1 pos=$2 name=$3 col=$4 val=${5:-} t_ms
	pg -c "DROP TABLE IF EXISTS t_$name; CREATE TABLE t_$name (id $col PRIMARY KEY, n int); CHECKPOINT" >/dev/null
	if [ -n "$val" ]; then
		t_ms=$(ms "INSERT INTO t_$name (id, n) SELECT $val, g FROM generate_series(1, $ROWS) g")
	else
		t_ms=$(ms "INSERT INTO t_$name (n) SELECT generate_series(1, $ROWS)")
	fi
	[ -n "$t_ms" ] || die "P9 native: no time for the key $name"
	echo "BENCH p9native db=postgresql key=$name round=$r pos=$pos rows=$ROWS ms=$t_ms index_bytes=$(pg -c "SELECT pg_relation_size('t_${name}_pkey')") table_bytes=$(pg -c "SELECT pg_relation_size('t_$name')") count=$(pg -c "SELECT count(DISTINCT id) FROM t_$name")"
	pg -c "DROP TABLE t_$name"
}
call_ms() { ms "SELECT count($1) FROM generate_series(1, $ROWS)" "${2:-}"; }
# The calls alone; snowflake.nextval() also on /dev/zero (8 zero bytes a
# read: no key can be made of them, a count can): the floor of a device
# read, where the file's read goes through the page cache.
calls() {
	echo "BENCH p9native calls round=$1 pos=$2 rows=$ROWS none_ms=$(call_ms '*') snowflake_ms=$(call_ms 'snowflake.nextval()') snowflake_zero_ms=$(call_ms 'snowflake.nextval()' "SET snowflake.device = '/dev/zero'") sequence_ms=$(call_ms "nextval('bs_seq')") uuidv7_ms=$(call_ms 'snowflake.uuidv7()') gen_random_uuid_ms=$(call_ms 'gen_random_uuid()')"
}
# The library call alone, no database (bench/db/p9-native-read.c): ROWS
# snowflake_next() on the same file, then on /dev/zero.
libread() {
	local out zero
	if ! out=$(SF_TESTING_ANY_FILE=1 timeout "$STMT_TIMEOUT" "$OUT/p9-native-read" "$t/ids.bin" "$ROWS") ||
		! zero=$(SF_TESTING_ANY_FILE=1 timeout "$STMT_TIMEOUT" "$OUT/p9-native-read" /dev/zero "$ROWS"); then
		die "P9 native: p9-native-read failed"
	fi
	zero=${zero#*ns=}
	echo "BENCH p9native read round=$1 pos=$2 rows=$ROWS $out zero_ns=${zero%% *}"
}
steps=(
	"pg_one none bigint g"
	"pg_one snowflake 'bigint DEFAULT snowflake.nextval()'"
	"pg_one bigserial bigserial"
	"pg_one sequence \"bigint DEFAULT nextval('p9_seq')\""
	"pg_one snowflake_uuidv7 'uuid DEFAULT snowflake.uuidv7()'"
	"pg_one gen_random_uuid 'uuid DEFAULT gen_random_uuid()'"
	calls
	libread
)
n=${#steps[@]}
msg "P9 native: $ROWS rows a key, $ROUNDS rounds of $n measurements (interleaved, the order rotated each round)"
for r in $(seq 1 "$ROUNDS"); do
	for i in $(seq 0 $((n - 1))); do
		read -r fn args <<<"${steps[$(((i + r - 1) % n))]}"
		eval "$fn $r $i $args"
	done
done | tee -a "$OUT/p9native.txt.tmp"
echo "BENCH p9native done seconds=$(($(now) - start))" | tee -a "$OUT/p9native.txt.tmp"
mv "$OUT/p9native.txt.tmp" "$OUT/p9native.txt"
python3 "$ROOT/bench/db/p9-report.py" --native "$OUT/p9native.txt" >"$OUT/p9native.md" || {
	cat "$OUT/p9native.md" >&2
	die "P9 native: the report refused the run (${OUT#"$ROOT"/}/p9native.txt)"
}
echo
cat "$OUT/p9native.md"
msg "P9 native done in $(($(now) - start)) s: ${OUT#"$ROOT"/}/p9native.md"
