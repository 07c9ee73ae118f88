#!/bin/sh
# /init of the `make run` guest: load the module and show what it does.

# shellcheck source=tests/lib/init-common.sh
. /etc/init-common.sh

SF=/sys/class/misc/snowflake

say() { printf '\n### %s\n' "$*"; }

dmesg -n 1 # keep kernel messages off the console; we show them ourselves
dmesg -c >/dev/null

say "Guest kernel $(uname -r), $(nproc) CPUs, wall clock $(date -u '+%Y-%m-%d %H:%M:%S UTC')"

say "Loading the module: insmod /snowflake.ko"
if ! insmod /snowflake.ko; then
	echo "insmod failed:"
	dmesg
	vm_done
fi
echo "Kernel log:"
dmesg -c | sed 's/^/    /'
echo "Device node:"
# shellcheck disable=SC2012 # for a human
ls -l /dev/snowflake | sed 's/^/    /'

# The layout, read from sysfs: needed to decode an ID.
epoch=$(cat $SF/epoch_ms)
unit=$(cat $SF/time_unit_ms)
tb=$(cat $SF/timestamp_bits)
db=$(cat $SF/datacenter_bits)
wb=$(cat $SF/worker_bits)
sb=$(cat $SF/sequence_bits)
say "Layout from $SF/"
echo "    timestamp ${tb} bits | datacenter ${db} bits | worker ${wb} bits | sequence ${sb} bits"
echo "    epoch_ms=$epoch ($(date -u -d @$((epoch / 1000)) '+%Y-%m-%d %H:%M:%S').$(printf %03d $((epoch % 1000))) UTC), one tick = ${unit} ms"

# decode ID: print the ID and its fields.
decode() {
	id=$1
	ts=$((id >> (db + wb + sb)))
	ms=$((epoch + ts * unit))
	dc=$(((id >> (wb + sb)) & ((1 << db) - 1)))
	wk=$(((id >> sb) & ((1 << wb) - 1)))
	seq=$((id & ((1 << sb) - 1)))
	when=$(date -u -d @$((ms / 1000)) '+%Y-%m-%d %H:%M:%S')
	printf '    %-20s  ts=%-14s %s.%03d UTC  datacenter=%-3s worker=%-3s sequence=%s\n' \
		"$id" "$ts" "$when" $((ms % 1000)) "$dc" "$wk" "$seq"
}

# show_ids: one read(2) of 5 IDs (40 bytes) from /dev/snowflake, decoded.
show_ids() {
	ids=$(dd if=/dev/snowflake bs=40 count=1 2>/dev/null | od -An -v -t u8)
	if [ -z "$ids" ]; then
		echo "    reading /dev/snowflake failed"
		return
	fi
	for id in $ids; do
		decode "$id"
	done
}

say "5 IDs from one read of 40 bytes: dd if=/dev/snowflake bs=40 count=1 | od -An -t u8"
echo "    (id = timestamp << $((db + wb + sb)) | datacenter << $((wb + sb)) | worker << $sb | sequence)"
show_ids

say "Setting the worker id: echo 7 > $SF/worker_id"
echo 7 >$SF/worker_id && echo "    worker_id is now $(cat $SF/worker_id)"

say "5 more IDs: worker=7 now, and still larger than every ID before"
show_ids

say "Counters: $SF/statistics/"
for f in "$SF"/statistics/*; do
	printf '    %-20s %s\n' "${f##*/}" "$(cat "$f")"
done

say "Configuration and clock: $SF/"
for f in worker_id datacenter_id floor_ms random_sequence epoch_ms time_unit_ms \
	timestamp_bits datacenter_bits worker_bits sequence_bits strict refusing \
	last_timestamp_ms clock_ms clock_offset_ms; do
	if [ -r "$SF/$f" ]; then
		printf '    %-20s %s\n' "$f" "$(cat "$SF/$f")"
	else
		printf '    %-20s (missing)\n' "$f"
	fi
done

say "3 UUIDv7s from one read of 48 bytes of /dev/uuidv7, and their time"
if [ -r /dev/uuidv7 ]; then
	dd if=/dev/uuidv7 bs=48 count=1 2>/dev/null | od -An -v -tx1 -w16 | tr -d ' ' |
		while read -r h; do
			ms=$((0x$(echo "$h" | cut -c1-12)))
			printf '    %s-%s-%s-%s-%s  %s.%03d UTC\n' "$(echo "$h" | cut -c1-8)" \
				"$(echo "$h" | cut -c9-12)" "$(echo "$h" | cut -c13-16)" \
				"$(echo "$h" | cut -c17-20)" "$(echo "$h" | cut -c21-32)" \
				"$(date -u -d @$((ms / 1000)) '+%Y-%m-%d %H:%M:%S')" $((ms % 1000))
		done
	printf '    %-20s %s\n' issued "$(cat /sys/class/misc/uuidv7/statistics/issued)"
else
	echo "    /dev/uuidv7 is missing"
fi

say "Kernel log since loading"
dmesg -c | sed 's/^/    /'

say "Powering off"
vm_done
