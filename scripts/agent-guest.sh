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
make -s -C "$ROOT/selftests" OUT="$BUILD/selftests" KSFT_DIR="$BUILD/ksrc/$KSFT_SUBDIR" \
	"$BUILD/selftests/snowflake" >/dev/null || {
	bad "building the static CLI"
	finish
}

vm_stage "$stage" "$ROOT/scripts/guest/init-agent.sh"
cp "$moddir/snowflake.ko" "$stage/snowflake.ko"
install -m 0755 "$BUILD/selftests/snowflake" "$stage/usr/bin/snowflake"
if ! vm_add_agent "$stage" "$out"; then
	bad "staging the static snowflake-agent and redis-server"
	finish
fi
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
