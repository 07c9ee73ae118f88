// SPDX-License-Identifier: GPL-2.0
/*
 * snowflake-agent(8): the record design's lease steps (issue 40,
 * docs/lease-record.md), once for every store.  A backend (struct
 * rec_ops) reads a pair's record and compare-and-sets it on the store's
 * version; everything else is decided here: whether a record is free,
 * ours, or another's that has expired, what an unknown outcome was, what
 * a refusal means.  These steps are the store_ops agent.c drives (claim,
 * readopt, renew, give_back, init_mark), so the loop, the deadline, the
 * fence and the window stay where they are.
 *
 * Why no two holders serve a pair at once (ownership):
 *  - every write is a compare-and-set on the version read before it, and
 *    every write moves the version: of two writers that read one version,
 *    at most one commits;
 *  - a holder's validity ends ttl - margin after it sent its last
 *    committed write, on its own CLOCK_BOOTTIME (agent.c, G2);
 *  - another agent takes a held record only after seeing that very
 *    version unchanged for the holder's ttl plus its own margin on its own
 *    clock, counted from the reply that first showed it (ag_observe): that
 *    reply came after the holder's write committed, so the holder's
 *    validity ended first, at the documented rate bound, whatever any wall
 *    clock (the store's included) says.  A renewal in flight either commits
 *    first (the takeover's compare fails) or fails (the version moved).
 * Why no timestamp is stamped twice (uniqueness): the mark is a field of
 * the record, raised only by the holder's own compare-and-set; a ceiling
 * is only a mark committed so; the next holder reads the mark in the
 * record its claim replaces, at the version its claim compared: so the
 * floor it sets is above every timestamp an earlier holder could stamp.
 * A delayed raise of an earlier holder cannot land after a takeover (D1):
 * its compare names a version the takeover moved.
 *
 * An unknown outcome is resolved by reading the record back: our nonce
 * there means our write committed (G6 without a delete: agent.c's
 * give_back() of an unknown claim frees the record only where it is ours).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "agent.h"

static uint64_t rec_pair(const struct agent *a, uint32_t dc, uint32_t w)
{
	return (uint64_t)(w - a->w_lo) * (a->dc_hi - a->dc_lo + 1) + (dc - a->dc_lo);
}

static uint64_t nonce64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)boot_ns() * 6364136223846793005ULL ^ (uint64_t)getpid();
	return v;
}

/*
 * Pair (@dc, @w)'s record, parsed: RS_OK with *@v (and *@r), RS_ABSENT,
 * REC_1_4_0, or the read's failure.  A record that is not one (a digit
 * too many, an owner that is not ASCII, another program's value) is RS_OK
 * with *@invalid set, said once per quarantine (event=mark_invalid: the
 * mark it holds cannot be trusted), never served.  REC_1_4_0: a 1.4.0
 * agent's key at the record's name (an owner, not "sf2 "): the pair held
 * by 1.4.0 for as long as its store keeps that key (the store's expiry:
 * 1.4.0's rule), never taken over by a compare-and-set (no backend's
 * compare matches it: docs/lease-record.md, "1.4.0 beside it").
 */
#define REC_1_4_0	100

/* 1.4.0's owner, the whole text: LABEL:32 lowercase hex digits, no record's "sf2 " in it. */
static bool owner_1_4_0(const char *t, size_t len)
{
	size_t i;

	if (len < 34 || len > 319 || t[len - 33] != ':' || memmem(t, len, "sf2 ", 4) ||
	    !ag_owner_ok(t, len, 319))
		return false;
	for (i = len - 32; i < len; i++)
		if (!((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f')))
			return false;
	return true;
}

static int rec_get(struct agent *a, uint32_t dc, uint32_t w, int64_t deadline, struct ag_rec *r,
		   struct ag_rec_val *v, bool *invalid)
{
	int st = a->rec->read(a, dc, w, deadline, r);

	*invalid = false;
	if (st != RS_OK)
		return st;
	if (r->len >= sizeof(r->text) || r->version == 0) {
		ag_reply_invalid(a, "record version", r->text, r->len < sizeof(r->text) ? r->len : 0);
		return RS_FAILED;
	}
	if (ag_rec_parse(r->text, r->len, a->mark_max_ms, v) && owner_1_4_0(r->text, r->len)) {
		logm(AG_DEBUG, "event=held_by_1_4_0 datacenter=%u worker=%u owner=\"%.*s\": a 1.4.0 agent's key; the pair is its own until the store ends that key",
		     dc, w, (int)r->len, r->text);
		return REC_1_4_0;
	}
	if (ag_rec_parse(r->text, r->len, a->mark_max_ms, v)) {
		ag_mark_invalid(a, dc, w, r->text, r->len, "not-served");
		*invalid = true;
	}
	return RS_OK;
}

static bool rec_ours(const struct agent *a, const struct ag_rec_val *v)
{
	return !strcmp(v->owner, a->owner);
}

/*
 * One compare-and-set of pair (@dc, @w) to @v over version @expect; a
 * record created (@expect 0) where the store has 1.4.0's layout, only
 * while 1.4.0's mark key is as @leg found it (create()).
 */
static int rec_put(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect,
		   const struct ag_rec_val *v, int64_t deadline, uint64_t *version,
		   const struct ag_legacy *leg)
{
	char text[AG_REC_MAX];
	int n = ag_rec_format(v, text, sizeof(text));

	if (n < 0)
		return RS_FAILED;
	if (!expect && leg)
		return a->rec->create(a, dc, w, leg, text, (size_t)n, deadline, version);
	return a->rec->cas(a, dc, w, expect, text, (size_t)n, deadline, version);
}

/*
 * The rolling upgrade from 1.4.0 (docs/lease-record.md, "1.4.0 beside
 * it"): pair (@dc, @w) has no record; 1.4.0's mark key, read into *@leg
 * (state NONE where the store never had 1.4.0's layout).  LEG_VALID with
 * *@mark its value; LEG_MISSING (none, or stale: *@mark the stale value
 * or 0); LEG_INVALID (said: event=mark_invalid); or a TRY_* of a failed
 * read (TRY_REFUSED, TRY_ERROR).
 *
 * Why a record created over it is safe: 1.4.0's holders stamp only up to
 * a mark their store accepted in that key, and raise it only while their
 * pair key lives; create() commits only where there is no key at the
 * record's name (no 1.4.0 holder: its claim creates that key) and the
 * mark key is as read here, so the record's mark, max(this value, ...),
 * is above every timestamp a 1.4.0 holder stamped; once the record is
 * there no 1.4.0 agent can claim the pair again (its claim needs the name
 * free).
 */
enum { LEG_VALID = 100, LEG_MISSING, LEG_INVALID };

static int rec_legacy(struct agent *a, uint32_t dc, uint32_t w, struct ag_legacy *leg,
		      uint64_t *mark, const char *action)
{
	int st;

	memset(leg, 0, sizeof(*leg));
	*mark = 0;
	if (!a->rec->legacy)
		return LEG_MISSING;
	st = a->rec->legacy(a, dc, w, 0, leg);
	if (st == RS_REFUSED)
		return TRY_REFUSED;
	if (st != RS_OK || leg->len >= sizeof(leg->text))
		return TRY_ERROR;
	if (leg->state == AG_LEG_NONE)
		return LEG_MISSING;
	if (leg->state == AG_LEG_OTHER ||
	    ag_mark_parse(leg->text, leg->len, AG_MARK_FIXED20, a->mark_max_ms, mark)) {
		*mark = 0;
		ag_mark_invalid(a, dc, w, leg->text, leg->len, action);
		return LEG_INVALID;
	}
	if (leg->state == AG_LEG_STALE) {
		logm(AG_WARN, "event=mark_stale datacenter=%u worker=%u: 1.4.0's mark was written before the store last restarted (redis-allow-non-durable): treated as missing",
		     dc, w);
		return LEG_MISSING;
	}
	return LEG_VALID;
}

static void rec_migrated(uint32_t dc, uint32_t w, uint64_t from, uint64_t to)
{
	logm(AG_INFO, "event=mark_migrated datacenter=%u worker=%u mark_1_4_0=%llu mark=%llu: the pair had no record; its record is created with 1.4.0's mark (the higher of the two)",
	     dc, w, (unsigned long long)from, (unsigned long long)to);
}

/* This run's holding record, as it writes it: owner, fresh nonce, @beat, @mark. */
static void rec_mine(const struct agent *a, struct ag_rec_val *v, uint64_t beat, uint64_t mark)
{
	v->nonce = nonce64();
	v->beat = beat;
	v->ttl_ms = a->c->ttl_ms;
	v->mark = mark;
	snprintf(v->owner, sizeof(v->owner), "%s", a->owner);
}

/* @v made free (no holder), its mark kept: a give-back's, or --init-store's. */
static void rec_free(struct ag_rec_val *v)
{
	v->nonce = nonce64();
	v->ttl_ms = 0;
	snprintf(v->owner, sizeof(v->owner), "%s", AG_REC_FREE);
}

/* The claim's write itself: TRY_TAKEN, TRY_HELD (another wrote first), TRY_*. */
static int rec_take(struct agent *a, uint32_t dc, uint32_t w, uint64_t expect, uint64_t mark,
		    int64_t *sent_ns, uint64_t *mark_out, const struct ag_legacy *leg)
{
	struct ag_rec_val v;
	uint64_t ver = 0;
	int st;

	rec_mine(a, &v, 0, mark);
	*sent_ns = boot_ns();
	st = rec_put(a, dc, w, expect, &v, 0, &ver, leg);
	switch (st) {
	case RS_OK:
		a->rec_version = ver;
		a->rec_nonce = v.nonce;
		a->rec_beat = 0;
		a->rec_mark = mark;
		*mark_out = mark;
		ag_observe_clear(a->observe, rec_pair(a, dc, w));
		return TRY_TAKEN;
	case RS_MOVED:
		return TRY_HELD;
	case RS_REFUSED:
		return TRY_REFUSED;
	case RS_UNKNOWN:
		a->rec_unknown_nonce = v.nonce;
		return TRY_UNKNOWN;
	default:
		return TRY_ERROR;
	}
}

/*
 * No record: 1.4.0's mark taken over where there is one (rec_legacy()),
 * else a missing mark (quarantined by the engine, then @init_mark).
 */
static int rec_absent(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent_ns,
		      uint64_t *mark, uint64_t init_mark)
{
	struct ag_legacy leg;
	uint64_t l, m;
	int lv = rec_legacy(a, dc, w, &leg, &l, "not-served"), st;

	if (lv == LEG_INVALID && !init_mark)
		return TRY_BAD_MARK;
	if (lv == LEG_MISSING && !init_mark)
		return TRY_NO_MARK;
	if (lv != LEG_VALID && lv != LEG_MISSING && lv != LEG_INVALID)
		return lv;
	m = lv == LEG_INVALID || l < init_mark ? init_mark : l;
	st = rec_take(a, dc, w, 0, m, sent_ns, mark, a->rec->legacy ? &leg : NULL);
	if (st == TRY_TAKEN && lv == LEG_VALID)
		rec_migrated(dc, w, l, m);
	return st;
}

static int r_claim(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent_ns, uint64_t *mark,
		   uint64_t init_mark)
{
	const struct ag_conf *c = a->c;
	struct ag_rec r;
	struct ag_rec_val v;
	bool invalid;
	int64_t now, since, wait;
	uint32_t ttl;
	int st = rec_get(a, dc, w, 0, &r, &v, &invalid);

	if (st == RS_REFUSED)
		return TRY_REFUSED;
	if (st == RS_ABSENT)
		return rec_absent(a, dc, w, sent_ns, mark, init_mark);
	if (st == REC_1_4_0)
		return TRY_HELD;
	if (st != RS_OK)
		return TRY_ERROR;
	now = boot_ns();	/* the reply is in: after the write it shows committed */
	if (invalid)	/* replaced only over the very version found invalid */
		return init_mark ? rec_take(a, dc, w, r.version, init_mark, sent_ns, mark, NULL)
				 : TRY_BAD_MARK;
	/*
	 * Free; or this run's own, from a claim whose outcome was unknown and
	 * that committed after its give-back read it (never served: the pair
	 * this run served is re-adopted, agent.c acquire()): taken at once.
	 */
	if (ag_rec_free(&v) || rec_ours(a, &v))
		return rec_take(a, dc, w, r.version, v.mark, sent_ns, mark, NULL);
	/* Another's: expired only when this agent has seen it unchanged long enough. */
	ttl = v.ttl_ms > c->ttl_ms ? v.ttl_ms : c->ttl_ms;
	wait = (int64_t)(ttl + (uint32_t)c->margin_ms) * NS_PER_MS;
	since = ag_observe_seen(a->observe, rec_pair(a, dc, w), r.version, now);
	if (now - since < wait)
		return TRY_HELD;
	logm(AG_INFO, "event=record_expired datacenter=%u worker=%u owner=\"%s\" beat=%llu unchanged_ms=%lld: the holder has not renewed for its ttl and a margin on this host's clock; taking the pair over",
	     dc, w, v.owner, (unsigned long long)v.beat, (long long)((now - since) / NS_PER_MS));
	return rec_take(a, dc, w, r.version, v.mark, sent_ns, mark, NULL);
}

static int r_readopt(struct agent *a, uint32_t dc, uint32_t w, int64_t *sent_ns, uint64_t *mark)
{
	struct ag_rec r;
	struct ag_rec_val v;
	bool invalid;
	uint64_t m, ver = 0;
	int st = rec_get(a, dc, w, 0, &r, &v, &invalid);

	if (st == RS_ABSENT || st == REC_1_4_0)
		return TRY_HELD;
	if (st != RS_OK)
		return TRY_ERROR;
	if (invalid)
		return TRY_BAD_MARK;
	if (!rec_ours(a, &v))
		return TRY_HELD;
	/*
	 * Ours all along: no other owner wrote it since (its owner field
	 * would say so).  Renewed now, its mark raised to the highest this
	 * run accepted (a store that lost writes holds less).
	 */
	m = v.mark > a->mark_ms ? v.mark : a->mark_ms;
	rec_mine(a, &v, v.beat + 1, m);
	*sent_ns = boot_ns();
	st = rec_put(a, dc, w, r.version, &v, 0, &ver, NULL);
	if (st == RS_MOVED)
		return TRY_HELD;
	if (st != RS_OK)
		return TRY_ERROR;
	a->rec_version = ver;
	a->rec_nonce = v.nonce;
	a->rec_beat = v.beat;
	a->rec_mark = m;
	*mark = m;
	return TRY_TAKEN;
}

/*
 * The record held, read again (its version unknown after an unknown
 * write, or moved under a compare): 1 still ours (a->rec_* updated to
 * what the store holds, which may be lower: a store that lost writes), 0
 * another's or gone, -1 failed.
 */
static int rec_resync(struct agent *a, int64_t deadline)
{
	struct ag_rec r;
	struct ag_rec_val v;
	bool invalid;
	int st = rec_get(a, a->dc, a->w, deadline, &r, &v, &invalid);

	if (st == RS_ABSENT || st == REC_1_4_0)
		return 0;
	if (st != RS_OK)
		return -1;
	if (invalid || !rec_ours(a, &v))
		return 0;
	a->rec_version = r.version;
	a->rec_nonce = v.nonce;
	a->rec_beat = v.beat;
	a->rec_mark = v.mark;
	return 1;
}

static int r_renew(struct agent *a, int64_t deadline, int64_t *sent_ns, uint64_t raise_to,
		   uint64_t *mark)
{
	struct ag_rec_val v;
	uint64_t m, ver = 0;
	int st;

	*mark = AG_MARK_UNREAD;
	if (!a->rec_version) {
		st = rec_resync(a, deadline);
		if (st <= 0)
			return st;
	}
	m = raise_to > a->rec_mark ? raise_to : a->rec_mark;
	rec_mine(a, &v, a->rec_beat + 1, m);
	*sent_ns = boot_ns();
	st = rec_put(a, a->dc, a->w, a->rec_version, &v, deadline, &ver, NULL);
	switch (st) {
	case RS_OK:
		a->rec_version = ver;
		a->rec_nonce = v.nonce;
		a->rec_beat = v.beat;
		a->rec_mark = m;
		*mark = m;	/* what the store holds now: may be below a->mark_ms (G4) */
		return 1;
	case RS_MOVED:
		/*
		 * Moved: another's write (lost), or a store that went back (a
		 * write of ours lost: still ours, at an older version).  Read
		 * next time; not renewed now.
		 */
		a->rec_version = 0;
		st = rec_resync(a, deadline);
		return st == 0 ? 0 : -1;
	case RS_UNKNOWN:
		a->rec_version = 0;	/* read back before the next write */
		return -1;
	default:
		return -1;
	}
}

static int r_give_back(struct agent *a, uint32_t dc, uint32_t w)
{
	struct ag_rec r;
	struct ag_rec_val v;
	bool invalid;
	uint64_t ver = 0;
	int st = rec_get(a, dc, w, 0, &r, &v, &invalid);

	if (st == RS_ABSENT || st == REC_1_4_0)
		return 0;
	if (st != RS_OK)
		return -1;
	if (invalid || !rec_ours(a, &v))
		return 0;
	rec_free(&v);
	st = rec_put(a, dc, w, r.version, &v, 0, &ver, NULL);
	if (st == RS_OK) {
		if (a->dc == dc && a->w == w)
			a->rec_version = 0;
		return 1;
	}
	return -1;	/* moved (read again), failed or unknown: asked again */
}

static int r_init_mark(struct agent *a, uint32_t dc, uint32_t w, uint64_t mark,
		       bool replace_invalid)
{
	struct ag_rec r;
	struct ag_rec_val v;
	struct ag_legacy leg;
	bool invalid;
	uint64_t ver = 0, l = 0;
	int lv = LEG_MISSING;
	int st = rec_get(a, dc, w, 0, &r, &v, &invalid);

	if (st == RS_REFUSED)
		return INIT_REFUSED;
	if (st == REC_1_4_0)	/* 1.4.0's own mark is there: migrated at the claim */
		return INIT_PRESENT;
	if (st != RS_OK && st != RS_ABSENT)
		return -1;
	if (st == RS_OK && !invalid)
		return INIT_PRESENT;
	if (st == RS_OK && !replace_invalid)
		return INIT_INVALID;
	memset(&v, 0, sizeof(v));
	v.mark = mark;
	if (st == RS_ABSENT) {
		lv = rec_legacy(a, dc, w, &leg, &l, replace_invalid ? "replaced" : "left");
		if (lv == TRY_REFUSED)
			return INIT_REFUSED;
		if (lv == TRY_ERROR)
			return -1;
		if (lv == LEG_INVALID && !replace_invalid)
			return INIT_INVALID;
		if (lv != LEG_INVALID && l > mark)
			v.mark = l;
	}
	rec_free(&v);
	st = rec_put(a, dc, w, st == RS_OK ? r.version : 0, &v, 0, &ver,
		     st == RS_ABSENT && a->rec->legacy ? &leg : NULL);
	if (st == RS_OK && lv == LEG_VALID)
		rec_migrated(dc, w, l, v.mark);
	if (st == RS_OK)
		return invalid || lv == LEG_INVALID ? INIT_REPLACED : INIT_CREATED;
	return st == RS_REFUSED ? INIT_REFUSED : -1;
}

static int r_init(struct agent *a)
{
	a->observe = calloc(1, sizeof(*a->observe));
	if (!a->observe) {
		logm(AG_ERR, "out of memory");
		return AG_EXIT_RUNTIME;
	}
	return a->rec->init ? a->rec->init(a) : 0;
}

static void r_fini(struct agent *a)
{
	if (a->rec->fini)
		a->rec->fini(a);
	free(a->observe);
	a->observe = NULL;
}

static void r_describe(const struct agent *a, char *buf, size_t len)
{
	if (a->rec->describe)
		a->rec->describe(a, buf, len);
	else
		snprintf(buf, len, "%s", a->rec->name);
}

static int64_t r_claim_wait(struct agent *a)
{
	return a->rec->claim_wait ? a->rec->claim_wait(a) : 0;
}

static int r_recheck(struct agent *a, int64_t deadline)
{
	return a->rec->recheck ? a->rec->recheck(a, deadline) : 0;
}

const struct store_ops ag_record_ops = {
	.name = "record",
	.init = r_init,
	.fini = r_fini,
	.describe = r_describe,
	.claim_wait = r_claim_wait,
	.claim = r_claim,
	.readopt = r_readopt,
	.renew = r_renew,
	.give_back = r_give_back,
	.recheck = r_recheck,
	.init_mark = r_init_mark,
};

int ag_record_use(struct agent *a, const struct rec_ops *r)
{
	a->rec = r;
	a->st = &ag_record_ops;
	return 0;
}
