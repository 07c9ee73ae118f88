#!/bin/bash
# `make run`: build snowflake.ko, boot a QEMU guest with it and show it at
# work: the module loading, IDs read from /dev/snowflake and decoded, a new
# worker id, the counters and the configuration.  Never touches the host
# kernel.
#
# Environment: KVER=<kernel release> (default: the newest supported kernel),
# VM_TIMEOUT=120, SNOWFLAKE_KVM=1, SNOWFLAKE_SKIP_DEPS=1, MODULE_SRC=DIR.
set -euo pipefail
# shellcheck source=tests/lib/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/lib.sh"
# shellcheck source=tests/lib/vm.sh
. "$ROOT/tests/lib/vm.sh"

VM_TIMEOUT=${VM_TIMEOUT:-120}
mkdir -p "$BUILD"

if [ "${SNOWFLAKE_SKIP_DEPS:-0}" != 1 ]; then
	"$ROOT/scripts/deps.sh" >"$BUILD/deps.log" 2>&1 || {
		cat "$BUILD/deps.log" >&2
		rm -f "$BUILD/deps.log"
		die "installing the dependencies failed"
	}
	rm -f "$BUILD/deps.log"
fi

kver=$(default_kver)
moddir=$BUILD/mod-$kver
stage=$BUILD/run-$kver
initrd=$BUILD/run-$kver.cpio.gz
log=$BUILD/run-$kver.log

msg "building snowflake.ko for $kver"
(build_module "$kver" "$moddir") >"$BUILD/run-build.log" 2>&1 || {
	cat "$BUILD/run-build.log" >&2
	die "building the module failed"
}

vm_stage "$stage" "$ROOT/scripts/init-run.sh"
cp "$moddir/snowflake.ko" "$stage/snowflake.ko"
vm_pack "$stage" "$initrd"

# Show the guest from its first "###" section on, without the markers.
show_guest() {
	awk '{ gsub(/\r/, "") }
	     /^SNOWFLAKE-VM-DONE/ { done = 1 }
	     done { next }
	     /^### / { on = 1 }
	     on { print; fflush() }'
}

msg "booting $(vmlinuz_of "$kver") in QEMU (console in ${log#"$ROOT"/})"
start=$(now)
rc=0
vm_boot "$kver" "$initrd" "$log" "$VM_TIMEOUT" show_guest || rc=$?
secs=$(($(now) - start))

failed=0
if ! log_has "$log" '^SNOWFLAKE-VM-DONE'; then
	echo
	echo "The guest did not finish (qemu exit $rc); the end of its console:"
	tail -n 40 "$log" | tr -d '\r' | sed 's/^/  | /'
	failed=1
fi
vm_problems "$log" || failed=1
echo
if [ "$failed" -ne 0 ]; then
	die "the guest run failed after ${secs}s (console in ${log#"$ROOT"/})"
fi
msg "done: guest booted, ran and powered off in ${secs}s"
