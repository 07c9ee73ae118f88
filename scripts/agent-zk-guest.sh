#!/bin/bash
# End to end in a guest with ZooKeeper: snowflake.ko with strict=1, a real
# ZooKeeper server (Debian's zookeeper.jar, standalone, on the guest's
# loopback) under a Java runtime cut down with jlink to the modules the
# server uses, and the static snowflake-agent with --backend zookeeper;
# scripts/guest/init-agent-zk.sh does the rest.  The runtime is built once
# into $BUILD/jre-zk-guest (jlink from openjdk-17-jdk-headless); java and
# its shared libraries, and the server's three jars, go into the initramfs.
#
#   AGENT_KVER=<kver>   the guest kernel (default: Debian's 6.12, not -rt)
#
# Prints the guest's ok/FAIL lines, the figures, and
# "agent-zk-guest: N passed, M failed".
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
	echo "agent-zk-guest: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

# The server's classes: ZooKeeperServerMain needs no more (the admin
# server, Netty and Jetty stay out: they are not used), with the metrics
# and snappy libraries its default metrics provider and its snapshots load,
# and slf4j's simple logger (its warnings and errors to the guest's log).
ZK_JARS=(/usr/share/java/zookeeper.jar /usr/share/java/zookeeper-jute.jar
	/usr/share/java/slf4j-api.jar /usr/share/java/slf4j-simple.jar
	/usr/share/java/metrics-core.jar /usr/share/java/snappy-java.jar)
ZK_MODULES=java.base,java.logging,java.management,java.naming,java.security.jgss,java.security.sasl,jdk.management,jdk.net

kver=${AGENT_KVER:-$(all_kvers | grep -E '^6\.12\.' | grep -v -- '-rt-' | head -n1)}
[ -n "$kver" ] || { bad "no 6.12 kernel among $(all_kvers | tr '\n' ' ')"; finish; }
for f in "${ZK_JARS[@]}"; do
	[ -e "$f" ] || { bad "$f is missing (scripts/deps.sh: zookeeperd)"; finish; }
done
command -v jlink >/dev/null || { bad "jlink is missing (scripts/deps.sh: openjdk-17-jdk-headless)"; finish; }
moddir=$BUILD/mod-agent-$kver
stage=$BUILD/initramfs-agent-zk-$kver
initrd=$stage.cpio.gz
log=$BUILD/vm-agent-zk-$kver.log
out=$BUILD/agent-zk-guest
jre=$BUILD/jre-zk-guest
mkdir -p "$out"

echo "==== agent zookeeper guest $kver: building ===="
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
if [ ! -x "$jre/bin/java" ] || [ "$(cat "$jre/.modules" 2>/dev/null)" != "$ZK_MODULES" ]; then
	rm -rf "$jre"
	# A class-data archive makes the start much cheaper under TCG.
	if ! jlink --add-modules "$ZK_MODULES" --strip-debug --no-header-files --no-man-pages \
		--compress=2 --generate-cds-archive --output "$jre" >"$out/jlink.log" 2>&1; then
		cat "$out/jlink.log"
		bad "jlink: a Java runtime for the guest"
		finish
	fi
	rm -f "$jre/lib/server/classes_nocoops.jsa"
	echo "$ZK_MODULES" >"$jre/.modules"
fi

vm_stage "$stage" "$ROOT/scripts/guest/init-agent-zk.sh"
cp "$moddir/snowflake.ko" "$stage/snowflake.ko"
install -m 0755 "$BUILD/selftests/snowflake" "$stage/usr/bin/snowflake"
if ! vm_add_agent "$stage" "$out"; then
	bad "staging the static snowflake-agent"
	finish
fi
if ! grep -qa zookeeper_init2 "$out/snowflake-agent"; then
	bad "the static agent was built without the ZooKeeper store (libzookeeper_mt.a?)"
	finish
fi
mkdir -p "$stage/opt/jre" "$stage/opt/zookeeper"
cp -a "$jre/." "$stage/opt/jre/"
for f in "${ZK_JARS[@]}"; do cp -L "$f" "$stage/opt/zookeeper/"; done
# java's shared libraries (libz, libstdc++, ...) next to the loader.
for b in "$jre/bin/java" "$jre/lib/server/libjvm.so" "$jre"/lib/*.so; do
	ldd "$b" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }'
done | sort -u | while read -r lib; do
	mkdir -p "$stage$(dirname "$lib")"
	cp -L "$lib" "$stage$lib"
done
vm_pack "$stage" "$initrd"
echo "initramfs: $(du -h "$initrd" | cut -f1)"

echo "==== agent zookeeper guest $kver: booting (console in ${log#"$ROOT"/}) ===="
start=$(now)
VM_MEM=${VM_MEM:-1536} vm_boot "$kver" "$initrd" "$log" 900 >/dev/null
rc=$?
secs=$(($(now) - start))
console=$(tr -d '\r' <"$log")
while IFS= read -r line; do
	case $line in
	"ok   "*) ok "${line#ok   }" ;;
	"FAIL "*) bad "${line#FAIL }" ;;
	"AGENT-FIGURE "*) echo "figure: zookeeper ${line#AGENT-FIGURE }" ;;
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
echo "agent zookeeper guest on $kver: ${secs}s"
finish
