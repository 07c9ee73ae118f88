// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): leases in one MySQL/MariaDB table, with MariaDB
 * Connector/C (libmariadb; tested against MariaDB 10.11, see
 * docs/deployment-mysql.md).
 *
 * One InnoDB table (docs/snowflake-mysql.sql; --init-store creates it),
 * one row per pair of a key space (prefix, cluster):
 *
 *   owner   the run that holds or last held the pair ('' never, or cleared)
 *   expiry  when the lease ends, on the DATABASE SERVER's clock (UTC)
 *   mark    the pair's timestamp mark (G4): BIGINT UNSIGNED, only raised
 *
 * The row is created once, with its mark, by --init-store (or by a
 * quarantine that has passed), and never deleted by the agent: a pair
 * without a row is a pair without a mark, never claimed (TRY_NO_MARK).
 *
 * The lease clock is the server's, never this host's wall clock: every
 * time in a statement is UTC_TIMESTAMP(6), which is NOW(6) in UTC (a
 * session time zone with daylight saving would move NOW() by an hour
 * twice a year and, going forward, expire every lease at once).  Each step
 * is one transaction, sent as one batch (one round trip):
 *
 *   claim:   START TRANSACTION;
 *            UPDATE t SET owner = O, expiry = UTC_TIMESTAMP(6) + TTL
 *                WHERE <pair> AND expiry < UTC_TIMESTAMP(6) AND mark <= MAX;
 *            SELECT owner, mark FROM t WHERE <pair> FOR UPDATE;
 *            COMMIT
 *   renew:   START TRANSACTION;
 *            UPDATE t SET expiry = UTC_TIMESTAMP(6) + TTL,
 *                         mark = IF(mark <= MAX, GREATEST(mark, RAISE), RAISE)
 *                WHERE <pair> AND owner = O;
 *            SELECT owner, mark FROM t WHERE <pair> FOR UPDATE;
 *            COMMIT
 *   release: UPDATE t SET expiry = '1970-01-01' WHERE <pair> AND owner = O
 *
 * The UPDATE's affected rows decide: 1 taken (renewed), 0 held by another
 * (lost).  The connection sets CLIENT_FOUND_ROWS, so "affected" counts
 * the rows the WHERE matched, not only those whose values changed: a
 * renewal that happened to write the values the row had (two renewals in
 * one microsecond, a server clock stepped back) is still a renewal, not a
 * loss.  The SELECT says why (no row: no mark; another owner) and reads
 * the mark under the UPDATE's row lock; a step counts only once its
 * COMMIT has succeeded.
 *
 * Why this is correct (G1, G3, G4), and at which isolation level: in
 * InnoDB an UPDATE reads the row it changes with a locking read of the
 * latest committed version ("current read"), at every isolation level,
 * and holds the row's exclusive lock until the transaction ends; a
 * concurrent UPDATE of the row waits for that lock and then evaluates its
 * WHERE against the version the first one committed.  So two claims of one
 * free pair serialise on the row lock and the second finds expiry in the
 * future (G1); a renewal matches only while the row holds this run's
 * owner, which is new at every start, so a row claimed by another, or
 * cleared by an operator, fails it (G3), and the mark is raised in the
 * same statement, with GREATEST, never lowered (G4).  The SELECT ... FOR
 * UPDATE is a locking read too, under the lock the UPDATE took: the mark
 * it returns is the mark at the claim.  The session runs at READ
 * COMMITTED: every plain read sees the latest committed data (no snapshot
 * from earlier in a transaction, as REPEATABLE READ would keep), and no
 * gap locks are taken (REPEATABLE READ locks the gap where a row is
 * missing, which would block --init-store's INSERT of it for no gain).
 * READ COMMITTED's "semi-consistent read" only skips a locked row whose
 * last committed version does not match the WHERE; one that matches is
 * waited for and evaluated again, so it never takes a pair that a
 * concurrent renewal is extending.  The table must be InnoDB (checked at
 * every connection): MyISAM and MEMORY have no transactions, no row locks
 * and no crash safety.
 *
 * G2: the agent reads CLOCK_BOOTTIME before it sends the batch; the server
 * takes UTC_TIMESTAMP(6) when it runs the statement, later, and the lease
 * ends TTL after that on its clock: valid from *before* the send for
 * ttl - margin, the margin covering the two clocks' rate difference (and
 * a server clock stepped forward by less than it: see the guide).
 *
 * G5: InnoDB keeps what it committed across a crash with
 * innodb_flush_log_at_trx_commit = 1, and a failover loses nothing
 * without an asynchronous replica: checked at every connection and while
 * holding; refused when not (exit 5), unless mysql-allow-non-durable
 * (then said once, by the engine: mysql_durable()).
 *
 * What the table holds is input: a mark above MAX (the layout's last ms)
 * is invalid, never claimed (the UPDATE does not match it), replaced only
 * by a holder's raise, a passed quarantine or --init-store --init-mark-ms
 * (store_parse.c parses every row strictly).  A claim whose reply is lost
 * (it may have committed) is TRY_UNKNOWN: the engine gives it back before
 * its next step (give_back(), agent.c resolve_unknown()).
 *
 * Every call ends by its deadline: the non-blocking API of Connector/C,
 * each wait the engine's ag_wait() bounded by the fence time (or
 * mysql-timeout-ms) and ended by a stop signal, the host name resolved by
 * resolve_bounded(); a call that times out drops the connection (closing
 * it rolls back an open transaction).
 *
 * Nothing is sent twice: MYSQL_OPT_RECONNECT stays off (Connector/C's
 * default), so the library never runs a statement again on a new
 * connection; a batch without a reply drops the connection and answers
 * -1 or TRY_UNKNOWN, and the engine decides what comes next (agent.c).
 * No orphan is kept here: a claim that may have committed is the engine's
 * to give back (give_back()).
 */
#define _GNU_SOURCE
#include "agent.h"

#ifdef AG_NO_MYSQL
/* A build without libmariadb. */
static int m_init(struct agent *a)
{
	(void)a;
	logm(AG_ERR, "backend mysql: this snowflake-agent was built without it (libmariadb-dev)");
	return AG_EXIT_USAGE;
}

const struct store_ops ag_mysql_ops = { .name = "mysql", .init = m_init };
const struct rec_ops ag_mysql_rec_ops = { .name = "mysql", .init = m_init };
#else
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <mariadb/errmsg.h>
#include <mariadb/mysql.h>
#include <mariadb/mysqld_error.h>

#include "store_parse.h"

/*
 * The largest packet read from the server (MYSQL_OPT_MAX_ALLOWED_PACKET):
 * a row of ours is under 400 bytes; a longer packet fails the call.
 */
#define REPLY_MAX	(1 << 20)

/* The longest prefix and cluster: the table's VARBINARY(64) columns. */
#define NAME_MAX_LEN	64
/* Statements of one batch whose results are kept. */
#define MAX_STMTS	4
/* Columns of a result's first row that are kept (a record's read: ver, rec, ...). */
#define MAX_COLS	6

/* The table's definition: docs/snowflake-mysql.sql says the same (a test compares them). */
static const char create_table_fmt[] =
	"CREATE TABLE IF NOT EXISTS `%s` ("
	"prefix VARBINARY(64) NOT NULL, "
	"cluster VARBINARY(64) NOT NULL, "
	"datacenter INT UNSIGNED NOT NULL, "
	"worker INT UNSIGNED NOT NULL, "
	"owner VARBINARY(255) NOT NULL DEFAULT '', "
	"expiry DATETIME(6) NOT NULL DEFAULT '1970-01-01 00:00:00', "
	"mark BIGINT UNSIGNED NOT NULL, "
	"PRIMARY KEY (prefix, cluster, datacenter, worker)"
	") ENGINE=InnoDB";

/*
 * The connection and what was found on it; what was logged is the
 * engine's (ag_condition(): the link, the schema, a server allowed to be
 * non-durable), never a flag here.
 */
struct mstore {
	MYSQL *m;
	bool no_schema;			/* the database or the table was missing at the last look */
	bool schema_ok;			/* the table was checked on this connection */
	char pfx[2 * NAME_MAX_LEN + 1];	/* prefix and cluster, escaped */
	char cl[2 * NAME_MAX_LEN + 1];
	char own[2 * 320 + 1];		/* the owner, escaped */
	bool rec_ok;			/* the record's columns were checked on this connection */
};

/* What a batch gave. */
struct reply {
	int err;			/* 0, a server error, or -1: timed out, connection lost */
	char msg[256];
	int n;				/* statements run */
	long long affected[MAX_STMTS];	/* -1: a result set */
	bool row;			/* the result set had a row: */
	char col[MAX_COLS][AG_REC_MAX + 1];	/* its first columns ("" for NULL) */
	size_t col_len[MAX_COLS];	/* their lengths as sent (> sizeof(col[i]) - 1: cut) */
	bool col_null[MAX_COLS];
};

static struct mstore *M(const struct agent *a)
{
	return a->store;
}

/*
 * The end of a call: @deadline (0: none) or mysql-timeout-ms from now, the
 * earlier.  --init-store is an operator's command that holds no lease and
 * runs DDL (CREATE DATABASE, CREATE TABLE: file creation and syncs, slow on
 * a busy server): each of its calls gets at least INIT_TIMEOUT_MS.
 */
#define INIT_TIMEOUT_MS	10000
static int64_t end_of(const struct agent *a, int64_t deadline)
{
	int64_t t = a->c->mysql_timeout_ms;

	if (a->c->init_store && t < INIT_TIMEOUT_MS)
		t = INIT_TIMEOUT_MS;
	return boot_ns() + ms_left(deadline, t) * NS_PER_MS;
}

/*
 * Wait for what Connector/C asked (@status: MYSQL_WAIT_*), by @end: one
 * ag_wait(), the engine's (the deadline and the stop signal are asked
 * there).  The library's own timer (MYSQL_WAIT_TIMEOUT: its connect and
 * read timeouts) is a shorter end, told apart here: when it passes first,
 * the library is told so and decides.  The status to continue with, or
 * -1 when @end has passed, a stop signal came or poll(2) failed.
 */
static int nb_wait(MYSQL *m, int status, int64_t end)
{
	struct pollfd p = { .fd = mysql_get_socket(m) };
	int64_t lib = end;
	int r;

	if (status & MYSQL_WAIT_READ)
		p.events |= POLLIN;
	if (status & MYSQL_WAIT_WRITE)
		p.events |= POLLOUT;
	if (status & MYSQL_WAIT_EXCEPT)
		p.events |= POLLPRI;
	if (status & MYSQL_WAIT_TIMEOUT)
		lib = boot_ns() + (int64_t)mysql_get_timeout_value_ms(m) * NS_PER_MS;
	r = ag_wait(&p, 1, lib < end ? lib : end);
	if (r == 0 && lib < end)
		return MYSQL_WAIT_TIMEOUT;
	if (r <= 0)
		return -1;
	r = 0;
	if (p.revents & (POLLIN | POLLHUP | POLLERR))
		r |= MYSQL_WAIT_READ;
	if (p.revents & (POLLOUT | POLLERR))
		r |= MYSQL_WAIT_WRITE;
	if (p.revents & POLLPRI)
		r |= MYSQL_WAIT_EXCEPT;
	return r;
}

/* Run a _start/_cont pair of Connector/C to its end (st 0) or @end (st -1). */
#define NB_LOOP(m, st, end, cont)				\
	do {							\
		while ((st) > 0) {				\
			(st) = nb_wait((m), (st), (end));	\
			if ((st) < 0)				\
				break;				\
			(st) = (cont);				\
		}						\
	} while (0)

/* The connection failed: dropped, said once per reason (AG_COND_STORE_DOWN; its event=mysql_up only after it). */
static void mysql_drop(struct agent *a, const char *why)
{
	struct mstore *s = M(a);

	ag_condition(a, AG_COND_STORE_DOWN, AG_WARN, "event=mysql_down host=%s port=%d error=\"%s\"",
		     a->c->mysql_host, a->c->mysql_port, why);
	if (s->m) {
		/*
		 * Shut the socket down first: mysql_close() then sends its
		 * COM_QUIT into a closed socket instead of waiting on a server
		 * that does not read.  The server rolls back what was open.
		 */
		if (mysql_get_socket(s->m) >= 0)
			shutdown(mysql_get_socket(s->m), SHUT_RDWR);
		mysql_close(s->m);
		s->m = NULL;
	}
	s->schema_ok = false;
	s->rec_ok = false;
}

/* The store can never be used as configured: the agent stops with @code. */
static void mysql_fatal(struct agent *a, int code, const char *event, const char *msg)
{
	struct mstore *s = M(a);

	logm(AG_ERR, "event=%s host=%s port=%d user=%s database=%s table=%s: %s", event,
	     a->c->mysql_host, a->c->mysql_port, a->c->mysql_user, a->c->mysql_database,
	     a->c->mysql_table, msg);
	a->fatal = code;
	if (s->m) {
		mysql_close(s->m);
		s->m = NULL;
	}
}

/* Close the connection without a word (the server rolls back what was open). */
static void close_quietly(struct agent *a)
{
	struct mstore *s = M(a);

	if (s->m) {
		mysql_close(s->m);
		s->m = NULL;
	}
	s->schema_ok = false;
	s->rec_ok = false;
}

static bool auth_error(unsigned int e)
{
	return e == ER_ACCESS_DENIED_ERROR || e == ER_DBACCESS_DENIED_ERROR ||
	       e == ER_TABLEACCESS_DENIED_ERROR || e == ER_COLUMNACCESS_DENIED_ERROR ||
	       e == ER_SPECIFIC_ACCESS_DENIED_ERROR || e == ER_ACCESS_DENIED_NO_PASSWORD_ERROR;
}

/* The schema is missing: said once per reason (AG_COND_STORE_SCHEMA; --init-store creates it). */
static void no_schema(struct agent *a, const char *what)
{
	ag_condition(a, AG_COND_STORE_SCHEMA, a->c->init_store ? AG_DEBUG : AG_WARN,
		     "event=mysql_no_schema database=%s table=%s: %s: no pair has a mark; create the table and its rows with snowflake-agent --init-store (docs/snowflake-mysql.sql, docs/deployment-mysql.md)",
		     a->c->mysql_database, a->c->mysql_table, what);
	M(a)->no_schema = true;
}

/*
 * After a failed call: what the error means.  Credentials or privileges
 * refused: fatal (AG_EXIT_AUTH); a table that is not the agent's: fatal
 * (AG_EXIT_USAGE); the schema missing: logged; anything else: the
 * connection is dropped (a transaction left open is rolled back).
 */
static void on_error(struct agent *a, unsigned int e, const char *msg)
{
	char buf[400];

	if (auth_error(e)) {
		snprintf(buf, sizeof(buf), "%s (mysql-user, mysql-password, and the grants of docs/deployment-mysql.md)", msg);
		mysql_fatal(a, AG_EXIT_AUTH, "mysql_auth_failed", buf);
		return;
	}
	if (e == ER_BAD_FIELD_ERROR) {
		snprintf(buf, sizeof(buf), "%s: mysql-table is not snowflake-agent's table (docs/snowflake-mysql.sql)", msg);
		mysql_fatal(a, AG_EXIT_USAGE, "mysql_bad_schema", buf);
		return;
	}
	if (e == ER_NO_SUCH_TABLE || e == ER_BAD_DB_ERROR) {
		no_schema(a, msg);
		close_quietly(a);
		return;
	}
	if (e == ER_OPTION_PREVENTS_STATEMENT) {
		snprintf(buf, sizeof(buf), "%s (a read-only server: a replica, or a failover under way?)", msg);
		mysql_drop(a, buf);
		return;
	}
	mysql_drop(a, msg);
}

/*
 * Run @sql (one statement or a batch) by @end, collecting each statement's
 * affected rows and the first row of the first result set.  On a server
 * error the batch stops there (r->err, r->msg).  On a timeout or a lost
 * connection r->err is -1 and the connection is dropped.
 */
static void run_sql(struct agent *a, int64_t end, const char *sql, struct reply *r)
{
	struct mstore *s = M(a);
	MYSQL *m = s->m;
	MYSQL_RES *res;
	int st, rc = 0;

	memset(r, 0, sizeof(*r));
	st = mysql_real_query_start(&rc, m, sql, (unsigned long)strlen(sql));
	NB_LOOP(m, st, end, mysql_real_query_cont(&rc, m, st));
	for (;;) {
		if (st < 0) {
			r->err = -1;
			snprintf(r->msg, sizeof(r->msg), "no reply within the time left (mysql-timeout-ms %u, or the fence)",
				 a->c->mysql_timeout_ms);
			mysql_drop(a, r->msg);
			return;
		}
		if (rc) {
			unsigned int e = mysql_errno(m);

			snprintf(r->msg, sizeof(r->msg), "%u: %s", e, mysql_error(m));
			/* A client error (the connection), or none said (out of memory). */
			if (!e || (e >= CR_MIN_ERROR && e <= CR_MAX_ERROR)) {
				r->err = -1;
				mysql_drop(a, r->msg);
			} else {
				r->err = (int)e;
			}
			return;
		}
		res = NULL;
		st = mysql_store_result_start(&res, m);
		NB_LOOP(m, st, end, mysql_store_result_cont(&res, m, st));
		if (st < 0)
			continue;
		if (res && mysql_num_rows(res) > 1) {
			/*
			 * One pair, one row (the primary key; every SELECT of a
			 * pair has LIMIT 2, so what is buffered is bounded):
			 * more is a reply this agent cannot read.
			 */
			mysql_free_result(res);
			r->err = -1;
			snprintf(r->msg, sizeof(r->msg), "more than one row for one pair");
			mysql_drop(a, r->msg);
			return;
		}
		if (res) {
			MYSQL_ROW row = mysql_fetch_row(res);
			unsigned int i, nf = mysql_num_fields(res);

			if (r->n < MAX_STMTS)
				r->affected[r->n] = -1;
			if (row && !r->row) {
				unsigned long *lens = mysql_fetch_lengths(res);

				r->row = true;
				for (i = 0; i < nf && i < MAX_COLS; i++) {
					size_t l = row[i] && lens ? lens[i] : 0;

					r->col_null[i] = !row[i];
					r->col_len[i] = l;
					if (l > sizeof(r->col[i]) - 1)
						l = sizeof(r->col[i]) - 1;
					if (l)
						memcpy(r->col[i], row[i], l);
					r->col[i][l] = '\0';
				}
			}
			mysql_free_result(res);
		} else if (mysql_field_count(m)) {
			rc = 1;		/* a result set that could not be read */
			continue;
		} else if (r->n < MAX_STMTS) {
			r->affected[r->n] = (long long)mysql_affected_rows(m);
		}
		r->n++;
		if (!mysql_more_results(m))
			return;
		st = mysql_next_result_start(&rc, m);
		NB_LOOP(m, st, end, mysql_next_result_cont(&rc, m, st));
		if (st >= 0 && rc < 0)
			return;		/* no more results */
	}
}

/* run_sql() and the error handling: 0, or -1 (the connection may be gone). */
static int exec(struct agent *a, int64_t end, const char *sql, struct reply *r)
{
	if (!M(a)->m) {
		memset(r, 0, sizeof(*r));	/* nothing was sent */
		return -1;
	}
	run_sql(a, end, sql, r);
	if (!r->err)
		return 0;
	if (r->err > 0) {
		logm(AG_DEBUG, "mysql: %s: %.200s", r->msg, sql);
		on_error(a, (unsigned int)r->err, r->msg);
	}
	return -1;
}

/* A statement into @buf: 0, or -1 when it does not fit (never run a cut statement). */
static int __attribute__((format(printf, 3, 4), warn_unused_result)) sqlf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		logm(AG_ERR, "mysql: a statement longer than %zu bytes", len);
		return -1;
	}
	return 0;
}

/*
 * G5: does the server keep what it committed, on itself and across a
 * failover?  innodb_flush_log_at_trx_commit = 1 (0 and 2 lose the last
 * second of commits in a crash), and no asynchronous replica connected
 * (one promoted has lost what it had not received: Slaves_connected
 * while semi-synchronous replication is not ON).  Such a server can
 * bring a pair's mark back lower than it acknowledged: refused (exit 5,
 * event=mysql_unsafe) unless mysql-allow-non-durable.  At every
 * connection and, while holding, every TTL (m_recheck()).
 *
 * Read with what MariaDB and MySQL 8 both have and any user may run:
 * @@innodb_flush_log_at_trx_commit and SHOW GLOBAL STATUS (MariaDB's
 * information_schema.GLOBAL_STATUS is not in MySQL 8, whose
 * performance_schema.global_status MariaDB leaves empty unless
 * performance_schema is on).  Each SHOW names its variables so that it
 * gives one row at most.  MySQL has no Slaves_connected: there the
 * replicas cannot be seen, said once (docs/deployment-mysql.md).
 * 0 durable (or accepted), -1 refused (a->fatal) or failed.
 */
static int mysql_durable(struct agent *a, int64_t end)
{
	struct reply r;
	char msg[700], flush[16], replicas[24];
	bool semisync;

	if (exec(a, end, "SELECT @@innodb_flush_log_at_trx_commit", &r))
		return -1;
	if (!r.row || r.col_null[0]) {
		ag_reply_invalid(a, "innodb_flush_log_at_trx_commit", "", 0);
		return -1;
	}
	snprintf(flush, sizeof(flush), "%.8s", r.col[0]);
	/* Replicas count only while semi-synchronous replication is off (MariaDB, MySQL < 8.0.26: master). */
	if (exec(a, end, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Rpl_semi_sync_master_status', 'Rpl_semi_sync_source_status') AND Value = 'ON'",
		 &r))
		return -1;
	semisync = r.row;
	if (exec(a, end, "SHOW GLOBAL STATUS WHERE Variable_name = 'Slaves_connected'", &r))
		return -1;
	if (!r.row || r.col_null[1])
		snprintf(replicas, sizeof(replicas), "?");
	else
		snprintf(replicas, sizeof(replicas), "%.20s", semisync ? "0" : r.col[1]);
	if (!strcmp(flush, "1") && !strcmp(replicas, "0"))
		return 0;
	if (!strcmp(flush, "1") && !strcmp(replicas, "?")) {
		ag_condition(a, AG_COND_STORE_NOT_DURABLE, AG_WARN,
			     "event=mysql_replicas_unseen host=%s port=%d: this server has no Slaves_connected status (MySQL): an asynchronous replica cannot be seen from here; make sure none is connected, or that replication is semi-synchronous (docs/deployment-mysql.md)",
			     a->c->mysql_host, a->c->mysql_port);
		return 0;
	}
	snprintf(msg, sizeof(msg), "innodb_flush_log_at_trx_commit=%s async_replicas=%s: this server can bring a pair's timestamp mark back lower than it acknowledged (a crash loses the last commits; a failover to an asynchronous replica loses what it had not received), and the next holder would stamp timestamps the last one stamped; set innodb_flush_log_at_trx_commit = 1 on a server without asynchronous replicas, or accept it with mysql-allow-non-durable = yes (docs/deployment-mysql.md)",
		 flush, replicas);
	if (!a->c->mysql_allow_non_durable) {
		mysql_fatal(a, AG_EXIT_UNSAFE_STORE, "mysql_unsafe", msg);
		return -1;
	}
	ag_condition(a, AG_COND_STORE_NOT_DURABLE, AG_WARN,
		     "event=mysql_not_durable host=%s port=%d %s (mysql-allow-non-durable)",
		     a->c->mysql_host, a->c->mysql_port, msg);
	return 0;
}

/*
 * The checks of a connection, once per connection and while the schema
 * is missing: the table exists and is InnoDB, its primary key is the
 * pair, it has the agent's columns; the server keeps what it commits
 * (mysql_durable()).  true when usable.
 */
static bool check_table(struct agent *a, int64_t end)
{
	struct mstore *s = M(a);
	struct reply r;
	char sql[512];

	if (s->schema_ok)
		return true;
	if (sqlf(sql, sizeof(sql),
		 "SELECT ENGINE, 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '%s'",
		 a->c->mysql_table) || exec(a, end, sql, &r))
		return false;
	if (!r.row) {
		no_schema(a, "no such table");
		return false;
	}
	if (strcasecmp(r.col[0], "InnoDB") != 0) {
		char msg[256];

		snprintf(msg, sizeof(msg), "the table's engine is %.40s, not InnoDB: without transactions, row locks and crash recovery a lease or a mark can be lost or doubled; ALTER TABLE ... ENGINE=InnoDB",
			 r.col[0]);
		mysql_fatal(a, AG_EXIT_UNSAFE_STORE, "mysql_unsafe", msg);
		return false;
	}
	if (sqlf(sql, sizeof(sql), "SELECT prefix, cluster, datacenter, worker, owner, expiry, mark FROM `%s` LIMIT 0",
		 a->c->mysql_table) || exec(a, end, sql, &r))
		return false;
	/*
	 * The primary key is the pair: without it a second --init-store adds
	 * a second row per pair, and one UPDATE claims two rows (G1).
	 */
	if (sqlf(sql, sizeof(sql),
		 "SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX SEPARATOR ','), COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '%s' AND INDEX_NAME = 'PRIMARY'",
		 a->c->mysql_table) || exec(a, end, sql, &r))
		return false;
	if (!r.row || r.col_null[0] || strcmp(r.col[0], "prefix,cluster,datacenter,worker") != 0) {
		char msg[300];

		snprintf(msg, sizeof(msg), "the table's primary key is (%.80s), not (prefix, cluster, datacenter, worker): a pair could have two rows, and one claim take both; recreate it as docs/snowflake-mysql.sql says",
			 r.row && !r.col_null[0] ? r.col[0] : "none");
		mysql_fatal(a, AG_EXIT_UNSAFE_STORE, "mysql_unsafe", msg);
		return false;
	}
	if (mysql_durable(a, end))
		return false;
	if (s->no_schema)
		ag_condition(a, AG_COND_STORE_SCHEMA, AG_INFO, "event=mysql_schema_found database=%s table=%s",
			     a->c->mysql_database, a->c->mysql_table);
	s->no_schema = false;
	s->schema_ok = true;
	return true;
}

/*
 * Connect by @end (name lookup, the handshake, the session settings),
 * into database mysql-database (@with_db) or none.  true when connected;
 * false with the connection dropped, a->fatal set, or the database
 * missing (s->no_schema).
 */
static bool mysql_connect_db(struct agent *a, int64_t end, bool with_db)
{
	const struct ag_conf *c = a->c;
	struct mstore *s = M(a);
	char addr[256], err[512], msg[600];
	unsigned int e;
	MYSQL *ret = NULL;
	struct reply r;
	int st;

	if (s->m)
		return true;
	if (a->fatal)
		return false;
	if (resolve_bounded(c->mysql_host, ms_left(end, c->mysql_timeout_ms), addr, sizeof(addr),
			    err, sizeof(err))) {
		mysql_drop(a, err);
		return false;
	}
	s->m = mysql_init(NULL);
	if (!s->m) {
		mysql_drop(a, "out of memory");
		return false;
	}
	mysql_options(s->m, MYSQL_OPT_NONBLOCK, NULL);
	{
		unsigned long max_packet = REPLY_MAX;

		mysql_options(s->m, MYSQL_OPT_MAX_ALLOWED_PACKET, &max_packet);
	}
	mysql_options(s->m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	st = mysql_real_connect_start(&ret, s->m, addr, c->mysql_user,
				      c->mysql_password ? c->mysql_password : "",
				      with_db ? c->mysql_database : NULL, (unsigned int)c->mysql_port,
				      NULL, CLIENT_FOUND_ROWS | CLIENT_MULTI_STATEMENTS);
	NB_LOOP(s->m, st, end, mysql_real_connect_cont(&ret, s->m, st));
	if (st < 0) {
		mysql_drop(a, "connecting took longer than the time left");
		return false;
	}
	if (!ret) {
		e = mysql_errno(s->m);
		snprintf(msg, sizeof(msg), "%u: %s", e, mysql_error(s->m));
		if (e >= CR_MIN_ERROR && e <= CR_MAX_ERROR)
			mysql_drop(a, msg);
		else
			on_error(a, e, msg);
		return false;
	}
	/*
	 * READ COMMITTED (see the top of this file), and a lock wait that
	 * gives up within a second rather than innodb_lock_wait_timeout's
	 * 50 s (the call's own deadline comes first anyway).
	 */
	if (exec(a, end, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; SET SESSION innodb_lock_wait_timeout = 1; SET SESSION autocommit = 1",
		 &r))
		return false;
	mysql_real_escape_string(s->m, s->pfx, c->prefix, (unsigned long)strlen(c->prefix));
	mysql_real_escape_string(s->m, s->cl, c->cluster, (unsigned long)strlen(c->cluster));
	mysql_real_escape_string(s->m, s->own, a->owner, (unsigned long)strlen(a->owner));
	ag_condition_over(a, AG_COND_STORE_DOWN, "event=mysql_up host=%s port=%d",
			  c->mysql_host, c->mysql_port);
	return true;
}

/* Connected to mysql-database, the table checked: true. */
static bool mysql_ready(struct agent *a, int64_t end)
{
	return mysql_connect_db(a, end, true) && check_table(a, end);
}

/* WHERE clause of pair (@dc, @w) in our key space. */
static void pair_where(const struct agent *a, uint32_t dc, uint32_t w, char *buf, size_t len)
{
	snprintf(buf, len, "prefix = '%s' AND cluster = '%s' AND datacenter = %u AND worker = %u",
		 M(a)->pfx, M(a)->cl, dc, w);
}

/*
 * The row a batch's SELECT owner, mark read (ag_mysql_row(), strictly):
 * AG_VAL_OK with *@mark and *@ours, or AG_VAL_INVALID (logged as
 * event=mark_invalid with @action, when not NULL).
 */
static int row_of(const struct agent *a, const struct reply *r, uint32_t dc, uint32_t w,
		  uint64_t *mark, bool *ours, const char *action)
{
	size_t ml = r->col_len[1], ol = r->col_len[0];

	if (ol < sizeof(r->col[0]) && ml < sizeof(r->col[1]) &&
	    ag_mysql_row(r->col_null[0] ? NULL : r->col[0], ol, r->col_null[1] ? NULL : r->col[1],
			 ml, a->owner, a->mark_max_ms, mark, ours) == AG_VAL_OK)
		return AG_VAL_OK;
	if (action)
		ag_mark_invalid(a, dc, w, r->col[1], strlen(r->col[1]), action);
	return AG_VAL_INVALID;
}

/*
 * give_back(): pair (@dc, @w)'s lease ended where it holds this run's
 * owner (the lease after the fence, a claim whose reply was lost: G6,
 * agent.c).  1 given back, 0 not ours, -1 no answer.  The owner stays:
 * the row says who last held it; an expiry in the past frees the pair
 * (a claim needs only that), and asked twice it answers 1 again (the
 * connection counts matched rows).
 */
static int m_give_back(struct agent *a, uint32_t dc, uint32_t w)
{
	struct mstore *s = M(a);
	int64_t end = end_of(a, 0);
	char where[600], sql[1024];
	struct reply r;

	if (!mysql_ready(a, end))
		return -1;
	pair_where(a, dc, w, where, sizeof(where));
	if (sqlf(sql, sizeof(sql),
		 "UPDATE `%s` SET expiry = '1970-01-01 00:00:00' WHERE %s AND owner = '%s'",
		 a->c->mysql_table, where, s->own) || exec(a, end, sql, &r))
		return -1;
	return r.affected[0] > 0;
}

static int m_init(struct agent *a)
{
	const struct ag_conf *c = a->c;

	if (strlen(c->prefix) > NAME_MAX_LEN || strlen(c->cluster) > NAME_MAX_LEN) {
		logm(AG_ERR, "backend mysql: prefix and cluster are at most %d bytes (the table's columns)",
		     NAME_MAX_LEN);
		return AG_EXIT_USAGE;
	}
	a->store = calloc(1, sizeof(struct mstore));
	if (!a->store) {
		logm(AG_ERR, "out of memory");
		return AG_EXIT_RUNTIME;
	}
	return 0;
}

static void m_fini(struct agent *a)
{
	struct mstore *s = M(a);

	if (!s)
		return;
	if (s->m)
		mysql_close(s->m);
	free(s);
	a->store = NULL;
}

static void m_describe(const struct agent *a, char *buf, size_t len)
{
	snprintf(buf, len, "mysql=%s:%d database=%s table=%s", a->c->mysql_host, a->c->mysql_port,
		 a->c->mysql_database, a->c->mysql_table);
}

/* InnoDB keeps its committed rows across a restart: no wait (G5). */
static int64_t m_claim_wait(struct agent *a)
{
	(void)a;
	return 0;
}

/* INSERT the pair's row with @value as its mark: 1 created, 0 present, -1 failed. */
static int insert_row(struct agent *a, int64_t end, uint32_t dc, uint32_t w, uint64_t value)
{
	struct mstore *s = M(a);
	struct reply r;
	char sql[1024];

	if (sqlf(sql, sizeof(sql),
		 "INSERT INTO `%s` (prefix, cluster, datacenter, worker, mark) VALUES ('%s', '%s', %u, %u, %llu)",
		 a->c->mysql_table, s->pfx, s->cl, dc, w, (unsigned long long)value))
		return -1;
	run_sql(a, end, sql, &r);
	if (!r.err)
		return 1;
	if (r.err == ER_DUP_ENTRY)
		return 0;	/* an existing mark is never changed (never lowered) */
	if (r.err > 0) {
		logm(AG_WARN, "INSERT of pair %u:%u: %s", dc, w, r.msg);
		on_error(a, (unsigned int)r.err, r.msg);
	}
	return -1;
}

static int m_claim(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent, uint64_t *mark,
		   uint64_t init_mark)
{
	const struct ag_conf *c = a->c;
	struct mstore *s = M(a);
	int64_t end = end_of(a, 0);
	char where[600], sql[4096], mcond[128], valid[64];
	struct reply r;
	bool ours;

	snprintf(valid, sizeof(valid), " AND mark <= %llu", (unsigned long long)a->mark_max_ms);
	if (!mysql_ready(a, end))
		return s->no_schema && !a->fatal ? TRY_NO_MARK : TRY_ERROR;
	if (init_mark && insert_row(a, end, dc, w, init_mark) < 0)
		return TRY_ERROR;
	pair_where(a, dc, w, where, sizeof(where));
	/*
	 * Only a valid mark is claimed; with @init_mark an invalid one is
	 * replaced by it in the same UPDATE (under the row's lock: the very
	 * value found invalid), without it the row is left alone.
	 */
	snprintf(mcond, sizeof(mcond), ", mark = IF(mark <= %llu, mark, %llu)",
		 (unsigned long long)a->mark_max_ms, (unsigned long long)init_mark);
	if (sqlf(sql, sizeof(sql),
		 "START TRANSACTION; "
		 "UPDATE `%s` SET owner = '%s', expiry = UTC_TIMESTAMP(6) + INTERVAL %llu MICROSECOND%s WHERE %s AND expiry < UTC_TIMESTAMP(6)%s; "
		 "SELECT owner, mark FROM `%s` WHERE %s LIMIT 2 FOR UPDATE; "
		 "COMMIT",
		 c->mysql_table, s->own, c->ttl_ms * 1000ULL, init_mark ? mcond : "", where,
		 init_mark ? "" : valid, c->mysql_table, where))
		return TRY_ERROR;
	*sent = boot_ns();
	if (exec(a, end, sql, &r)) {
		/* No reply (r.err -1): the COMMIT may have gone through. */
		if (r.err < 0)
			goto unknown;
		return TRY_ERROR;
	}
	if (r.n != 4 || r.affected[1] < 0) {
		logm(AG_WARN, "claim of pair %u:%u: an odd reply (%d statements)", dc, w, r.n);
		mysql_drop(a, "odd reply");
		goto unknown;
	}
	if (!r.row)
		return TRY_NO_MARK;	/* no row: a pair without a mark; nothing was written */
	/* The UPDATE takes only a valid mark: an invalid one leaves the row alone. */
	if (row_of(a, &r, dc, w, mark, &ours, NULL)) {
		ag_mark_invalid(a, dc, w, r.col[1], strlen(r.col[1]),
				"not-served");
		if (r.affected[1] == 0)
			return TRY_BAD_MARK;
		goto unknown;
	}
	if (r.affected[1] == 0)
		return TRY_HELD;
	if (r.affected[1] != 1 || !ours) {
		logm(AG_WARN, "claim of pair %u:%u: an odd reply (affected %lld)", dc, w,
		     r.affected[1]);
		mysql_drop(a, "odd reply");
		goto unknown;
	}
	return TRY_TAKEN;
unknown:
	return TRY_UNKNOWN;
}

/*
 * The renewal batch (see the top of this file) on pair (@dc, @w): 1
 * renewed (*@mark the mark after the raise), 0 lost (logged, but for
 * a re-adoption: it is not ours), -1 failed.
 */
static int renew_batch(struct agent *a, int64_t end, uint32_t dc, uint32_t w, uint64_t raise,
		       bool readopt, int64_t *sent, uint64_t *mark)
{
	const struct ag_conf *c = a->c;
	struct mstore *s = M(a);
	char where[600], sql[4096];
	struct reply r;
	bool ours;

	if (!mysql_ready(a, end))
		return s->no_schema && !a->fatal ? 0 : -1;
	pair_where(a, dc, w, where, sizeof(where));
	if (sqlf(sql, sizeof(sql),
		 "START TRANSACTION; "
		 "UPDATE `%s` SET expiry = UTC_TIMESTAMP(6) + INTERVAL %llu MICROSECOND, mark = IF(mark <= %llu, GREATEST(mark, %llu), IF(%llu > 0, %llu, mark)) WHERE %s AND owner = '%s'; "
		 "SELECT owner, mark FROM `%s` WHERE %s LIMIT 2 FOR UPDATE; "
		 "COMMIT",
		 c->mysql_table, c->ttl_ms * 1000ULL, (unsigned long long)a->mark_max_ms,
		 (unsigned long long)raise, (unsigned long long)raise, (unsigned long long)raise,
		 where, s->own,
		 c->mysql_table, where))
		return -1;
	*sent = boot_ns();
	if (exec(a, end, sql, &r)) {
		/* The table dropped under a held lease: the lease is gone. */
		return s->no_schema && !a->fatal ? 0 : -1;
	}
	if (r.n != 4 || r.affected[1] < 0) {
		mysql_drop(a, "odd reply to a renewal");
		return -1;
	}
	if (r.affected[1] == 0) {
		if (readopt)
			return 0;
		logm(AG_WARN, "event=key_lost datacenter=%u worker=%u table=%s: %s", dc, w,
		     c->mysql_table,
		     !r.row ? "the pair's row is gone (deleted, and its mark with it)" :
		     !r.col[0][0] ? "the lease was cleared (owner emptied)" :
				    "the row holds another owner now");
		return 0;
	}
	if (!r.row)
		goto odd;
	/*
	 * An invalid mark was replaced by @raise in the UPDATE (see above);
	 * without a raise it is left alone and the renewal succeeds.
	 */
	if (ag_mysql_row(r.col_null[0] ? NULL : r.col[0], r.col_len[0],
			 r.col_null[1] ? NULL : r.col[1], r.col_len[1], a->owner, a->mark_max_ms,
			 mark, &ours) != AG_VAL_OK) {
		if (raise || r.col_len[1] >= sizeof(r.col[1]) || !r.col_len[1]) {
			row_of(a, &r, dc, w, mark, &ours, "not-served");
			return -1;
		}
		*mark = 0;
		return 1;
	}
	if (!ours || (raise && *mark < raise))
		goto odd;
	return 1;
odd:
	mysql_drop(a, "odd reply to a renewal");
	return -1;
}

/* The row still holds this run's owner: renew it, with the mark at least ours. */
static int m_readopt(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent, uint64_t *mark)
{
	int ret = renew_batch(a, end_of(a, 0), dc, w, a->mark_ms, true, sent, mark);

	if (ret < 0)
		return TRY_ERROR;
	return ret ? TRY_TAKEN : TRY_HELD;
}

static int m_renew(struct agent *a, int64_t deadline, int64_t *sent, uint64_t raise_to,
		   uint64_t *mark)
{
	int ret = renew_batch(a, end_of(a, deadline), a->dc, a->w, raise_to, false, sent, mark);

	if (ret != 1)
		*mark = AG_MARK_UNREAD;
	return ret;
}

/*
 * --init-store's first step: the database and the table where missing,
 * then the table checked (check_table()).  true when usable.
 */
static bool make_schema(struct agent *a, int64_t end)
{
	char sql[1024];
	struct reply r;

	if (M(a)->schema_ok)
		return true;
	if (!mysql_connect_db(a, end, true)) {
		if (a->fatal || !M(a)->no_schema)
			return false;
		/* No database: create it. */
		if (!mysql_connect_db(a, end, false))
			return false;
		if (sqlf(sql, sizeof(sql), "CREATE DATABASE IF NOT EXISTS `%s`; USE `%s`",
			 a->c->mysql_database, a->c->mysql_database) ||
		    exec(a, end, sql, &r))
			return false;
		logm(AG_INFO, "event=mysql_database_created database=%s", a->c->mysql_database);
	}
	return !sqlf(sql, sizeof(sql), create_table_fmt, a->c->mysql_table) &&
	       !exec(a, end, sql, &r) && check_table(a, end);
}

/*
 * --init-store: the database and the table where missing (the first
 * call), then the pair's row with its mark where missing.
 */
static int m_init_mark(struct agent *a, uint32_t dc, uint32_t w, uint64_t mark,
			bool replace_invalid)
{
	int64_t end = end_of(a, 0);
	char sql[1024], where[600], old[sizeof(((struct reply *)0)->col[1])];
	struct reply r;
	uint64_t cur;
	bool ours;
	int ret;

	if (!make_schema(a, end))
		return -1;
	ret = insert_row(a, end, dc, w, mark);
	if (ret)
		return ret < 0 ? -1 : INIT_CREATED;
	/* Present: valid (left alone, never lowered), or invalid. */
	pair_where(a, dc, w, where, sizeof(where));
	if (sqlf(sql, sizeof(sql), "SELECT owner, mark FROM `%s` WHERE %s LIMIT 2", a->c->mysql_table, where) ||
	    exec(a, end, sql, &r) || !r.row)
		return -1;
	if (!row_of(a, &r, dc, w, &cur, &ours, NULL))
		return INIT_PRESENT;
	if (!replace_invalid) {
		ag_mark_invalid(a, dc, w, r.col[1], strlen(r.col[1]), "left");
		return INIT_INVALID;
	}
	/* Only the very value found invalid (a BIGINT: its text is digits). */
	if (r.col_len[1] >= sizeof(r.col[1]) || strspn(r.col[1], "0123456789") != r.col_len[1] ||
	    sqlf(sql, sizeof(sql), "UPDATE `%s` SET mark = %llu WHERE %s AND mark = %s",
		 a->c->mysql_table, (unsigned long long)mark, where, r.col[1]))
		return -1;
	snprintf(old, sizeof(old), "%s", r.col[1]);
	if (exec(a, end, sql, &r) || r.affected[0] != 1)
		return -1;
	ag_mark_invalid(a, dc, w, old, strlen(old), "replaced");
	return INIT_REPLACED;
}

/* G5 while holding (agent.h): mysql_durable() again. */
static int m_recheck(struct agent *a, int64_t deadline)
{
	int64_t end = end_of(a, deadline);

	if (!mysql_ready(a, end))
		return -1;
	return mysql_durable(a, end);
}

const struct store_ops ag_mysql_ops = {
	.name = "mysql",
	.init = m_init,
	.fini = m_fini,
	.describe = m_describe,
	.claim_wait = m_claim_wait,
	.claim = m_claim,
	.readopt = m_readopt,
	.renew = m_renew,
	.give_back = m_give_back,
	.recheck = m_recheck,
	.init_mark = m_init_mark,
};

/*
 * The record design (issue 40, docs/lease-record.md): ag_mysql_rec_ops,
 * the backend of record.c's engine, on this file's connection (run_sql():
 * one request, once, by the engine's wait), its table checks and its
 * durability check (G5: mysql_durable(), m_recheck()).
 *
 * Layout.  Pair (DC, W)'s record is the pair's row of 1.4.0's table, with
 * two more columns (rec_columns_fmt; docs/deployment-mysql.md, "The
 * record"): rec, the record's text (ag_rec_format()'s, at most
 * AG_REC_MAX - 1 bytes), and ver, its version.  A record row also has
 * owner '' and expiry REC_EXPIRY (DATETIME(6)'s last instant), so that a
 * 1.4.0 agent never claims it (its claim needs an expiry in the past) nor
 * renews or releases it (both need its own owner); its mark column is
 * 1.4.0's and is left as it was (0 on a row created as a record).
 *
 * The version.  InnoDB keeps no version of a row, so it is a number taken
 * from one counter of the key space, the row (PREFIX, CLUSTER, 2^32 - 1,
 * 2^32 - 1) of the same table (its ver; no layout has such a pair:
 * mr_init()), advanced by the cas's first statement (INSERT ... ON
 * DUPLICATE KEY UPDATE ver = LAST_INSERT_ID(ver + 1): created at 1 by the
 * first write, then one up, under the row's lock) and written into the
 * record by the second (ver = LAST_INSERT_ID(), the connection's own
 * value).  A store-wide counter, as etcd's revision and Redis's rev key
 * are, and not ver + 1 of the row: that restarts when a row is deleted
 * and created again, and a delayed write naming an old version would then
 * land on a record its writer never read (ABA).  The counter's values are
 * handed out one at a time (the row lock) and only grow, so no two writes
 * of any record get one version, deleted rows or not.  The two statements
 * commit one after the other (autocommit), not as one transaction: the
 * only promise needed is that the value written is new and above every
 * earlier one, and the counter's commit precedes its use (InnoDB's redo
 * log is replayed in order, so a crash never keeps the record's write
 * without the counter's).  A value taken by a cas that then does not
 * commit is skipped, never reused.  And no transaction is ever left open
 * on the connection, with the counter's lock, by an error between them.
 *
 * read:  SELECT ver, LEFT(rec, AG_REC_MAX), LENGTH(rec), (the row is a
 *        record's: owner '' and expiry REC_EXPIRY), owner, expiry, mark
 *        ... WHERE <pair> LIMIT 1: one row at most (the primary key is
 *        the pair, check_table()), its text cut by the server, so what is
 *        buffered is bounded whatever the row holds.  No row: RS_ABSENT.
 *        A record: RS_OK with ver (a decimal 1 .. REC_VER_MAX, strictly)
 *        and rec (shorter than AG_REC_MAX, else the read fails: input).
 * cas:   the counter's statement, then
 *          expect 0:   INSERT the record row (owner '', expiry REC_EXPIRY,
 *                      mark 0, rec, ver): a duplicate key is RS_MOVED;
 *          else:       UPDATE ... SET owner = '', expiry = REC_EXPIRY,
 *                      rec, ver WHERE <pair> AND ver = expect AND (expiry
 *                      = REC_EXPIRY OR expiry < UTC_TIMESTAMP(6)):
 *                      matched (CLIENT_FOUND_ROWS) 1 RS_OK, 0 RS_MOVED;
 *        then SELECT LAST_INSERT_ID(): the new version, above @expect
 *        (else a reply that says nothing sure: RS_UNKNOWN).  One request
 *        of three statements.  The text goes as a hex literal: any byte.
 *
 * 1.4.0's row (ver NULL) is read as RS_OK with version REC_FOREIGN and a
 * text that is not a record ("mysql-1.4.0 owner=... expiry=... mark=..."):
 * the engine's parse fails on it (event=mark_invalid, never served).  A
 * cas naming REC_FOREIGN replaces only a row whose ver is NULL and whose
 * expiry has passed on the server's clock: 1.4.0's own rule of when its
 * lease is over, the way etcd's and Redis's stores end 1.4.0's key (here
 * the row stays, so the compare does it); while a 1.4.0 agent holds the
 * row, RS_MOVED.  Such a cas clears the owner, so that agent's late
 * renewal matches nothing and it learns it lost the pair.  A row with a
 * ver whose owner or expiry is not a record's (written by hand: a 1.4.0
 * agent may claim it once its expiry passes) is read as RS_OK with its
 * version and "mysql-held owner=... expiry=... rec=TEXT" (never a
 * record), and is replaced only once its expiry has passed.  Taking over
 * 1.4.0's mark (the row's mark column) is step 3's (the rolling upgrade).
 *
 * Errors (rec_error()), each request's only:
 *  - a privilege the table's grants do not give (a table or column grant
 *    without UPDATE, INSERT or SELECT on it): RS_REFUSED (all pairs: a
 *    grant is the table's), event=mysql_refused, never fatal here;
 *  - a read-only server (read_only, super_read_only, a replica), a lock
 *    wait timeout or a deadlock (the statement or transaction rolled
 *    back), a full disk or table, the server out of resources or shutting
 *    down: RS_UNABLE, said as a condition of the store;
 *  - any other error reply: RS_FAILED, nothing written (statements are
 *    atomic: the batch stops at the first error, the counter's value is
 *    skipped); an error after the write matched (the SELECT): RS_UNKNOWN;
 *  - no reply within the time left, a lost connection, a reply that
 *    cannot be read: a read RS_FAILED, a cas RS_UNKNOWN (the connection
 *    dropped; the engine reads its nonce back); nothing sent: RS_FAILED.
 *
 * The schema: a table without rec and ver (1.4.0's) is RS_UNABLE
 * (event=mysql_no_record_columns, said once), until --init-store (whose
 * user also needs ALTER) adds them, or the operator runs the ALTER of
 * docs/deployment-mysql.md: an instant ALTER (nullable columns at the
 * end), which 1.4.0 agents running beside it do not notice (they name
 * their columns).  A table or columns of another form: fatal
 * (event=mysql_bad_schema, exit 2), as check_table() does.
 *
 * Assumed: nobody deletes or lowers the counter row while agents run (its
 * values would start again below versions already handed out); a record
 * row deleted by hand is safe (its next version is above every earlier
 * one); a row written by hand takes its ver from the counter
 * (docs/deployment-mysql.md, the emergency procedure).
 */
/* The largest version a record may have: 2^63 - 1 (never negative, signed or not). */
#define REC_VER_MAX	9223372036854775807ULL
/* read()'s version of 1.4.0's row (ver NULL): above every record's. */
#define REC_FOREIGN	UINT64_MAX
/* The counter row's datacenter and worker (no layout has them: mr_init()). */
#define REC_COUNTER	4294967295U
/* A record row's expiry: DATETIME(6)'s last instant (1.4.0 claims only an expired row). */
#define REC_EXPIRY	"9999-12-31 23:59:59.999999"

/* The record's columns, added to 1.4.0's table (docs/deployment-mysql.md says the same). */
static const char rec_columns_fmt[] =
	"ALTER TABLE `%s` ADD COLUMN rec VARBINARY(511) NULL DEFAULT NULL, "
	"ADD COLUMN ver BIGINT UNSIGNED NULL DEFAULT NULL";
/* What information_schema says of them when they are as rec_columns_fmt makes them. */
#define REC_COLUMNS	"rec varbinary(511) YES,ver bigint unsigned YES"

/*
 * A record request's error reply (@r->err > 0) or its missing reply
 * (@r->err < 0), for pair (@dc, @w), as an RS_* (the list above): a
 * @cas's missing reply is RS_UNKNOWN.
 */
static int rec_error(struct agent *a, uint32_t dc, uint32_t w, const struct reply *r, bool cas)
{
	struct mstore *s = M(a);

	if (a->fatal)
		return RS_FAILED;
	if (r->err < 0)
		return cas ? RS_UNKNOWN : RS_FAILED;
	switch (r->err) {
	case ER_TABLEACCESS_DENIED_ERROR:
	case ER_COLUMNACCESS_DENIED_ERROR:
	case ER_SPECIFIC_ACCESS_DENIED_ERROR:
		logm(AG_WARN, "event=mysql_refused user=%s table=%s datacenter=%u worker=%u error=\"%.200s\": the table's grants do not allow this (docs/deployment-mysql.md): not run",
		     a->c->mysql_user, a->c->mysql_table, dc, w, r->msg);
		return RS_REFUSED;
	case ER_OPTION_PREVENTS_STATEMENT:
	case ER_READ_ONLY_MODE:
	case ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION:
	case ER_LOCK_WAIT_TIMEOUT:
	case ER_LOCK_DEADLOCK:
	case ER_RECORD_FILE_FULL:
	case ER_DISK_FULL:
	case ER_OUT_OF_RESOURCES:
	case ER_SERVER_SHUTDOWN:
		ag_condition(a, AG_COND_STORE_DOWN, AG_WARN,
			     "event=mysql_unable host=%s port=%d error=\"%.200s\": the store cannot run a write now (nothing ran)",
			     a->c->mysql_host, a->c->mysql_port, r->msg);
		return RS_UNABLE;
	case ER_NO_SUCH_TABLE:
	case ER_BAD_DB_ERROR:
		no_schema(a, r->msg);
		close_quietly(a);
		return RS_UNABLE;
	default:
		if (r->err == ER_BAD_FIELD_ERROR)
			s->rec_ok = false;	/* checked again at the next request */
		logm(AG_WARN, "event=mysql_error host=%s port=%d table=%s datacenter=%u worker=%u error=\"%.200s\"",
		     a->c->mysql_host, a->c->mysql_port, a->c->mysql_table, dc, w, r->msg);
		return RS_FAILED;
	}
}

/*
 * Connected, the table checked (with --init-store: the database, the
 * table and the record's columns made where missing), and its record
 * columns as rec_columns_fmt makes them: RS_OK; else RS_UNABLE (no table,
 * no record columns: said), RS_REFUSED (this user may not read them:
 * pair (@dc, @w)'s request said so), RS_FAILED.
 */
static int rec_ready(struct agent *a, int64_t end, uint32_t dc, uint32_t w)
{
	struct mstore *s = M(a);
	struct reply r;
	char sql[768], msg[400];

	if (a->c->init_store ? !make_schema(a, end) : !mysql_ready(a, end))
		return s->no_schema && !a->fatal ? RS_UNABLE : RS_FAILED;
	if (s->rec_ok)
		return RS_OK;
	/* Are they there, and may this user read them?  (information_schema shows a column only then.) */
	if (sqlf(sql, sizeof(sql), "SELECT rec, ver FROM `%s` LIMIT 0", a->c->mysql_table))
		return RS_FAILED;
	run_sql(a, end, sql, &r);
	if (r.err > 0 && r.err != ER_BAD_FIELD_ERROR)
		return rec_error(a, dc, w, &r, false);
	if (r.err < 0)
		return RS_FAILED;
	if (r.err == ER_BAD_FIELD_ERROR && a->c->init_store) {
		if (sqlf(sql, sizeof(sql), rec_columns_fmt, a->c->mysql_table) || exec(a, end, sql, &r))
			return RS_FAILED;
		logm(AG_INFO, "event=mysql_record_columns_added database=%s table=%s",
		     a->c->mysql_database, a->c->mysql_table);
	} else if (r.err == ER_BAD_FIELD_ERROR) {
		ag_condition(a, AG_COND_STORE_SCHEMA, AG_WARN,
			     "event=mysql_no_record_columns database=%s table=%s: the table has no record columns (rec, ver) yet: snowflake-agent --init-store adds them, or the ALTER TABLE of docs/deployment-mysql.md",
			     a->c->mysql_database, a->c->mysql_table);
		return RS_UNABLE;
	}
	if (sqlf(sql, sizeof(sql),
		 "SELECT GROUP_CONCAT(CONCAT_WS(' ', COLUMN_NAME, REPLACE(COLUMN_TYPE, '(20)', ''), IS_NULLABLE) ORDER BY COLUMN_NAME SEPARATOR ','), COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '%s' AND COLUMN_NAME IN ('rec', 'ver')",
		 a->c->mysql_table) || exec(a, end, sql, &r) || !r.row)
		return RS_FAILED;
	if (strcmp(r.col[0], REC_COLUMNS) != 0) {
		snprintf(msg, sizeof(msg), "the record's columns are (%.120s), not (" REC_COLUMNS "): recreate them as docs/deployment-mysql.md says",
			 r.col[0]);
		mysql_fatal(a, AG_EXIT_USAGE, "mysql_bad_schema", msg);
		return RS_FAILED;
	}
	ag_condition_over(a, AG_COND_STORE_SCHEMA, "event=mysql_record_columns_found database=%s table=%s",
			  a->c->mysql_database, a->c->mysql_table);
	s->rec_ok = true;
	return RS_OK;
}

/* A request answered without an error: the store's condition (unable, down) is over. */
static void rec_answered(struct agent *a)
{
	ag_condition_over(a, AG_COND_STORE_DOWN, "event=mysql_up host=%s port=%d", a->c->mysql_host,
			  a->c->mysql_port);
}

/* Column @i of @r's row as kept (its length in *@n: at most what its buffer holds). */
static const char *rec_col(const struct reply *r, int i, size_t *n)
{
	*n = r->col_len[i] < sizeof(r->col[i]) ? r->col_len[i] : sizeof(r->col[i]) - 1;
	return r->col[i];
}

static int mr_read(struct agent *a, uint32_t dc, uint32_t w, int64_t deadline, struct ag_rec *out)
{
	int64_t end = end_of(a, deadline);
	char where[600], sql[1024];
	const char *t;
	struct reply r;
	uint64_t ver = 0, len = 0;
	size_t n, on;
	int st = rec_ready(a, end, dc, w);

	if (st != RS_OK)
		return st;
	pair_where(a, dc, w, where, sizeof(where));
	if (sqlf(sql, sizeof(sql),
		 "SELECT ver, LEFT(rec, %d), LENGTH(rec), owner = '' AND expiry = '" REC_EXPIRY "', LEFT(owner, 255), CONCAT(expiry, ' mark=', mark) FROM `%s` WHERE %s LIMIT 1",
		 AG_REC_MAX, a->c->mysql_table, where))
		return RS_FAILED;
	run_sql(a, end, sql, &r);
	if (r.err)
		return rec_error(a, dc, w, &r, false);
	rec_answered(a);
	if (r.n != 1 || r.affected[0] != -1) {
		ag_reply_invalid(a, "record read reply (not one result set)", "", 0);
		return RS_FAILED;
	}
	if (!r.row)
		return RS_ABSENT;
	t = rec_col(&r, 4, &on);
	if (r.col_null[0]) {	/* 1.4.0's row: held by the store's expiry, never a record */
		snprintf(out->text, sizeof(out->text), "mysql-1.4.0 owner=%.*s expiry=%.60s", (int)on, t,
			 r.col[5]);
		out->len = strlen(out->text);
		out->version = REC_FOREIGN;
		return RS_OK;
	}
	if (ag_parse_u64(r.col[0], r.col_len[0], REC_VER_MAX, &ver) || !ver) {
		ag_reply_invalid(a, "record version", r.col[0], rec_col(&r, 0, &n) ? n : 0);
		return RS_FAILED;
	}
	if (!r.col_null[1] && (ag_parse_u64(r.col[2], r.col_len[2], UINT32_MAX, &len) ||
			       len != r.col_len[1] || len >= AG_REC_MAX)) {
		ag_reply_invalid(a, "record text (longer than a record)", r.col[1],
				 rec_col(&r, 1, &n) ? (n < 64 ? n : 64) : 0);
		return RS_FAILED;
	}
	out->version = ver;
	if (r.col_null[1] || strcmp(r.col[3], "1") != 0) {
		/* Not a record's row (written by hand): said as such (cut), never a record. */
		char held[1024];
		int hn = snprintf(held, sizeof(held), "mysql-held owner=%.*s expiry=%.60s rec=%.*s",
				  (int)on, t, r.col[5], r.col_null[1] ? 4 : (int)len,
				  r.col_null[1] ? "NULL" : r.col[1]);

		out->len = hn < 0 ? 0 : (size_t)hn < sizeof(out->text) ? (size_t)hn : sizeof(out->text) - 1;
		memcpy(out->text, held, out->len);
		out->text[out->len] = '\0';
		return RS_OK;
	}
	memcpy(out->text, r.col[1], len);
	out->text[len] = '\0';
	out->len = len;
	return RS_OK;
}

static int mr_cas(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect, const char *text,
		  size_t len, int64_t deadline, uint64_t *version)
{
	static const char hex[] = "0123456789abcdef";
	struct mstore *s = M(a);
	int64_t end = end_of(a, deadline);
	char where[600], cmp[64], x[2 * AG_REC_MAX + 1], sql[4096];
	struct reply r;
	uint64_t ver = 0;
	size_t i;
	int st;

	if (len >= AG_REC_MAX || (expect > REC_VER_MAX && expect != REC_FOREIGN))
		return RS_FAILED;	/* not a record's text, not a version this backend reads */
	st = rec_ready(a, end, dc, w);
	if (st != RS_OK)
		return st;
	for (i = 0; i < len; i++) {
		x[2 * i] = hex[(unsigned char)text[i] >> 4];
		x[2 * i + 1] = hex[(unsigned char)text[i] & 15];
	}
	x[2 * len] = '\0';
	pair_where(a, dc, w, where, sizeof(where));
	if (expect == REC_FOREIGN)
		snprintf(cmp, sizeof(cmp), "ver IS NULL");
	else
		snprintf(cmp, sizeof(cmp), "ver = %llu", (unsigned long long)expect);
	if (expect ?
	    sqlf(sql, sizeof(sql),
		 "INSERT INTO `%s` (prefix, cluster, datacenter, worker, owner, expiry, mark, ver) VALUES ('%s', '%s', %u, %u, '', '" REC_EXPIRY "', 0, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE ver = LAST_INSERT_ID(ver + 1); "
		 "UPDATE `%s` SET owner = '', expiry = '" REC_EXPIRY "', rec = X'%s', ver = LAST_INSERT_ID() WHERE %s AND %s AND (expiry = '" REC_EXPIRY "' OR expiry < UTC_TIMESTAMP(6)); "
		 "SELECT LAST_INSERT_ID()",
		 a->c->mysql_table, s->pfx, s->cl, REC_COUNTER, REC_COUNTER, a->c->mysql_table, x,
		 where, cmp) :
	    sqlf(sql, sizeof(sql),
		 "INSERT INTO `%s` (prefix, cluster, datacenter, worker, owner, expiry, mark, ver) VALUES ('%s', '%s', %u, %u, '', '" REC_EXPIRY "', 0, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE ver = LAST_INSERT_ID(ver + 1); "
		 "INSERT INTO `%s` (prefix, cluster, datacenter, worker, owner, expiry, mark, rec, ver) VALUES ('%s', '%s', %u, %u, '', '" REC_EXPIRY "', 0, X'%s', LAST_INSERT_ID()); "
		 "SELECT LAST_INSERT_ID()",
		 a->c->mysql_table, s->pfx, s->cl, REC_COUNTER, REC_COUNTER, a->c->mysql_table,
		 s->pfx, s->cl, dc, w, x))
		return RS_FAILED;
	run_sql(a, end, sql, &r);
	if (r.err > 0 && r.n == 1 && !expect && r.err == ER_DUP_ENTRY)
		return RS_MOVED;	/* the record exists: nothing written */
	if (r.err > 0 && r.n >= 2 && r.affected[1] == 0)
		return RS_MOVED;
	if (r.err > 0 && r.n >= 2)
		return RS_UNKNOWN;	/* the write matched; what came after failed */
	if (r.err)
		return rec_error(a, dc, w, &r, true);
	rec_answered(a);
	if (r.n != 3 || r.affected[0] < 1 || r.affected[0] > 2 || r.affected[1] < 0 ||
	    r.affected[1] > 1 || r.affected[2] != -1) {
		ag_reply_invalid(a, "record cas reply (not the batch's three results)", "", 0);
		mysql_drop(a, "odd reply to a record's cas");
		return RS_UNKNOWN;
	}
	if (!r.affected[1])
		return RS_MOVED;
	/*
	 * The new version: above @expect (the counter only grows; one that
	 * did not, a counter row deleted or lowered by hand, is not trusted),
	 * else a reply that says nothing sure: unknown, read back by the engine.
	 */
	if (!r.row || r.col_null[0] || ag_parse_u64(r.col[0], r.col_len[0], REC_VER_MAX, &ver) ||
	    (expect != REC_FOREIGN && ver <= expect)) {
		ag_reply_invalid(a, "record cas version", r.col[0], strnlen(r.col[0], 24));
		return RS_UNKNOWN;
	}
	*version = ver;
	return RS_OK;
}

static int mr_init(struct agent *a)
{
	if (a->dc_hi == REC_COUNTER && a->w_hi == REC_COUNTER) {
		logm(AG_ERR, "backend mysql: pair %u:%u is the record counter's row", REC_COUNTER,
		     REC_COUNTER);
		return AG_EXIT_USAGE;
	}
	return m_init(a);
}

const struct rec_ops ag_mysql_rec_ops = {
	.name = "mysql",
	.init = mr_init,
	.fini = m_fini,
	.describe = m_describe,
	.claim_wait = m_claim_wait,
	.recheck = m_recheck,
	.read = mr_read,
	.cas = mr_cas,
};
#endif /* AG_NO_MYSQL */
