#!/bin/sh
# /init of the `make bench` guest: load the module with default parameters,
# run /snowflake_bench once, then (when staged) the peers of issue 14 and
# P6 with an uncapped layout, then the headline figures on every placement
# of the module's text (issue 34), power off.  With BENCH_MODE=compare
# (`make bench-compare`) only the placements, of BASE and HEAD in turns.
# Every result line starts with BENCH.

# shellcheck source=tests/lib/init-common.sh
. /etc/init-common.sh

dmesg -n 1

# Redis (loopback TCP and a Unix socket) and MariaDB (Unix socket only, its
# datadir prepared on the host by scripts/bench.sh with the Tickets64 table).
peers_servers_start() {
	i=0
	redis-server --bind 127.0.0.1 --port 6379 --unixsocket /run/redis.sock \
		--unixsocketperm 700 --save '' --appendonly no --dir /tmp \
		--logfile /tmp/redis.log --daemonize no &
	redis_pid=$!
	mkdir -p /run/mysqld
	mariadbd --no-defaults --user=root --datadir=/var/lib/mysql \
		--socket=/run/mysqld/mysqld.sock --skip-networking --skip-grant-tables \
		--innodb-log-file-size=4M --innodb-data-file-path=ibdata1:4M:autoextend \
		--innodb-buffer-pool-size=32M --innodb-use-native-aio=0 \
		--lc-messages-dir=/usr/share/mysql --character-sets-dir=/usr/share/mysql/charsets \
		--log-error=/tmp/mariadb.err &
	mariadb_pid=$!
	while [ $i -lt 600 ]; do
		if [ -S /run/redis.sock ] && [ -S /run/mysqld/mysqld.sock ]; then
			echo "BENCH servers ready_ds=$i"
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	echo "BENCH-SKIP servers not ready after 60 s"
	tail -n 5 /tmp/redis.log /tmp/mariadb.err 2>/dev/null | sed 's/^/BENCH-LOG /'
}

peers_servers_stop() {
	kill "$redis_pid" "$mariadb_pid" 2>/dev/null
	wait "$redis_pid" "$mariadb_pid" 2>/dev/null
	grep -E '\[ERROR\]' /tmp/mariadb.err 2>/dev/null | head -n 5 | sed 's/^/BENCH-LOG mariadb: /'
}
# Issue 34: P1 and P6 (reads of 4096 IDs, uncapped layout) once on the
# module /place/KO.ko, the lines tagged with KO and the round.
place_one() { # KO ROUND
	tag="ko=$1 round=$2"
	if ! insmod "/place/$1.ko"; then
		echo "BENCH-ERROR insmod /place/$1.ko failed"
		return
	fi
	out=$(/snowflake_bench -H p1) || echo "BENCH-ERROR snowflake_bench -H p1 on $1 exit $?"
	echo "$out" | sed -n -e "s/^BENCH p1 zero /BENCH place_p1 $tag zero /p" \
		-e "s/^BENCH p1 snowflake /BENCH place_p1 $tag snowflake /p"
	rmmod snowflake
	if ! insmod "/place/$1.ko" timestamp_bits=41 datacenter_bits=0 worker_bits=0 sequence_bits=22; then
		echo "BENCH-ERROR insmod /place/$1.ko with the uncapped layout failed"
		return
	fi
	out=$(/snowflake_bench -H p6 -s "$PLACE_SECONDS") || echo "BENCH-ERROR snowflake_bench -H p6 on $1 exit $?"
	echo "$out" | sed -n "s/^BENCH p6 /BENCH place_p6 $tag /p"
	rmmod snowflake
}

# Every placement (padding) in turn, its rounds one after the other; with
# two labels (BASE and HEAD) both in every round, the order swapped from
# one round to the next.
place_all() {
	for pad in $PLACE_PADS; do
		r=1
		while [ "$r" -le "$PLACE_ROUNDS" ]; do
			labels=$PLACE_LABELS
			if [ $((r % 2)) -eq 0 ]; then
				labels=$(echo "$PLACE_LABELS" | awk '{ for (i = NF; i > 0; i--) printf "%s ", $i }')
			fi
			for l in $labels; do
				place_one "$l-$pad" "$r"
			done
			r=$((r + 1))
		done
	done
	echo "BENCH place_done"
}

# The kernel's once-only network secrets (net_get_random_once(): the TCP
# sequence and ephemeral-port secrets, the established-hash secret) are
# made at the first TCP connection, which patches their static keys into
# kernel text: that connection is made here, while one CPU is up, not by
# the peers (Redis over TCP) with two.
nc -l -p 9 >/dev/null 2>&1 &
nc_pid=$!
sleep 0.3
echo | nc -w 2 127.0.0.1 9 >/dev/null 2>&1
kill "$nc_pid" 2>/dev/null
wait "$nc_pid" 2>/dev/null

# The guest boots with one CPU (VM_MODE=parallel, tests/lib/vm.sh): the
# others come up here, before anything is measured, with the recorder of
# text patches running until the end (vm_cpus_report).
if ! vm_cpus_online; then
	echo "BENCH-ERROR not every CPU came up"
	vm_cpus_report
	vm_done
fi
echo "BENCH-INIT guest $(uname -r), $(nproc) CPUs"
if [ "${BENCH_MODE:-}" = compare ]; then
	echo "BENCH clock clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
	place_all
	echo "BENCH clock_end clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
	vm_cpus_report
	vm_done
fi
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

# Issue 14, in the same boot: the peers (Redis, a MariaDB ticket server,
# Node.js) against the device with the default layout, then P6 with an
# uncapped layout.  Staged only by scripts/bench.sh (bench/peers/).
if [ -x /usr/local/bin/peers_bench ]; then
	peers_servers_start
	# shellcheck disable=SC2086 # PEERS_ARGS is a word list
	/usr/local/bin/peers_bench peers ${PEERS_ARGS:-} || echo "BENCH-ERROR peers_bench peers exit $?"
	if [ -x /usr/bin/node ]; then
		# shellcheck disable=SC2086 # NODE_ARGS is a word list
		NODE_PATH=/opt/node/node_modules node /opt/node/node_bench.js ${NODE_ARGS:-} ||
			echo "BENCH-SKIP node exit $?"
	else
		echo "BENCH-SKIP node not staged: ${NODE_SKIP:-}"
	fi
	# The same round trips with the servers and the client on one vCPU.
	/usr/local/bin/peers_bench pin 0 "$redis_pid" "$mariadb_pid"
	# shellcheck disable=SC2086
	/usr/local/bin/peers_bench pinned ${PEERS_ARGS:-} || echo "BENCH-ERROR peers_bench pinned exit $?"
	peers_servers_stop
	rmmod snowflake
	# 41 timestamp bits, no node bits, 22 sequence bits: 4 M IDs per ms,
	# so no 4096-ID read ever waits for the next tick.
	if insmod /snowflake.ko timestamp_bits=41 datacenter_bits=0 worker_bits=0 sequence_bits=22; then
		# shellcheck disable=SC2086
		/usr/local/bin/peers_bench p6 ${PEERS_ARGS:-} || echo "BENCH-ERROR peers_bench p6 exit $?"
	else
		echo "BENCH-ERROR insmod with the uncapped layout failed"
	fi
fi
rmmod snowflake
if [ -d /place ]; then
	place_all
fi
vm_cpus_report
vm_done
