#!/bin/bash
# In the Debian 12 root of the deb lane, booted with systemd as PID 1
# (tests/upgrade/run.sh): an upgrade 1.3.0 -> 1.4.0 under load, the reboot,
# a downgrade under load, the reboot.  One script, three boots; the phase
# is /etc/sfup-phase (A: the previous release installed; B: this one after
# the reboot; C: the previous one after the downgrade's reboot).  Every
# result is a console line "SFUP ok|notok WHAT" (details "SFUP # ..."),
# figures "SFUP figure ...", then "SFUP done" and a poweroff.
#
# What a reboot keeps (the host carries it to the next boot, tests/upgrade
# /run.sh): the state directory /var/lib/snowflake (floord's floor, the
# agent's state file), Redis's append-only file, and the highest ID read in
# this boot, written at the end as a base64 tar to the second serial port
# (/dev/ttyS1), restored at the next boot by sfup-restore.service before
# the floor unit starts, with its owners.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_PAGER='' SYSTEMD_COLORS=0 DEBIAN_FRONTEND=noninteractive

TAG=SFUP T_OUT=/tmp/sfup.out
# shellcheck source=tests/deb/guest-lib.sh
. /usr/local/lib/sf-guest-lib.sh
# shellcheck source=tests/upgrade/verdict.sh
. /usr/local/lib/sfup-verdict.sh
PHASE=$(cat /etc/sfup-phase)
READER=/usr/local/bin/sf-upgrade-reader
SYS=/sys/class/misc/snowflake
OLD=$(cat /etc/sfup-old-version) NEW=$(cat /etc/sfup-new-version)
# The bound on how long a strict device may stop serving while its agent
# restarts: the unit's stop fences the device and releases the lease, the
# new agent claims the pair and settles for settle_ms (the TTL, 3 s) before
# it unfences; measured 8.4 s in this guest (one emulated CPU on a busy
# host): 15 s.
DARK_BOUND_MS=${SFUP_DARK_BOUND_MS:-15000}
# The bound on the readers' pause while apt-get upgrades or downgrades the
# packages, which restarts nothing they depend on: the guest's one emulated
# CPU is shared with dpkg and the maintainer scripts.
APT_BOUND_MS=${SFUP_APT_BOUND_MS:-2000}

ms() { date +%s%3N; }
pkgver() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null; }
modver() { cat /sys/module/snowflake/version 2>/dev/null; }
filever() { modinfo -F version snowflake 2>/dev/null; }
pair() { echo "$(cat $SYS/datacenter_id 2>/dev/null)/$(cat $SYS/worker_id 2>/dev/null)"; }
as_reader() { setpriv --reuid=nobody --regid=snowflake --groups=snowflake --inh-caps=-all -- "$@"; }
served() { as_reader snowflake next >/dev/null 2>&1; }
fig() { say "figure $PHASE: $*"; }

# readers_start: two readers of the device (tests/upgrade/reader.c), one
# through a descriptor held across everything, one opening the device for
# every read.
readers_start() {
	rm -f /tmp/sfup-stop /tmp/sfup-r-*
	for m in held reopen; do
		as_reader "$READER" read "$PHASE-$m" /dev/snowflake "/tmp/sfup-r-$m.bin" /tmp/sfup-stop "$m" \
			>"/tmp/sfup-r-$m.txt" 2>&1 &
	done
	sleep 3
}
# readers_stop ABOVE WHAT: stop them; each one's line; the IDs of both:
# no repeat, none at or below ABOVE (the last boot's highest), each reader's
# IDs rising; the longest pause against BOUND_MS when given.
readers_stop() {
	local above=$1 what=$2 m line
	touch /tmp/sfup-stop
	wait
	for m in held reopen; do
		line=$(grep '^reader ' "/tmp/sfup-r-$m.txt")
		say "# $line"
		grep '^gap ' "/tmp/sfup-r-$m.txt" | head -n 8 | sed "s/^/$TAG #   /"
		fig "reader $m: $(sed -E 's/^reader [^ ]+ //; s/ first=.*//' <<<"$line")"
		t "$what: the $m reader's IDs each above the one before (not_above=0)" \
			grep -q ' not_above=0$' "/tmp/sfup-r-$m.txt"
		t "$what: the $m reader was served" grep -qE '^reader .* ids=[1-9][0-9]* ' "/tmp/sfup-r-$m.txt"
	done
	say "# $($READER check "$above" /tmp/sfup-r-*.bin)"
	t "$what: no ID repeats, none at or below $above (the highest before)" \
		"$READER" check "$above" /tmp/sfup-r-held.bin /tmp/sfup-r-reopen.bin
	"$READER" check 0 /tmp/sfup-r-*.bin | sed -n 's/.* max=//p' >/tmp/sfup-max
}
# gap_in T0 T1: the longest pause of either reader that overlaps [T0, T1]
# (0: none of 100 ms or more, the readers log no shorter one)
# (ms, CLOCK_REALTIME), from its "gap" lines and its summary.
gap_in() {
	cat /tmp/sfup-r-*.txt | awk -v a="$1" -v b="$2" '
		/^gap / { if ($5 <= b && $7 >= a && $3 > g) g = $3 }
		/^reader / { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			if (v["gap_from"] <= b && v["gap_to"] >= a && v["longest_gap_ms"] > g) g = v["longest_gap_ms"] }
		END { print g + 0 }'
}
redis_start() {
	mkdir -p /var/lib/sfup-redis
	systemd-run --quiet --unit=sfup-redis /usr/local/bin/redis-server --port 6379 \
		--bind 127.0.0.1 --save '' --appendonly yes --appendfsync always --dir /var/lib/sfup-redis
	until_ok 20 sh -c 'redis-cli -p 6379 ping | grep -q PONG'
}
agent_start() { timeout 90 systemctl start snowflake-agent.service && served; }
floor_log() { journalctl --no-pager -q -o cat -u snowflake-floor.service; }
# export_state: what the reboot keeps, to the host (see the top).
export_state() {
	systemctl stop snowflake-agent.service snowflake-floor.service sfup-redis.service
	stty -F /dev/ttyS1 raw -echo 2>/dev/null
	{
		echo SFUP-STATE-BEGIN
		cp /tmp/sfup-max /var/lib/sfup-prev-max
		tar -C / -czf - var/lib/snowflake var/lib/sfup-redis var/lib/sfup-prev-max | base64
		echo SFUP-STATE-END
	} >/dev/ttyS1
}
# upgrade_under_load DIR WHAT: apt-get install of DIR's packages while
# the readers read; the window's times in T0/T1.
apt_under_load() {
	local dir=$1 what=$2
	T0=$(ms)
	t "$what: apt-get install --allow-downgrades of $(find "$dir" -name '*.deb' | wc -l) packages while the readers read" \
		sh -c "apt-get install -y -q --allow-downgrades --no-install-recommends -o Dpkg::Use-Pty=0 $dir/*.deb >/tmp/sfup-apt.log 2>&1 || { tail -n 15 /tmp/sfup-apt.log; exit 1; }"
	T1=$(ms)
	grep -E -i 'dkms|headers|snowflake.ko|Setting up snowflake|rror' /tmp/sfup-apt.log | head -n 12 | sed "s/^/$TAG #   /"
	fig "$what: apt-get took $((T1 - T0)) ms"
}

# installed_now TO FROM: after apt-get went from FROM to TO: the packages
# are TO's, the module in memory still FROM's.  When the new module takes
# over: at the next boot.  DKMS installs it for the next load; the loaded
# one is never unloaded under its users.  No kernel headers in this guest
# (a DKMS build under the emulated CPU takes minutes): DKMS registers TO
# and says it skipped the build; the same apt-get on the root between the
# boots builds it (tests/upgrade/run.sh).
installed_now() {
	local to=$1 from=$2
	sleep 2
	t "the packages are $to" test "$(pkgver snowflake-tools)/$(pkgver snowflake-dkms)/$(pkgver libsnowflake1)" = "$to/$to/$to"
	t "the module in memory is still $from ($to's takes over at the next boot)" test "$(modver)" = "$from"
	t "DKMS: $to registered, its build skipped here (no headers in this guest)" \
		sh -c "dkms status snowflake | grep -q '^snowflake/$to: added' && grep -q 'headers' /tmp/sfup-apt.log"
}

say "# phase $PHASE: $(systemctl --version | head -n 1); kernel $(uname -r)"
say "# packages $(pkgver snowflake-tools), module in memory $(modver), on disk $(filever)"
# (Restart=on-failure: 1.3.0's unit may fail its first restore, below.)
t "the floor unit is active" until_ok 60 systemctl is-active snowflake-floor.service
max_before=$(cat /var/lib/sfup-prev-max 2>/dev/null || echo 0)
[ "$PHASE" = A ] || t "the highest ID read before the reboot came with the state ($max_before)" \
	test "$max_before" -gt 0

case $PHASE in
A)
	t "the previous release $OLD is installed and its module loaded" \
		test "$(pkgver snowflake-tools)/$(modver)" = "$OLD/$OLD"
	t "redis-server answers on 127.0.0.1:6379 (append-only file)" redis_start
	t "$OLD's agent holds a pair and the strict device serves" agent_start
	pair_a=$(pair)
	echo "$pair_a" >/var/lib/snowflake/sfup-pair
	apid=$(systemctl show -P MainPID snowflake-agent.service)
	fpid=$(systemctl show -P MainPID snowflake-floor.service)
	say "# pair $pair_a, agent pid $apid, floord pid $fpid, lease $(redis-cli -p 6379 --scan --pattern 'snowflake:*:worker:*' | head -n 1)"
	readers_start
	apt_under_load /root/debs-new "upgrade $OLD -> $NEW"
	installed_now "$NEW" "$OLD"
	t "the held descriptor is still served after the upgrade" \
		sh -c 'a=$(stat -c %s /tmp/sfup-r-held.bin); sleep 2; test "$(stat -c %s /tmp/sfup-r-held.bin)" -gt "$a"'
	# The upgrade restarts nothing that runs (debian/rules: the floor
	# unit --no-stop-on-upgrade; the agent's unit is never started by a
	# package): a restart of the floor unit would restart the agent too
	# (Requires=), with the new binary.
	t "the upgrade left floord running ($OLD's, until the next boot)" \
		test "$(systemctl show -P MainPID snowflake-floor.service)" = "$fpid"
	t "the upgrade left the agent running, with its lease ($OLD's, until the next boot)" \
		test "$(systemctl show -P MainPID snowflake-agent.service)" = "$apid"
	t "the strict device kept its lease and pair through the upgrade ($(pair))" \
		test "$(pair)" = "$pair_a"
	t "the strict device serves after the upgrade" served
	# The operator's step after an upgrade from $OLD (README, "Upgrading"),
	# on each host: $NEW's agent keeps one record per pair, with its
	# timestamp mark, which $OLD's never wrote, and never reads a missing
	# one as 0.  The agent stopped (its lease released: a live key of
	# $OLD's at a record's name is never replaced), the records are made
	# with marks above every ID the cluster issued (here one host: its
	# clock, plus a second), then the agent started.
	T2=$(ms)
	t "systemctl stop snowflake-agent ($OLD's agent releases its lease)" \
		timeout 30 systemctl stop snowflake-agent.service
	mark=$(($(ms) + 1000))
	t "the step: snowflake-agent --init-store --init-mark-ms $mark (the records and marks $OLD never wrote)" \
		snowflake-agent --config /etc/snowflake/agent.conf --init-store --init-mark-ms "$mark"
	info cat "$T_OUT"
	t "systemctl start snowflake-agent: $NEW's agent is ready" timeout 90 systemctl start snowflake-agent.service
	t "the strict device serves again within 30 s of the restart" until_ok 30 served
	T3=$(ms)
	info journalctl --no-pager -q -o cat -u snowflake-agent.service --since "@$((T2 / 1000))"
	t "$NEW's agent re-adopted the pair of $OLD's state file ($pair_a)" test "$(pair)" = "$pair_a"
	sleep 2
	readers_stop "$max_before" "upgrade under load"
	up=$(gap_in "$T0" "$T1") dark=$(gap_in "$T2" "$T3")
	fig "readers' longest pause during the upgrade: $up ms (0: none of 100 ms or more; apt-get $((T1 - T0)) ms)"
	fig "strict device dark while the agent restarted: $dark ms (bound $DARK_BOUND_MS ms)"
	t "the readers' longest pause during the upgrade ($up ms) is at most $APT_BOUND_MS ms" \
		test "$up" -le "$APT_BOUND_MS"
	t "the strict device was dark at most $DARK_BOUND_MS ms while the agent restarted ($dark ms)" \
		test "$dark" -le "$DARK_BOUND_MS"
	;;
B)
	t "after the reboot the module of $NEW is loaded" test "$(modver)/$(pkgver snowflake-tools)" = "$NEW/$NEW"
	say "# floord's restore:"
	floor_log | grep -E 'event=|restor' | head -n 5 | sed "s/^/$TAG #   /"
	t "floord of $NEW restored the floor $OLD's floord saved, no warning" \
		sh -c "journalctl --no-pager -q -o cat -u snowflake-floor.service | grep -q 'restored floor_ms' &&
			w=\$(journalctl --no-pager -q -o cat -p warning -u snowflake-floor.service); test -z \"\$w\""
	t "redis-server with the append-only file of the last boot" redis_start
	t "$NEW's agent starts from $OLD's state file; the strict device serves" agent_start
	t "the agent re-adopted the pair of before the reboot ($(cat /var/lib/snowflake/sfup-pair))" \
		test "$(pair)" = "$(cat /var/lib/snowflake/sfup-pair)"
	readers_start
	# Old binaries on the new module and library: a program built against
	# the previous release's libsnowflake-dev (tests/upgrade/old-client.c)
	# runs against today's libsnowflake.so.1; the previous release's CLI
	# (its library linked in statically) against today's module.
	say "# old-client: $(ldd /usr/local/old/old-client | grep libsnowflake)"
	t "a program linked against $OLD's library runs against $NEW's libsnowflake.so.1 and module" \
		as_reader /usr/local/old/old-client
	info cat "$T_OUT"
	t "$OLD's CLI reads an ID from $NEW's module" \
		sh -c 'test -n "$(setpriv --reuid=nobody --regid=snowflake --groups=snowflake --inh-caps=-all -- /usr/local/old/snowflake next)"'
	t "$OLD's CLI: snowflake stats" /usr/local/old/snowflake stats
	# The packages' autopkgtest smoke tests that need the machine
	# (debian/tests/control, Restrictions: isolation-machine).
	for dt in $(cat /usr/local/debian-tests/machine 2>/dev/null); do
		t "autopkgtest $dt (debian/tests, isolation-machine)" /usr/local/debian-tests/"$dt"
	done
	readers_stop "$max_before" "after the reboot into $NEW"
	cp /tmp/sfup-max /var/lib/sfup-prev-max
	max_before=$(cat /var/lib/sfup-prev-max)

	# The previous release's static selftests against this module
	# (tests/upgrade/run.sh put there the ones whose source differs from
	# today's; the others are today's binaries, run by vmtest).
	systemctl stop snowflake-agent.service snowflake-floor.service
	until_ok 20 rmmod snowflake
	# As vmtest runs them: the node as the module makes it (0444 root),
	# without the package's udev rule (its group, mode and ACL), which the
	# CLI tests set up themselves; the CLI they run is the previous
	# release's (vmtest installs the selftests' own), its README theirs.
	ln -sf /dev/null /etc/udev/rules.d/60-snowflake.rules
	udevadm control --reload
	# And without udev itself, as in vmtest's busybox guest: the tests
	# reload the module and set the node's ACL at once, and udev's own
	# handling of the new node (its default mode, a chmod that resets the
	# ACL's mask) could land after that: cli_test's
	# config_as_a_member_of_the_write_group then opened it read-only.
	systemctl stop systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket
	# The kselftests' reload takes an uncompressed .ko (finit_module with
	# no flags); DKMS installed it xz-compressed.
	ko=$(modinfo -n snowflake)
	case $ko in
	*.xz) xz -dc "$ko" >/tmp/snowflake.ko && ko=/tmp/snowflake.ko ;;
	*.zst) zstd -qdc "$ko" >/tmp/snowflake.ko && ko=/tmp/snowflake.ko ;;
	esac
	# The list the host built (tests/upgrade/run.sh), each one run: a
	# binary missing here fails, and the number run is compared with it.
	nrun=0 nlist=$(grep -c . /etc/sfup-old-selftests)
	for name in $(cat /etc/sfup-old-selftests); do
		st=/usr/local/old/selftests/$name
		if [ ! -x "$st" ]; then
			t "$OLD's $name is in the guest" false
			continue
		fi
		modprobe snowflake
		s=$(ms)
		# fuzz_test: 250,000 calls, as vmtest makes on its kernels after the
		# first (its 1,000,000 took 45 s of the guest's one CPU in the run
		# of 53012c1; what it checks, old calls on this module, is the same).
		(cd /tmp && SNOWFLAKE_KO=$ko SNOWFLAKE_README=/usr/local/old/README.md \
			SNOWFLAKE_CLI=/usr/local/old/snowflake SNOWFLAKE_FUZZ_CALLS=250000 timeout 300 "$st") \
			>"/tmp/sfup-$name.log" 2>&1
		rc=$?
		nrun=$((nrun + 1))
		res=$(grep -E '^# (PASSED|FAILED|Totals)' "/tmp/sfup-$name.log" | tail -n 1)
		fig "old selftest $name rc=$rc $(($(ms) - s)) ms ${res#\# }"
		# tests/upgrade/verdict.sh: all planned cases ran, none skipped,
		# only listed cases failed, each as listed, each listed one failed.
		verdict=$(sfup_verdict "$name" "$rc" "/tmp/sfup-$name.log" /etc/sfup-expected-fail)
		vrc=$?
		say "# $name: $verdict"
		t "$OLD's $name against $NEW's module: ${verdict%%:*} (tests/upgrade/expected-fail)" test "$vrc" = 0
		if [ "$vrc" != 0 ]; then
			grep -E '^(not ok|ok .*# SKIP|# .*(FAIL|Expected|stderr))' "/tmp/sfup-$name.log" | head -n 16 | sed "s/^/$TAG #   /"
			tail -n 4 "/tmp/sfup-$name.log" | sed "s/^/$TAG #   /"
		fi
		rmmod snowflake 2>/dev/null
	done
	t "every one of $OLD's $nlist selftests listed ran ($nrun)" test "$nrun" = "$nlist" -a "$nlist" -gt 0

	rm -f /etc/udev/rules.d/60-snowflake.rules
	systemctl start systemd-udevd-control.socket systemd-udevd-kernel.socket systemd-udevd.service
	udevadm control --reload
	udevadm settle -t 30
	# The downgrade, with strict=0 (static ids): floord alone.
	echo 'options snowflake strict=0 datacenter_id=1 worker_id=2' >/etc/modprobe.d/sfup-test.conf
	# Loaded before the unit starts, as systemd-modules-load.service does
	# at boot: the unit's device cgroup (DeviceAllow=) needs the node at
	# its start (tests/deb/guest-systemd.sh does the same).
	t "the module loaded again (strict=0, static ids), the floor unit started" \
		sh -c 'modprobe snowflake && udevadm settle -t 30 && systemctl start snowflake-floor.service &&
			test "$(cat /sys/module/snowflake/parameters/strict)" = N'
	info sh -c 'ls -l /dev/snowflake; getfacl -cp /dev/snowflake; systemctl status --no-pager -n 5 snowflake-floor.service'
	floor_before=$(sed -n 's/^floor_ms //p' /var/lib/snowflake/floor)
	readers_start
	apt_under_load /root/debs-old "downgrade $NEW -> $OLD"
	installed_now "$OLD" "$NEW"
	# On a host with kernel headers DKMS builds $OLD's module in this
	# postinst, and $OLD's postinst then restarts the floor unit, whose
	# modprobe (a no-op, the module is loaded) finds it.  Here DKMS skipped
	# the build (no headers), so the restart failed in modprobe: the module
	# DKMS built for $OLD on the host goes where DKMS puts it, and the floor
	# unit is restarted as that postinst did.
	for k in /usr/local/old/snowflake.ko*; do
		install -D -m 0644 "$k" "/lib/modules/$(uname -r)/updates/dkms/${k##*/}"
	done
	depmod -a
	systemctl reset-failed snowflake-floor.service
	TR=$(ms)
	systemctl restart snowflake-floor.service
	# $OLD's postinst restarts the floor unit; $OLD's floord reads version 1
	# floor files only and refuses $NEW's (version 2, its instance_id
	# line) as corrupt: it says why, and neither uses nor overwrites it.
	info sh -c "journalctl --no-pager -q -o cat -u snowflake-floor.service --since @$((TR / 1000)) | grep -v '^snowflake-floor.service:' | head -n 8"
	t "$OLD's floord refuses $NEW's floor file and says why (unknown key \"instance_id\")" \
		sh -c "journalctl --no-pager -q -o cat -u snowflake-floor.service --since @$((TR / 1000)) | grep -q 'unknown key \"instance_id\"'"
	t "the refused file is still $NEW's, its floor not below $floor_before (nothing lost)" \
		sh -c "grep -q '^snowflake-floor 2' /var/lib/snowflake/floor &&
			test \$(sed -n 's/^floor_ms //p' /var/lib/snowflake/floor) -ge $floor_before"
	t "the device kept serving (strict=0) while the floor unit failed" served
	# The documented step (snowflake-floord(8), RECOVERY): a floor above
	# every ID issued (the time now plus the time since the file was
	# written), the file moved away, the unit started again.
	saved=$(sed -n 's/^saved_unix_ms //p' /var/lib/snowflake/floor)
	now=$(ms)
	newfloor=$((now + now - saved))
	t "the step: snowflake config --floor $newfloor, the file moved away, the floor unit started" \
		sh -c "snowflake config --floor $newfloor && mv /var/lib/snowflake/floor /var/lib/snowflake/floor.$NEW &&
			systemctl reset-failed snowflake-floor.service && systemctl start snowflake-floor.service"
	info sh -c "journalctl --no-pager -q -o cat -u snowflake-floor.service -n 12 | grep -v '^snowflake-floor.service:'; ls -l /var/lib/snowflake"
	t "$OLD's floord runs and saved its own floor file" \
		until_ok 20 sh -c "systemctl is-active snowflake-floor.service && grep -q '^snowflake-floor 1' /var/lib/snowflake/floor"
	info cat /var/lib/snowflake/floor
	readers_stop "$max_before" "downgrade under load (strict=0)"
	down=$(gap_in "$T0" "$T1")
	fig "readers' longest pause during the downgrade: $down ms (0: none of 100 ms or more; apt-get $((T1 - T0)) ms)"
	t "the readers' longest pause during the downgrade ($down ms) is at most $APT_BOUND_MS ms" \
		test "$down" -le "$APT_BOUND_MS"
	echo 'options snowflake strict=1' >/etc/modprobe.d/sfup-test.conf
	;;
C)
	t "after the reboot the module of $OLD is loaded" test "$(modver)/$(pkgver snowflake-tools)" = "$OLD/$OLD"
	floor_log | grep -E 'event=|restor' | head -n 5 | sed "s/^/$TAG #   /"
	# $OLD's floor unit has no wait for udev's rule (issue 24, item 3,
	# fixed in $NEW): at boot its restore may run while the node is still
	# the module's 0444 root and fail with EPERM; Restart=on-failure runs
	# it again.  Said, not failed: it is $OLD's, and a downgrade brings it
	# back.
	journalctl --no-pager -q -o cat -u snowflake-floor.service | grep -q 'not permitted' &&
		say "# $OLD's floor unit hit issue 24's boot race (restore before udev's rule: EPERM), then was restarted"
	t "floord of $OLD restored the floor saved before the reboot (by $OLD's, after the recovery)" \
		until_ok 60 sh -c "journalctl --no-pager -q -o cat -u snowflake-floor.service | grep -q 'restored floor_ms'"
	t "redis-server with the append-only file of the last boot" redis_start
	# The downgrade's step (README, "Upgrading and downgrading"): $OLD's
	# agent takes a record's name as a pair held (its SET NX finds it
	# taken), so with every agent of the key space stopped (none runs
	# yet here) $NEW's records are deleted.
	t "the downgrade's step: $NEW's records deleted, no agent running" \
		sh -c "redis-cli -p 6379 --scan --pattern 'snowflake:*:worker:*' | xargs -r redis-cli -p 6379 del >/dev/null &&
			test -z \"\$(redis-cli -p 6379 --scan --pattern 'snowflake:*:worker:*')\""
	t "$OLD's agent starts from $NEW's state file; the strict device serves" agent_start
	t "the agent re-adopted its pair ($(cat /var/lib/snowflake/sfup-pair))" \
		test "$(pair)" = "$(cat /var/lib/snowflake/sfup-pair)"
	readers_start
	sleep 2
	readers_stop "$max_before" "after the reboot into $OLD"
	;;
esac
failed=$(systemctl list-units --failed --no-legend --plain 'snowflake*' 2>&1)
t "no snowflake unit failed${failed:+ ($failed)}" test -z "$failed"
info journalctl --no-pager -q -p warning -u snowflake-floor.service -u snowflake-agent.service
[ "$PHASE" = C ] || export_state
say 'done'
systemctl poweroff --no-block
