#!/bin/bash
# End to end in a guest: snowflake.ko with strict=1, Debian's redis-server
# on the guest's loopback, a static snowflake-agent (not dry-run) and the
# static CLI; scripts/guest/init-agent.sh does the rest.  The redis-server
# binary is dynamically linked: it is copied into the initramfs with the
# libraries ldd names.
#
#   AGENT_KVER=<kver>   the guest kernel (default: Debian's 6.12, not -rt)
#
# Prints the guest's ok/FAIL lines, the figures, and
# "agent-guest: N passed, M failed".
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
	echo "agent-guest: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

kver=${AGENT_KVER:-$(all_kvers | grep -E '^6\.12\.' | grep -v -- '-rt-' | head -n1)}
[ -n "$kver" ] || { bad "no 6.12 kernel among $(all_kvers | tr '\n' ' ')"; finish; }
moddir=$BUILD/mod-agent-$kver
stage=$BUILD/initramfs-agent-$kver
initrd=$stage.cpio.gz
log=$BUILD/vm-agent-$kver.log
out=$BUILD/agent-guest
mkdir -p "$out"

echo "==== agent guest $kver: building ===="
if ! (build_module "$kver" "$moddir") >"$out/module.log" 2>&1; then
	cat "$out/module.log"
	bad "building snowflake.ko for $kver"
	finish
fi
make -s -C "$ROOT/userspace" OUT="$BUILD/userspace" "$BUILD/userspace/libsnowflake.a" || {
	bad "building libsnowflake.a"
	finish
}
hiredis_a=$(find /usr/lib /usr/lib64 -name libhiredis.a 2>/dev/null | head -n1)
# Static: the guest has no libc; without the etcd store (AG_NO_ETCD: no
# static libcurl), the guest uses Redis.  hiredis resolves the address with
# getaddrinfo(), which static glibc supports for numeric addresses.
if [ -z "$hiredis_a" ] ||
	! gcc -static -O2 -g -std=gnu11 -Wall -Wextra -Werror -DAG_NO_ETCD -I"$ROOT/userspace/include" \
		-I"$ROOT/uapi" -o "$out/snowflake-agent" "$ROOT"/userspace/agent/*.c \
		"$BUILD/userspace/libsnowflake.a" "$hiredis_a" 2>"$out/agent-build.log"; then
	cat "$out/agent-build.log"
	bad "building a static snowflake-agent (libhiredis.a: ${hiredis_a:-missing})"
	finish
fi
make -s -C "$ROOT/selftests" OUT="$BUILD/selftests" KSFT_DIR="$BUILD/ksrc/$KSFT_SUBDIR" \
	"$BUILD/selftests/snowflake" >/dev/null || {
	bad "building the static CLI"
	finish
}

vm_stage "$stage" "$ROOT/scripts/guest/init-agent.sh"
cp "$moddir/snowflake.ko" "$stage/snowflake.ko"
install -m 0755 "$out/snowflake-agent" "$stage/usr/sbin/snowflake-agent"
install -m 0755 "$BUILD/selftests/snowflake" "$stage/usr/bin/snowflake"
# redis-server (Debian: a link to redis-check-rdb, which acts on its name)
# and redis-cli, with their shared libraries and the dynamic loader.
for b in redis-server redis-cli; do
	install -m 0755 "$(readlink -f "$(command -v "$b")")" "$stage/usr/bin/$b"
	ldd "$(command -v "$b")" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'
done | sort -u | while read -r lib; do
	mkdir -p "$stage$(dirname "$lib")"
	cp -L "$lib" "$stage$lib"
done
# /lib64/ld-linux-x86-64.so.2 and /lib -> usr/lib as on Debian
[ -e "$stage/lib64" ] || mkdir -p "$stage/lib64"
cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"
vm_pack "$stage" "$initrd"
echo "initramfs: $(du -h "$initrd" | cut -f1)"

echo "==== agent guest $kver: booting (console in ${log#"$ROOT"/}) ===="
start=$(now)
vm_boot "$kver" "$initrd" "$log" 600 >/dev/null
rc=$?
secs=$(($(now) - start))
console=$(tr -d '\r' <"$log")
while IFS= read -r line; do
	case $line in
	"ok   "*) ok "${line#ok   }" ;;
	"FAIL "*) bad "${line#FAIL }" ;;
	"AGENT-FIGURE "*) echo "figure: ${line#AGENT-FIGURE }" ;;
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
echo "agent guest on $kver: ${secs}s"
finish
