#!/bin/sh
# /init of the vmtest guest: load the module, run every test binary in
# /selftests in order, dump the kernel log after each, power off.
# The host (tests/vmtest/run.sh) parses the SNOWFLAKE-* markers.

# shellcheck source=tests/lib/init-common.sh
. /etc/init-common.sh

TEST_TIMEOUT=${TEST_TIMEOUT:-600}

echo "SNOWFLAKE-BOOT-DMESG-BEGIN"
dmesg -c
echo "SNOWFLAKE-BOOT-DMESG-END"

# Debug kernel (scripts/debug-kernel.sh): forget what kmemleak suspects of
# the boot, so that what it reports at the end is new.
KMEMLEAK=/sys/kernel/debug/kmemleak
if [ -w "$KMEMLEAK" ]; then
	echo scan >"$KMEMLEAK"
	echo scan >"$KMEMLEAK"
	echo clear >"$KMEMLEAK"
fi

# kmemleak_report NAME: two scans (an object is reported when unchanged
# between two scans and older than 5 s), then every suspect, between markers.
kmemleak_report() {
	[ -w "$KMEMLEAK" ] || return 0
	sleep 6
	echo scan >"$KMEMLEAK"
	echo scan >"$KMEMLEAK"
	echo "SNOWFLAKE-KMEMLEAK-BEGIN $1"
	cat "$KMEMLEAK" 2>&1
	echo "SNOWFLAKE-KMEMLEAK-END $1"
}

echo "SNOWFLAKE-KERNEL $(uname -r) cpus=$(nproc)"
insmod /snowflake.ko
echo "SNOWFLAKE-INSMOD rc=$?"
dmesg -c
ls -l /dev/snowflake 2>&1

cd /tmp || exit 1

# The tests that need vCPUs running at the same time: the readers of
# concurrency_test (and its torture) race for the generator's lock only
# when two CPUs run them at once, and fuzz_test's calls meet the catch-up
# work and the tick timer on the other CPU.  They run last, after
# vm_cpus_online has brought up the CPUs the parallel boot left offline
# (tests/lib/vm.sh, VM_MODE); every other test runs with one CPU.
# VM_PARALLEL_TESTS may name others.
PARALLEL_TESTS=" ${VM_PARALLEL_TESTS:-concurrency_test fuzz_test} "

run_test() {
	name=${1##*/}
	echo "SNOWFLAKE-TEST-BEGIN $name"
	start=$(date +%s)
	SNOWFLAKE_KO=/snowflake.ko timeout "$TEST_TIMEOUT" "$1"
	rc=$?
	end=$(date +%s)
	# A leading newline: the test may have been killed mid-line.
	printf '\nSNOWFLAKE-TEST-END %s rc=%d secs=%d\n' "$name" "$rc" "$((end - start))"
	echo "SNOWFLAKE-DMESG-BEGIN $name"
	dmesg -c
	echo "SNOWFLAKE-DMESG-END $name"
}

for t in /selftests/*; do
	if [ ! -f "$t" ] || [ ! -x "$t" ]; then
		continue
	fi
	case $PARALLEL_TESTS in
	*" ${t##*/} "*) continue ;;
	esac
	run_test "$t"
done

# From here on, every CPU: the recorder of text patches runs until the end
# (vm_cpus_report, before power-off), and the host checks it found none.
vm_cpus_online
echo "SNOWFLAKE-CPUS-UP rc=$?"
dmesg -c
for name in $PARALLEL_TESTS; do
	[ -x "/selftests/$name" ] && run_test "/selftests/$name"
done

# The Prometheus exposition of `snowflake stats --prometheus`, which the host
# checks with promtool (tests/vmtest/run.sh): as root through the device, and
# as nobody with the device 0400 (as the udev rule makes it for users outside
# the group), through sysfs.
if [ -x /usr/bin/snowflake ]; then
	[ -e /dev/snowflake ] || insmod /snowflake.ko
	echo "SNOWFLAKE-PROM-BEGIN device"
	snowflake stats --prometheus
	echo "SNOWFLAKE-PROM-END device rc=$?"
	chmod 0400 /dev/snowflake
	echo "SNOWFLAKE-PROM-BEGIN sysfs"
	su -s /bin/sh -c 'snowflake stats --prometheus' nobody
	echo "SNOWFLAKE-PROM-END sysfs rc=$?"
	chmod 0444 /dev/snowflake
fi

# UUIDv7s from the device as raw bytes, each with the time the CLI decodes
# from its canonical form: the host reads them with an independent
# implementation, Python's uuid module (tests/vmtest/run.sh).
if [ -x /usr/bin/snowflake ] && [ -e /dev/uuidv7 ]; then
	echo "SNOWFLAKE-UUIDS-BEGIN"
	{ od -An -tx1 -v -N 512 /dev/uuidv7 | tr -d ' \n' | fold -w 32; echo; } | while read -r h; do
		u=$(echo "$h" | sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)/\1-\2-\3-\4-/')
		echo "$h $(snowflake decode "$u" | sed -n 's/.*unix_ms=\([0-9]*\).*/\1/p')"
	done
	echo "SNOWFLAKE-UUIDS-END"
fi

lsmod
# While loaded, the module's frames in the suspects' backtraces have names.
kmemleak_report loaded
# The exit path is tested too: the tests leave the module loaded, and it
# must unload cleanly now that nothing holds it.
rmmod snowflake
echo "SNOWFLAKE-RMMOD rc=$?"
dmesg -c
[ ! -e /dev/snowflake ] || echo "SNOWFLAKE-RMMOD /dev/snowflake still exists"
# What the module did not free on unload.
kmemleak_report unloaded
dmesg -c
vm_cpus_report
vm_done
