#!/bin/sh
# /init of the clients guest (tests/clients/run.sh): the Go client's
# static test binary (go test -c -tags guest, clients/go/guest_test.go)
# against the real devices.  The module is loaded with strict=1 and no
# worker id: reads refuse (ENOTCONN); its tick is 100 ms (time_unit_ms),
# so that reads of IDs find ticks used up and wait; then datacenter 1, worker 3 are set
# and /dev/snowflake gets a group and mode 0440, as the packages' udev rule
# gives it a reading group: IDs, UUIDs, and a user without the group
# denied.  The host counts the "--- PASS/FAIL" lines.

# shellcheck source=tests/lib/init-common.sh
. /etc/init-common.sh

SF=/sys/class/misc/snowflake
T=/client.test
dmesg -n 1

if ! insmod /snowflake.ko strict=1 time_unit_ms=100; then
	echo "CLIENTS insmod failed"
	dmesg | tail -n 20
	vm_done
fi
$T -test.v -test.timeout 120s -test.run '^TestGuestRefused$' 2>&1
if echo 1 >$SF/datacenter_id && echo 3 >$SF/worker_id; then
	chgrp 901 /dev/snowflake
	chmod 0440 /dev/snowflake
	GUEST_DC=1 GUEST_WORKER=3 GUEST_GID=901 \
		$T -test.v -test.timeout 120s -test.run '^TestGuest(IDs|UUIDs|Permissions)$' 2>&1
else
	echo "CLIENTS setting the ids failed"
fi
vm_done
