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
# console without the marker as a crash or a hang.
vm_done() {
	sync
	echo "SNOWFLAKE-VM-DONE"
	poweroff -f
	sleep 10
}

# vm_kernel_log: the kernel's own messages of level warning and above
# (kernel facility only: not what user space wrote to /dev/kmsg), each
# line prefixed "KMSG ", between two markers.  The guests boot quiet
# loglevel=4 (tests/lib/vm.sh): the console shows only error and above as
# they happen, and a WARN, refcount_t or lockdep report (level warning)
# never reaches it; printed here at the end, it reaches the host's console
# check (vm_problems, KERNEL_PROBLEMS) without every boot message crossing
# the emulated serial port.  With sf_canary_report on the kernel's command
# line, a backtrace at warning level is made first (sysrq l: a "Call
# Trace" the console never shows), the check's own test.
vm_kernel_log() {
	if grep -qw sf_canary_report /proc/cmdline; then
		echo l >/proc/sysrq-trigger
	fi
	echo "---- kernel log, warning and above (dmesg) ----"
	dmesg -r | awk 'match($0, /^<[0-9]+>/) {
		n = substr($0, 2, RLENGTH - 2) + 0
		if (n < 8 && n % 8 <= 4) print "KMSG " substr($0, RLENGTH + 1)
	}'
	echo "---- end of kernel log ----"
}

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
	echo "SNOWFLAKE-CPUS online=$(grep -c '^processor' /proc/cpuinfo) ($(cat /sys/devices/system/cpu/online))"
	[ "$(cat /sys/devices/system/cpu/online)" = "$(cat /sys/devices/system/cpu/present)" ]
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
