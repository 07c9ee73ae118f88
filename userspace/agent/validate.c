// SPDX-License-Identifier: GPL-2.0
/*
 * The strict parsers of validate.h: what a store returns is input.  Pure:
 * built into the agent, userspace/tests/agent_validate_test.c and the
 * libFuzzer targets of fuzz/.
 */
#include <stdio.h>
#include <string.h>

#include "validate.h"

/* @len digits at @s as a number; -1 if one is not a digit or it overflows. */
static int digits(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len)
		return -1;
	for (i = 0; i < len; i++) {
		unsigned int d;

		if (s[i] < '0' || s[i] > '9')
			return -1;
		d = (unsigned int)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int ag_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (!s || !len || len > 20 || (len > 1 && s[0] == '0'))
		return -1;
	if (digits(s, len, &v) || v > max)
		return -1;
	*out = v;
	return 0;
}

int ag_mark_parse(const char *s, size_t len, enum ag_mark_form form, uint64_t max_ms,
		  uint64_t *out)
{
	uint64_t v;

	if (!s)
		return -1;
	switch (form) {
	case AG_MARK_FIXED20:
		if (len != AG_MARK_DIGITS || digits(s, len, &v))
			return -1;
		break;
	case AG_MARK_PLAIN:
		if (ag_parse_u64(s, len, UINT64_MAX, &v))
			return -1;
		break;
	default:
		return -1;
	}
	if (v > max_ms)
		return -1;
	*out = v;
	return 0;
}

uint64_t ag_layout_max_ms(uint64_t epoch_ms, unsigned int ts_bits, uint64_t unit_ms)
{
	uint64_t ticks, span;

	if (ts_bits == 0 || ts_bits >= 64 || unit_ms == 0)
		return UINT64_MAX - 1;
	ticks = (1ULL << ts_bits) - 1;
	if (ticks > (UINT64_MAX - 1) / unit_ms)
		return UINT64_MAX - 1;
	span = ticks * unit_ms;
	if (span > UINT64_MAX - 1 - epoch_ms)
		return UINT64_MAX - 1;
	return (epoch_ms + span) ? (epoch_ms + span) : 1;
}

void ag_shorten(const char *s, size_t len, char *out, size_t out_len)
{
	size_t i, n, room;
	char tail[32];

	if (!out_len)
		return;
	if (!s)
		len = 0;
	room = out_len - 1;
	n = len;
	tail[0] = '\0';
	if (len > room) {
		snprintf(tail, sizeof(tail), "...(%zu bytes)", len);
		n = room > strlen(tail) ? room - strlen(tail) : 0;
	}
	for (i = 0; i < n; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[n] = '\0';
	if (tail[0])
		snprintf(out + n, out_len - n, "%s", tail);
}

static size_t q_slot(uint64_t pair, unsigned int i)
{
	/* A 64-bit mix (splitmix64's finaliser), then linear probing. */
	pair ^= pair >> 30;
	pair *= 0xbf58476d1ce4e5b9ULL;
	pair ^= pair >> 27;
	pair *= 0x94d049bb133111ebULL;
	pair ^= pair >> 31;
	return (size_t)((pair + i) % AG_QUARANTINE_SLOTS);
}

/* Pair @pair's slot in the table @e, or NULL. */
static struct ag_slot *slot_find(struct ag_slot *e, uint64_t pair)
{
	unsigned int i;

	for (i = 0; i < AG_QUARANTINE_PROBE; i++) {
		size_t s = q_slot(pair, i);

		if (e[s].since && e[s].pair == pair)
			return &e[s];
	}
	return NULL;
}

/*
 * A slot for pair @pair, first seen so at @now: a free one, or, when all
 * its probes are taken, the one whose entry started last (dropped: its
 * quarantine or its wait starts again, later, never sooner).
 */
static struct ag_slot *slot_take(struct ag_slot *e, uint64_t pair, int64_t now)
{
	size_t s, pick = SIZE_MAX;
	unsigned int i;

	for (i = 0; i < AG_QUARANTINE_PROBE; i++) {
		s = q_slot(pair, i);
		if (!e[s].since) {
			pick = s;
			break;
		}
		if (pick == SIZE_MAX || e[s].since > e[pick].since)
			pick = s;
	}
	memset(&e[pick], 0, sizeof(e[pick]));
	e[pick].pair = pair;
	e[pick].since = now;
	return &e[pick];
}

static void slot_clear(struct ag_slot *e, uint64_t pair)
{
	struct ag_slot *x = slot_find(e, pair);

	if (x)
		x->since = 0;
}

int64_t ag_quarantine_seen(struct ag_quarantine *q, uint64_t pair, int64_t now, int64_t gap_ns)
{
	struct ag_slot *x = slot_find(q->e, pair);

	if (!x)
		x = slot_take(q->e, pair, now);
	else if (now - x->last > gap_ns || now < x->since)
		x->since = now;
	x->last = now;
	return x->since;
}

int64_t ag_quarantine_since(const struct ag_quarantine *q, uint64_t pair)
{
	const struct ag_slot *x = slot_find((struct ag_slot *)q->e, pair);

	return x ? x->since : 0;
}

void ag_quarantine_clear(struct ag_quarantine *q, uint64_t pair)
{
	slot_clear(q->e, pair);
}

bool ag_owner_ok(const char *s, size_t len, size_t max)
{
	size_t i;

	if (!s || !len || len > max)
		return false;
	for (i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] >= 0x7f)
			return false;
	return true;
}

/* "NAME=" at @*p (within @end): past it, or NULL. */
static const char *rec_field(const char *p, const char *end, const char *name)
{
	size_t n = strlen(name);

	if ((size_t)(end - p) < n + 1 || memcmp(p, name, n) != 0 || p[n] != '=')
		return NULL;
	return p + n + 1;
}

/* The digits (or hex) at @p up to the next space: its end, or NULL. */
static const char *rec_token(const char *p, const char *end)
{
	while (p < end && *p != ' ')
		p++;
	return p < end ? p : NULL;
}

static bool rec_hex16(const char *s, const char *e, uint64_t *out)
{
	uint64_t v = 0;
	const char *p;

	if (e - s != 16)
		return false;
	for (p = s; p < e; p++) {
		if (*p >= '0' && *p <= '9')
			v = v << 4 | (uint64_t)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			v = v << 4 | (uint64_t)(*p - 'a' + 10);
		else
			return false;
	}
	*out = v;
	return true;
}

int ag_rec_parse(const char *s, size_t len, uint64_t max_ms, struct ag_rec_val *out)
{
	const char *p, *end, *e;
	struct ag_rec_val v;
	uint64_t n;
	size_t olen;

	if (!s || len < 4 || memcmp(s, "sf2 ", 4) != 0)
		return -1;
	p = s;
	end = s + len;
	p += 4;
	if (!(p = rec_field(p, end, "nonce")) || !(e = rec_token(p, end)) ||
	    !rec_hex16(p, e, &v.nonce))
		return -1;
	if (!(p = rec_field(e + 1, end, "beat")) || !(e = rec_token(p, end)) ||
	    ag_parse_u64(p, (size_t)(e - p), UINT64_MAX, &v.beat))
		return -1;
	if (!(p = rec_field(e + 1, end, "ttl")) || !(e = rec_token(p, end)) ||
	    ag_parse_u64(p, (size_t)(e - p), 0x7fffffff, &n))
		return -1;
	v.ttl_ms = (uint32_t)n;
	if (!(p = rec_field(e + 1, end, "mark")) || !(e = rec_token(p, end)) ||
	    ag_mark_parse(p, (size_t)(e - p), AG_MARK_FIXED20, max_ms, &v.mark))
		return -1;
	if (!(p = rec_field(e + 1, end, "owner")))
		return -1;
	olen = (size_t)(end - p);
	if (!ag_owner_ok(p, olen, sizeof(v.owner) - 1))
		return -1;
	memcpy(v.owner, p, olen);
	v.owner[olen] = '\0';
	/* free: no holder, so no ttl */
	if (!strcmp(v.owner, AG_REC_FREE) && v.ttl_ms)
		return -1;
	*out = v;
	return 0;
}

int ag_rec_format(const struct ag_rec_val *v, char *buf, size_t len)
{
	int n = snprintf(buf, len, "sf2 nonce=%016llx beat=%llu ttl=%u mark=%020llu owner=%s",
			 (unsigned long long)v->nonce, (unsigned long long)v->beat, v->ttl_ms,
			 (unsigned long long)v->mark, v->owner);

	return n < 0 || (size_t)n >= len ? -1 : n;
}

bool ag_rec_free(const struct ag_rec_val *v)
{
	return !strcmp(v->owner, AG_REC_FREE);
}

void ag_rec_tag(char *text, size_t *len, size_t size, const char *tag)
{
	size_t tl = strlen(tag), keep;

	if (*len < 4 || memcmp(text, "sf2 ", 4) != 0 || tl >= size)
		return;
	keep = *len + tl < size ? *len : size - 1 - tl;
	memmove(text + tl, text, keep);
	memcpy(text, tag, tl);
	*len = keep + tl;
	text[*len] = '\0';
}

int64_t ag_observe_seen(struct ag_observe *o, uint64_t pair, uint64_t version, int64_t now)
{
	struct ag_slot *x = slot_find(o->e, pair);

	if (!x)
		x = slot_take(o->e, pair, now);
	else if (x->version != version || now < x->since)
		x->since = now;
	x->version = version;
	return x->since;
}

void ag_observe_clear(struct ag_observe *o, uint64_t pair)
{
	slot_clear(o->e, pair);
}
