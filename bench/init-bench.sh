#!/bin/sh
# /init of the `make bench` guest: load the module with default parameters,
# run /snowflake_bench once, power off.  Every result line starts with BENCH.

# shellcheck source=scripts/guest/init-common.sh
. /etc/init-common.sh

dmesg -n 1
echo "BENCH-INIT guest $(uname -r), $(nproc) CPUs"
echo "BENCH clock clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null) available=\"$(cat /sys/devices/system/clocksource/clocksource0/available_clocksource 2>/dev/null)\""
if ! insmod /snowflake.ko; then
	echo "BENCH-ERROR insmod failed"
	dmesg | tail -n 20
	vm_done
fi
# shellcheck disable=SC2086 # BENCH_ARGS is a word list
/snowflake_bench ${BENCH_ARGS:-} || echo "BENCH-ERROR snowflake_bench exit $?"
echo "BENCH stats ids_issued=$(cat /sys/class/misc/snowflake/statistics/ids_issued) reads=$(cat /sys/class/misc/snowflake/statistics/reads) exhausted_waits=$(cat /sys/class/misc/snowflake/statistics/exhausted_waits)"
echo "BENCH clock_end clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
# Clocksource changes (a TSC marked unstable makes every clock read slow).
dmesg | grep -i -E 'clocksource|tsc' | sed 's/^/BENCH-DMESG /'
rmmod snowflake
vm_done
