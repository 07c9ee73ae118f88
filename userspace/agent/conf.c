// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): configuration.  Every option has the same name in the
 * file (key = value, '#' comments) and on the command line (--key value or
 * --key=value); the command line wins.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "validate.h"

/* The longest --owner label (the owner is LABEL:32 hex digits, at most AG_OWNER_MAX). */
#define AG_LABEL_MAX	200

const char ag_usage[] =
"Usage: snowflake-agent [OPTIONS]\n"
"\n"
"Claim a unique (datacenter, worker) id pair for this host from etcd, Redis,\n"
"ZooKeeper or MySQL/MariaDB, set it on /dev/snowflake and keep it; fence the\n"
"device when the lease could expire.\n"
"\n"
"  --config FILE             the configuration file, which the command line\n"
"                            overrides (default " AG_DEFAULT_CONFIG ", when\n"
"                            it exists)\n"
"  --backend etcd|redis|zookeeper|mysql\n"
"                            the lease store (default redis)\n"
"  --etcd-endpoints URLS     etcd's endpoints, comma-separated, tried in turn\n"
"                            (default http://127.0.0.1:2379)\n"
"  --etcd-user USER          the etcd user to authenticate as (default: none)\n"
"  --etcd-password PASS      the etcd user's password\n"
"  --etcd-cacert FILE        CA certificates for https endpoints\n"
"  --etcd-cert FILE          the client certificate for https endpoints\n"
"  --etcd-key FILE           the client certificate's key\n"
"  --etcd-timeout-ms MS      the timeout of every request, name lookup and\n"
"                            connection included (default 500)\n"
"  --zookeeper-hosts HOSTS   the ZooKeeper servers, host:port,... with an\n"
"                            optional /chroot at the end (default\n"
"                            127.0.0.1:2181)\n"
"  --zookeeper-root PATH     the znode the pairs' keys and marks live under,\n"
"                            created with its parents if absent (default\n"
"                            /snowflake)\n"
"  --zookeeper-user USER     the user of ZooKeeper's digest authentication\n"
"                            (default: none)\n"
"  --zookeeper-password PASS the digest user's password\n"
"  --zookeeper-timeout-ms MS the timeout of connecting and of every request\n"
"                            (default 500)\n"
"  --redis-host HOST         the Redis server's address, numeric or a name\n"
"                            (default 127.0.0.1)\n"
"  --redis-port PORT         the Redis server's port (default 6379)\n"
"  --redis-password PASS     send AUTH with this password (default: none)\n"
"  --redis-db N              the database number to SELECT (default 0)\n"
"  --redis-timeout-ms MS     the timeout of the name lookup, the connection and\n"
"                            every command (default 500)\n"
"  --mysql-host HOST         the MySQL or MariaDB server's address, numeric or\n"
"                            a name (default 127.0.0.1)\n"
"  --mysql-port PORT         the MySQL or MariaDB server's port (default 3306)\n"
"  --mysql-user USER         the MySQL user (default snowflake)\n"
"  --mysql-password PASS     the MySQL user's password (default: none)\n"
"  --mysql-database DB       the database of the lease table (default\n"
"                            snowflake)\n"
"  --mysql-table TABLE       the lease table (default snowflake_lease)\n"
"  --mysql-timeout-ms MS     the timeout of the name lookup, the connection and\n"
"                            every statement (default 500)\n"
"  --prefix P                the prefix of the keys' names: hosts sharing IDs\n"
"                            share it (default snowflake)\n"
"  --cluster NAME            the cluster's name in the keys' names: hosts\n"
"                            sharing IDs share it (default default)\n"
"  --datacenter-ids LO[-HI]  datacenter ids to claim from (default: all the\n"
"                            layout allows)\n"
"  --worker-ids LO[-HI]      worker ids to claim from (default: all)\n"
"  --ttl-ms MS               lease length (default 10000)\n"
"  --renew-ms MS             renewal period (default ttl/3)\n"
"  --margin-ms MS            fence the device this long before the lease could\n"
"                            expire (default ttl/5)\n"
"  --settle-ms MS            serve a newly claimed pair only after holding it\n"
"                            this long (default: ttl; 0: at once)\n"
"  --redis-allow-non-durable[=yes|no]\n"
"                            use a Redis that can bring a mark back lower (not\n"
"                            appendonly yes with appendfsync always, or\n"
"                            replicated): marks from before its last restart\n"
"                            read as missing (default no: refused, exit 5)\n"
"  --mysql-allow-non-durable[=yes|no]\n"
"                            use a MySQL or MariaDB server that can lose\n"
"                            acknowledged commits\n"
"                            (innodb_flush_log_at_trx_commit 0 or 2, or an\n"
"                            asynchronous replica connected) (default no:\n"
"                            refused, exit 5)\n"
"  --redis-min-uptime-ms MS  claim only from a Redis that has been up this long\n"
"                            (default: ttl; 0: off, for a Redis that persists\n"
"                            every write)\n"
"  --device PATH             the device (default $SNOWFLAKE_DEVICE, else\n"
"                            /dev/snowflake)\n"
"  --prefer state-file|ip|hostname|machine-id\n"
"                            the pair to try first: the last one held\n"
"                            (state-file) or one derived from the host (ip,\n"
"                            hostname, machine-id); a hint only (default\n"
"                            state-file)\n"
"  --state-file PATH         the file that keeps the last pair held, to claim\n"
"                            it again (default " AG_DEFAULT_STATE ";\n"
"                            empty: none)\n"
"  --owner LABEL             a label for the lease value; a random id is added\n"
"                            at every start (default: the host name)\n"
"  --history FILE            append one line per validity interval given to the\n"
"                            device (default: none; times in CLOCK_BOOTTIME ns)\n"
"  --metrics-file PATH       keep the agent's Prometheus metrics in this file,\n"
"                            for node_exporter's textfile collector (default:\n"
"                            none)\n"
"  --dry-run                 no device: a simulated one, the fences only\n"
"                            logged; the leases and marks in the store are real\n"
"  --dry-run-bits D/W        the datacenter and worker widths to assume in\n"
"                            dry-run (default 5/5)\n"
"  --dry-run-clock-offset-ms N\n"
"                            for tests: the dry-run device's wall clock runs\n"
"                            this many ms away from this host's (negative:\n"
"                            behind) (default 0)\n"
"  --mark-step-ms MS         publish the pair's timestamp mark this far ahead\n"
"                            of the device's next timestamp (default: ttl)\n"
"  --mark-quarantine-ms MS   claim a pair whose mark is missing or invalid\n"
"                            after this long, its mark started at this host's\n"
"                            clock (default: never; see --init-store)\n"
"  --init-store              create the mark of every pair of the pool where it\n"
"                            is missing, and exit (once per new key space)\n"
"  --init-mark-ms MS         the value of the marks --init-store creates\n"
"                            (default 0: a new cluster; after a loss of the\n"
"                            store's data: a time above every ID ever issued,\n"
"                            in Unix ms)\n"
"  --log-level LEVEL         the log level: err, warn, info or debug (default\n"
"                            info)\n"
"  --print-config            print the configuration and exit\n"
"  -h, --help                print the options and exit\n"
"  --version                 print the version and exit\n"
"\n"
"Exit status: 0 stopped by SIGTERM, SIGINT, SIGHUP or SIGQUIT (device fenced,\n"
"lease released); 1 the device failed; 2 bad command line or configuration;\n"
"4 the store refused the password (MySQL: or a privilege); 5 the store may\n"
"lose leases or marks (Redis without appendonly yes + appendfsync always,\n"
"without maxmemory-policy noeviction, with replicas, or a Redis Cluster;\n"
"MySQL with innodb_flush_log_at_trx_commit other than 1 or replicas);\n"
"6 the device is not in strict mode.  See snowflake-agent(8).\n";

enum {
	O_CONFIG = 256, O_HOST, O_PORT, O_PASSWORD, O_DB, O_TIMEOUT, O_PREFIX,
	O_CLUSTER, O_DCS, O_WORKERS, O_TTL, O_RENEW, O_MARGIN, O_DEVICE,
	O_STATE, O_OWNER, O_DRY, O_DRYBITS, O_LEVEL, O_UPTIME, O_BACKEND,
	O_ETCD_EP, O_ETCD_USER, O_ETCD_PW, O_ETCD_CA, O_ETCD_CERT, O_ETCD_KEY,
	O_ETCD_TIMEOUT, O_HISTORY, O_SETTLE, O_PRINT, O_VERSION, O_METRICS,
	O_CLOCK_OFFSET, O_MARK_STEP, O_QUARANTINE, O_INIT_MARK, O_INIT_STORE,
	O_MYSQL_HOST, O_MYSQL_PORT, O_MYSQL_USER, O_MYSQL_PW, O_MYSQL_DB, O_MYSQL_TABLE,
	O_MYSQL_TIMEOUT,
	O_ZK_HOSTS, O_ZK_ROOT, O_ZK_USER, O_ZK_PW, O_ZK_TIMEOUT,
	O_PREFER, O_NON_DURABLE, O_MYSQL_NON_DURABLE,
};

static const struct option opts[] = {
	{ "config", required_argument, NULL, O_CONFIG },
	{ "backend", required_argument, NULL, O_BACKEND },
	{ "etcd-endpoints", required_argument, NULL, O_ETCD_EP },
	{ "etcd-user", required_argument, NULL, O_ETCD_USER },
	{ "etcd-password", required_argument, NULL, O_ETCD_PW },
	{ "etcd-cacert", required_argument, NULL, O_ETCD_CA },
	{ "etcd-cert", required_argument, NULL, O_ETCD_CERT },
	{ "etcd-key", required_argument, NULL, O_ETCD_KEY },
	{ "etcd-timeout-ms", required_argument, NULL, O_ETCD_TIMEOUT },
	{ "mysql-host", required_argument, NULL, O_MYSQL_HOST },
	{ "mysql-port", required_argument, NULL, O_MYSQL_PORT },
	{ "mysql-user", required_argument, NULL, O_MYSQL_USER },
	{ "mysql-password", required_argument, NULL, O_MYSQL_PW },
	{ "mysql-database", required_argument, NULL, O_MYSQL_DB },
	{ "mysql-table", required_argument, NULL, O_MYSQL_TABLE },
	{ "mysql-timeout-ms", required_argument, NULL, O_MYSQL_TIMEOUT },
	{ "zookeeper-hosts", required_argument, NULL, O_ZK_HOSTS },
	{ "zookeeper-root", required_argument, NULL, O_ZK_ROOT },
	{ "zookeeper-user", required_argument, NULL, O_ZK_USER },
	{ "zookeeper-password", required_argument, NULL, O_ZK_PW },
	{ "zookeeper-timeout-ms", required_argument, NULL, O_ZK_TIMEOUT },
	{ "history", required_argument, NULL, O_HISTORY },
	{ "settle-ms", required_argument, NULL, O_SETTLE },
	{ "redis-host", required_argument, NULL, O_HOST },
	{ "redis-port", required_argument, NULL, O_PORT },
	{ "redis-password", required_argument, NULL, O_PASSWORD },
	{ "redis-db", required_argument, NULL, O_DB },
	{ "redis-timeout-ms", required_argument, NULL, O_TIMEOUT },
	{ "prefix", required_argument, NULL, O_PREFIX },
	{ "cluster", required_argument, NULL, O_CLUSTER },
	{ "datacenter-ids", required_argument, NULL, O_DCS },
	{ "worker-ids", required_argument, NULL, O_WORKERS },
	{ "ttl-ms", required_argument, NULL, O_TTL },
	{ "renew-ms", required_argument, NULL, O_RENEW },
	{ "margin-ms", required_argument, NULL, O_MARGIN },
	{ "redis-min-uptime-ms", required_argument, NULL, O_UPTIME },
	{ "redis-allow-non-durable", optional_argument, NULL, O_NON_DURABLE },
	{ "mysql-allow-non-durable", optional_argument, NULL, O_MYSQL_NON_DURABLE },
	{ "device", required_argument, NULL, O_DEVICE },
	{ "state-file", required_argument, NULL, O_STATE },
	{ "prefer", required_argument, NULL, O_PREFER },
	{ "metrics-file", required_argument, NULL, O_METRICS },
	{ "owner", required_argument, NULL, O_OWNER },
	{ "dry-run", optional_argument, NULL, O_DRY },
	{ "dry-run-bits", required_argument, NULL, O_DRYBITS },
	{ "dry-run-clock-offset-ms", required_argument, NULL, O_CLOCK_OFFSET },
	{ "mark-step-ms", required_argument, NULL, O_MARK_STEP },
	{ "mark-quarantine-ms", required_argument, NULL, O_QUARANTINE },
	{ "init-mark-ms", required_argument, NULL, O_INIT_MARK },
	{ "init-store", no_argument, NULL, O_INIT_STORE },
	{ "log-level", required_argument, NULL, O_LEVEL },
	{ "print-config", no_argument, NULL, O_PRINT },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, O_VERSION },
	{ NULL, 0, NULL, 0 },
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return AG_EXIT_USAGE;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoul(s, &end, 10);
	if (errno || *end || *v > max)
		return -ERANGE;
	return 0;
}

static int parse_range(const char *s, struct ag_range *r)
{
	unsigned long lo, hi;
	char buf[64], *dash;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	dash = strchr(buf, '-');
	if (dash)
		*dash = '\0';
	if (parse_uint(buf, UINT32_MAX, &lo))
		return -EINVAL;
	hi = lo;
	if (dash && parse_uint(dash + 1, UINT32_MAX, &hi))
		return -EINVAL;
	if (hi < lo)
		return -EINVAL;
	r->set = true;
	r->lo = (uint32_t)lo;
	r->hi = (uint32_t)hi;
	return 0;
}

static int parse_bool(const char *s, bool *b)
{
	if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "true")) {
		*b = true;
		return 0;
	}
	if (!strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "false")) {
		*b = false;
		return 0;
	}
	return -EINVAL;
}

/* An option with an optional boolean: given alone, true. */
static int parse_flag(const char *s, bool *b)
{
	if (!s) {
		*b = true;
		return 0;
	}
	return parse_bool(s, b);
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
	if (!*dst) {
		perror("snowflake-agent");
		exit(AG_EXIT_RUNTIME);
	}
}

const char *ag_prefer_name(int prefer)
{
	static const char * const names[] = { "state-file", "ip", "hostname", "machine-id" };

	return prefer >= 0 && prefer <= AG_PREFER_MACHINE_ID ? names[prefer] : "?";
}

const char *ag_level_name(enum ag_level l)
{
	static const char * const names[] = { "err", "warn", "info", "debug" };

	return names[l];
}

/* One setting, from the file (@where "FILE:LINE") or the command line. */
static int apply(struct ag_conf *c, int key, const char *name, const char *v,
		 const char *where, char *err, size_t errlen)
{
	unsigned long n;
	unsigned int d, w;
	char extra;

	switch (key) {
	case O_BACKEND:
		if (!strcmp(v, "redis"))
			c->backend = AG_REDIS;
		else if (!strcmp(v, "etcd"))
			c->backend = AG_ETCD;
		else if (!strcmp(v, "mysql"))
			c->backend = AG_MYSQL;
		else if (!strcmp(v, "zookeeper"))
			c->backend = AG_ZOOKEEPER;
		else
			goto bad;
		return 0;
	case O_ZK_HOSTS:
		if (!*v || strpbrk(v, " \t\r\n"))
			goto bad;
		set_str(&c->zk_hosts, v);
		return 0;
	case O_ZK_ROOT:
		/* An absolute path, no empty component, no trailing slash. */
		if (v[0] != '/' || strstr(v, "//") || (v[1] && v[strlen(v) - 1] == '/') ||
		    strpbrk(v, " \t\r\n"))
			goto bad;
		set_str(&c->zk_root, v);
		return 0;
	case O_ZK_USER:
	case O_ZK_PW: {
		char **dst = key == O_ZK_USER ? &c->zk_user : &c->zk_password;

		free(*dst);
		*dst = NULL;
		if (key == O_ZK_USER && strchr(v, ':'))
			goto bad;	/* digest's "user:password" */
		if (*v)
			set_str(dst, v);
		return 0;
	}
	case O_ZK_TIMEOUT:
		if (parse_uint(v, 600000, &n) || n < 10)
			goto bad;
		c->zk_timeout_ms = (unsigned int)n;
		return 0;
	case O_ETCD_EP:
		if (!*v || strpbrk(v, " \t\r\n"))
			goto bad;
		set_str(&c->etcd_endpoints, v);
		return 0;
	case O_ETCD_USER:
	case O_ETCD_PW:
	case O_ETCD_CA:
	case O_ETCD_CERT:
	case O_ETCD_KEY: {
		char **dst = key == O_ETCD_USER ? &c->etcd_user : key == O_ETCD_PW ? &c->etcd_password :
			     key == O_ETCD_CA ? &c->etcd_cacert : key == O_ETCD_CERT ? &c->etcd_cert :
			     &c->etcd_key;

		free(*dst);
		*dst = NULL;
		if (*v)
			set_str(dst, v);
		return 0;
	}
	case O_ETCD_TIMEOUT:
		if (parse_uint(v, 600000, &n) || n < 10)
			goto bad;
		c->etcd_timeout_ms = (unsigned int)n;
		return 0;
	case O_MYSQL_HOST:
		if (!*v || strpbrk(v, " \t\r\n"))
			goto bad;
		set_str(&c->mysql_host, v);
		return 0;
	case O_MYSQL_PORT:
		if (parse_uint(v, 65535, &n) || !n)
			goto bad;
		c->mysql_port = (int)n;
		return 0;
	case O_MYSQL_USER:
		if (!*v || strlen(v) > 128)
			goto bad;
		set_str(&c->mysql_user, v);
		return 0;
	case O_MYSQL_PW:
		free(c->mysql_password);
		c->mysql_password = NULL;
		if (*v)
			set_str(&c->mysql_password, v);
		return 0;
	case O_MYSQL_DB:
	case O_MYSQL_TABLE:
		/* Quoted with backticks in statements: a plain identifier only. */
		if (!*v || strlen(v) > 64 || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$") != strlen(v))
			goto bad;
		set_str(key == O_MYSQL_DB ? &c->mysql_database : &c->mysql_table, v);
		return 0;
	case O_MYSQL_TIMEOUT:
		if (parse_uint(v, 600000, &n) || n < 10)
			goto bad;
		c->mysql_timeout_ms = (unsigned int)n;
		return 0;
	case O_SETTLE:
		if (parse_uint(v, 86400000, &n))
			goto bad;
		c->settle_ms = (int)n;
		return 0;
	case O_HISTORY:
		set_str(&c->history, v);
		return 0;
	case O_HOST:
		if (!*v)
			goto bad;
		set_str(&c->redis_host, v);
		return 0;
	case O_PORT:
		if (parse_uint(v, 65535, &n) || !n)
			goto bad;
		c->redis_port = (int)n;
		return 0;
	case O_PASSWORD:
		if (*v)
			set_str(&c->redis_password, v);
		return 0;
	case O_DB:
		if (parse_uint(v, INT_MAX, &n))
			goto bad;
		c->redis_db = (int)n;
		return 0;
	case O_TIMEOUT:
		if (parse_uint(v, 600000, &n) || n < 10)
			goto bad;
		c->redis_timeout_ms = (unsigned int)n;
		return 0;
	case O_PREFIX:
	case O_CLUSTER:
		if (!*v || strpbrk(v, " \t\r\n"))
			goto bad;
		set_str(key == O_PREFIX ? &c->prefix : &c->cluster, v);
		return 0;
	case O_DCS:
		if (parse_range(v, &c->datacenters))
			goto bad;
		return 0;
	case O_WORKERS:
		if (parse_range(v, &c->workers))
			goto bad;
		return 0;
	case O_TTL:
		if (parse_uint(v, 86400000, &n) || n < 100)
			goto bad;
		c->ttl_ms = (unsigned int)n;
		return 0;
	case O_RENEW:
	case O_MARGIN:
		if (parse_uint(v, 86400000, &n) || !n)
			goto bad;
		*(key == O_RENEW ? &c->renew_ms : &c->margin_ms) = (unsigned int)n;
		return 0;
	case O_UPTIME:
		if (parse_uint(v, 86400000, &n))
			goto bad;
		c->min_uptime_ms = (int)n;
		return 0;
	case O_DEVICE:
		if (!*v)
			goto bad;
		set_str(&c->device, v);
		return 0;
	case O_METRICS:
		set_str(&c->metrics_file, v);
		return 0;
	case O_STATE:
		set_str(&c->state_file, v);
		return 0;
	case O_PREFER:
		for (d = AG_PREFER_STATE; d <= AG_PREFER_MACHINE_ID; d++) {
			if (!strcmp(v, ag_prefer_name((int)d))) {
				c->prefer = d;
				return 0;
			}
		}
		goto bad;
	case O_OWNER:
		/* The owner's one definition (validate.h): what every store reads back. */
		if (!ag_owner_ok(v, strlen(v), AG_LABEL_MAX))
			return fail(err, errlen, "%s: bad value for owner: 1 to %d bytes of printable ASCII (the stores keep and compare the owner as ASCII text)",
				    where, AG_LABEL_MAX);
		set_str(&c->owner, v);
		return 0;
	case O_NON_DURABLE:
		if (parse_flag(v, &c->redis_allow_non_durable))
			goto bad;
		return 0;
	case O_MYSQL_NON_DURABLE:
		if (parse_flag(v, &c->mysql_allow_non_durable))
			goto bad;
		return 0;
	case O_DRY:
		if (parse_flag(v, &c->dry_run))
			goto bad;
		return 0;
	case O_DRYBITS:
		if (sscanf(v, "%u/%u%c", &d, &w, &extra) != 2 || d > 31 || w > 31)
			goto bad;
		c->dry_run_bits[0] = d;
		c->dry_run_bits[1] = w;
		return 0;
	case O_CLOCK_OFFSET: {
		char *end;
		long long off;

		errno = 0;
		off = strtoll(v, &end, 10);
		/* A year either way: enough for any test, far from overflow. */
		if (!*v || *end || errno || off < -31536000000LL || off > 31536000000LL)
			goto bad;
		c->dry_run_clock_offset_ms = off;
		return 0;
	}
	case O_MARK_STEP:
		if (parse_uint(v, 86400000, &n) || (n && n < 100))
			goto bad;
		c->mark_step_ms = (unsigned int)n;
		return 0;
	case O_QUARANTINE:
		if (!strcmp(v, "never")) {
			c->mark_quarantine_ms = -1;
			return 0;
		}
		if (parse_uint(v, 2592000000UL, &n))
			goto bad;
		c->mark_quarantine_ms = (long long)n;
		return 0;
	case O_INIT_MARK:
		if (parse_uint(v, ULONG_MAX, &n) || n >= (1ULL << 62))
			goto bad;
		c->init_mark_ms = n;
		c->init_mark_given = true;
		return 0;
	case O_INIT_STORE:
		c->init_store = true;
		return 0;
	case O_LEVEL:
		for (d = AG_ERR; d <= AG_DEBUG; d++) {
			if (!strcmp(v, ag_level_name(d))) {
				c->level = d;
				return 0;
			}
		}
		goto bad;
	default:
		return fail(err, errlen, "%s: unknown setting '%s'", where, name);
	}
bad:
	return fail(err, errlen, "%s: bad value '%s' for %s", where, v ? v : "", name);
}

static int key_of(const char *name)
{
	const struct option *o;

	for (o = opts; o->name; o++)
		if (!strcmp(o->name, name) && o->val >= O_HOST && o->val != O_PRINT &&
		    o->val != O_VERSION && o->val != O_INIT_STORE)
			return o->val;
	return -1;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

int ag_read_line(FILE *f, char *buf, size_t size)
{
	size_t n = 0;
	bool long_line = false;
	int ch;

	while ((ch = getc(f)) != EOF) {
		if (ch == '\n')
			break;
		if (n + 1 < size)
			buf[n++] = (char)ch;
		else
			long_line = true;	/* read on to the line's end */
	}
	if (size)
		buf[n] = '\0';
	if (ch == EOF && !n && !long_line)
		return ferror(f) ? -EIO : 0;
	return long_line ? -E2BIG : 1;
}

static int load_file(struct ag_conf *c, const char *path, bool must, char *err,
		     size_t errlen)
{
	char line[AG_CONF_LINE_MAX + 1], where[PATH_MAX + 32];
	unsigned int lineno = 0;
	FILE *f;
	int ret = 0, r;

	f = fopen(path, "re");
	if (!f) {
		if (!must && errno == ENOENT)
			return 0;
		return fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
	}
	c->config = path;
	while ((r = ag_read_line(f, line, sizeof(line))) != 0) {
		char *s = trim(line), *eq, *k, *v;

		lineno++;
		snprintf(where, sizeof(where), "%s:%u", path, lineno);
		if (r == -E2BIG) {
			ret = fail(err, errlen, "%s: line longer than %d bytes", where,
				   AG_CONF_LINE_MAX);
			break;
		}
		if (r < 0) {
			ret = fail(err, errlen, "cannot read %s: %s", path, strerror(-r));
			break;
		}
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			ret = fail(err, errlen, "%s: expected key = value", where);
			break;
		}
		*eq = '\0';
		k = trim(s);
		v = trim(eq + 1);
		ret = apply(c, key_of(k), k, v, where, err, errlen);
		if (ret)
			break;
	}
	fclose(f);
	return ret;
}

int ag_conf_load(struct ag_conf *c, int argc, char **argv, char *err, size_t errlen)
{
	const char *config = AG_DEFAULT_CONFIG;
	char name[64];
	int o, ret;

	memset(c, 0, sizeof(*c));
	set_str(&c->etcd_endpoints, "http://127.0.0.1:2379");
	c->etcd_timeout_ms = 500;
	set_str(&c->mysql_host, "127.0.0.1");
	c->mysql_port = 3306;
	set_str(&c->mysql_user, "snowflake");
	set_str(&c->mysql_database, "snowflake");
	set_str(&c->mysql_table, "snowflake_lease");
	c->mysql_timeout_ms = 500;
	set_str(&c->zk_hosts, "127.0.0.1:2181");
	set_str(&c->zk_root, "/snowflake");
	c->zk_timeout_ms = 500;
	set_str(&c->history, "");
	set_str(&c->redis_host, "127.0.0.1");
	c->redis_port = 6379;
	c->redis_timeout_ms = 500;
	set_str(&c->prefix, "snowflake");
	set_str(&c->cluster, "default");
	c->ttl_ms = 10000;
	c->min_uptime_ms = -1;
	c->settle_ms = -1;
	c->mark_quarantine_ms = -1;
	set_str(&c->state_file, AG_DEFAULT_STATE);
	c->dry_run_bits[0] = 5;
	c->dry_run_bits[1] = 5;
	c->level = AG_INFO;

	/* First pass: --config and --help only. */
	opterr = 0;
	optind = 1;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (o == O_CONFIG) {
			config = optarg;
			c->config_given = true;
		} else if (o == 'h') {
			c->help = true;
			return 0;
		} else if (o == O_VERSION) {
			c->version = true;
			return 0;
		}
	}
	/*
	 * Under systemd, the unit hands the configuration over as a credential
	 * (LoadCredential=agent.conf:...): the file with the Redis password
	 * stays 0600 root, and only this service reads its copy.
	 */
	if (!c->config_given) {
		static char cred[PATH_MAX];
		const char *dir = secure_getenv("CREDENTIALS_DIRECTORY");

		if (dir && *dir &&
		    snprintf(cred, sizeof(cred), "%s/agent.conf", dir) < (int)sizeof(cred) &&
		    !access(cred, F_OK))
			config = cred;
	}
	ret = load_file(c, config, c->config_given, err, errlen);
	if (ret)
		return ret;

	optind = 1;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (o == O_CONFIG)
			continue;
		if (o == O_PRINT) {
			c->print_config = true;
			continue;
		}
		if (o == '?' || o == ':')
			return fail(err, errlen, "bad option %s (or a missing value)",
				    argv[optind - 1]);
		snprintf(name, sizeof(name), "--%s", opts[0].name);
		for (const struct option *p = opts; p->name; p++)
			if (p->val == o)
				snprintf(name, sizeof(name), "--%s", p->name);
		ret = apply(c, o, name, optarg, "command line", err, errlen);
		if (ret)
			return ret;
		if (o == O_PASSWORD)
			c->argv_secret = "--redis-password";
		else if (o == O_ETCD_PW)
			c->argv_secret = "--etcd-password";
		else if (o == O_MYSQL_PW)
			c->argv_secret = "--mysql-password";
		else if (o == O_ZK_PW)
			c->argv_secret = "--zookeeper-password";
	}
	if (optind < argc)
		return fail(err, errlen, "unexpected argument '%s'", argv[optind]);
	return 0;
}

unsigned int ag_conf_timeout_ms(const struct ag_conf *c)
{
	if (c->backend == AG_MYSQL)
		return c->mysql_timeout_ms;
	if (c->backend == AG_ZOOKEEPER)
		return c->zk_timeout_ms;
	return c->backend == AG_ETCD ? c->etcd_timeout_ms : c->redis_timeout_ms;
}

int ag_conf_finish(struct ag_conf *c, char *err, size_t errlen)
{
	const char *tname = c->backend == AG_ZOOKEEPER ? "zookeeper-timeout-ms" :
			    c->backend == AG_ETCD ? "etcd-timeout-ms" :
			    c->backend == AG_MYSQL ? "mysql-timeout-ms" : "redis-timeout-ms";

	if (!c->renew_ms)
		c->renew_ms = c->ttl_ms / 3;
	if (!c->margin_ms)
		c->margin_ms = c->ttl_ms / 5;
	if (c->min_uptime_ms < 0)
		c->min_uptime_ms = (int)c->ttl_ms;
	if (c->settle_ms < 0)
		c->settle_ms = (int)c->ttl_ms;
	if (!c->mark_step_ms)
		c->mark_step_ms = c->ttl_ms;
	/*
	 * The mark is raised when less than half a step is left; until the
	 * next renewal the device's clock must not reach it.
	 */
	if (c->mark_step_ms / 2 <= c->renew_ms)
		return fail(err, errlen, "mark-step-ms %u must be more than twice renew-ms %u",
			    c->mark_step_ms, c->renew_ms);
	if (c->dry_run_clock_offset_ms && !c->dry_run)
		return fail(err, errlen, "dry-run-clock-offset-ms needs --dry-run");
	if (c->margin_ms >= c->ttl_ms)
		return fail(err, errlen, "margin-ms %u must be below ttl-ms %u",
			    c->margin_ms, c->ttl_ms);
	/* A renewal must be able to start and finish before the fence. */
	if (c->renew_ms + ag_conf_timeout_ms(c) >= c->ttl_ms - c->margin_ms)
		return fail(err, errlen,
			    "renew-ms %u + %s %u must be below ttl-ms %u - margin-ms %u",
			    c->renew_ms, tname, ag_conf_timeout_ms(c), c->ttl_ms, c->margin_ms);
	if (c->etcd_user && !c->etcd_password)
		return fail(err, errlen, "etcd-user needs etcd-password");
	if (!!c->etcd_cert != !!c->etcd_key)
		return fail(err, errlen, "etcd-cert and etcd-key go together");
	if (!!c->zk_user != !!c->zk_password)
		return fail(err, errlen, "zookeeper-user and zookeeper-password go together");
	return 0;
}

static void print_range(FILE *f, const char *name, const struct ag_range *r)
{
	if (!r->set)
		fprintf(f, "%s = all\n", name);
	else if (r->lo == r->hi)
		fprintf(f, "%s = %u\n", name, r->lo);
	else
		fprintf(f, "%s = %u-%u\n", name, r->lo, r->hi);
}

void ag_conf_print(const struct ag_conf *c, FILE *f)
{
	fprintf(f, "# config file: %s\n", c->config ? c->config : "(none)");
	fprintf(f, "backend = %s\n", c->backend == AG_ZOOKEEPER ? "zookeeper" :
				      c->backend == AG_ETCD ? "etcd" :
				      c->backend == AG_MYSQL ? "mysql" : "redis");
	fprintf(f, "etcd-endpoints = %s\n", c->etcd_endpoints);
	fprintf(f, "etcd-user = %s\n", c->etcd_user ? c->etcd_user : "");
	fprintf(f, "etcd-password = %s\n", c->etcd_password ? "(set)" : "");
	fprintf(f, "etcd-cacert = %s\n", c->etcd_cacert ? c->etcd_cacert : "");
	fprintf(f, "etcd-cert = %s\n", c->etcd_cert ? c->etcd_cert : "");
	fprintf(f, "etcd-key = %s\n", c->etcd_key ? c->etcd_key : "");
	fprintf(f, "etcd-timeout-ms = %u\n", c->etcd_timeout_ms);
	fprintf(f, "mysql-host = %s\n", c->mysql_host);
	fprintf(f, "mysql-port = %d\n", c->mysql_port);
	fprintf(f, "mysql-user = %s\n", c->mysql_user);
	fprintf(f, "mysql-password = %s\n", c->mysql_password ? "(set)" : "");
	fprintf(f, "mysql-database = %s\n", c->mysql_database);
	fprintf(f, "mysql-table = %s\n", c->mysql_table);
	fprintf(f, "mysql-timeout-ms = %u\n", c->mysql_timeout_ms);
	fprintf(f, "zookeeper-hosts = %s\n", c->zk_hosts);
	fprintf(f, "zookeeper-root = %s\n", c->zk_root);
	fprintf(f, "zookeeper-user = %s\n", c->zk_user ? c->zk_user : "");
	fprintf(f, "zookeeper-password = %s\n", c->zk_password ? "(set)" : "");
	fprintf(f, "zookeeper-timeout-ms = %u\n", c->zk_timeout_ms);
	fprintf(f, "redis-host = %s\n", c->redis_host);
	fprintf(f, "redis-port = %d\n", c->redis_port);
	fprintf(f, "redis-password = %s\n", c->redis_password ? "(set)" : "");
	fprintf(f, "redis-db = %d\n", c->redis_db);
	fprintf(f, "redis-timeout-ms = %u\n", c->redis_timeout_ms);
	fprintf(f, "prefix = %s\n", c->prefix);
	fprintf(f, "cluster = %s\n", c->cluster);
	print_range(f, "datacenter-ids", &c->datacenters);
	print_range(f, "worker-ids", &c->workers);
	fprintf(f, "ttl-ms = %u\n", c->ttl_ms);
	fprintf(f, "renew-ms = %u\n", c->renew_ms);
	fprintf(f, "margin-ms = %u\n", c->margin_ms);
	fprintf(f, "settle-ms = %d\n", c->settle_ms);
	fprintf(f, "redis-min-uptime-ms = %d\n", c->min_uptime_ms);
	fprintf(f, "device = %s\n", c->device ? c->device : "(default)");
	fprintf(f, "state-file = %s\n", c->state_file);
	fprintf(f, "prefer = %s\n", ag_prefer_name(c->prefer));
	fprintf(f, "metrics-file = %s\n", c->metrics_file ? c->metrics_file : "");
	fprintf(f, "owner = %s\n", c->owner ? c->owner : "(the host name)");
	fprintf(f, "history = %s\n", c->history);
	fprintf(f, "redis-allow-non-durable = %s\n", c->redis_allow_non_durable ? "yes" : "no");
	fprintf(f, "mysql-allow-non-durable = %s\n", c->mysql_allow_non_durable ? "yes" : "no");
	fprintf(f, "dry-run = %d\n", c->dry_run);
	fprintf(f, "dry-run-bits = %u/%u\n", c->dry_run_bits[0], c->dry_run_bits[1]);
	fprintf(f, "dry-run-clock-offset-ms = %lld\n", c->dry_run_clock_offset_ms);
	fprintf(f, "mark-step-ms = %u\n", c->mark_step_ms);
	if (c->mark_quarantine_ms < 0)
		fprintf(f, "mark-quarantine-ms = never\n");
	else
		fprintf(f, "mark-quarantine-ms = %lld\n", c->mark_quarantine_ms);
	fprintf(f, "init-mark-ms = %llu\n", (unsigned long long)c->init_mark_ms);
	fprintf(f, "log-level = %s\n", ag_level_name(c->level));
}

void ag_conf_free(struct ag_conf *c)
{
	free(c->etcd_endpoints);
	free(c->etcd_user);
	free(c->etcd_password);
	free(c->etcd_cacert);
	free(c->etcd_cert);
	free(c->etcd_key);
	free(c->mysql_host);
	free(c->mysql_user);
	free(c->mysql_password);
	free(c->mysql_database);
	free(c->mysql_table);
	free(c->zk_hosts);
	free(c->zk_root);
	free(c->zk_user);
	free(c->zk_password);
	free(c->history);
	free(c->redis_host);
	free(c->redis_password);
	free(c->prefix);
	free(c->cluster);
	free(c->device);
	free(c->state_file);
	free(c->metrics_file);
	free(c->owner);
	memset(c, 0, sizeof(*c));
}
