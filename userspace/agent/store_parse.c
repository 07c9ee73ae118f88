// SPDX-License-Identifier: GPL-2.0
/*
 * The pure reply parsers of the etcd, ZooKeeper and MySQL stores
 * (store_parse.h): built into the agent and into the libFuzzer targets of
 * fuzz/.  What a store returns is input: checked here, strictly.
 */
#include <string.h>

#include "store_parse.h"

/* 1 to AG_OWNER_MAX bytes, each printable ASCII (what the agent writes): validate.h. */
static bool owner_ok(const char *s, size_t len)
{
	return ag_owner_ok(s, len, AG_OWNER_MAX);
}

int ag_zk_mark_data(const char *data, size_t len, uint64_t max_ms, uint64_t *mark,
		    const char **owner, size_t *owner_len)
{
	uint64_t v;

	if (!data || len < AG_MARK_DIGITS)
		return AG_VAL_INVALID;
	if (ag_mark_parse(data, AG_MARK_DIGITS, AG_MARK_FIXED20, max_ms, &v))
		return AG_VAL_INVALID;
	if (len == AG_MARK_DIGITS) {
		*owner = NULL;
		*owner_len = 0;
	} else if (data[AG_MARK_DIGITS] == ' ' &&
		   owner_ok(data + AG_MARK_DIGITS + 1, len - AG_MARK_DIGITS - 1)) {
		*owner = data + AG_MARK_DIGITS + 1;
		*owner_len = len - AG_MARK_DIGITS - 1;
	} else {
		return AG_VAL_INVALID;
	}
	*mark = v;
	return AG_VAL_OK;
}

int ag_mysql_row(const char *owner, size_t owner_len, const char *mark, size_t mark_len,
		 const char *me, uint64_t max_ms, uint64_t *mark_out, bool *ours)
{
	uint64_t v;

	if (!mark || ag_mark_parse(mark, mark_len, AG_MARK_PLAIN, max_ms, &v))
		return AG_VAL_INVALID;
	/* The owner column: '' (never held, or cleared) or an owner as written. */
	if (owner && owner_len && !owner_ok(owner, owner_len))
		return AG_VAL_INVALID;
	*ours = owner && me && owner_len == strlen(me) && !memcmp(owner, me, owner_len);
	*mark_out = v;
	return AG_VAL_OK;
}

int ag_zk_rec_stat(int64_t mzxid, int32_t version, int64_t ephemeral_owner, bool write,
		   uint64_t expect, int32_t dv)
{
	if (mzxid <= 0 || version < 0)
		return AG_VAL_INVALID;
	if (!write)
		return AG_VAL_OK;
	if ((uint64_t)mzxid <= expect || ephemeral_owner ||
	    (int64_t)version != (expect ? (int64_t)dv + 1 : 0))
		return AG_VAL_INVALID;
	return AG_VAL_OK;
}

#ifndef AG_NO_ETCD
int ag_etcd_u64(struct json_object *o, const char *k, uint64_t max, uint64_t *out)
{
	struct json_object *v;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, k, &v) || !v)
		return AG_VAL_MISSING;
	if (!json_object_is_type(v, json_type_string) ||
	    ag_parse_u64(json_object_get_string(v), (size_t)json_object_get_string_len(v), max,
			 out))
		return AG_VAL_INVALID;
	return AG_VAL_OK;
}

int ag_etcd_succeeded(struct json_object *j, bool *ok)
{
	struct json_object *v;

	*ok = false;
	if (!j || !json_object_is_type(j, json_type_object))
		return AG_VAL_INVALID;
	if (!json_object_object_get_ex(j, "succeeded", &v) || !v)
		return AG_VAL_MISSING;
	if (!json_object_is_type(v, json_type_boolean))
		return AG_VAL_INVALID;
	*ok = json_object_get_boolean(v);
	return AG_VAL_OK;
}

struct json_object *ag_etcd_txn_range(struct json_object *j, size_t i)
{
	struct json_object *res, *r;

	if (!j || !json_object_is_type(j, json_type_object) ||
	    !json_object_object_get_ex(j, "responses", &res) ||
	    !json_object_is_type(res, json_type_array) || json_object_array_length(res) <= i)
		return NULL;
	r = json_object_array_get_idx(res, i);
	if (!r || !json_object_is_type(r, json_type_object) ||
	    !json_object_object_get_ex(r, "response_range", &r) ||
	    !json_object_is_type(r, json_type_object))
		return NULL;
	return r;
}

struct json_object *ag_etcd_range_kv(struct json_object *range)
{
	struct json_object *kvs, *kv;

	if (!range || !json_object_object_get_ex(range, "kvs", &kvs) ||
	    !json_object_is_type(kvs, json_type_array) || !json_object_array_length(kvs))
		return NULL;
	kv = json_object_array_get_idx(kvs, 0);
	return kv && json_object_is_type(kv, json_type_object) ? kv : NULL;
}

long ag_unb64(const char *in, size_t inlen, char *out, size_t outlen)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned int acc = 0, bits = 0;
	size_t i, o = 0;

	if (!outlen)
		return -1;
	for (i = 0; i < inlen && in[i] != '='; i++) {
		const char *p = in[i] ? strchr(t, in[i]) : NULL;

		if (!p)
			return -1;
		acc = (acc << 6 | (unsigned int)(p - t)) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o + 1 >= outlen)
				return -1;
			out[o++] = (char)(acc >> bits & 0xff);
		}
	}
	/* Only padding may follow. */
	for (; i < inlen; i++)
		if (in[i] != '=')
			return -1;
	out[o] = '\0';
	return (long)o;
}

int ag_etcd_kv_mark(struct json_object *kv, uint64_t max_ms, uint64_t *mark, char *text,
		    size_t text_len)
{
	struct json_object *v;
	char buf[128];
	long n = -1;

	if (text_len)
		text[0] = '\0';
	if (!kv)
		return AG_VAL_MISSING;
	/* A key that exists with an empty value: the gateway leaves "value" out. */
	if (!json_object_object_get_ex(kv, "value", &v) || !v) {
		n = 0;
	} else if (json_object_is_type(v, json_type_string)) {
		n = ag_unb64(json_object_get_string(v), (size_t)json_object_get_string_len(v), buf,
			     sizeof(buf));
		if (n < 0 && text_len)
			ag_shorten(json_object_get_string(v), (size_t)json_object_get_string_len(v),
				   text, text_len);
	}
	if (n < 0)
		return AG_VAL_INVALID;
	if (text_len)
		ag_shorten(buf, (size_t)n, text, text_len);
	if (ag_mark_parse(buf, (size_t)n, AG_MARK_FIXED20, max_ms, mark))
		return AG_VAL_INVALID;
	return AG_VAL_OK;
}
#endif /* AG_NO_ETCD */
