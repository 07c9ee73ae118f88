/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snowflake-agent(8): its configuration, from a key=value file and the
 * command line (which wins).  No Redis and no device here.
 */
#ifndef SNOWFLAKE_AGENT_CONF_H
#define SNOWFLAKE_AGENT_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes (snowflake-agent(8), README). */
#define AG_EXIT_OK		0	/* stopped by a signal: fenced, lease released */
#define AG_EXIT_RUNTIME		1	/* the device failed (open, set ids, fence) */
#define AG_EXIT_USAGE		2	/* bad command line or configuration file */
/* 3 (a full pool) is no longer used: a full pool is retried with backoff. */
#define AG_EXIT_AUTH		4	/* the store refused the password (MySQL: or a privilege) */
#define AG_EXIT_UNSAFE_STORE	5	/* the store may lose leases or marks (see --help) */
#define AG_EXIT_NOT_STRICT	6	/* the device is not in strict mode */

#define AG_DEFAULT_CONFIG	"/etc/snowflake/agent.conf"
#define AG_DEFAULT_STATE	"/var/lib/snowflake/agent.state"

enum ag_level { AG_ERR, AG_WARN, AG_INFO, AG_DEBUG };

/* An inclusive range of ids; "unset" means: all that the layout allows. */
struct ag_range {
	bool set;
	uint32_t lo, hi;
};

struct ag_conf {
	const char *config;		/* the file read (NULL: none) */
	bool config_given;		/* --config: a missing file is an error */
	const char *argv_secret;	/* a password option given on the command line */

	enum { AG_REDIS, AG_ETCD, AG_MYSQL, AG_ZOOKEEPER } backend;
	char *redis_host;
	int redis_port;
	char *redis_password;		/* NULL: no AUTH */
	int redis_db;
	unsigned int redis_timeout_ms;	/* connect and every command */
	bool mysql_allow_non_durable;	/* accept a MySQL that may lose commits (flush, replicas) */
	bool redis_allow_non_durable;	/* accept a Redis that may lose writes (marks after a restart: missing) */

	char *etcd_endpoints;		/* comma-separated URLs */
	char *etcd_user;		/* NULL: no authentication */
	char *etcd_password;
	char *etcd_cacert, *etcd_cert, *etcd_key;	/* TLS; NULL: defaults */
	unsigned int etcd_timeout_ms;	/* every request, connection included */

	char *mysql_host;
	int mysql_port;
	char *mysql_user;
	char *mysql_password;		/* NULL: none */
	char *mysql_database;
	char *mysql_table;
	unsigned int mysql_timeout_ms;	/* name lookup, connection and every statement */
	char *zk_hosts;			/* host:port,... [/chroot] (the C client's string) */
	char *zk_root;			/* the znode the pairs' nodes live under */
	char *zk_user;			/* digest authentication; NULL: none */
	char *zk_password;
	unsigned int zk_timeout_ms;	/* connecting, and every request */

	char *prefix;
	char *cluster;
	struct ag_range datacenters;
	struct ag_range workers;

	unsigned int ttl_ms;
	unsigned int renew_ms;		/* 0: ttl / 3 */
	unsigned int margin_ms;		/* 0: ttl / 5 */
	int settle_ms;			/* a new claim is served after this; -1: ttl */
	int min_uptime_ms;		/* claim only from a Redis up this long; -1: ttl */

	char *device;			/* NULL: libsnowflake's default */
	char *state_file;		/* "" : none */
	/* The pair to try first: the state file's, or one derived from the host. */
	enum { AG_PREFER_STATE, AG_PREFER_IP, AG_PREFER_HOSTNAME, AG_PREFER_MACHINE_ID } prefer;
	char *metrics_file;		/* NULL or "": none */
	char *owner;			/* a label (NULL: the host name); a random id is added */
	char *history;			/* "": none */
	bool dry_run;
	unsigned int dry_run_bits[2];	/* datacenter, worker widths without a device */
	long long dry_run_clock_offset_ms;	/* the dry-run device's clock vs. this host's */
	unsigned int mark_step_ms;	/* publish the mark this far ahead; 0: ttl */
	long long mark_quarantine_ms;	/* claim a pair without a mark after this; -1: never */
	bool init_store;		/* --init-store: create the pool's marks and exit */
	uint64_t init_mark_ms;		/* the marks --init-store creates */
	bool init_mark_given;		/* --init-mark-ms given: invalid marks may be replaced */
	enum ag_level level;
	bool print_config;
	bool help;
	bool version;			/* --version */
};

/*
 * Defaults, then the configuration file (--config, else AG_DEFAULT_CONFIG
 * when it exists), then the command line.  Returns 0, or AG_EXIT_USAGE with
 * a message in @err.
 */
int ag_conf_load(struct ag_conf *c, int argc, char **argv, char *err, size_t errlen);
/* Fill the derived defaults (renew, margin) and check the timings. */
int ag_conf_finish(struct ag_conf *c, char *err, size_t errlen);
/* The store's timeout for one call (redis-, etcd- or mysql-timeout-ms). */
unsigned int ag_conf_timeout_ms(const struct ag_conf *c);
void ag_conf_print(const struct ag_conf *c, FILE *f);
void ag_conf_free(struct ag_conf *c);
const char *ag_level_name(enum ag_level l);
const char *ag_prefer_name(int prefer);

extern const char ag_usage[];

/* The longest line of a configuration file, without its newline. */
#define AG_CONF_LINE_MAX	1023

/*
 * One line of @f into @buf (@size bytes, NUL-terminated, without the
 * newline).  1 a line; 0 the end of the file; -E2BIG a line longer than
 * @size - 1 (read to its end, @buf holding its start); -EIO a read error.
 */
int ag_read_line(FILE *f, char *buf, size_t size);

#endif /* SNOWFLAKE_AGENT_CONF_H */
