#!/bin/bash
# The agent guest: one scenario (tests/agent-guest/init.sh, the guest's
# /init), run once per store, each in its own 6.12 guest under QEMU TCG:
# snowflake.ko with strict=1, the store's real server on the guest's
# loopback and the real snowflake-agent (not dry-run) with the static CLI.
#
#   tests/agent-guest/run.sh [redis|zookeeper|mysql]...   (default: all three)
#   AGENT_KVER=<kver>   the guest kernel (default: Debian's 6.12, not -rt)
#
# What a store adds is here how its server and the agent get into the
# initramfs (stage_BACKEND), and in tests/agent-guest/stores.sh how the
# guest starts it and what the agent's options are.  The checks are the
# guest's (init.sh) for every store alike, and here: the guest finished,
# rmmod, no kernel problem on the console.  The old per-store guests and
# where each of their checks lives now: tests/agent-guest/MIGRATION.md.
#
# Prints "BACKEND: ok ..." / "FAIL ..." lines, the figures as
# "figure: BACKEND guest: ...", a line "agent-guest BACKEND: N passed,
# M failed (S s)" per store, and last "agent-guest: N passed, M failed".
set -uo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"

HERE=$ROOT/tests/agent-guest
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
# guest_figure BACKEND LINE: a figure the guest printed (AGENT-FIGURE LINE).
# shellcheck disable=SC2317 # called by vm_guest_results
guest_figure() { echo "figure: $1 guest: $2"; }
finish() {
	echo "agent-guest: $pass passed, $fail failed$(vm_notes)"
	[ "$fail" -eq 0 ]
	exit
}

# ---- What each store puts into the initramfs ($stage; $out for logs).

# Redis: the static agent (vm_add_agent) and Debian's redis-server and
# redis-cli with their shared libraries.
stage_redis() {
	vm_add_agent "$stage" "$out" || { echo "staging the static snowflake-agent and redis-server"; return 1; }
}

# ZooKeeper: the static agent with the ZooKeeper store; Debian's
# zookeeper.jar (ZooKeeperServerMain needs no more: the admin server, Netty
# and Jetty stay out), with the metrics and snappy libraries its default
# metrics provider and its snapshots load and slf4j's simple logger, under
# a Java runtime cut down with jlink to the modules the server uses (built
# once into $BUILD/jre-zk-guest from openjdk-17-jdk-headless, with a
# class-data archive: much cheaper a start under TCG).
ZK_JARS=(/usr/share/java/zookeeper.jar /usr/share/java/zookeeper-jute.jar
	/usr/share/java/slf4j-api.jar /usr/share/java/slf4j-simple.jar
	/usr/share/java/metrics-core.jar /usr/share/java/snappy-java.jar)
ZK_MODULES=java.base,java.logging,java.management,java.naming,java.security.jgss,java.security.sasl,jdk.management,jdk.net
stage_zookeeper() {
	local jre=$BUILD/jre-zk-guest f b
	for f in "${ZK_JARS[@]}"; do
		[ -e "$f" ] || { echo "$f is missing (scripts/deps.sh: zookeeperd)"; return 1; }
	done
	command -v jlink >/dev/null || { echo "jlink is missing (scripts/deps.sh: openjdk-17-jdk-headless)"; return 1; }
	if [ ! -x "$jre/bin/java" ] || [ "$(cat "$jre/.modules" 2>/dev/null)" != "$ZK_MODULES" ]; then
		rm -rf "$jre"
		if ! jlink --add-modules "$ZK_MODULES" --strip-debug --no-header-files --no-man-pages \
			--compress=2 --generate-cds-archive --output "$jre" >"$out/jlink.log" 2>&1; then
			cat "$out/jlink.log"
			echo "jlink: a Java runtime for the guest"
			return 1
		fi
		rm -f "$jre/lib/server/classes_nocoops.jsa"
		echo "$ZK_MODULES" >"$jre/.modules"
	fi
	vm_add_agent "$stage" "$out" || { echo "staging the static snowflake-agent"; return 1; }
	grep -qa zookeeper_init2 "$out/snowflake-agent" ||
		{ echo "the static agent was built without the ZooKeeper store (libzookeeper_mt.a?)"; return 1; }
	mkdir -p "$stage/opt/jre" "$stage/opt/zookeeper"
	cp -a "$jre/." "$stage/opt/jre/"
	for f in "${ZK_JARS[@]}"; do cp -L "$f" "$stage/opt/zookeeper/"; done
	# java's shared libraries (libz, libstdc++, ...) next to the loader.
	for b in "$jre/bin/java" "$jre/lib/server/libjvm.so" "$jre"/lib/*.so; do
		ldd "$b" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'
	done | stage_libs
}

# MySQL/MariaDB: the agent built here with hiredis and libmariadb (no static
# libmariadb: dynamic, without etcd and ZooKeeper), mariadbd and the
# mariadb client, with the libraries ldd names.  The data directory is made
# on this host (mariadb-install-db, then the agent's user created by a
# mariadbd started on it for a moment): the guest only starts the server.
stage_mysql() {
	local b data sock my_pid
	make -s -C "$ROOT/userspace" OUT="$BUILD/userspace" "$BUILD/userspace/libsnowflake.a" ||
		{ echo "building libsnowflake.a"; return 1; }
	# shellcheck disable=SC2046 # pkg-config's words
	if ! gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -DAG_NO_ETCD -DAG_NO_ZOOKEEPER -DSNOWFLAKE_VERSION="\"$(cat "$ROOT/VERSION")\"" \
		-I"$ROOT/userspace/include" -I"$ROOT/uapi" -o "$out/snowflake-agent" \
		"$ROOT"/userspace/agent/*.c "$BUILD/userspace/libsnowflake.a" -lhiredis \
		$(pkg-config --libs libmariadb) 2>"$out/agent-build.log"; then
		cat "$out/agent-build.log"
		echo "building snowflake-agent with libmariadb"
		return 1
	fi
	install -m 0755 "$out/snowflake-agent" "$stage/usr/sbin/snowflake-agent"
	install -m 0755 /usr/sbin/mariadbd "$stage/usr/sbin/mariadbd"
	install -m 0755 "$(readlink -f "$(command -v mariadb)")" "$stage/usr/bin/mariadb"
	for b in "$stage/usr/sbin/snowflake-agent" /usr/sbin/mariadbd "$(command -v mariadb)"; do
		ldd "$b" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'
	done | stage_libs
	mkdir -p "$stage/usr/share/mysql" "$stage/var/lib"
	cp -r /usr/share/mysql/english /usr/share/mysql/charsets "$stage/usr/share/mysql/"
	printf 'mysql:x:0:\n' >>"$stage/etc/group"

	# The data directory: the system tables, and the agent's user.  The
	# servers' temporary files in a directory of their own (not /tmp, which
	# other tests clean up).
	data=$stage/var/lib/mysql
	mkdir -p "$out/tmp"
	if ! mariadb-install-db --no-defaults --datadir="$data" --user="$(id -un)" --tmpdir="$out/tmp" \
		--auth-root-authentication-method=normal --skip-test-db --innodb-log-file-size=4M \
		>"$out/install-db.log" 2>&1; then
		tail -n 20 "$out/install-db.log"
		echo "mariadb-install-db"
		return 1
	fi
	sock=$out/mysql.sock
	mariadbd --no-defaults --datadir="$data" --user="$(id -un)" --tmpdir="$out/tmp" --skip-networking --socket="$sock" \
		--innodb-log-file-size=4M --innodb-buffer-pool-size=16M --log-error="$out/mariadbd.err" \
		--pid-file="$out/mysql.pid" >/dev/null 2>&1 &
	my_pid=$!
	for _ in $(seq 300); do
		mariadb --no-defaults -S "$sock" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
		sleep 0.1
	done
	if ! mariadb --no-defaults -S "$sock" -uroot -e "
		CREATE USER 'snowflake'@'127.0.0.1' IDENTIFIED BY 'guestpw';
		GRANT CREATE, SELECT, INSERT, UPDATE ON snowflake.* TO 'snowflake'@'127.0.0.1';
		SHUTDOWN" >"$out/users.log" 2>&1; then
		cat "$out/users.log"
		kill -KILL "$my_pid" 2>/dev/null
		wait "$my_pid" 2>/dev/null
		echo "creating the agent's user in the guest's data directory"
		return 1
	fi
	wait "$my_pid" 2>/dev/null
	rm -f "$data"/*.err "$data"/*.pid
	printf 'mysql-user = snowflake\nmysql-password = guestpw\n' >"$stage/etc/agent.conf"
}

# stage_libs: the shared libraries named on stdin, and the loader, into $stage.
stage_libs() {
	local lib
	sort -u | while read -r lib; do
		mkdir -p "$stage$(dirname "$lib")"
		cp -L "$lib" "$stage$lib"
	done
	mkdir -p "$stage/lib64"
	cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"
}

# ---- One store: stage, boot, count.
run_backend() {
	local backend=$1 log initrd console rc start secs line p0=$pass f0=$fail mem limit
	stage=$BUILD/initramfs-agent-guest-$backend-$kver
	initrd=$stage.cpio.gz
	log=$BUILD/vm-agent-guest-$backend-$kver.log
	out=$BUILD/agent-guest/$backend
	rm -rf "$out"
	mkdir -p "$out"
	# The JVM wants more memory; its start and restart, more time.
	case $backend in
	zookeeper) mem=1536 limit=1200 ;;
	*) mem=1024 limit=900 ;;
	esac
	echo "==== agent guest $backend $kver: staging ===="
	vm_stage "$stage" "$HERE/init.sh"
	install -m 0644 "$HERE/stores.sh" "$stage/etc/agent-guest-stores.sh"
	echo "$backend" >"$stage/etc/agent-guest-backend"
	cp "$moddir/snowflake.ko" "$stage/snowflake.ko"
	install -m 0755 "$BUILD/selftests/snowflake" "$stage/usr/bin/snowflake"
	if ! "stage_$backend" >"$out/stage.log" 2>&1; then
		sed 's/^/    | /' "$out/stage.log"
		bad "$backend: staging the store and the agent: $(tail -n1 "$out/stage.log")"
		return
	fi
	vm_pack "$stage" "$initrd"
	echo "initramfs: $(du -h "$initrd" | cut -f1)"

	echo "==== agent guest $backend $kver: booting (console in ${log#"$ROOT"/}) ===="
	start=$(now)
	VM_MEM=${VM_MEM:-$mem} vm_boot "$kver" "$initrd" "$log" "$limit" >/dev/null
	rc=$?
	secs=$(($(now) - start))
	console=$(tr -d '\r' <"$log")
	vm_guest_results "$console" "$backend" AGENT 60 '^---- agent log ----' '^---- end of agent log ----' \
		guest_figure "$backend"
	if grep -q '^SNOWFLAKE-RMMOD rc=0' <<<"$console"; then ok "$backend: rmmod"; else bad "$backend: rmmod"; fi
	if vm_problems "$log"; then ok "$backend: no kernel problems on the console"; else bad "$backend: kernel problems (above)"; fi
	echo "agent-guest $backend: $((pass - p0)) passed, $((fail - f0)) failed (${secs}s in the guest)"
}

backends=("$@")
[ "${#backends[@]}" -gt 0 ] || backends=(redis zookeeper mysql)
for b in "${backends[@]}"; do
	case $b in
	redis | zookeeper | mysql) ;;
	*) die "unknown store '$b' (redis, zookeeper or mysql)" ;;
	esac
done

kver=${AGENT_KVER:-$(all_kvers | grep -E '^6\.12\.' | grep -v -- '-rt-' | head -n1)}
[ -n "$kver" ] || { bad "no 6.12 kernel among $(all_kvers | tr '\n' ' ')"; finish; }
moddir=$BUILD/mod-agent-$kver
mkdir -p "$BUILD/agent-guest"
echo "==== agent guest $kver: building the module and the CLI ===="
if ! (build_module "$kver" "$moddir") >"$BUILD/agent-guest/module.log" 2>&1; then
	cat "$BUILD/agent-guest/module.log"
	bad "building snowflake.ko for $kver"
	finish
fi
make -s -C "$ROOT/selftests" OUT="$BUILD/selftests" KSFT_DIR="$BUILD/ksrc/$KSFT_SUBDIR" \
	"$BUILD/selftests/snowflake" >/dev/null || {
	bad "building the static CLI"
	finish
}
# The stores' guests side by side (AGENT_GUEST_JOBS, default 2: each
# mostly waits on its agent's timers), their outputs whole, in order.  Not
# 3: in make check the lane runs beside the upgrade lane's guest and the
# db, lease and piuparts lanes' starts, and in the fresh-clone run of
# 91c511f its three guests at once left the MariaDB one so short of CPU
# that its mariadbd took 9.8 s to start and missed the agent's 400 ms
# timeout for seconds on end: the agent fenced with the lease still held
# (mysql: 35 passed, 3 failed).  With two, the third starts when Redis's
# guest (the shortest) ends, and the lane takes about as long.
parallel_each "${AGENT_GUEST_JOBS:-2}" run_backend "${backends[@]}"
finish
