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
