/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a store returns is input: the strict parsers every backend runs a
 * stored value through before the agent uses it.  Pure (no I/O, no
 * globals), so the same file builds into the agent, its unit tests and the
 * libFuzzer targets of fuzz/.
 *
 * The rule: a value is accepted only in the exact form the agent writes it
 * and within range; anything else is *invalid*, never a number read
 * leniently (strtoull() reads "-1" as 2^64-1 and "1000x" as 1000).  An
 * invalid mark is treated like a missing one (the quarantine applies); it
 * never widens a window.
 */
#ifndef SNOWFLAKE_AGENT_VALIDATE_H
#define SNOWFLAKE_AGENT_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The mark's text in Redis, etcd and ZooKeeper: exactly this many digits. */
#define AG_MARK_DIGITS	20

/* How a mark was stored. */
enum ag_mark_form {
	/* Exactly AG_MARK_DIGITS decimal digits (MARK_FMT): Redis, etcd, ZooKeeper. */
	AG_MARK_FIXED20,
	/* A decimal with no sign and no leading zero ("0" alone): MySQL's BIGINT UNSIGNED. */
	AG_MARK_PLAIN,
};

/*
 * Parse the mark in the @len bytes at @s (not NUL-terminated necessarily)
 * in @form.  Accepted only when the value is within [0, @max_ms] (@max_ms:
 * the last Unix ms the device's layout can stamp, ag_layout_max_ms(); 0 is
 * what --init-store writes by default: nothing stamped yet).
 * 0 with *@out set, or -1 (invalid; *@out untouched).
 */
int ag_mark_parse(const char *s, size_t len, enum ag_mark_form form, uint64_t max_ms,
		  uint64_t *out);

/*
 * The owner's one definition: 1 to @max bytes at @s, each printable ASCII
 * (0x20-0x7e).  What the agent writes into a store (LABEL:RANDOM) and what
 * it accepts reading back: --owner (and a host name used as the label)
 * is checked with it where it is configured, the stores' parsers
 * (store_parse.c) with it where it is read.  true when valid.
 */
bool ag_owner_ok(const char *s, size_t len, size_t max);

/*
 * An unsigned decimal as a store renders a number (lease ids, revisions,
 * versions, row counts, session ids): 1 to 20 digits, no sign, no leading
 * zero unless "0", no space, within [0, @max].  0 or -1.
 */
int ag_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out);

/*
 * The last Unix ms a layout can stamp: @epoch_ms + (2^@ts_bits - 1) *
 * @unit_ms, or UINT64_MAX - 1 where that does not fit.  Never 0.
 */
uint64_t ag_layout_max_ms(uint64_t epoch_ms, unsigned int ts_bits, uint64_t unit_ms);

/*
 * @s (@len bytes) for a log line: at most @out_len - 1 bytes, bytes
 * outside printable ASCII as '?', "..." and the length when cut.
 */
void ag_shorten(const char *s, size_t len, char *out, size_t out_len);

/*
 * The mark quarantine, per pair: when each pair's mark was first seen
 * missing or invalid, in a table of fixed size (bounded memory whatever
 * the pool).  A pair is looked for in AG_QUARANTINE_PROBE slots from its
 * hash; when all are taken, the entry seen missing most recently is
 * dropped (its quarantine starts again: later, never sooner).
 */
#define AG_QUARANTINE_SLOTS	4096
#define AG_QUARANTINE_PROBE	16

/* A slot of the quarantine's table and of the observer's (struct ag_observe). */
struct ag_slot {
	uint64_t pair;		/* the pair's index in the pool */
	int64_t since;		/* first seen so (ns; 0: a free slot) */
	int64_t last;		/* the quarantine: last seen missing */
	uint64_t version;	/* the observer: the record's version seen since @since */
};

struct ag_quarantine {
	struct ag_slot e[AG_QUARANTINE_SLOTS];
};

/*
 * Pair @pair's mark is missing (or invalid) at @now (> 0): when it was
 * first seen so, without a gap longer than @gap_ns between two sightings
 * (after such a gap, or for a new pair, @now).
 */
int64_t ag_quarantine_seen(struct ag_quarantine *q, uint64_t pair, int64_t now, int64_t gap_ns);
/* When pair @pair's quarantine started (0: it is not in one). */
int64_t ag_quarantine_since(const struct ag_quarantine *q, uint64_t pair);
/* Pair @pair's mark was seen present, or its key held: forget it. */
void ag_quarantine_clear(struct ag_quarantine *q, uint64_t pair);

/*
 * The pair's record (issue 40, docs/lease-record.md): one per pair, its
 * text in every store
 *
 *   sf2 nonce=HEX16 beat=N ttl=MS mark=DIGITS20 owner=OWNER
 *
 * owner last (an owner may hold spaces: ag_owner_ok()), "-" when free.
 * Written only by compare-and-set on the store's version of it.
 */
#define AG_REC_MAX	512	/* the longest text (an owner of 319 bytes fits) */
#define AG_REC_FREE	"-"

struct ag_rec_val {
	uint64_t nonce;		/* drawn by its writer for that write */
	uint64_t beat;		/* the holder's renewals since its claim */
	uint32_t ttl_ms;	/* the holder's lease duration (0 when free) */
	uint64_t mark;		/* the pair's timestamp mark (G4) */
	char owner[320];	/* AG_REC_FREE, or the holder's owner */
};

/*
 * Parse the @len bytes at @s as a record whose mark is at most @max_ms.
 * 0 with *@out set; -1 invalid (*@out untouched): anything but the exact
 * form ag_rec_format() writes (a digit too many, a field missing or out of
 * order, an owner ag_owner_ok() refuses, a ttl above 2^31 - 1).
 */
int ag_rec_parse(const char *s, size_t len, uint64_t max_ms, struct ag_rec_val *out);
/* @v as text in @buf (AG_REC_MAX bytes): its length, or -1 when it does not fit. */
int ag_rec_format(const struct ag_rec_val *v, char *buf, size_t len);
/* Whether @v is free (no holder). */
bool ag_rec_free(const struct ag_rec_val *v);
/*
 * A value at a record's name whose text begins as a record's ("sf2 ") but
 * that is not one (1.4.0's way: bound to a store lease, an ephemeral node;
 * no agent writes one): @tag ("zk-ephemeral=0x1f ") put before the @*len
 * bytes of @text (a buffer of @size bytes, NUL-terminated after), their
 * end cut where both do not fit, so that the engine never parses it as a
 * record.  Nothing done to any other text, or when @tag alone does not fit.
 */
void ag_rec_tag(char *text, size_t *len, size_t size, const char *tag);

/*
 * Expiry on the observer's clock (the engine's claim of a pair held by
 * another): per pair, the store's version of its record as this agent
 * last saw it and since when, in a table of fixed size (the same probing
 * as the quarantine's; when full, the newest observation is dropped: a
 * wait starts again, later, never sooner).
 */
struct ag_observe {
	struct ag_slot e[AG_QUARANTINE_SLOTS];	/* since: the reply that first showed version */
};

/*
 * Pair @pair's record was read at version @version, the reply in at
 * @now (> 0): since when this agent has seen that very version without a
 * change (@now when it is new, or another than the one seen before).
 */
int64_t ag_observe_seen(struct ag_observe *o, uint64_t pair, uint64_t version, int64_t now);
/* Forget pair @pair (claimed, or seen free). */
void ag_observe_clear(struct ag_observe *o, uint64_t pair);

#endif /* SNOWFLAKE_AGENT_VALIDATE_H */
