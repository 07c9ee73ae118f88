// SPDX-License-Identifier: GPL-2.0
/*
 * The record store's contract (issue 40, docs/lease-record.md): one suite
 * of scenarios for every backend of struct rec_ops (agent.h), run against
 * the real store.  The store is given as the agent is given it (its own
 * options: --backend redis --redis-host ... ), so another store is added
 * by its arguments and its hooks only (an adapter, never a copy of these
 * scenarios).  TAP on stdout, the agent's log on stderr.
 *
 *   rec_contract [--expect MODE] [--hook-delete CMD] [--hook-legacy CMD]
 *                [--hook-legacy-record CMD] [--hook-legacy-mark CMD]
 *                [--hook-legacy-expired CMD] [--hook-free CMD] [--hook-legacy-late CMD]
 *                [--hook-bad CMD] [--hook-save CMD]
 *                [--hook-restart CMD] [--hook-fault CMD] [--hook-pass CMD]
 *                [--limit-aba WHY] [--unsent-unable] -- AGENT-OPTIONS...
 *
 * MODE:
 *   basic     (the default) read, cas, versions, sizes, records in a wrong
 *             form, 1.4.0's key, a stale cas of another agent after a
 *             delete by hand (aba()), then
 *             the record engine (record.c) over the backend: two agents on
 *             one pair (expiry on the observer's clock, give-back)
 *   refused   the store refuses this client the records' keys (an ACL):
 *             read and cas answer RS_REFUSED
 *   refusedcas  the store lets this client read the records but not write
 *             them (MySQL: a grant without UPDATE on a column): a read
 *             answers, cas answers RS_REFUSED
 *   unable    the store cannot write at all (a read-only replica, a master
 *             short of replicas): cas answers RS_UNABLE, a read still answers
 *   masterdown  the store answers neither reads nor writes (a replica
 *             whose master is away): read and cas answer RS_UNABLE
 *   noschema  the same of a store without the records' schema (MySQL:
 *             1.4.0's table, without the record's columns)
 *   unknown   the engine over a claim whose reply is lost after the store
 *             committed it (--hook-fault drops the next write's reply):
 *             TRY_UNKNOWN, given back (G6), taken by another at once
 *   restart   the store brought back to an older state (--hook-save takes
 *             a snapshot, --hook-restart restarts from it): versions
 *             handed out after the snapshot are never handed out again
 *   faulty    replies are garbage, huge or none (--hook-fault turns that on
 *             after a first good read, --hook-pass off): read answers
 *             RS_FAILED, cas RS_FAILED or RS_UNKNOWN, never RS_OK (with
 *             --unsent-unable, either may answer RS_UNABLE: the fault cut
 *             the connection before the call was sent)
 *
 * Hooks are shell commands, run with SF_DC and SF_W set to the pair:
 * delete the pair's record by the store's own means; write a 1.4.0 key
 * (a value that is not a record) at the record's name; write a record's
 * text there the 1.4.0 way (etcd: bound to a lease; no agent writes one); write a 1.4.0 key
 * whose lease the store has ended but which it still holds (MySQL: a row with
 * an expiry in the past, --hook-legacy-expired; then its holder's late
 * renewal, --hook-legacy-late, exit 0 when it matched nothing); free a held record by hand
 * (the deployment guide's emergency procedure, --hook-free); write a record in
 * a form no backend writes (SF_CASE: long, ver0, verlead, verbig, vertext;
 * bad_records()); write 1.4.0's mark key at $SF_MARK (legacy_mark()); turn
 * the fault on; turn it off.  A scenario whose hook is not given is skipped (said).
 * A form the store cannot hold (etcd sets a record's version itself):
 * --hook-bad exits HOOK_NA (77) after printing why, and the case is
 * printed as "n/a - WHAT: WHY", neither a pass nor a failure.
 *
 * Built with the agent's own code: agent.c included (as the simulator
 * does, for make_owner() and setup_pool()), the agent's other objects
 * linked (tests/contract/rec-contract.sh).
 */
#define main agent_main
#include AGENT_C	/* NOLINT(bugprone-suspicious-include): as tests/sim/sim.c */
#undef main

static unsigned int t_n, t_pass, t_fail;

static void tap(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	t_n++;
	if (ok)
		t_pass++;
	else
		t_fail++;
	printf("%s %u - ", ok ? "ok" : "not ok", t_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static const char *rs_name(int st)
{
	static const char *const n[] = { "RS_OK", "RS_ABSENT", "RS_MOVED", "RS_REFUSED",
					 "RS_UNABLE", "RS_FAILED", "RS_UNKNOWN" };

	return st >= 0 && st <= RS_UNKNOWN ? n[st] : "?";
}

static const char *hook_delete, *hook_legacy, *hook_fault, *hook_pass, *hook_bad;
static const char *hook_save, *hook_restart, *hook_legacy_record, *hook_legacy_mark;
/* --limit-aba: the store's documented limit on versions after a delete by hand (why). */
static const char *limit_aba;
/*
 * --unsent-unable: a call that finds the store's connection cut by the
 * fault before it was sent answers RS_UNABLE (ZooKeeper: no session by the
 * deadline, which its backend cannot tell from a server without a quorum).
 */
static bool unsent_unable;
static const char *hook_legacy_expired;
static const char *hook_free, *hook_legacy_late;

/* A hook's environment: the pair. */
static void hook_env(uint32_t dc, uint32_t w)
{
	char b[16];

	snprintf(b, sizeof(b), "%u", dc);
	setenv("SF_DC", b, 1);
	snprintf(b, sizeof(b), "%u", w);
	setenv("SF_W", b, 1);
	fflush(stdout);
}

static int hook(const char *cmd, uint32_t dc, uint32_t w)
{
	int r;

	hook_env(dc, w);
	r = system(cmd);
	return r == -1 || !WIFEXITED(r) ? -1 : WEXITSTATUS(r);
}

/*
 * A hook's exit status when the store cannot hold what it was asked to
 * write (etcd: a version set by hand): the case is not applicable, and
 * the hook has printed why on its stdout (one line, read here).
 */
#define HOOK_NA	77

/* hook() with the hook's first line of output in @out (for HOOK_NA's reason). */
static int hook_said(const char *cmd, uint32_t dc, uint32_t w, char *out, size_t len)
{
	char b[64];
	FILE *f;
	int r;

	hook_env(dc, w);
	out[0] = '\0';
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = '\0';
	while (fgets(b, sizeof(b), f))
		;
	r = pclose(f);
	return r == -1 || !WIFEXITED(r) ? -1 : WEXITSTATUS(r);
}

/* The backend of the record design for the agent's --backend (NULL: not yet written). */
static const struct rec_ops *backend_of(const struct ag_conf *c)
{
	switch (c->backend) {
	case AG_MYSQL:
		return &ag_mysql_rec_ops;
	case AG_REDIS:
		return &ag_redis_rec_ops;
	case AG_ETCD:
		return &ag_etcd_rec_ops;
	case AG_ZOOKEEPER:
		return &ag_zk_rec_ops;
	default:
		return NULL;
	}
}

/* An agent as main() makes one (its options, its owner, its pool), on the record engine. */
static int agent_up(struct agent *a, struct ag_conf *c)
{
	const struct rec_ops *r = backend_of(c);
	int ret;

	memset(a, 0, sizeof(*a));
	a->hist_fd = -1;
	a->tfd = -1;
	a->mark_max_ms = ag_layout_max_ms(SNOWFLAKE_TWITTER_EPOCH_MS,
					  SNOWFLAKE_DEFAULT_TIMESTAMP_BITS,
					  SNOWFLAKE_DEFAULT_TIME_UNIT_MS);
	a->quarantine = &quarantine;
	a->c = c;
	if (!r) {
		fprintf(stderr, "rec_contract: no record backend for this store yet\n");
		return AG_EXIT_USAGE;
	}
	ret = make_owner(a);
	if (!ret)
		ret = setup_pool(a, c->dry_run_bits[0], c->dry_run_bits[1]);
	if (!ret)
		ret = ag_record_use(a, r);
	if (!ret)
		ret = a->st->init(a);
	return ret;
}

static void text_of(char *buf, size_t len, const char *tag, uint64_t n)
{
	snprintf(buf, len, "sf2 nonce=%016llx beat=0 ttl=0 mark=%020llu owner=%s",
		 (unsigned long long)n, 1000ULL + n, tag);
}

static bool same(const struct ag_rec *r, const char *text, size_t len)
{
	return r->len == len && !memcmp(r->text, text, len);
}

/*
 * A record the store holds in a form no backend writes (the hook writes
 * it by the store's own means, as SF_CASE says): every reply is input, so
 * the read fails, and is never taken as a record.
 */
static void bad_records(struct agent *a)
{
	static const char *const cases[] = {
		"long",		/* a text of AG_REC_MAX bytes */
		"ver0",		/* version 0 */
		"verlead",	/* version 007 */
		"verbig",	/* version 2^53 (above what the store can count exactly) */
		"vertext",	/* version "1x" */
	};
	struct ag_rec r;
	char why[300];
	size_t i;
	int st, h;

	if (!hook_bad || !hook_delete) {
		printf("# no --hook-bad or --hook-delete: records in a wrong form not checked\n");
		return;
	}
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("SF_CASE", cases[i], 1);
		h = hook_said(hook_bad, 0, 1, why, sizeof(why));
		if (h == HOOK_NA) {
			/* Not a pass: said, with the store's reason, on a line of its own. */
			printf("n/a - a record in a wrong form (%s): %s\n", cases[i],
			       why[0] ? why : "(the hook gave no reason)");
			continue;
		}
		st = a->rec->read(a, 0, 1, 0, &r);
		tap(!h && st == RS_FAILED, "a record in a wrong form (%s): read RS_FAILED (hook %d, %s)",
		    cases[i], h, rs_name(st));
		hook(hook_delete, 0, 1);
	}
	unsetenv("SF_CASE");
}

static void legacy(struct agent *a, uint32_t w, const char *what, const char *cmd,
		   const char *opt);
static void legacy_mark(struct agent *a);
static void legacy_expired(struct agent *a);
static void engine_freed(struct agent *a, struct agent *b, uint32_t dc, uint32_t w);

static void basic(struct agent *a)
{
	const struct rec_ops *b = a->rec;
	char t1[AG_REC_MAX], t2[AG_REC_MAX], big[AG_REC_MAX + 1];
	struct ag_rec r;
	uint64_t v1 = 0, v2 = 0, v3 = 0, v4 = 0, x = 0;
	int st;
	size_t i;

	text_of(t1, sizeof(t1), "-", 1);
	text_of(t2, sizeof(t2), "contract:a", 2);

	st = b->read(a, 0, 0, 0, &r);
	tap(st == RS_ABSENT, "read of an absent record: RS_ABSENT (%s)", rs_name(st));
	st = b->cas(a, 0, 0, 0, t1, strlen(t1), 0, &v1);
	tap(st == RS_OK && v1 > 0, "cas(0) creates: RS_OK version %llu > 0 (%s)",
	    (unsigned long long)v1, rs_name(st));
	memset(&r, 0, sizeof(r));
	st = b->read(a, 0, 0, 0, &r);
	tap(st == RS_OK && r.version == v1 && same(&r, t1, strlen(t1)),
	    "read returns the very text and version %llu (%s, version %llu)",
	    (unsigned long long)v1, rs_name(st), (unsigned long long)r.version);
	st = b->cas(a, 0, 0, 0, t2, strlen(t2), 0, &x);
	tap(st == RS_MOVED, "cas(0) over a record: RS_MOVED (%s)", rs_name(st));
	st = b->cas(a, 0, 0, v1, t2, strlen(t2), 0, &v2);
	tap(st == RS_OK && v2 > v1, "cas(current %llu): RS_OK, version %llu larger (%s)",
	    (unsigned long long)v1, (unsigned long long)v2, rs_name(st));
	st = b->cas(a, 0, 0, v1, t1, strlen(t1), 0, &x);
	tap(st == RS_MOVED, "cas(stale %llu): RS_MOVED (%s)", (unsigned long long)v1, rs_name(st));
	st = b->read(a, 0, 0, 0, &r);
	tap(st == RS_OK && r.version == v2 && same(&r, t2, strlen(t2)),
	    "after the stale cas the record is unchanged (%s, version %llu)", rs_name(st),
	    (unsigned long long)r.version);
	/* A version no read or write handed out (above the current one): never committed. */
	st = b->cas(a, 0, 0, v2 + 1000, t1, strlen(t1), 0, &x);
	i = b->read(a, 0, 0, 0, &r);
	tap((st == RS_MOVED || st == RS_FAILED) && i == RS_OK && r.version == v2 &&
	    same(&r, t2, strlen(t2)),
	    "cas(%llu, never handed out): not committed, RS_MOVED or RS_FAILED (%s, version %llu)",
	    (unsigned long long)(v2 + 1000), rs_name(st), (unsigned long long)r.version);

	if (!hook_delete) {
		printf("# no --hook-delete: versions after a delete not checked\n");
	} else {
		int h = hook(hook_delete, 0, 0), st2;

		st = b->read(a, 0, 0, 0, &r);
		tap(!h && st == RS_ABSENT, "deleted by hand (hook %d): read RS_ABSENT (%s)", h,
		    rs_name(st));
		st = b->cas(a, 0, 0, 0, t1, strlen(t1), 0, &v3);
		tap(st == RS_OK && v3 > v2, "created again: version %llu above every earlier one (%llu, %llu) (%s)",
		    (unsigned long long)v3, (unsigned long long)v1, (unsigned long long)v2,
		    rs_name(st));
		st = b->cas(a, 0, 0, v1, t2, strlen(t2), 0, &x);
		st2 = b->cas(a, 0, 0, v2, t2, strlen(t2), 0, &x);
		tap(st == RS_MOVED && st2 == RS_MOVED,
		    "a delayed write naming a version of the deleted record: RS_MOVED (%s, %s)",
		    rs_name(st), rs_name(st2));
	}
	if (!v3)
		v3 = v2;

	/* The longest text, every byte value but NUL (the stores are binary-safe). */
	for (i = 0; i < AG_REC_MAX - 1; i++)
		big[i] = i < 4 ? "sf2 "[i] : (char)(1 + i % 255);
	big[AG_REC_MAX - 1] = 'z';
	st = b->cas(a, 0, 0, v3, big, AG_REC_MAX - 1, 0, &v4);
	memset(&r, 0, sizeof(r));
	i = b->read(a, 0, 0, 0, &r);
	tap(st == RS_OK && i == RS_OK && r.version == v4 && same(&r, big, AG_REC_MAX - 1),
	    "a text of AG_REC_MAX - 1 = %d bytes round-trips (%s, %s, %zu bytes back)",
	    AG_REC_MAX - 1, rs_name(st), rs_name((int)i), r.len);
	st = b->cas(a, 0, 0, v4, big, AG_REC_MAX, 0, &x);
	i = b->read(a, 0, 0, 0, &r);
	tap(st == RS_FAILED && i == RS_OK && r.version == v4,
	    "a text of AG_REC_MAX bytes: RS_FAILED, not written (%s, version %llu)", rs_name(st),
	    (unsigned long long)r.version);

	bad_records(a);
	legacy(a, 2, "1.4.0's key", hook_legacy, "--hook-legacy");
	legacy(a, 1, "a record's text on a key the store expires (1.4.0's way)", hook_legacy_record,
	       "--hook-legacy-record");
	legacy_mark(a);
	legacy_expired(a);
}

/*
 * The rolling upgrade's create (docs/lease-record.md, "1.4.0 beside it"):
 * 1.4.0's mark key of pair (0, 2) (--hook-legacy-mark writes $SF_MARK
 * there) read by legacy(); a create() over what it read fails once the
 * mark moved (a 1.4.0 holder raised it meanwhile), commits over what it
 * read again, and never over a record.
 */
static void legacy_mark(struct agent *a)
{
	const struct rec_ops *b = a->rec;
	char t1[AG_REC_MAX];
	struct ag_legacy m1, m2;
	struct ag_rec r;
	uint64_t x = 0;
	int h, h2, st, st2, st3;

	if (!hook_legacy_mark || !hook_delete || !b->legacy || !b->create) {
		printf("# no --hook-legacy-mark, or no 1.4.0 layout in this store: the upgrade's create not checked\n");
		return;
	}
	text_of(t1, sizeof(t1), "-", 1);
	hook(hook_delete, 0, 2);
	setenv("SF_MARK", "00000000000000001000", 1);
	h = hook(hook_legacy_mark, 0, 2);
	st = b->legacy(a, 0, 2, 0, &m1);
	tap(!h && st == RS_OK && m1.state == AG_LEG_MARK && m1.len == 20 &&
	    !memcmp(m1.text, "00000000000000001000", 20),
	    "1.4.0's mark read: RS_OK, its text (hook %d, %s, state %d, \"%.*s\")", h, rs_name(st),
	    m1.state, (int)m1.len, m1.text);
	setenv("SF_MARK", "00000000000000002000", 1);
	h2 = hook(hook_legacy_mark, 0, 2);
	st = b->create(a, 0, 2, &m1, t1, strlen(t1), 0, &x);
	st2 = b->read(a, 0, 2, 0, &r);
	tap(!h2 && st == RS_MOVED && st2 == RS_ABSENT,
	    "create over 1.4.0's mark that moved since it was read: RS_MOVED, nothing written (hook %d, %s, %s)",
	    h2, rs_name(st), rs_name(st2));
	st = b->legacy(a, 0, 2, 0, &m2);
	st2 = b->create(a, 0, 2, &m2, t1, strlen(t1), 0, &x);
	st3 = b->create(a, 0, 2, &m2, t1, strlen(t1), 0, &x);
	tap(st == RS_OK && st2 == RS_OK && x > 0 && st3 == RS_MOVED,
	    "create over 1.4.0's mark as read: RS_OK; again over the record: RS_MOVED (%s, %s, %s)",
	    rs_name(st), rs_name(st2), rs_name(st3));
	unsetenv("SF_MARK");
	hook(hook_delete, 0, 2);
}

/*
 * A value written at pair (0, @w)'s record name the 1.4.0 way (@what, by
 * the hook @cmd, the option @opt): read as present but never as a record
 * (the engine's parse fails: never served), and no cas replaces it.
 * Deleted after (--hook-delete).
 */
static void legacy(struct agent *a, uint32_t w, const char *what, const char *cmd,
		   const char *opt)
{
	const struct rec_ops *b = a->rec;
	char t1[AG_REC_MAX];
	struct ag_rec r, r2;
	struct ag_rec_val v;
	uint64_t x = 0;
	int h, st, st2;

	if (!cmd) {
		printf("# no %s: %s not checked\n", opt, what);
		return;
	}
	text_of(t1, sizeof(t1), "-", 1);
	h = hook(cmd, 0, w);
	memset(&r, 0, sizeof(r));
	st = b->read(a, 0, w, 0, &r);
	tap(!h && st == RS_OK && r.version && r.len < AG_REC_MAX &&
	    ag_rec_parse(r.text, r.len, a->mark_max_ms, &v) != 0,
	    "%s at the record's name: read as present, not a record (hook %d, %s, version %llu)",
	    what, h, rs_name(st), (unsigned long long)r.version);
	st = b->cas(a, 0, w, 0, t1, strlen(t1), 0, &x);
	st2 = b->cas(a, 0, w, r.version, t1, strlen(t1), 0, &x);
	memset(&r2, 0, sizeof(r2));
	b->read(a, 0, w, 0, &r2);
	tap(st == RS_MOVED && st2 == RS_MOVED && same(&r2, r.text, r.len),
	    "no cas replaces %s (cas(0) %s, cas(its version) %s; value kept)", what, rs_name(st),
	    rs_name(st2));
	if (hook_delete)	/* the pair free again for the scenarios after */
		hook(hook_delete, 0, w);
}

/*
 * Versions that never repeat, against a writer whose read came before a
 * delete by hand (ABA): @b reads pair (0, 0)'s record after two writes;
 * the record is deleted (--hook-delete) and created again by @a, and
 * @b's cas over the version it read must not commit.  @a then writes it
 * twice more, as often as before @b's read (a store whose compare names
 * a count of writes per record, ZooKeeper's data version, has that count
 * again): @b's cas still must not commit, unless the store's documented
 * limit says it does (--limit-aba WHY: then it must commit, shown as a
 * line "limit - ...", neither a pass nor a failure; if it does not, the
 * documentation says more than the store does, and that fails).
 */
static void aba(struct agent *a, struct agent *b)
{
	char t[4][AG_REC_MAX];
	struct ag_rec r;
	uint64_t v = 0, x = 0;
	int st[4], h, rs, s1, s2, i;

	if (!hook_delete) {
		printf("# no --hook-delete: a stale cas after a delete by hand not checked\n");
		return;
	}
	for (i = 0; i < 4; i++)
		text_of(t[i], sizeof(t[i]), "-", 40 + (uint64_t)i);
	hook(hook_delete, 0, 0);
	st[0] = a->rec->cas(a, 0, 0, 0, t[0], strlen(t[0]), 0, &v);
	st[1] = a->rec->cas(a, 0, 0, v, t[1], strlen(t[1]), 0, &v);
	st[2] = a->rec->cas(a, 0, 0, v, t[2], strlen(t[2]), 0, &v);
	memset(&r, 0, sizeof(r));
	rs = b->rec->read(b, 0, 0, 0, &r);
	h = hook(hook_delete, 0, 0);
	st[3] = a->rec->cas(a, 0, 0, 0, t[0], strlen(t[0]), 0, &v);
	tap(st[0] == RS_OK && st[1] == RS_OK && st[2] == RS_OK && rs == RS_OK && r.version &&
	    !h && st[3] == RS_OK && v > r.version,
	    "aba: read by another at version %llu after two writes, deleted by hand (hook %d) and created again at %llu (%s %s %s, %s, %s)",
	    (unsigned long long)r.version, h, (unsigned long long)v, rs_name(st[0]),
	    rs_name(st[1]), rs_name(st[2]), rs_name(rs), rs_name(st[3]));
	s1 = b->rec->cas(b, 0, 0, r.version, t[3], strlen(t[3]), 0, &x);
	tap(s1 == RS_MOVED, "aba: the other's stale cas over %llu after the delete: RS_MOVED (%s)",
	    (unsigned long long)r.version, rs_name(s1));
	st[1] = a->rec->cas(a, 0, 0, v, t[1], strlen(t[1]), 0, &v);
	st[2] = a->rec->cas(a, 0, 0, v, t[2], strlen(t[2]), 0, &v);
	s2 = b->rec->cas(b, 0, 0, r.version, t[3], strlen(t[3]), 0, &x);
	if (!limit_aba)
		tap(st[1] == RS_OK && st[2] == RS_OK && s2 == RS_MOVED,
		    "aba: written twice more (%s %s): the stale cas over %llu still RS_MOVED (%s)",
		    rs_name(st[1]), rs_name(st[2]), (unsigned long long)r.version, rs_name(s2));
	else if (st[1] == RS_OK && st[2] == RS_OK && s2 == RS_OK)
		printf("limit - aba: written twice more, the stale cas over %llu commits (%s): %s\n",
		       (unsigned long long)r.version, rs_name(s2), limit_aba);
	else
		tap(false, "aba: the documented limit (%s) did not show: written twice more (%s %s), the stale cas over %llu %s",
		    limit_aba, rs_name(st[1]), rs_name(st[2]), (unsigned long long)r.version,
		    rs_name(s2));
}

/*
 * A 1.4.0 key whose lease the store has ended but that it still holds
 * (MySQL: the pair's row, its expiry in the past on the server's clock):
 * read as present, never a record; created over by no cas(0); replaced by
 * a cas naming the version read (1.4.0's lease is over by 1.4.0's own
 * rule), and that cas's version is then the record's.
 */
static void legacy_expired(struct agent *a)
{
	const struct rec_ops *b = a->rec;
	char t1[AG_REC_MAX];
	struct ag_rec r, r2;
	struct ag_rec_val v;
	uint64_t x = 0, v1 = 0;
	int h, st, st2, st3;

	if (!hook_legacy_expired) {
		printf("# no --hook-legacy-expired: an expired 1.4.0 key the store keeps not checked\n");
		return;
	}
	text_of(t1, sizeof(t1), "-", 11);
	h = hook(hook_legacy_expired, 0, 2);
	memset(&r, 0, sizeof(r));
	st = b->read(a, 0, 2, 0, &r);
	tap(!h && st == RS_OK && r.version && r.len < AG_REC_MAX &&
	    ag_rec_parse(r.text, r.len, a->mark_max_ms, &v) != 0,
	    "an expired 1.4.0 key the store keeps: read as present, not a record (hook %d, %s, version %llu)",
	    h, rs_name(st), (unsigned long long)r.version);
	st = b->cas(a, 0, 2, 0, t1, strlen(t1), 0, &x);
	st2 = b->cas(a, 0, 2, r.version, t1, strlen(t1), 0, &v1);
	memset(&r2, 0, sizeof(r2));
	st3 = b->read(a, 0, 2, 0, &r2);
	tap(st == RS_MOVED && st2 == RS_OK && st3 == RS_OK && r2.version == v1 &&
	    same(&r2, t1, strlen(t1)),
	    "... cas(0) RS_MOVED (%s), cas(its version) replaces it (%s, version %llu; read back %s, version %llu)",
	    rs_name(st), rs_name(st2), (unsigned long long)v1, rs_name(st3),
	    (unsigned long long)r2.version);
	if (hook_legacy_late) {
		/* 1.4.0's holder renews late (its write by the store's own means): in vain. */
		h = hook(hook_legacy_late, 0, 2);
		memset(&r, 0, sizeof(r));
		st = b->read(a, 0, 2, 0, &r);
		tap(!h && st == RS_OK && r.version == v1 && same(&r, t1, strlen(t1)),
		    "... and a late renewal of 1.4.0's holder matches nothing: the record unchanged (hook %d, %s, version %llu)",
		    h, rs_name(st), (unsigned long long)r.version);
	}
	if (hook_delete)
		hook(hook_delete, 0, 2);
}

/*
 * The deployment guide's emergency procedure (--hook-free: the pair's
 * record freed by hand, its holder stopped): the record is free with its
 * mark, another agent takes it at once, and the old holder's renewal (had
 * it not been stopped) is lost: the version moved.
 */
static void engine_freed(struct agent *a, struct agent *b, uint32_t dc, uint32_t w)
{
	int64_t sent;
	uint64_t mark = 0, m2 = 0;
	struct ag_rec r;
	struct ag_rec_val v;
	int st, h, rs;

	if (!hook_free) {
		printf("# no --hook-free: a record freed by hand not checked\n");
		return;
	}
	st = a->st->claim(a, dc, w, &sent, &mark, 0);
	h = hook(hook_free, dc, w);
	memset(&r, 0, sizeof(r));
	rs = b->rec->read(b, dc, w, 0, &r);
	tap(st == TRY_TAKEN && !h && rs == RS_OK &&
	    !ag_rec_parse(r.text, r.len, b->mark_max_ms, &v) && ag_rec_free(&v) && v.mark == mark,
	    "engine: a held record freed by hand (claim %d, hook %d, %s: %.*s)", st, h, rs_name(rs),
	    (int)r.len, r.text);
	st = b->st->claim(b, dc, w, &sent, &m2, 0);
	tap(st == TRY_TAKEN && m2 == mark, "engine: ... taken at once by another, its mark kept (%d, %llu)",
	    st, (unsigned long long)m2);
	st = a->st->renew(a, 0, &sent, 0, &mark);
	tap(st == 0, "engine: ... and the old holder's renewal is lost (%d)", st);
	b->st->give_back(b, dc, w);
}

/*
 * The record engine (record.c) over the real backend: two agents on one
 * pair.  @a claims; @b's claim is held until it has seen the record's
 * version unchanged for ttl + margin on its own clock (a renewal of @a
 * starts the wait again), then takes it; @a's renewal is then lost; a
 * give-back frees it (owner "-") and @a takes it at once.
 */
static void engine(struct agent *a, struct agent *b)
{
	const uint32_t dc = 0, w = 3;
	const int64_t wait = (int64_t)(a->c->ttl_ms + a->c->margin_ms) * NS_PER_MS;
	int64_t sent, t_renew = 0, t_renewed = 0, t_taken = 0, start, end;
	uint64_t mark = 0, m2 = 0;
	struct ag_rec r;
	struct ag_rec_val v;
	int st, rs, held = 0, renewed = -9;

	st = a->st->init_mark(a, dc, w, 5000, false);
	tap(st == INIT_CREATED, "engine: init_mark creates a free record (%d)", st);
	st = a->st->claim(a, dc, w, &sent, &mark, 0);
	tap(st == TRY_TAKEN && mark == 5000, "engine: the first agent claims it (%d, mark %llu)", st,
	    (unsigned long long)mark);
	a->dc = dc;
	a->w = w;
	start = boot_ns();
	end = start + 3 * wait + 5000 * NS_PER_MS;
	while (boot_ns() < end) {
		int64_t t0 = boot_ns();

		st = b->st->claim(b, dc, w, &sent, &m2, 0);
		if (st != TRY_HELD) {
			t_taken = boot_ns();
			break;
		}
		held++;
		/* The holder renews once, about half way: the observer's wait starts again. */
		if (!t_renew && t0 - start > wait / 2) {
			t_renew = boot_ns();
			renewed = a->st->renew(a, 0, &sent, 0, &mark);
			t_renewed = boot_ns();
		}
		usleep(50 * 1000);
	}
	tap(renewed == 1, "engine: the holder's renewal half way commits (%d)", renewed);
	tap(st == TRY_TAKEN && held > 1 && t_renew && t_taken - t_renew >= wait,
	    "engine: the other is TRY_HELD (%d times) until it saw one version for ttl + margin = %lld ms after the renewal, then takes it (%d after %lld ms)",
	    held, (long long)(wait / NS_PER_MS), st, (long long)((t_taken - t_renew) / NS_PER_MS));
	/* (liveness, not timing: any time before the loop's end; tests assert no timing) */
	tap(st == TRY_TAKEN && t_taken < end,
	    "engine: ... and takes it at all (%lld ms after the renewal, the loop ends at %lld ms)",
	    (long long)((t_taken - t_renewed) / NS_PER_MS),
	    (long long)((end - t_renewed) / NS_PER_MS));
	tap(m2 == mark, "engine: the taker's mark is the record's (%llu, %llu)",
	    (unsigned long long)m2, (unsigned long long)mark);
	b->dc = dc;
	b->w = w;
	st = a->st->renew(a, 0, &sent, 0, &mark);
	tap(st == 0, "engine: the old holder's renewal is lost (%d)", st);
	st = b->st->give_back(b, dc, w);
	memset(&r, 0, sizeof(r));
	rs = b->rec->read(b, dc, w, 0, &r);
	tap(st == 1 && rs == RS_OK && !ag_rec_parse(r.text, r.len, b->mark_max_ms, &v) &&
	    ag_rec_free(&v), "engine: give_back frees it: owner \"-\" (%d, %s: %.*s)", st,
	    rs_name(rs), (int)r.len, r.text);
	st = a->st->claim(a, dc, w, &sent, &mark, 0);
	tap(st == TRY_TAKEN, "engine: a freed record is taken at once (%d)", st);
	st = a->st->give_back(a, dc, w);
	tap(st == 1, "engine: and given back (%d)", st);
	engine_freed(a, b, dc, w);
}

/*
 * The engine over a cas whose reply is lost after the store committed it
 * (--hook-fault: the store's next write's reply dropped): the claim is
 * TRY_UNKNOWN; the engine's give_back() finds the record ours (its nonce,
 * its owner) and frees it, and the other agent takes it at once (G6).
 */
static void engine_unknown(struct agent *a, struct agent *b)
{
	const uint32_t dc = 0, w = 3;
	int64_t sent;
	uint64_t mark = 0;
	struct ag_rec r;
	struct ag_rec_val v;
	int st, h, rs;

	if (!hook_fault || !hook_pass) {
		printf("# unknown needs --hook-fault and --hook-pass\n");
		tap(false, "unknown: hooks given");
		return;
	}
	st = a->st->init_mark(a, dc, w, 5000, false);
	tap(st == INIT_CREATED || st == INIT_PRESENT, "unknown: a free record (%d)", st);
	h = hook(hook_fault, dc, w);
	st = a->st->claim(a, dc, w, &sent, &mark, 0);
	hook(hook_pass, dc, w);
	tap(!h && st == TRY_UNKNOWN, "unknown: a claim whose reply was lost is TRY_UNKNOWN (hook %d, %d)",
	    h, st);
	memset(&r, 0, sizeof(r));
	rs = a->rec->read(a, dc, w, 0, &r);
	tap(rs == RS_OK && !ag_rec_parse(r.text, r.len, a->mark_max_ms, &v) &&
	    !strcmp(v.owner, a->owner), "unknown: it had committed: the record is the claimer's (%s)",
	    rs_name(rs));
	st = a->st->give_back(a, dc, w);
	tap(st == 1, "unknown: give_back frees it (%d)", st);
	st = b->st->claim(b, dc, w, &sent, &mark, 0);
	tap(st == TRY_TAKEN, "unknown: the other agent takes it at once (%d)", st);
	st = b->st->give_back(b, dc, w);
	tap(st == 1, "unknown: and gives it back (%d)", st);
}

static void refused(struct agent *a)
{
	char t[AG_REC_MAX];
	struct ag_rec r;
	uint64_t x = 0;
	int st;

	text_of(t, sizeof(t), "-", 7);
	st = a->rec->read(a, 0, 0, 0, &r);
	tap(st == RS_REFUSED, "refused: read answers RS_REFUSED (%s)", rs_name(st));
	st = a->rec->cas(a, 0, 0, 0, t, strlen(t), 0, &x);
	tap(st == RS_REFUSED, "refused: cas answers RS_REFUSED (%s)", rs_name(st));
}

/*
 * The store reads but does not write (@mode): a read of pair (0, @w)
 * answers, cas(0) answers @want.
 */
static void writes_fail(struct agent *a, const char *mode, uint32_t w, uint64_t n, int want)
{
	char t[AG_REC_MAX];
	struct ag_rec r;
	uint64_t x = 0;
	int st;

	text_of(t, sizeof(t), "-", n);
	st = a->rec->read(a, 0, w, 0, &r);
	tap(st == RS_ABSENT || st == RS_OK, "%s: a read still answers (%s)", mode, rs_name(st));
	st = a->rec->cas(a, 0, w, 0, t, strlen(t), 0, &x);
	tap(st == want, "%s: cas answers %s (%s)", mode, rs_name(want), rs_name(st));
}

static void unable(struct agent *a)
{
	writes_fail(a, "unable", 1, 8, RS_UNABLE);
}

/* Reads allowed, writes refused (a grant without UPDATE): a cas over a version too. */
static void refused_cas(struct agent *a)
{
	char t[AG_REC_MAX];
	uint64_t x = 0;
	int st;

	writes_fail(a, "refusedcas", 0, 9, RS_REFUSED);
	text_of(t, sizeof(t), "-", 9);
	st = a->rec->cas(a, 0, 0, 1, t, strlen(t), 0, &x);
	tap(st == RS_REFUSED, "refusedcas: cas(1) answers RS_REFUSED (%s)", rs_name(st));
}

static void masterdown(struct agent *a, const char *mode)
{
	char t[AG_REC_MAX];
	struct ag_rec r;
	uint64_t x = 0;
	int st;

	text_of(t, sizeof(t), "-", 10);
	st = a->rec->read(a, 0, 1, 0, &r);
	tap(st == RS_UNABLE, "%s: read answers RS_UNABLE (%s)", mode, rs_name(st));
	st = a->rec->cas(a, 0, 1, 0, t, strlen(t), 0, &x);
	tap(st == RS_UNABLE, "%s: cas answers RS_UNABLE (%s)", mode, rs_name(st));
}

/*
 * A store brought back to an older state (a restart from a snapshot, a
 * failover to a replica that lagged: what a store allowed to lose writes
 * does, Redis' redis-allow-non-durable): the versions written after the
 * snapshot are lost with the record, and must never be handed out again,
 * or a delayed write naming one of them lands on a record its writer
 * never read (ABA).
 */
static void restart(struct agent *a)
{
	char t[4][AG_REC_MAX], stale[AG_REC_MAX + 16];
	struct ag_rec r;
	uint64_t v[4] = { 0 }, v5 = 0, x = 0;
	int st[4], h, s5, s6, i;

	if (!hook_save || !hook_restart) {
		printf("# restart needs --hook-save and --hook-restart\n");
		tap(false, "restart: hooks given");
		return;
	}
	for (i = 0; i < 4; i++)
		text_of(t[i], sizeof(t[i]), "-", 20 + (uint64_t)i);
	st[0] = a->rec->cas(a, 0, 0, 0, t[0], strlen(t[0]), 0, &v[0]);
	st[1] = a->rec->cas(a, 0, 0, v[0], t[1], strlen(t[1]), 0, &v[1]);
	h = hook(hook_save, 0, 0);
	st[2] = a->rec->cas(a, 0, 0, v[1], t[2], strlen(t[2]), 0, &v[2]);
	st[3] = a->rec->cas(a, 0, 0, v[2], t[3], strlen(t[3]), 0, &v[3]);
	tap(!h && st[0] == RS_OK && st[1] == RS_OK && st[2] == RS_OK && st[3] == RS_OK,
	    "restart: versions %llu %llu, a snapshot (hook %d), then %llu %llu",
	    (unsigned long long)v[0], (unsigned long long)v[1], h, (unsigned long long)v[2],
	    (unsigned long long)v[3]);
	h = hook(hook_restart, 0, 0);
	memset(&r, 0, sizeof(r));
	for (i = 0; i < 50 && (s5 = a->rec->read(a, 0, 0, 0, &r)) == RS_FAILED; i++)
		usleep(100 * 1000);	/* the first call after the restart finds the old connection gone */
	/*
	 * Redis allowed to lose writes: a record written before the server's
	 * last restart is read as stale ("redis-stale " before its text: never
	 * a record to the engine, which quarantines it), as 1.4.0 read a mark
	 * of another run_id.
	 */
	snprintf(stale, sizeof(stale), "%s%s",
		 a->c->backend == AG_REDIS && a->c->redis_allow_non_durable ? "redis-stale " : "",
		 t[1]);
	tap(!h && s5 == RS_OK && r.version == v[1] && same(&r, stale, strlen(stale)),
	    "restart: the store came back with the snapshot's record, read as \"%.20s...\" (hook %d, %s, version %llu)",
	    stale, h, rs_name(s5), (unsigned long long)r.version);
	s5 = a->rec->cas(a, 0, 0, v[1], t[0], strlen(t[0]), 0, &v5);
	tap(s5 == RS_OK && v5 > v[3],
	    "restart: the next version %llu is above every one handed out before (%llu) (%s)",
	    (unsigned long long)v5, (unsigned long long)v[3], rs_name(s5));
	s6 = a->rec->cas(a, 0, 0, v[2], t[3], strlen(t[3]), 0, &x);
	tap(s6 == RS_MOVED, "restart: a delayed write naming a lost version %llu: RS_MOVED (%s)",
	    (unsigned long long)v[2], rs_name(s6));
}

/*
 * Replies that cannot be read.  A read fails; a cas never answers RS_OK,
 * and answers RS_FAILED ("not committed") only where its write is indeed
 * not in the store: what it wrote is looked for once the fault is off.
 */
static void faulty(struct agent *a)
{
	char t[AG_REC_MAX];
	struct ag_rec r;
	uint64_t x = 0, expect;
	int st, h, back;
	bool there;

	text_of(t, sizeof(t), "-", (uint64_t)getpid() << 20 | (uint64_t)(boot_ns() & 0xfffff));
	if (!hook_fault || !hook_pass) {
		printf("# faulty needs --hook-fault and --hook-pass\n");
		tap(false, "faulty: hooks given");
		return;
	}
	st = a->rec->read(a, 0, 1, 0, &r);
	h = hook(hook_fault, 0, 1);
	tap(h == 0 && (st == RS_ABSENT || st == RS_OK), "faulty: a first read answers (%s), the fault is on (%d)",
	    rs_name(st), h);
	st = a->rec->read(a, 0, 1, 0, &r);
	tap(st == RS_FAILED || (unsent_unable && st == RS_UNABLE),
	    "faulty: read answers RS_FAILED%s (%s)", unsent_unable ? " or RS_UNABLE (not sent)" : "",
	    rs_name(st));
	hook(hook_pass, 0, 1);
	st = a->rec->read(a, 0, 1, 0, &r);
	expect = st == RS_OK ? r.version : 0;	/* a write that would commit */
	h = hook(hook_fault, 0, 1);
	st = a->rec->cas(a, 0, 1, expect, t, strlen(t), 0, &x);
	tap(!h && (st == RS_FAILED || st == RS_UNKNOWN || (unsent_unable && st == RS_UNABLE)),
	    "faulty: cas answers RS_FAILED or RS_UNKNOWN%s, never RS_OK (hook %d, %s)",
	    unsent_unable ? " (or RS_UNABLE: not sent)" : "", h, rs_name(st));
	hook(hook_pass, 0, 1);
	memset(&r, 0, sizeof(r));
	back = a->rec->read(a, 0, 1, 0, &r);
	there = back == RS_OK && same(&r, t, strlen(t));
	tap((back == RS_OK || back == RS_ABSENT) && (st == RS_UNKNOWN || !there),
	    "faulty: read back once the fault is off (%s): the write is %s, and the cas said %s",
	    rs_name(back), there ? "in the store" : "not in the store", rs_name(st));
}

int main(int argc, char **argv)
{
	struct ag_conf c;
	struct agent a, b;
	const char *mode = "basic";
	char err[1024];
	int i, ret;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--unsent-unable")) {
			unsent_unable = true;
			i--;
			continue;
		}
		if (!v)
			break;
		if (!strcmp(argv[i], "--expect"))
			mode = v;
		else if (!strcmp(argv[i], "--hook-delete"))
			hook_delete = v;
		else if (!strcmp(argv[i], "--hook-legacy"))
			hook_legacy = v;
		else if (!strcmp(argv[i], "--hook-legacy-record"))
			hook_legacy_record = v;
		else if (!strcmp(argv[i], "--hook-legacy-mark"))
			hook_legacy_mark = v;
		else if (!strcmp(argv[i], "--hook-legacy-expired"))
			hook_legacy_expired = v;
		else if (!strcmp(argv[i], "--hook-free"))
			hook_free = v;
		else if (!strcmp(argv[i], "--hook-legacy-late"))
			hook_legacy_late = v;
		else if (!strcmp(argv[i], "--hook-fault"))
			hook_fault = v;
		else if (!strcmp(argv[i], "--hook-pass"))
			hook_pass = v;
		else if (!strcmp(argv[i], "--hook-bad"))
			hook_bad = v;
		else if (!strcmp(argv[i], "--hook-save"))
			hook_save = v;
		else if (!strcmp(argv[i], "--hook-restart"))
			hook_restart = v;
		else if (!strcmp(argv[i], "--limit-aba"))
			limit_aba = v;
		else
			break;
	}
	if (i >= argc || strcmp(argv[i], "--") != 0) {
		fprintf(stderr, "usage: rec_contract [--expect basic|refused|refusedcas|unable|masterdown|noschema|restart|unknown|faulty] [--hook-delete CMD] [--hook-legacy CMD] [--hook-legacy-expired CMD] [--hook-legacy-late CMD] [--hook-free CMD] [--hook-bad CMD] [--hook-legacy-record CMD] [--hook-legacy-mark CMD] [--hook-save CMD] [--hook-restart CMD] [--hook-fault CMD] [--hook-pass CMD] [--limit-aba WHY] [--unsent-unable] -- AGENT-OPTIONS...\n");
		return 2;
	}
	/* The agent's own parse: argv[i] ("--") stands where the program name does. */
	memset(&c, 0, sizeof(c));
	ret = ag_conf_load(&c, argc - i, argv + i, err, sizeof(err));
	if (!ret)
		ret = ag_conf_finish(&c, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "rec_contract: %s\n", err);
		return 2;
	}
	log_level = c.level;
	setvbuf(stderr, NULL, _IOLBF, 0);
	ret = agent_up(&a, &c);
	if (ret) {
		fprintf(stderr, "rec_contract: the backend's init failed (%d)\n", ret);
		return 2;
	}
	printf("# rec_contract %s: backend %s\n", mode, a.rec->name);
	if (!strcmp(mode, "basic")) {
		basic(&a);
		ret = agent_up(&b, &c);
		if (ret) {
			tap(false, "engine: a second agent (%d)", ret);
		} else {
			aba(&a, &b);
			engine(&a, &b);
		}
		if (!ret)
			b.st->fini(&b);
	} else if (!strcmp(mode, "refused")) {
		refused(&a);
	} else if (!strcmp(mode, "unable")) {
		unable(&a);
	} else if (!strcmp(mode, "unknown")) {
		ret = agent_up(&b, &c);
		if (ret)
			tap(false, "unknown: a second agent (%d)", ret);
		else
			engine_unknown(&a, &b);
		if (!ret)
			b.st->fini(&b);
	} else if (!strcmp(mode, "restart")) {
		restart(&a);
	} else if (!strcmp(mode, "masterdown") || !strcmp(mode, "noschema")) {
		masterdown(&a, mode);
	} else if (!strcmp(mode, "refusedcas")) {
		refused_cas(&a);
	} else if (!strcmp(mode, "faulty")) {
		faulty(&a);
	} else {
		tap(false, "unknown mode %s", mode);
	}
	a.st->fini(&a);
	ag_conf_free(&c);
	printf("1..%u\n# %u passed, %u failed\n", t_n, t_pass, t_fail);
	return t_fail ? 1 : 0;
}
