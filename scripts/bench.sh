#!/bin/bash
# `make bench`: measure, never assert.  Builds snowflake.ko for the default
# guest kernel (6.12) and the static bench/snowflake_bench, boots one QEMU
# guest that runs it (P1-P4, all in the same boot so the ratios are fair),
# then counts the instructions of the pure generator core natively under
# callgrind (P5), and writes build/bench/results.json, table.md and bench.svg
# (bench/report.py).
#
# Issue 34: the headline figures P1 and P6 are also measured, in the same
# boot, on BENCH_PLACEMENTS builds of the module whose text is shifted by
# BENCH_PLACE_STEP bytes each (scripts/bench-place.sh); the report gives
# their median and spread.  Beside them, the read path's own cost natively:
# callgrind's instructions per ID of a read's reservation and stores, and
# ns per ID on this host (bench/core_bench.c read and time).
#
# The guest runs under QEMU TCG (software emulation) unless SNOWFLAKE_KVM=1:
# absolute times are not native; the ratios are what count.
#
# Environment: KVER=<kernel release> (default: the first supported kernel),
# BENCH_SECONDS=1.0 (seconds per throughput point in the guest), BENCH_ROUNDS=3
# (P1-P4 repeated in the same boot; the report takes the medians),
# BENCH_APPEND="tsc=reliable" (guest kernel command line, see below),
# BENCH_PLACEMENTS=8, BENCH_PLACE_STEP=512 (bytes), VM_TIMEOUT=900,
# SNOWFLAKE_KVM=1, SNOWFLAKE_SKIP_DEPS=1, MODULE_SRC=DIR.
#
# Why tsc=reliable: under TCG on a busy host the guest's clocksource watchdog
# sometimes finds the emulated TSC skewed against the emulated HPET, marks
# it unstable at a random moment of the run and switches to the HPET, whose
# every read is an emulated MMIO access.  The device reads the clock on
# every read(2) (/dev/zero does not), so the results became bimodal.  Real
# hardware keeps the TSC; so does the benchmark guest.  BENCH_APPEND= (empty)
# turns it off; the clocksource at the start and the end is reported.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"
# shellcheck source=scripts/bench-place.sh
. "$ROOT/scripts/bench-place.sh"

VM_TIMEOUT=${VM_TIMEOUT:-900}
BENCH_APPEND=${BENCH_APPEND-tsc=reliable}
# BENCH_SMOKE=1: every figure once, a few iterations each (0.05 s points, one
# round), into build/bench-smoke/: proves the programs, the guest staging and
# the report work; the figures mean nothing.  Its placement loop has two
# placements and two labels, "head" and "base" (the same sources), so that
# the alternation and the report of `make bench-compare` run too.
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
	BENCH_SECONDS=${BENCH_SECONDS:-0.05}
	BENCH_ROUNDS=${BENCH_ROUNDS:-1}
	BENCH_PLACEMENTS=${BENCH_PLACEMENTS:-2}
	BENCH_PLACE_STEP=${BENCH_PLACE_STEP:-2048}
	CG_BATCH=200 CG_SINGLE=10000 CG_UUID=20 CG_READ=20 NATIVE_S=0.02
	place_labels="base head"
	OUT=$BUILD/bench-smoke
else
	BENCH_SECONDS=${BENCH_SECONDS:-1.0}
	BENCH_ROUNDS=${BENCH_ROUNDS:-3}
	BENCH_PLACEMENTS=${BENCH_PLACEMENTS:-8}
	BENCH_PLACE_STEP=${BENCH_PLACE_STEP:-512}
	CG_BATCH=20000 CG_SINGLE=1000000 CG_UUID=2000 CG_READ=2000 NATIVE_S=0.5
	place_labels="head"
	OUT=$BUILD/bench
fi
mkdir -p "$OUT"
start_all=$(now)

if [ "${SNOWFLAKE_SKIP_DEPS:-0}" != 1 ]; then
	"$ROOT/scripts/deps.sh" >"$OUT/deps.log" 2>&1 || {
		cat "$OUT/deps.log" >&2
		die "installing the dependencies failed"
	}
fi
for t in gcc qemu-system-x86_64 valgrind callgrind_annotate gnuplot python3; do
	command -v "$t" >/dev/null || die "$t is missing (run scripts/deps.sh)"
done

kver=$(default_kver)
moddir=$BUILD/mod-bench-$kver
stage=$BUILD/bench/initramfs
initrd=$OUT/initramfs.cpio.gz
log=$OUT/guest.log
CFLAGS=(-O2 -g -std=gnu11 -Wall -Wextra -Werror)

msg "building snowflake.ko for $kver"
(build_module "$kver" "$moddir") >"$OUT/module-build.log" 2>&1 || {
	cat "$OUT/module-build.log" >&2
	die "building the module failed"
}

msg "building bench/snowflake_bench (static) and bench/core_bench (native)"
gcc "${CFLAGS[@]}" -static -pthread -o "$OUT/snowflake_bench" "$ROOT/bench/snowflake_bench.c"
gcc "${CFLAGS[@]}" -I"$ROOT/driver" -I"$ROOT/uapi" -o "$OUT/core_bench" \
	"$ROOT/bench/core_bench.c" "$ROOT/driver/snowflake_core.c"

msg "building the module at $BENCH_PLACEMENTS placements of its text, $BENCH_PLACE_STEP bytes apart (scripts/bench-place.sh)"
rm -rf "$OUT/place"
place_build "$kver" "${MODULE_SRC:-$ROOT}" head "$OUT/place" "$OUT/place-build-head.log" >"$OUT/placements.txt"
# BENCH_SMOKE's "base" is the same sources: head's modules under its name.
if [ "$place_labels" != head ]; then
	for f in "$OUT"/place/head-*.ko; do
		cp "$f" "$OUT/place/base-${f##*/head-}"
	done
	sed 's/ko=head-/ko=base-/; s/label=head /label=base /' "$OUT/placements.txt" >>"$OUT/placements.txt.base"
	cat "$OUT/placements.txt.base" >>"$OUT/placements.txt"
	rm -f "$OUT/placements.txt.base"
fi
sed 's/^/  /' "$OUT/placements.txt"
# P8's native half: a batch read of /dev/uuidv7 per UUID, chunked as the
# driver chunks its random bytes (SFU_RND_BYTES of snowflake_uuid.c).
sfu_rnd=$(sed -n 's/^#define SFU_RND_BYTES[[:space:]]*//p' "$ROOT/driver/snowflake_uuid.c")
[ -n "$sfu_rnd" ] || die "no SFU_RND_BYTES in driver/snowflake_uuid.c"
gcc "${CFLAGS[@]}" -I"$ROOT/driver" -I"$ROOT/uapi" -DSFU_RND_BYTES="$sfu_rnd" -o "$OUT/uuid_bench" \
	"$ROOT/bench/uuid_bench.c" "$ROOT/driver/uuid_core.c"

# Issue 14's peers: Debian's redis-server and mariadbd, bench/peers/
# peers_bench (hiredis, libmariadb) and, when there is a Node.js, node with
# @sapphire/snowflake from npm.  All bench-only: installed here, not by
# scripts/deps.sh.
peers_prepare() {
	local p missing=() mdb=$BUILD/bench-mariadb ver
	for p in redis-server libhiredis-dev mariadb-server libmariadb-dev; do
		pkg_installed "$p" || missing+=("$p")
	done
	if [ "${#missing[@]}" -gt 0 ]; then
		msg "installing ${missing[*]} (bench only)"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			"${missing[@]}" >"$OUT/apt-peers.log" 2>&1 || {
			tail -n 20 "$OUT/apt-peers.log" >&2
			die "installing ${missing[*]} failed"
		}
	fi
	gcc "${CFLAGS[@]}" -o "$OUT/peers_bench" "$ROOT/bench/peers/peers_bench.c" -lhiredis -lmariadb
	# The ticket server's datadir, made once per mariadbd version: system
	# tables (mariadb-install-db) and Flickr's table (mariadbd --bootstrap),
	# small InnoDB files so that it fits the initramfs.
	ver=$(mariadbd --version | sed -n 1p)
	if [ "$(cat "$mdb/version" 2>/dev/null)" != "$ver" ]; then
		msg "preparing the MariaDB ticket server's datadir"
		rm -rf "$mdb"
		mkdir -p "$mdb"
		mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$mdb/data" \
			--auth-root-authentication-method=normal --skip-test-db --skip-name-resolve \
			--innodb-log-file-size=4M --innodb-data-file-path=ibdata1:4M:autoextend \
			>"$mdb/install.log" 2>&1 || {
			tail -n 20 "$mdb/install.log" >&2
			die "mariadb-install-db failed"
		}
		mariadbd --no-defaults --bootstrap --user="$(id -un)" --datadir="$mdb/data" \
			--innodb-log-file-size=4M --innodb-data-file-path=ibdata1:4M:autoextend \
			--log-error="$mdb/bootstrap.err" <"$ROOT/bench/peers/tickets.sql" 2>"$mdb/bootstrap.stderr" || {
			tail -n 20 "$mdb/bootstrap.err" >&2
			die "creating the ticket table failed"
		}
		printf '%s\n' "$ver" >"$mdb/version"
	fi
	# Node.js: the machine's node (installed from Debian when missing) and
	# npm's @sapphire/snowflake, its cache under build/.
	NODE_SKIP=
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			nodejs npm >"$OUT/apt-node.log" 2>&1 || NODE_SKIP="installing nodejs and npm failed"
	fi
	if [ -z "$NODE_SKIP" ] && [ ! -f "$BUILD/bench-node/node_modules/@sapphire/snowflake/package.json" ]; then
		mkdir -p "$BUILD/bench-node"
		echo '{"private": true}' >"$BUILD/bench-node/package.json"
		(cd "$BUILD/bench-node" && timeout 300 npm install --cache "$BUILD/npm-cache" --no-audit \
			--no-fund @sapphire/snowflake) >"$OUT/npm.log" 2>&1 ||
			NODE_SKIP="npm install @sapphire/snowflake failed (see ${OUT#"$ROOT"/}/npm.log)"
	fi
}

# stage_bin FILE DEST: FILE into the initramfs as DEST, with the shared
# libraries ldd names and the loader.
stage_bin() {
	local lib
	mkdir -p "$stage$(dirname "$2")"
	install -m 0755 "$(readlink -f "$1")" "$stage$2"
	ldd "$1" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }' | while read -r lib; do
		mkdir -p "$stage$(dirname "$lib")"
		cp -L "$lib" "$stage$lib"
	done
	mkdir -p "$stage/lib64"
	cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"
}

peers_stage() {
	stage_bin "$OUT/peers_bench" /usr/local/bin/peers_bench
	stage_bin "$(command -v redis-server)" /usr/bin/redis-server
	stage_bin "$(command -v mariadbd)" /usr/sbin/mariadbd
	mkdir -p "$stage/usr/share/mysql" "$stage/var/lib"
	cp -a /usr/share/mysql/english /usr/share/mysql/charsets "$stage/usr/share/mysql/"
	cp -a "$BUILD/bench-mariadb/data" "$stage/var/lib/mysql"
	if [ -z "$NODE_SKIP" ]; then
		stage_bin "$(command -v node)" /usr/bin/node
		mkdir -p "$stage/opt/node"
		cp -a "$BUILD/bench-node/node_modules" "$stage/opt/node/"
		install -m 0644 "$ROOT/bench/peers/node_bench.js" "$stage/opt/node/node_bench.js"
	fi
}

msg "preparing the peers: Redis, MariaDB, Node.js (bench/peers/)"
peers_prepare

vm_stage "$stage" "$ROOT/bench/init-bench.sh"
cp "$moddir/snowflake.ko" "$stage/snowflake.ko"
install -m 0755 "$OUT/snowflake_bench" "$stage/snowflake_bench"
cp -R "$OUT/place" "$stage/place"
peers_stage
{
	place_conf "$place_labels" "$BENCH_ROUNDS" "$BENCH_SECONDS"
	printf 'BENCH_ARGS="-s %s -r %s"\n' "$BENCH_SECONDS" "$BENCH_ROUNDS"
	printf 'PEERS_ARGS="-s %s -r %s"\n' "$BENCH_SECONDS" "$BENCH_ROUNDS"
	printf 'NODE_ARGS="%s %s"\n' "$BENCH_SECONDS" "$BENCH_ROUNDS"
	printf 'NODE_SKIP="%s"\n' "$NODE_SKIP"
} >"$stage/etc/snowflake-vm.conf"
vm_pack "$stage" "$initrd"
msg "initramfs: $(du -h "$initrd" | cut -f1)"

bench_accel=TCG
[ "${SNOWFLAKE_KVM:-0}" = 1 ] && bench_accel=KVM
msg "booting $(vmlinuz_of "$kver") under QEMU $bench_accel, ${VM_CPUS:-2} vCPUs, append '$BENCH_APPEND' (console in ${log#"$ROOT"/})"
show_bench() {
	awk '{ gsub(/\r/, "") } /^BENCH/ { print "  " $0; fflush() }'
}
t0=$(now)
rc=0
load_watch "$OUT/host-load.txt"
# The parallel boot (tests/lib/vm.sh): multi-threaded TCG, one CPU up
# until bench/init-bench.sh brings the other up (vm_cpus_online) for the
# readers that must run at once (P3, the scaling), with the text-patch
# recorder running; vm_textpoke checks its report after.
VM_MODE=parallel VM_MEM=${VM_MEM:-2048} VM_APPEND="${VM_APPEND:-} $BENCH_APPEND" \
	vm_boot "$kver" "$initrd" "$log" "$VM_TIMEOUT" show_bench || rc=$?
guest_load=$(load_watch_stop)
guest_secs=$(($(now) - t0))
tr -d '\r' <"$log" | grep -E '^BENCH( |-DMESG |-SKIP |-LOG )' >"$OUT/guest.txt" || true
if ! grep -q '^BENCH done' "$OUT/guest.txt" || ! grep -q '^BENCH place_done' "$OUT/guest.txt" ||
	grep -q '^BENCH-ERROR' <(tr -d '\r' <"$log"); then
	tail -n 40 "$log" | tr -d '\r' | sed 's/^/  | /' >&2
	die "the guest benchmark did not finish (qemu exit $rc; console in ${log#"$ROOT"/})"
fi
bench_guest_verdict "$log"

# The peers natively on this host (servers on a private port and sockets,
# stopped after): the scale of a round trip on hardware, next to an 8-byte
# read of /dev/zero, the floor of a device read.  Skipped with a line when
# a server does not start.  BENCH_NATIVE=0 skips it.
native_peers() {
	local d=$OUT/native port=$((20000 + $$ % 20000)) rpid mpid i=0
	rm -rf "$d"
	mkdir -p "$d"
	cp -a "$BUILD/bench-mariadb/data" "$d/data"
	redis-server --bind 127.0.0.1 --port "$port" --unixsocket "$d/redis.sock" --unixsocketperm 700 \
		--save '' --appendonly no --dir "$d" --logfile "$d/redis.log" --daemonize no &
	rpid=$!
	mariadbd --no-defaults --user="$(id -un)" --datadir="$d/data" --socket="$d/mysqld.sock" \
		--skip-networking --skip-grant-tables --innodb-log-file-size=4M \
		--innodb-data-file-path=ibdata1:4M:autoextend --innodb-buffer-pool-size=32M \
		--pid-file="$d/mysqld.pid" --log-error="$d/mariadb.err" 2>"$d/mariadbd.stderr" &
	mpid=$!
	while [ $i -lt 300 ] && { [ ! -S "$d/redis.sock" ] || [ ! -S "$d/mysqld.sock" ]; }; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ -S "$d/redis.sock" ] && [ -S "$d/mysqld.sock" ]; then
		"$OUT/peers_bench" native -s "$BENCH_SECONDS" -r "$BENCH_ROUNDS" -P "$port" \
			-R "$d/redis.sock" -M "$d/mysqld.sock" || echo "BENCH-SKIP native peers_bench failed"
	else
		echo "BENCH-SKIP native the servers did not start (${d#"$ROOT"/})"
	fi
	kill "$rpid" "$mpid" 2>/dev/null || true
	wait "$rpid" "$mpid" 2>/dev/null || true
	rm -rf "$d/data"
}
if [ "${BENCH_NATIVE:-1}" = 1 ]; then
	msg "the peers natively on this host (Redis, MariaDB, /dev/zero)"
	native_peers | tee "$OUT/native.txt"
else
	: >"$OUT/native.txt"
fi

# P5: instructions of sf_core_reserve() only (--toggle-collect), natively.
cg() { # MODE CALLS
	local out=$OUT/callgrind.out.$1 ir ids
	valgrind --tool=callgrind --toggle-collect=bench_reserve \
		--callgrind-out-file="$out" "$OUT/core_bench" "$1" "$2" \
		>"$OUT/core-$1.txt" 2>"$OUT/callgrind-$1.log" ||
		die "callgrind failed (see ${OUT#"$ROOT"/}/callgrind-$1.log)"
	ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")
	ids=$(sed -n 's/.* ids=\([0-9]*\).*/\1/p' "$OUT/core-$1.txt")
	if [ -z "$ir" ] || [ -z "$ids" ]; then
		die "no callgrind totals for $1"
	fi
	# The same count, function by function, for the record.
	callgrind_annotate "$out" >"$OUT/callgrind-annotate-$1.txt" 2>&1 || true
	echo "BENCH p5 mode=$1 calls=$2 ids=$ids instructions=$ir"
}
# P8's native half: one batch read of /dev/uuidv7 (--toggle-collect of
# bench_uuid_read), its instructions per UUID split by function: the
# reservation, the random bytes (get_random_bytes()'s ChaCha20 blocks,
# modelled), the formatting and the stores (bench/uuid_bench.c).
cg_uuid() { # READS
	local out=$OUT/callgrind.out.uuid uuids
	valgrind --tool=callgrind --toggle-collect=bench_uuid_read \
		--callgrind-out-file="$out" "$OUT/uuid_bench" "$1" \
		>"$OUT/core-uuid.txt" 2>"$OUT/callgrind-uuid.log" ||
		die "callgrind failed (see ${OUT#"$ROOT"/}/callgrind-uuid.log)"
	uuids=$(sed -n 's/.* uuids=\([0-9]*\).*/\1/p' "$OUT/core-uuid.txt")
	[ -n "$uuids" ] || die "no UUID count from uuid_bench"
	callgrind_annotate --auto=no --threshold=100 "$out" >"$OUT/callgrind-annotate-uuid.txt" 2>&1 ||
		die "callgrind_annotate failed on $out"
	# Exclusive counts by function (an inlined helper's lines are
	# reported under the function it is inlined into, in its own file; a
	# clone gcc makes, bench_put.isra.0, counts as its function).
	awk -v reads="$1" -v uuids="$uuids" '
		/^ *[0-9,]+ .*:[A-Za-z_0-9.]+( |$)/ {
			n = $1; gsub(/,/, "", n)
			f = $0; sub(/^[^:]*:/, "", f); sub(/ .*/, "", f); sub(/\..*/, "", f)
			if (f == "chacha20_block" || f == "bench_random_bytes") r += n
			else if (f == "bench_put") p += n
			else if (f == "sf_uuid_core_reserve") v += n
			else if (f == "bench_uuid_read") o += n
		}
		/PROGRAM TOTALS/ { t = $1; gsub(/,/, "", t) }
		END {
			printf "BENCH p8core mode=batch reads=%d uuids=%d instructions=%d random=%d format_store=%d reserve=%d loop=%d\n", \
				reads, uuids, t, r, p, v, o
		}' "$OUT/callgrind-annotate-uuid.txt"
}
# Issue 34, the read path's own cost without an emulator: a 4096-ID read's
# reservation and stores (bench_read(): bench_reserve() and bench_put_ids(),
# the driver's eight-IDs-a-turn store loop) under callgrind, instructions
# per ID by function; then ns per ID of the same natively on this host, in
# rounds (core_bench time).
cg_read() { # READS
	local out=$OUT/callgrind.out.read ids
	valgrind --tool=callgrind --toggle-collect=bench_read \
		--callgrind-out-file="$out" "$OUT/core_bench" read "$1" \
		>"$OUT/core-read.txt" 2>"$OUT/callgrind-read.log" ||
		die "callgrind failed (see ${OUT#"$ROOT"/}/callgrind-read.log)"
	ids=$(sed -n 's/.* ids=\([0-9]*\).*/\1/p' "$OUT/core-read.txt")
	[ -n "$ids" ] || die "no ID count from core_bench read"
	callgrind_annotate --auto=no --threshold=100 "$out" >"$OUT/callgrind-annotate-read.txt" 2>&1 ||
		die "callgrind_annotate failed on $out"
	awk -v reads="$1" -v ids="$ids" '
		/^ *[0-9,]+ .*:[A-Za-z_0-9.]+( |$)/ {
			n = $1; gsub(/,/, "", n)
			f = $0; sub(/^[^:]*:/, "", f); sub(/ .*/, "", f); sub(/\..*/, "", f)
			if (f == "bench_put_ids") p += n
			else if (f == "bench_reserve") v += n
			else if (f == "bench_read") o += n
		}
		/PROGRAM TOTALS/ { t = $1; gsub(/,/, "", t) }
		END {
			printf "BENCH native_read mode=batch reads=%d ids=%d instructions=%d reserve=%d put=%d loop=%d\n", \
				reads, ids, t, v, p, o
		}' "$OUT/callgrind-annotate-read.txt"
}
msg "callgrind: sf_core_reserve(), a read's reservation and stores, a /dev/uuidv7 batch natively, $(valgrind --version)"
{
	cg batch "$CG_BATCH"
	cg single "$CG_SINGLE"
	cg_read "$CG_READ"
	cg_uuid "$CG_UUID"
} | tee "$OUT/core.txt"
msg "the read path's core natively on this host, ns per ID ($BENCH_ROUNDS rounds)"
"$OUT/core_bench" time "$BENCH_ROUNDS" "$NATIVE_S" | sed 's/^CORE /BENCH native_time /' |
	tee -a "$OUT/core.txt"

{
	echo "BENCH meta accel=$bench_accel vm_mode=parallel textpoke=$textpoke append=\"$BENCH_APPEND\" host_loadavg=\"$(cut -d' ' -f1-3 /proc/loadavg)\" host_load_during_guest=$guest_load host_cpus=$(nproc) guest_kernel=$kver qemu=\"$(qemu-system-x86_64 --version | sed -n 1p)\" valgrind=$(valgrind --version) gcc=\"$(gcc --version | sed -n 1p)\" date=$(date -u +%Y-%m-%dT%H:%M:%SZ) guest_seconds=$guest_secs"
	cat "$OUT/placements.txt" "$OUT/guest.txt" "$OUT/core.txt"
	grep -E '^BENCH( |-SKIP )' "$OUT/native.txt" | grep -v '^BENCH round ' || true
} >"$OUT/raw.txt"

python3 "$ROOT/bench/report.py" "$OUT/raw.txt" "$OUT"
gnuplot "$OUT/bench.gp"
msg "results: ${OUT#"$ROOT"/}/results.json, table.md, bench.svg (raw lines: raw.txt)"
echo
cat "$OUT/table.md"
echo
# P9 (issue 32): the keys a database makes, in its own guest (PostgreSQL 15
# and MariaDB from the packages, scripts/bench-db.sh).  Its smoke run is the
# db stage's (tests/db/run.sh runs its program and its report once, in the
# guest it boots anyway): a second database guest here would cost minutes.
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
	msg "P9: run once by the db stage of make check (tests/db/run.sh), not here"
else
	"$ROOT/scripts/bench-db.sh"
fi
echo
# P9 natively (issue 43, item 5): the key's cost in PostgreSQL 15 on this
# host, the device stood in for by a file (bench/db/p9-native.sh: a private
# cluster, the extension on libsnowflake's test build).  The smoke run:
# 2,000 rows, two rounds; the program refuses a run that is not whole.
"$ROOT/bench/db/p9-native.sh"
echo
# P10 (issue 41): a fleet of dry-run agents against each real store on this
# host, started at once, then killed with SIGKILL and started again at
# once; one agent more says pool_full (bench/fleet.py).  The smoke run: 4
# agents on Redis, to prove the program (BENCH_FLEET_STORES and
# BENCH_FLEET_COUNTS choose).
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
	fleet_stores=${BENCH_FLEET_STORES:-redis} fleet_counts=${BENCH_FLEET_COUNTS:-4} fleet_hold=1
else
	fleet_stores=${BENCH_FLEET_STORES:-etcd,redis,zookeeper,mysql}
	fleet_counts=${BENCH_FLEET_COUNTS:-128,256,512,1024} fleet_hold=10
fi
make -C "$ROOT/userspace" OUT="$BUILD/userspace" ${V:+V="$V"} "$BUILD/userspace/snowflake-agent" >/dev/null
rm -rf "$OUT/fleet"
mkdir -p "$OUT/fleet"
python3 "$ROOT/bench/fleet.py" "$BUILD/userspace/snowflake-agent" "$OUT/fleet" \
	--stores "$fleet_stores" --counts "$fleet_counts" --hold-s "$fleet_hold" | tee "$OUT/fleet/p10.txt.tmp"
mv "$OUT/fleet/p10.txt.tmp" "$OUT/fleet/p10.txt"
echo
msg "done in $(($(now) - start_all))s (guest ${guest_secs}s)"
