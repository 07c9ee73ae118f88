#!/bin/bash
# In the Debian 12 root of tests/deb/run.sh, booted with systemd as PID 1
# (tests/deb/systemd.sh): the installed packages' units as a host
# runs them.  Run by sfsd-test.service once the floor unit has started;
# every result is a console line "SFSD ok|notok WHAT" (details "SFSD # ..."),
# then "SFSD done" and a poweroff.
#
# The module is loaded by snowflake-floor.service with strict=1 (from
# /etc/modprobe.d/sfsd-test.conf): no IDs until snowflake-agent holds a
# lease from the Redis started here on 127.0.0.1.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_PAGER='' SYSTEMD_COLORS=0

TAG=SFSD T_OUT=/tmp/sfsd.out
# say, t, info, until_ok
# shellcheck source=tests/deb/guest-lib.sh
. /usr/local/lib/sf-guest-lib.sh
# as_member / as_other CMD...: CMD as a user in the group snowflake (the
# daemon user) / as nobody, with no capabilities.
as_member() { setpriv --reuid=snowflake-daemon --regid=snowflake --init-groups --inh-caps=-all -- "$@"; }
as_other() { setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all -- "$@"; }
# as_reader / as_admin CMD...: as nobody in the group snowflake only / in
# snowflake-admin only, with no capabilities.
as_reader() { setpriv --reuid=nobody --regid=snowflake --groups=snowflake --inh-caps=-all -- "$@"; }
as_admin() { setpriv --reuid=nobody --regid=nogroup --groups=snowflake-admin --inh-caps=-all -- "$@"; }
# reader_cannot_configure: EPERM, with the message that names the way.
reader_cannot_configure() {
	! as_reader snowflake config --random-sequence 0 2>/tmp/sfsd.err
	cat /tmp/sfsd.err
	grep -q 'snowflake-admin' /tmp/sfsd.err
}
# main_pid UNIT: its main process; user_of UNIT: that process' user;
# caps_of UNIT: its capability sets, a line each.
main_pid() { systemctl show -P MainPID "$1"; }
user_of() { stat -c %U "/proc/$(main_pid "$1")"; }
caps_of() { grep -E '^Cap(Inh|Prm|Eff|Amb):' "/proc/$(main_pid "$1")/status"; }
refused() { ! as_member snowflake next; }
# no_caps UNIT: its main process has no capability, nor can regain one.
no_caps() {
	caps_of "$1"
	! caps_of "$1" | grep -qv '0000000000000000$'
}
# served_with KEY: a member's read is served, and the device's ids are the
# pair of the lease KEY (PREFIX:CLUSTER:worker:DC:W).
served_with() {
	local ids
	ids="$(cat /sys/class/misc/snowflake/datacenter_id):$(cat /sys/class/misc/snowflake/worker_id)"
	echo "device ids $ids, lease $1"
	as_member snowflake next | grep -qE '^[0-9]+$' && [[ $1 == *":worker:$ids" ]]
}
no_lease() { [ -z "$(held_key)" ]; }
restart_floor() { systemctl restart snowflake-floor.service && systemctl is-active snowflake-floor.service; }
# floor_state: what a restore into the same module instance must not move.
floor_state() {
	local f
	for f in instance_id floor_ms clock_offset_ms statistics/floor_jumps; do
		printf '%s=%s ' "$f" "$(cat "/sys/class/misc/snowflake/$f")"
	done
}
# floor_log_since CURSOR [ARGS]: the floor unit's journal after CURSOR.
floor_log_since() {
	local c=$1
	shift
	journalctl --no-pager -q -o cat --after-cursor "$c" -u snowflake-floor.service "$@"
}
# same_instance_restore CURSOR: the restore logged event=restore_same_instance.
same_instance_restore() {
	until_ok 10 sh -c "journalctl --no-pager -q -o cat --after-cursor '$1' -u snowflake-floor.service |
		grep -q 'event=restore_same_instance instance_id=$(cat /sys/class/misc/snowflake/instance_id) '"
}
# no_floor_warning CURSOR: nothing at warning or above from the floor unit.
no_floor_warning() {
	local w
	w=$(floor_log_since "$1" -p warning)
	echo "$w"
	[ -z "$w" ]
}

SYS=/sys/class/misc/snowflake
IDENTITY=/etc/modprobe.d/snowflake.identity.conf
# dc_worker: the datacenter and worker of an ID read now, "D/W".
dc_worker() {
	snowflake next | xargs snowflake decode --layout-from-device |
		sed -n 's/.* datacenter=\([0-9]*\) worker=\([0-9]*\) .*/\1\/\2/p'
}
# identity_is D W: the device's ids, worker_set 1, and an ID read now.
identity_is() {
	local got
	got=$(dc_worker)
	echo "sysfs $(cat $SYS/datacenter_id)/$(cat $SYS/worker_id) worker_set $(cat $SYS/worker_set); an ID read: $got"
	[ "$(cat $SYS/datacenter_id)/$(cat $SYS/worker_id)/$(cat $SYS/worker_set)" = "$1/$2/1" ] &&
		[ "$got" = "$1/$2" ]
}
# no_identity_note: `snowflake config` prints no note of a missing identity.
no_identity_note() {
	snowflake config >/dev/null 2>/tmp/sfsd.err
	cat /tmp/sfsd.err
	! grep -q 'no worker id was given' /tmp/sfsd.err
}
# boot_said_no_identity: the module's load in this boot said "no worker id".
boot_said_no_identity() { journalctl -k -b --no-pager -q -o cat | grep 'no worker id was given'; }

# Issue 44, item 2, after the reboot (tests/deb/systemd.sh boots the guest
# a second time with the file `snowflake config --save` wrote in the first
# boot, as a host's disk keeps it; no sfsd-test.conf: a static host).
if [ "$(cat /etc/sfsd-phase 2>/dev/null)" = 2 ]; then
	say "# after the reboot: $(cat $IDENTITY 2>&1 | grep -v '^#')"
	t "after the reboot: snowflake-floor.service is active" systemctl is-active snowflake-floor.service
	t "after the reboot: the module was loaded with the saved identity (datacenter 3, worker 9; a read says so too)" \
		identity_is 3 9
	t "after the reboot: the kernel did not say \"no worker id was given\" at this boot" \
		eval '! boot_said_no_identity'
	t "after the reboot: snowflake config says nothing of a missing identity" no_identity_note
	failed=$(systemctl list-units --failed --no-legend --plain 'snowflake*' 2>&1)
	t "after the reboot: no snowflake unit failed${failed:+ ($failed)}" test -z "$failed"
	say 'done'
	systemctl poweroff --no-block
	exit 0
fi

say "# $(systemctl --version | head -n 1); kernel $(uname -r)"
info systemctl is-system-running
t "snowflake-floor.service is active" systemctl is-active snowflake-floor.service
info systemctl status --no-pager -n 5 snowflake-floor.service
t "the module was loaded by the floor unit, with strict=1" \
	test "$(cat /sys/module/snowflake/parameters/strict 2>&1)" = Y
say "# floord: user=$(user_of snowflake-floor.service 2>&1) $(caps_of snowflake-floor.service 2>&1 | tr -s '\t\n' '= ')"
t "floord runs as snowflake-daemon" test "$(user_of snowflake-floor.service)" = snowflake-daemon
t "floord holds no capability once the restore is done" no_caps snowflake-floor.service
say "# /dev/snowflake: $(stat -c '%A %U:%G' /dev/snowflake) $(getfacl -cp /dev/snowflake 2>/dev/null | grep -v '^#' | tr '\n' ' ')"
t "udev gave /dev/snowflake to the group snowflake-admin, 0460" \
	test "$(stat -c '%a %G' /dev/snowflake)" = "460 snowflake-admin"
t "udev's setfacl gave the group snowflake read (mask rw-)" \
	sh -c "getfacl -cp /dev/snowflake | grep -qx 'group:snowflake:r--' &&
		getfacl -cp /dev/snowflake | grep -qx 'mask::rw-'"
t "after udevadm trigger the node's mode and ACL are as before" \
	sh -c "a=\$(getfacl -cp /dev/snowflake; stat -c %a /dev/snowflake) &&
		udevadm trigger --settle --action=change /dev/snowflake &&
		b=\$(getfacl -cp /dev/snowflake; stat -c %a /dev/snowflake) && test \"\$a\" = \"\$b\""
t "a reader (group snowflake) may not configure (EPERM)" reader_cannot_configure
t "a member of snowflake-admin, with no capability, configures" \
	as_admin snowflake config --random-sequence 0
t "floord saved a floor in its state directory" until_ok 10 test -s /var/lib/snowflake/floor
t "nobody (not in the group) cannot open the device" eval '! as_other snowflake next'
t "strict=1 and no lease yet: a member's read is refused" refused

# The metrics timer's service, with node_exporter's textfile directory and
# user (normally prometheus-node-exporter's).
useradd --system --no-create-home prometheus 2>/dev/null
mkdir -p /var/lib/prometheus/node-exporter
chown prometheus /var/lib/prometheus/node-exporter
t "snowflake-metrics.timer is active" systemctl is-active snowflake-metrics.timer
t "snowflake-metrics.service runs" systemctl start snowflake-metrics.service
t "it wrote the textfile collector's file" \
	grep -q '^snowflake_' /var/lib/prometheus/node-exporter/snowflake.prom
info grep -m 3 '^snowflake_' /var/lib/prometheus/node-exporter/snowflake.prom

# Redis on 127.0.0.1 (the host's Debian binary), then the agent.
systemd-run --quiet --unit=sfsd-redis /usr/local/bin/redis-server --port 6379 \
	--bind 127.0.0.1 --save '' --appendonly yes --appendfsync always --dir /tmp
t "redis-server answers on 127.0.0.1:6379" until_ok 20 sh -c 'redis-cli -p 6379 ping | grep -q PONG'
# A new key space: its timestamp marks, once, as an operator would.
t "snowflake-agent --init-store: the pool's marks (agent.conf's pool)" \
	snowflake-agent --config /etc/snowflake/agent.conf --init-store
t "snowflake-agent.service starts (Type=notify: ready once it holds a lease)" \
	timeout 90 systemctl start snowflake-agent.service
info systemctl status --no-pager -n 8 snowflake-agent.service
say "# agent: user=$(user_of snowflake-agent.service 2>&1) $(caps_of snowflake-agent.service 2>&1 | tr -s '\t\n' '= ')"
t "the agent holds no capability (it configures through the device opened for writing)" \
	no_caps snowflake-agent.service
key=$(held_key)
say "# Redis: $key = $(redis-cli -p 6379 hget "$key" rec 2>/dev/null)"
t "the device serves a member, with the pair of the lease in Redis" served_with "$key"
# strict_save_refused: config --save of a fixed identity on the strict
# device the agent leases: exit 1, says why, nothing changed, nothing saved.
strict_save_refused() {
	local before rc=0
	before=$(cat $SYS/datacenter_id)/$(cat $SYS/worker_id)
	snowflake config --datacenter 3 --worker 9 --save 2>/tmp/sfsd.err || rc=$?
	cat /tmp/sfsd.err
	echo "exit $rc; ids before $before, after $(cat $SYS/datacenter_id)/$(cat $SYS/worker_id)"
	[ "$rc" = 1 ] && grep -q 'this device is strict' /tmp/sfsd.err &&
		[ "$(cat $SYS/datacenter_id)/$(cat $SYS/worker_id)" = "$before" ] && [ ! -e $IDENTITY ]
}
t "config --datacenter 3 --worker 9 --save on the strict device the agent leases: refused (exit 1), nothing changed or saved" \
	strict_save_refused
t "the agent runs as snowflake-daemon" test "$(user_of snowflake-agent.service)" = snowflake-daemon
t "systemctl stop snowflake-agent: stopped cleanly" systemctl stop snowflake-agent.service
t "after the stop the device refuses reads (fenced)" refused
t "the lease was released in Redis" no_lease
# IDs were issued in this load (served_with): a restart of the unit (its
# SIGTERM save, then --restore, as on a package upgrade) restores into the
# same module instance, so it moves neither the floor nor the clock.
cursor=$(journalctl -q -n 1 -o cat --show-cursor | sed -n 's/^-- cursor: //p')
before=$(floor_state)
t "systemctl restart snowflake-floor: active again" restart_floor
after=$(floor_state)
say "# before the restart: $before"
say "# after:              $after"
t "the restart left floor_ms, clock_offset_ms and floor_jumps alone (no skew)" \
	test "$before" = "$after"
t "the restore logged event=restore_same_instance" same_instance_restore "$cursor"
info floor_log_since "$cursor"
t "the restart logged no warning (no \"may repeat\")" no_floor_warning "$cursor"

# Issue 24, item 3: the restore and a node udev has not set up yet.  The
# module creates /dev/snowflake 0444 root:root; udev's rule makes it 0460
# snowflake-admin.  At boot the module may come before udev's coldplug
# (systemd-modules-load.service runs before systemd-udev-trigger.service):
# the same window here at will, udev's event queue held while the unit
# loads the module, on a host without the agent (strict=0).
# The old unit restored through the read-only node (EPERM), failed, and a
# service ordered after it (as every ordinary service is, through
# sysinit.target) read below the saved floor.
say "# floor unit: $(systemctl show -p After snowflake-floor.service)"
t "the floor unit is ordered after udev's coldplug (After=systemd-udev-trigger.service)" \
	sh -c "systemctl show -P After snowflake-floor.service | grep -qw systemd-udev-trigger.service"
systemctl stop snowflake-floor.service
saved=$(snowflake-floord --show | sed -n 's/^floor_ms \([0-9]*\).*/\1/p')
# (No ids: this load is also the host never given an identity, below.)
echo 'options snowflake strict=0' >/etc/modprobe.d/sfsd-test.conf

# A metrics run that the module's unload overtakes: its condition
# (ConditionPathExists=/sys/class/misc/snowflake) held when it started, the
# module is gone when the CLI reads sysfs, as on a host whose module is
# reloaded (a DKMS upgrade) while the timer fires.  That run has nothing to
# report: it must end as the condition's skip does, not leave the unit
# failed (CI once saw "snowflake-metrics.service loaded failed" here, the
# timer having fired during the rmmod below).  The window is held open at
# will: a drop-in's ExecStartPre waits until the module is gone.
mkdir -p /run/systemd/system/snowflake-metrics.service.d
cat >/run/sfsd-wait-unload.sh <<'EOF'
#!/bin/sh
# Until the module is gone (at most 60 s).
i=0
while test -e /sys/module/snowflake && [ "$i" -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
EOF
cat >/run/systemd/system/snowflake-metrics.service.d/sfsd-test.conf <<'EOF'
[Service]
ExecStartPre=/bin/sh /run/sfsd-wait-unload.sh
EOF
systemctl daemon-reload
mcursor=$(journalctl -q -n 1 -o cat --show-cursor | sed -n 's/^-- cursor: //p')
systemctl reset-failed snowflake-metrics.service 2>/dev/null
systemctl start --no-block snowflake-metrics.service
t "a metrics run has started (its condition held) and waits in the drop-in's ExecStartPre" \
	until_ok 30 sh -c 'test "$(systemctl show -P SubState snowflake-metrics.service)" = start-pre'
until_ok 20 rmmod snowflake
t "the module unloaded (to be loaded again, strict=0)" test ! -e /sys/module/snowflake
metrics_settled() { ! systemctl is-active -q snowflake-metrics.service &&
	[ "$(systemctl show -P ActiveState snowflake-metrics.service)" != activating ]; }
until_ok 60 metrics_settled
mlog=$(journalctl --no-pager -q -o cat --after-cursor "$mcursor" -u snowflake-metrics.service 2>&1)
say "# that run: $(systemctl show -p Result -p ActiveState snowflake-metrics.service | tr '\n' ' ')"
printf '%s\n' "$mlog" | tail -n 8 | sed "s/^/$TAG #   /"
t "that run read sysfs after the unload (the CLI said the device is gone)" \
	sh -c "printf '%s\n' \"\$1\" | grep -q 'snowflake: '" _ "$mlog"
t "a run the unload overtook is skipped, not failed (Result=success, and it says why)" \
	sh -c "[ \"\$(systemctl show -P Result snowflake-metrics.service)\" = success ] &&
		printf '%s\n' \"\$1\" | grep -q 'the module went away'" _ "$mlog"
rm -rf /run/systemd/system/snowflake-metrics.service.d /run/sfsd-wait-unload.sh
systemctl daemon-reload
cursor=$(journalctl -q -n 1 -o cat --show-cursor | sed -n 's/^-- cursor: //p')
udevadm control --stop-exec-queue
# Loaded before the unit starts, as systemd-modules-load.service does at
# boot (the unit's device cgroup, DeviceAllow=, is set up at its start and
# needs the node to exist then).
modprobe snowflake
systemctl start --no-block snowflake-floor.service
systemctl start --no-block sfsd-reader.service
until_ok 30 test -c /dev/snowflake
say "# /dev/snowflake before udev has run its rule: $(stat -c '%a %U:%G' /dev/snowflake 2>&1)"
# waiting_for_udev: the unit's control process is its wait for udev.
waiting_for_udev() {
	local pid
	pid=$(systemctl show -P ControlPID snowflake-floor.service)
	[ "${pid:-0}" != 0 ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- '-w /dev/snowflake'
}
waiting_or_refused() { waiting_for_udev || floor_log_since "$cursor" | grep -q 'not permitted'; }
# restore_waits: the restore is not run (the wait for udev is), nor failed.
restore_waits() {
	until_ok 30 waiting_or_refused
	systemctl status --no-pager -n 0 snowflake-floor.service | grep -E 'Active:|udevadm|snowflake-floord'
	floor_log_since "$cursor"
	waiting_for_udev && ! floor_log_since "$cursor" | grep -q 'not permitted'
}
t "while udev has not set up the node, the restore waits for it (no SET_FLOOR through a read-only node)" \
	restore_waits
udevadm control --start-exec-queue
t "once udev has, the floor unit is active" until_ok 90 systemctl is-active snowflake-floor.service
say "# /dev/snowflake after: $(stat -c '%a %U:%G' /dev/snowflake 2>&1)"
info floor_log_since "$cursor"
t "the restore did not fail on the way (no EPERM, no restart)" \
	sh -c "! journalctl --no-pager -q -o cat --after-cursor '$cursor' -u snowflake-floor.service |
		grep -E 'restoring floor_ms|not permitted|Failed with result|[Ss]cheduled restart'"
t "a service ordered after the floor unit has read an ID" until_ok 60 test -s /run/sfsd-reader.id
id=$(cat /run/sfsd-reader.id 2>/dev/null)
ms=$(snowflake decode --layout-from-device "$id" 2>/dev/null | sed -n 's/.*unix_ms=\([0-9]*\).*/\1/p')
say "# saved floor_ms ${saved:-?}; the service read ${id:-nothing}, stamped ${ms:-?}"
t "that ID is stamped at or above the saved floor (strict=0: no read below it)" \
	test -n "$ms" -a -n "$saved" -a "${ms:-0}" -ge "${saved:-1}"

# Issue 44, item 2: a host never given an identity says so, and one
# command gives it one, at once and for every later load.
t "a host never given an identity: worker_set 0 in sysfs" test "$(cat $SYS/worker_set)" = 0
t "... snowflake config says so (worker_set 0, and a note on stderr)" \
	sh -c 'snowflake config 2>/tmp/sfsd.err | grep -qx "worker_set 0" && cat /tmp/sfsd.err &&
		grep -q "no worker id was given to this host" /tmp/sfsd.err'
t "... the kernel said so at the load (the journal)" boot_said_no_identity
t "... the metrics say so (snowflake_worker_set 0 in node_exporter's file)" \
	sh -c 'systemctl reset-failed snowflake-metrics.service 2>/dev/null; systemctl start snowflake-metrics.service &&
		grep -x "snowflake_worker_set 0" /var/lib/prometheus/node-exporter/snowflake.prom'
# strict_saved: --strict --save on a device loaded without it: recorded for
# the next load, and it says that the running device stays as it is.
strict_saved() {
	local rc=0
	snowflake config --strict --save 2>/tmp/sfsd.err || rc=$?
	cat /tmp/sfsd.err $IDENTITY
	[ "$rc" = 0 ] && grep -q 'recorded for the module.s next load' /tmp/sfsd.err &&
		grep -qx 'options snowflake strict=1' $IDENTITY && [ "$(cat $SYS/strict)" = 0 ]
}
t "config --strict --save: strict=1 recorded for the next load; the loaded device stays non-strict, and says so" \
	strict_saved
inst=$(cat $SYS/instance_id)
say "# before: an ID read is $(dc_worker 2>&1) (datacenter/worker)"
t "snowflake config --datacenter 3 --worker 9 --save: exit 0" \
	snowflake config --datacenter 3 --worker 9 --save
t "at once, without a reload: the ids are 3/9, worker_set 1, and the next ID says so" identity_is 3 9
t "... the same module instance (no reload)" test "$(cat $SYS/instance_id)" = "$inst"
t "... recorded for the next load: $IDENTITY" \
	sh -c "cat $IDENTITY && grep -qx 'options snowflake datacenter_id=3 worker_id=9' $IDENTITY"
t "... snowflake config no longer notes a missing identity" no_identity_note
# (The metrics through sysfs, as the service's user reads them, without
# another run of the service.)
t "... the metrics say snowflake_worker_set 1 (from sysfs, as nobody)" \
	sh -c 'as_other() { setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all -- "$@"; }
		as_other snowflake stats --prometheus | grep -x "snowflake_worker_set 1"'
# The file, to the host (tests/deb/systemd.sh): the next boot's disk.
base64 -w 0 $IDENTITY | sed 's/^/SFSD-IDENTITY /'
echo
echo 'options snowflake strict=1' >/etc/modprobe.d/sfsd-test.conf

for u in snowflake-floor.service snowflake-agent.service; do
	say "# systemd-analyze security $u: $(systemd-analyze security --no-pager "$u" 2>/dev/null |
		sed -n 's/.*Overall exposure level for [^:]*: //p')"
done
failed=$(systemctl list-units --failed --no-legend --plain 'snowflake*' 2>&1)
t "no snowflake unit failed${failed:+ ($failed)}" test -z "$failed"
info journalctl --no-pager -q -p warning -u snowflake-floor.service -u snowflake-agent.service -u snowflake-metrics.service

# Issue 44, item 3: a purge keeps the saved floor and says so, and a
# reinstall on a host whose clock is now behind never issues an ID again.
# Today's postrm deleted the floor: the reinstall started as a new host,
# an hour behind, below the IDs issued before.  The module's package stays
# (the guest has no kernel headers for DKMS): snowflake-tools goes, with
# snowflake-agent, which depends on it.  No agent from here: strict=0.
echo 'options snowflake strict=0' >/etc/modprobe.d/sfsd-test.conf
DEBS=/usr/local/lib/sfsd-debs
# unix_ms ID: its timestamp (the CLI, while it is installed).
unix_ms() { snowflake decode --layout-from-device "$1" | sed -n 's/.*unix_ms=\([0-9]*\).*/\1/p'; }
# all_above MAX: every ID on stdin (one a line) is above MAX.
all_above() {
	local n=0 id
	while read -r id; do
		n=$((n + 1))
		[ "$id" -gt "$1" ] || { echo "ID $id (the ${n}th) is not above $1"; return 1; }
	done
	echo "$n IDs, all above $1"
	[ "$n" -gt 0 ]
}
hi=$(snowflake next -n 1000 2>/dev/null | tail -n 1)
hi_ms=$(unix_ms "$hi" 2>/dev/null)
t "1000 IDs read before the purge (the highest: ${hi:-none}, unix_ms ${hi_ms:-?})" test -n "$hi" -a -n "$hi_ms"
systemctl stop snowflake-metrics.timer snowflake-metrics.service
t "systemctl stop snowflake-floor: stopped (its last save)" systemctl stop snowflake-floor.service
say "# saved: $(snowflake-floord --show 2>&1 | grep -E '^(floor_ms|high_ms) ' | tr '\n' ' ')"
# (apt's caches and lists are not in the guest's initramfs.)
mkdir -p /var/cache/apt/archives/partial /var/lib/apt/lists/partial
APT_G=(apt-get -q -y -o Dpkg::Use-Pty=0 -o APT::Color=0 --no-install-recommends)
t "apt-get purge snowflake-tools (and snowflake-agent): exit 0" \
	sh -c '"$@" >/tmp/sfsd-purge.log 2>&1 || { cat /tmp/sfsd-purge.log; exit 1; }' _ "${APT_G[@]}" purge snowflake-tools
info grep -E '^snowflake-(tools|agent): ' /tmp/sfsd-purge.log
t "the purge said it kept /var/lib/snowflake/floor, and how to forget it (rm /var/lib/snowflake/floor)" \
	sh -c "grep -qF 'kept /var/lib/snowflake/floor' /tmp/sfsd-purge.log &&
		grep -qF 'To forget it on purpose: rm /var/lib/snowflake/floor' /tmp/sfsd-purge.log"
t "the purge said it removed the identity config --save recorded" \
	grep -qF "removed $IDENTITY (options snowflake " /tmp/sfsd-purge.log
t "after the purge: snowflake-tools is not installed, the saved floor is still there, the identity is gone" \
	sh -c "! dpkg-query -W -f='\${db:Status-Status}' snowflake-tools 2>/dev/null | grep -qx installed &&
		ls -ln /var/lib/snowflake && test -s /var/lib/snowflake/floor && test ! -e $IDENTITY"
t "nothing in /var/lib/private/snowflake (the unit has no DynamicUser=)" test ! -e /var/lib/private/snowflake
# The state directory as a user deleted and made again would find it (its
# files owned by a uid no one has now): StateDirectory= gives it back to
# the unit's user at its next start (checked below).
chown -R 4242:4242 /var/lib/snowflake 2>/dev/null
until_ok 20 rmmod snowflake
t "the module unloaded (the next load forgets what it issued)" test ! -e /sys/module/snowflake
# The wall clock an hour back, as after a reboot with a dead RTC battery.
t0=$(date +%s)
date -s "@$((t0 - 3600))" >/dev/null
t1=$(date +%s)
t "the wall clock stepped back an hour ($(date -u -d "@$t0" +%T) -> $(date -u -d "@$t1" +%T) UTC)" \
	test "$((t0 - t1))" -ge 3590 -a "$((t0 - t1))" -le 3610
# The negative control: loaded without a restore, the module stamps below
# the IDs issued before (so the check after the reinstall can fail).  One
# ID read from the node itself (the CLI went with the purge).
modprobe snowflake
until_ok 30 test -c /dev/snowflake
ctl=$(dd if=/dev/snowflake bs=8 count=1 status=none 2>/dev/null | od -An -tu8 | tr -d ' ')
t "control: the module loaded without the restore issues ${ctl:-nothing}, below the highest before the purge" \
	test -n "$ctl" -a "${ctl:-0}" -lt "${hi:-0}"
until_ok 20 rmmod snowflake
tools_deb=("$DEBS"/snowflake-tools_*.deb)
cursor=$(journalctl -q -n 1 -o cat --show-cursor | sed -n 's/^-- cursor: //p')
t "apt-get install of the snowflake-tools .deb again: exit 0" \
	sh -c '"$@" >/tmp/sfsd-reinstall.log 2>&1 || { cat /tmp/sfsd-reinstall.log; exit 1; }' _ \
	"${APT_G[@]}" install "${tools_deb[0]}"
t "the floor unit is active again (the postinst started it: it loaded the module and restored)" \
	until_ok 90 systemctl is-active snowflake-floor.service
info floor_log_since "$cursor"
t "floord restored the kept floor (\"restored floor_ms\" in its journal)" \
	sh -c "journalctl --no-pager -q -o cat --after-cursor '$cursor' -u snowflake-floor.service | grep -q 'restored floor_ms'"
say "# /var/lib/snowflake after the start: $(stat -c '%U:%G %a' /var/lib/snowflake 2>&1); floor $(stat -c '%U:%G %a' /var/lib/snowflake/floor 2>&1)"
t "systemd gave the state directory back to the unit's user (StateDirectory=): snowflake-daemon:snowflake" \
	test "$(stat -c %U:%G /var/lib/snowflake 2>&1)" = snowflake-daemon:snowflake
snowflake next -n 1000 >/tmp/sfsd-after.ids 2>&1
first=$(head -n 1 /tmp/sfsd-after.ids)
say "# after the reinstall: first ID ${first:-none}, unix_ms $(unix_ms "$first" 2>/dev/null), wall clock $(date +%s%3N)"
t "every ID read after the reinstall is above the highest before the purge ($hi)" \
	all_above "${hi:-0}" </tmp/sfsd-after.ids
# No warning at the restore, floord's or systemd's: with the module not
# loaded, the unit's device cgroup (DeviceAllow=/dev/snowflake) was made
# before its ExecStartPre loaded the module, so that first start waited
# 60 s, failed, and the restart a second later restored (systemd's "Failed
# to start" here, NRestarts=1); modprobe@snowflake.service now loads it first.
floor_warnings() {
	local w
	w=$(floor_log_since "$1" -p warning)
	echo "$w"
	[ -z "$w" ]
}
t "no warning at the restore, floord's or systemd's (no \"may repeat\", no failed start)" floor_warnings "$cursor"
t "the floor unit started at its first attempt (NRestarts=$(systemctl show -p NRestarts --value snowflake-floor.service))" \
	test "$(systemctl show -p NRestarts --value snowflake-floor.service)" = 0
failed=$(systemctl list-units --failed --no-legend --plain 'snowflake*' 2>&1)
t "after the reinstall: no snowflake unit failed${failed:+ ($failed)}" test -z "$failed"
date -s "@$(($(date +%s) + 3600))" >/dev/null
systemctl stop sfsd-redis.service
say 'done'
systemctl poweroff --no-block
