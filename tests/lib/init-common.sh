# shellcheck shell=sh
# Sourced by the guest /init (busybox sh, PID 1): mounts, console, helpers.

export PATH=/sbin:/bin:/usr/sbin:/usr/bin
export HOME=/root TERM=dumb

mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
ip link set lo up 2>/dev/null
hostname snowflake-vm

# Report tasks stuck in D state sooner than the default 120 s.
if [ -w /proc/sys/kernel/hung_task_timeout_secs ]; then
	echo 30 >/proc/sys/kernel/hung_task_timeout_secs
fi

# shellcheck disable=SC1091
[ -r /etc/snowflake-vm.conf ] && . /etc/snowflake-vm.conf

# Print the marker the host waits for, then power off.  The host treats a
# console without the marker as a crash or a hang.  A kernel without ACPI
# (the debug kernel: scripts/debug-kernel.config) cannot power the machine
# off, only halt it: it restarts instead, which ends qemu as well (every
# guest runs with -no-reboot).
vm_done() {
	vm_kernel_log
	sync
	echo "SNOWFLAKE-VM-DONE"
	if [ -d /sys/firmware/acpi ]; then
		poweroff -f
	else
		reboot -f
	fi
	sleep 10
}

# vm_kernel_log: the kernel log at warning level and above, and the
# check's canary (tests/lib/kernel-log.sh, sf_kernel_log): vm_done prints
# it, so every busybox guest ends with it.
# shellcheck source=tests/lib/kernel-log.sh
. /etc/sf-kernel-log.sh
vm_kernel_log() { sf_kernel_log; }

# vm_cpus_online: in a guest booted with VM_MODE=parallel (one CPU online,
# tests/lib/vm.sh), start sf-textpoke, which records every text patch of
# the kernel from then on, then bring every offline CPU up.  Prints
# "SNOWFLAKE-CPUS online=N"; returns 1 when the recorder could not start
# or a CPU did not come up.
vm_cpus_online() {
	_c=
	_i=0
	sf-textpoke /run/textpoke.out 2>/run/textpoke.err &
	VM_TEXTPOKE_PID=$!
	while [ ! -e /run/textpoke.out.ready ] && [ "$_i" -lt 100 ]; do
		kill -0 "$VM_TEXTPOKE_PID" 2>/dev/null || break
		sleep 0.1
		_i=$((_i + 1))
	done
	if [ ! -e /run/textpoke.out.ready ]; then
		echo "SNOWFLAKE-CPUS the text-patch recorder did not start: $(cat /run/textpoke.err /run/textpoke.out 2>/dev/null)"
		return 1
	fi
	for _c in /sys/devices/system/cpu/cpu[0-9]*/online; do
		[ -e "$_c" ] || continue
		if [ "$(cat "$_c")" = 0 ]; then
			echo 1 >"$_c" || echo "SNOWFLAKE-CPUS ${_c%/online} did not come up"
		fi
	done
	# The tests start only once the recorder follows every CPU that came
	# up (its OUT.cpus): a poke before that is before any of them ran.
	_n=$(grep -c '^processor' /proc/cpuinfo)
	_i=0
	while [ "$(cat /run/textpoke.out.cpus 2>/dev/null)" != "$_n" ] && [ "$_i" -lt 100 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	echo "SNOWFLAKE-CPUS online=$_n followed=$(cat /run/textpoke.out.cpus 2>/dev/null) ($(cat /sys/devices/system/cpu/online))"
	[ "$(cat /sys/devices/system/cpu/online)" = "$(cat /sys/devices/system/cpu/present)" ] &&
		[ "$(cat /run/textpoke.out.cpus 2>/dev/null)" = "$_n" ]
}

# vm_cpus_report: stop sf-textpoke and print what it recorded (the host's
# vm_textpoke reads it).
vm_cpus_report() {
	[ -n "${VM_TEXTPOKE_PID:-}" ] || return 0
	kill -TERM "$VM_TEXTPOKE_PID" 2>/dev/null
	wait "$VM_TEXTPOKE_PID" 2>/dev/null
	cat /run/textpoke.err /run/textpoke.out 2>/dev/null
	VM_TEXTPOKE_PID=
}
