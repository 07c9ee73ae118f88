# shellcheck shell=sh
# shellcheck disable=SC2034 # STORE, TTL, AG, NOISE, store_pid: read by init.sh
# Sourced by tests/agent-guest/init.sh (installed as /etc/agent-guest-stores.sh):
# what each store contributes to the one agent scenario, and nothing else.
# For BACKEND (redis, zookeeper, mysql):
#   BACKEND_setup       sets STORE (its name), TTL (ms), AG (the agent and
#                       its store options; no state file, no log level) and
#                       NOISE (agent log lines left out of the console dump),
#                       STORE_LOG (the server's log, shown when a check failed)
#   BACKEND_start       starts the server in the background, its pid in
#                       $store_pid; 0 once it answers, with what runs on stdout
#   BACKEND_init_check  after --init-store: what it made on stdout; nonzero
#                       when the store does not hold it
#   BACKEND_holder DC W who holds the pair's live lease, as the store says
#                       (empty: nobody)
#   BACKEND_self        who the agent of /tmp/agent.log is, in those terms
#   BACKEND_held        how many live leases the store holds
#   BACKEND_extra       the store's own checks once the agent serves
# The servers listen on 127.0.0.1 only.  Stopping and killing are by
# $store_pid (SIGSTOP, SIGCONT, SIGKILL), the same for every store.

# ---- Redis: Debian's redis-server, every write persisted (AOF, fsync always).
redis_setup() {
	STORE=Redis
	TTL=3000
	AG="snowflake-agent --config /dev/null --redis-timeout-ms 300 --datacenter-ids 1"
	NOISE='event=renewed\|redis still down'
	STORE_LOG=/tmp/redis.log
}
redis_start() {
	redis_server_start || return 1
	# shellcheck disable=SC2154 # set by redis_server_start (agent-common.sh)
	store_pid=$redis_pid
	echo "redis-server $(redis-cli info server | sed -n 's/^redis_version:\([0-9.]*\).*/\1/p') on 127.0.0.1:6379 (appendonly yes, appendfsync always)"
}
# The pairs' records (docs/deployment-redis.md, "The record"): a hash per
# pair, the owner it names read by redis_rec_owner (agent-common.sh).
redis_init_check() {
	n=$(redis-cli --scan --pattern 'snowflake:default:worker:*' | wc -l)
	c=$(grep -o 'created=[0-9]*' /tmp/init.log)
	echo "$c, $n records in Redis"
	[ "$n" -gt 0 ] && [ "$c" = "created=$n" ]
}
redis_holder() {
	local o
	o=$(redis_rec_owner "snowflake:default:worker:$1:$2")
	[ "$o" = - ] || echo "$o"
}
redis_self() { sed -n 's/.*event=start owner=\([^ ]*\).*/\1/p' /tmp/agent.log | tail -n1; }
redis_held() {
	local k
	for k in $(redis-cli --scan --pattern 'snowflake:default:worker:*'); do
		[ "$(redis_rec_owner "$k")" = - ] || echo "$k"
	done | wc -l
}
redis_extra() { :; }

# ---- ZooKeeper: Debian's zookeeper.jar, standalone, under the jlinked
# runtime in /opt/jre; tickTime 500 ms (sessions of 1..10 s).
zookeeper_setup() {
	STORE=ZooKeeper
	TTL=4000
	AG="snowflake-agent --config /dev/null --backend zookeeper --zookeeper-hosts 127.0.0.1:2181 --zookeeper-timeout-ms 1000 --datacenter-ids 1"
	NOISE='event=renewed\|zookeeper: \|still down'
	STORE_LOG=/tmp/zk.log
}
# zk4 WORD: the server's answer to a four-letter word (5 s at most: a
# server still starting may take the connection and not answer).
zk4() { echo "$1" | timeout 5 nc 127.0.0.1 2181 2>/dev/null; }
zookeeper_start() {
	mkdir -p /tmp/zk
	cat >/tmp/zoo.cfg <<-ZOO
	tickTime=500
	dataDir=/tmp/zk
	clientPort=2181
	clientPortAddress=127.0.0.1
	admin.enableServer=false
	4lw.commands.whitelist=srvr,dump
	ZOO
	grep -q localhost /etc/hosts 2>/dev/null || echo "127.0.0.1 localhost $(hostname)" >/etc/hosts
	cp=
	for j in /opt/zookeeper/*.jar; do cp=$cp${cp:+:}$j; done
	/opt/jre/bin/java -Xmx64m -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto \
		-Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$cp" \
		org.apache.zookeeper.server.ZooKeeperServerMain /tmp/zoo.cfg >>/tmp/zk.log 2>&1 &
	store_pid=$!
	t=$(ms)
	while [ $(($(ms) - t)) -lt 300000 ]; do
		if zk4 srvr | grep -q '^Mode: standalone'; then
			echo "ZooKeeper $(zk4 srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') on 127.0.0.1:2181 (standalone)"
			return 0
		fi
		kill -0 "$store_pid" 2>/dev/null || break
		sleep 0.5
	done
	tail -n 20 /tmp/zk.log
	return 1
}
zookeeper_init_check() {
	c=$(sed -n 's/.*\(created=[0-9]*\).*/\1/p' /tmp/init.log)
	echo "the pool's marks in ZooKeeper ($c)"
	[ -n "$c" ] && [ "$c" != created=0 ]
}
# The live session holding the pair's ephemeral node (four-letter "dump").
zookeeper_holder() {
	zk4 dump | awk -v k=":worker:$1:$2" '
		/^0x[0-9a-f]+:$/ { s = $1; sub(/:$/, "", s) }
		$1 ~ /^\// && substr($1, length($1) - length(k) + 1) == k { print s }'
}
zookeeper_self() { sed -n 's/.*event=zookeeper_session session=\(0x[0-9a-f]*\).*/\1/p' /tmp/agent.log | tail -n1; }
zookeeper_held() { zk4 dump | grep -c ':worker:[0-9]*:[0-9]*$'; }
zookeeper_extra() {
	if grep -q "event=zookeeper_session .*timeout_ms=$TTL" /tmp/agent.log; then
		ok "the session's negotiated timeout is the TTL ($TTL ms)"
	else
		bad "no session with a $TTL ms timeout in the agent's log"
	fi
}

# ---- MySQL/MariaDB: Debian's mariadbd, its data directory (the system
# tables and the agent's user) made on the host; the agent's password in
# /etc/agent.conf.  Four pairs, so that the rows can be counted.
mysql_setup() {
	STORE=mariadbd
	TTL=3000
	AG="snowflake-agent --config /etc/agent.conf --backend mysql --mysql-timeout-ms 400 --datacenter-ids 1 --worker-ids 0-3"
	NOISE='event=renewed\|mysql still down'
	STORE_LOG=/tmp/mariadbd.err
}
sql() { mariadb --no-defaults -S /run/mysqld.sock -uroot -N -B -e "$*"; }
mysql_start() {
	mariadbd --no-defaults --datadir=/var/lib/mysql --user=root --bind-address=127.0.0.1 \
		--port=3306 --socket=/run/mysqld.sock --pid-file=/run/mysqld.pid --skip-name-resolve \
		--innodb-buffer-pool-size=16M --innodb-log-file-size=4M --lc-messages-dir=/usr/share/mysql \
		--log-error=/tmp/mariadbd.err >/dev/null 2>&1 &
	store_pid=$!
	i=0
	while [ $i -lt 1200 ] && ! sql 'SELECT 1' >/dev/null 2>&1; do
		kill -0 "$store_pid" 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	if sql 'SELECT 1' >/dev/null 2>&1; then
		echo "mariadbd $(sql 'SELECT VERSION()') on 127.0.0.1:3306"
		return 0
	fi
	tail -n 20 /tmp/mariadbd.err
	return 1
}
mysql_init_check() {
	n=$(sql 'SELECT COUNT(*) FROM snowflake.snowflake_lease')
	echo "the table and $n rows"
	[ "$n" = 4 ]
}
mysql_holder() {
	sql "SELECT owner FROM snowflake.snowflake_lease WHERE datacenter = $1 AND worker = $2 AND expiry > UTC_TIMESTAMP(6)"
}
mysql_self() { redis_self; }
mysql_held() { sql "SELECT COUNT(*) FROM snowflake.snowflake_lease WHERE expiry > UTC_TIMESTAMP(6)"; }
mysql_extra() { :; }

# store OP ARGS...: BACKEND_OP ARGS...
store() {
	op=$1
	shift
	"${BACKEND}_$op" "$@"
}
