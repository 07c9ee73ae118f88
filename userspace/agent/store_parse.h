/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The reply parsers of the etcd, ZooKeeper and MySQL stores, pure (no I/O,
 * no globals): what etcd.c, zookeeper.c and mysql.c read from their store
 * goes through these before the agent uses it, and the libFuzzer targets
 * of fuzz/ (etcd_reply, zookeeper_data, mysql_row) call them with any
 * bytes.  Every value is checked with validate.h's strict parsers: a
 * value not in the exact form the agent writes, or out of range, is
 * AG_VAL_INVALID, never a number read leniently.
 */
#ifndef SNOWFLAKE_AGENT_STORE_PARSE_H
#define SNOWFLAKE_AGENT_STORE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "validate.h"

/* What a read of one stored value gives. */
enum ag_val { AG_VAL_OK = 0, AG_VAL_MISSING = 1, AG_VAL_INVALID = -1 };

/* The owner's longest text (agent.h: owner[320]). */
#define AG_OWNER_MAX	319

/*
 * ZooKeeper: a mark node's @len bytes of data, "MARK" or "MARK OWNER"
 * (MARK: AG_MARK_FIXED20; OWNER: 1 to AG_OWNER_MAX printable bytes, no
 * space).  AG_VAL_OK with *@mark, and *@owner / *@owner_len (NULL, 0 when
 * there is none), or AG_VAL_INVALID.
 */
int ag_zk_mark_data(const char *data, size_t len, uint64_t max_ms, uint64_t *mark,
		    const char **owner, size_t *owner_len);

/*
 * ZooKeeper: a record node's Stat (the record design, zookeeper.c
 * ag_zk_rec_ops): its @mzxid (the engine's version), its data @version and
 * its @ephemeral_owner, as a read gave them (!@write: mzxid above 0, data
 * version 0 or above), or as a committed write answered them (@write: a
 * create when @expect is 0, else a setData over mzxid @expect at data
 * version @dv; the new mzxid above @expect, the data version 0 for a
 * create and @dv + 1 for a setData, the node not ephemeral).  AG_VAL_OK,
 * or AG_VAL_INVALID.
 */
int ag_zk_rec_stat(int64_t mzxid, int32_t version, int64_t ephemeral_owner, bool write,
		   uint64_t expect, int32_t dv);

/*
 * MySQL: a row of SELECT owner, mark (@owner, @mark: the column texts with
 * their lengths; @owner NULL for SQL NULL).  AG_VAL_OK with *@mark (mark a
 * BIGINT UNSIGNED's text, AG_MARK_PLAIN) and *@ours (the owner is exactly
 * @me), or AG_VAL_INVALID.
 */
int ag_mysql_row(const char *owner, size_t owner_len, const char *mark, size_t mark_len,
		 const char *me, uint64_t max_ms, uint64_t *mark_out, bool *ours);

#ifndef AG_NO_ETCD
#include <json-c/json.h>

/*
 * etcd's JSON gateway: 64-bit integers as strings of digits, false and 0
 * left out.  Each returns AG_VAL_OK, AG_VAL_MISSING (left out) or
 * AG_VAL_INVALID (present, but not the exact form).
 */
/* @o's @k, a string of digits (ag_parse_u64 up to @max). */
int ag_etcd_u64(struct json_object *o, const char *k, uint64_t max, uint64_t *out);
/* A Txn reply's "succeeded": *@ok (left out: false). */
int ag_etcd_succeeded(struct json_object *j, bool *ok);
/* responses[@i].response_range of a Txn reply, or NULL. */
struct json_object *ag_etcd_txn_range(struct json_object *j, size_t i);
/* The first key-value of a range response, or NULL (none). */
struct json_object *ag_etcd_range_kv(struct json_object *range);
/*
 * The mark in a key-value (NULL: missing): its base64 value decoded, then
 * AG_MARK_FIXED20.  The decoded text, shortened for a log, in @text.
 */
int ag_etcd_kv_mark(struct json_object *kv, uint64_t max_ms, uint64_t *mark, char *text,
		    size_t text_len);
/* Base64 @in to @out (at most @outlen - 1 bytes, NUL-terminated): its length, or -1. */
long ag_unb64(const char *in, size_t inlen, char *out, size_t outlen);
#endif

#endif /* SNOWFLAKE_AGENT_STORE_PARSE_H */
