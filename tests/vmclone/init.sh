#!/bin/sh
# Guest /init of tests/vmclone/run.sh: the same boot runs in the parent
# VM and, restored from the parent's snapshot with another vmgenid, in its
# clone.  Each line the host reads starts with VMCLONE.
#   1. strict=1, the worker id assigned (as an agent would), 200 IDs;
#   2. VMCLONE-SNAPSHOT-NOW: the host saves the VM (savevm) meanwhile we sleep;
#   3. after the sleep (the parent goes on; the clone resumes in it): how many
#      VM forks the device saw, and 200 IDs or the refusal;
#   4. in a clone: a re-arm for a stale count (must fail with ESTALE), the
#      re-arm with a new worker id (as a new lease would give), 200 IDs.
# shellcheck source=tests/lib/init-common.sh
. /etc/init-common.sh

S=/sys/class/misc/snowflake
ids() { # TAG: 200 IDs, each on a line "VMCLONE-ID TAG <id>"
	if snowflake next -n 200 >/tmp/ids 2>/tmp/err; then
		sed "s/^/VMCLONE-ID $1 /" /tmp/ids
		echo "VMCLONE-NEXT $1 ok"
	else
		echo "VMCLONE-NEXT $1 refused: $(cat /tmp/err)"
	fi
}

if ! insmod /snowflake.ko strict=1; then
	echo "VMCLONE-ERROR insmod failed"
	vm_done
fi
snowflake config --worker 1 --datacenter 1 || echo "VMCLONE-ERROR config --worker"
ids before
echo "VMCLONE-SNAPSHOT-NOW"
sleep 10
echo "VMCLONE-FORKS $(cat $S/statistics/vm_forks) vm_forked=$(cat $S/vm_forked) refusing=$(cat $S/refusing)"
ids after
if [ "$(cat $S/statistics/vm_forks)" != 0 ]; then
	if vmclone-stale 1 2; then
		echo "VMCLONE-STALE accepted"
	else
		echo "VMCLONE-STALE refused"
	fi
	echo "VMCLONE-FORKED-STILL $(cat $S/vm_forked)"
	if snowflake config --worker 2 --datacenter 1 --rearm; then
		echo "VMCLONE-REARM ok"
	else
		echo "VMCLONE-REARM failed"
	fi
	echo "VMCLONE-FORKED-AFTER $(cat $S/vm_forked)"
	ids rearmed
fi
dmesg | grep -i "fork" | sed 's/^/VMCLONE-DMESG /'
echo "VMCLONE-DONE"
vm_done
