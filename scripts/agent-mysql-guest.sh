#!/bin/bash
# End to end in a guest with MySQL/MariaDB: snowflake.ko with strict=1,
# Debian's mariadbd on the guest's loopback, snowflake-agent with backend =
# mysql (not dry-run) and the static CLI; scripts/guest/init-agent-mysql.sh
# does the rest.  mariadbd, the mariadb client and the agent (built here
# with hiredis and libmariadb, without etcd) are copied into the initramfs
# with the libraries ldd names.  The data directory is made on this host
# (mariadb-install-db, then the agent's user created by a mariadbd started
# on it for a moment): the guest only starts the server.
#
#   AGENT_KVER=<kver>   the guest kernel (default: Debian's 6.12, not -rt)
#
# Prints the guest's ok/FAIL lines, the figures, and
# "agent-mysql-guest: N passed, M failed".
set -uo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/vm.sh
. "$ROOT/scripts/vm.sh"

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
finish() {
	echo "agent-mysql-guest: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

kver=${AGENT_KVER:-$(all_kvers | grep -E '^6\.12\.' | grep -v -- '-rt-' | head -n1)}
[ -n "$kver" ] || { bad "no 6.12 kernel among $(all_kvers | tr '\n' ' ')"; finish; }
moddir=$BUILD/mod-agent-$kver
stage=$BUILD/initramfs-agent-mysql-$kver
initrd=$stage.cpio.gz
log=$BUILD/vm-agent-mysql-$kver.log
out=$BUILD/agent-mysql-guest
rm -rf "$out"
mkdir -p "$out"
my_pid=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	[ -n "$my_pid" ] && kill -KILL "$my_pid" 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT

echo "==== agent mysql guest $kver: building ===="
if ! (build_module "$kver" "$moddir") >"$out/module.log" 2>&1; then
	cat "$out/module.log"
	bad "building snowflake.ko for $kver"
	finish
fi
make -s -C "$ROOT/selftests" OUT="$BUILD/selftests" KSFT_DIR="$BUILD/ksrc/$KSFT_SUBDIR" \
	"$BUILD/selftests/snowflake" >/dev/null || {
	bad "building the static CLI"
	finish
}
make -s -C "$ROOT/userspace" OUT="$BUILD/userspace" "$BUILD/userspace/libsnowflake.a" || {
	bad "building libsnowflake.a"
	finish
}
# shellcheck disable=SC2046 # pkg-config's words
if ! gcc -O2 -g -std=gnu11 -Wall -Wextra -Werror -DAG_NO_ETCD -DAG_NO_ZOOKEEPER -DSNOWFLAKE_VERSION="\"$(cat "$ROOT/VERSION")\"" \
	-I"$ROOT/userspace/include" -I"$ROOT/uapi" -o "$out/snowflake-agent" \
	"$ROOT"/userspace/agent/*.c "$BUILD/userspace/libsnowflake.a" -lhiredis \
	$(pkg-config --libs libmariadb) 2>"$out/agent-build.log"; then
	cat "$out/agent-build.log"
	bad "building snowflake-agent with libmariadb"
	finish
fi

vm_stage "$stage" "$ROOT/scripts/guest/init-agent-mysql.sh"
cp "$moddir/snowflake.ko" "$stage/snowflake.ko"
install -m 0755 "$BUILD/selftests/snowflake" "$stage/usr/bin/snowflake"
install -m 0755 "$out/snowflake-agent" "$stage/usr/sbin/snowflake-agent"
install -m 0755 /usr/sbin/mariadbd "$stage/usr/sbin/mariadbd"
install -m 0755 "$(readlink -f "$(command -v mariadb)")" "$stage/usr/bin/mariadb"
for b in "$stage/usr/sbin/snowflake-agent" /usr/sbin/mariadbd "$(command -v mariadb)"; do
	ldd "$b" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'
done | sort -u | while read -r lib; do
	mkdir -p "$stage$(dirname "$lib")"
	cp -L "$lib" "$stage$lib"
done
mkdir -p "$stage/lib64" "$stage/usr/share/mysql" "$stage/var/lib"
cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"
cp -r /usr/share/mysql/english /usr/share/mysql/charsets "$stage/usr/share/mysql/"
printf 'mysql:x:0:\n' >>"$stage/etc/group"

# The data directory: the system tables, and the agent's user.
data=$stage/var/lib/mysql
if ! mariadb-install-db --no-defaults --datadir="$data" --user="$(id -un)" \
	--auth-root-authentication-method=normal --skip-test-db --innodb-log-file-size=4M \
	>"$out/install-db.log" 2>&1; then
	tail -n 20 "$out/install-db.log"
	bad "mariadb-install-db"
	finish
fi
sock=$out/mysql.sock
mariadbd --no-defaults --datadir="$data" --user="$(id -un)" --skip-networking --socket="$sock" \
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
	bad "creating the agent's user in the guest's data directory"
	finish
fi
wait "$my_pid" 2>/dev/null
my_pid=
rm -f "$data"/*.err "$data"/*.pid
printf 'mysql-user = snowflake\nmysql-password = guestpw\n' >"$stage/etc/agent.conf"
vm_pack "$stage" "$initrd"
echo "initramfs: $(du -h "$initrd" | cut -f1)"

echo "==== agent mysql guest $kver: booting (console in ${log#"$ROOT"/}) ===="
start=$(now)
vm_boot "$kver" "$initrd" "$log" 600 >/dev/null
rc=$?
secs=$(($(now) - start))
console=$(tr -d '\r' <"$log")
while IFS= read -r line; do
	case $line in
	"ok   "*) ok "${line#ok   }" ;;
	"FAIL "*) bad "${line#FAIL }" ;;
	"AGENT-FIGURE "*) echo "figure: mysql guest: ${line#AGENT-FIGURE }" ;;
	"  "*) echo "$line" ;;
	esac
done < <(grep -E '^(ok   |FAIL |AGENT-FIGURE |  )' <<<"$console")
if ! grep -q '^SNOWFLAKE-VM-DONE' <<<"$console"; then
	bad "the guest did not finish (qemu exit $rc)"
	tail -n 60 <<<"$console" | sed 's/^/    | /'
elif ! grep -q '^AGENT-GUEST-COUNTS ' <<<"$console"; then
	bad "the guest script stopped early"
fi
if grep -q '^FAIL ' <<<"$console"; then
	sed -n '/^---- agent log ----/,/^---- end of agent log ----/p' <<<"$console" | sed 's/^/    | /'
fi
if grep -q '^SNOWFLAKE-RMMOD rc=0' <<<"$console"; then ok "rmmod"; else bad "rmmod"; fi
if vm_problems "$log"; then ok "no kernel problems on the console"; else bad "kernel problems (above)"; fi
echo "agent mysql guest on $kver: ${secs}s"
finish
