// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: a reply of etcd's JSON gateway as the agent's etcd
 * store reads it (userspace/agent/store_parse.c over json-c): a Txn's
 * "succeeded", its responses' ranges and key-values, the base64 mark in
 * them, and the 64-bit integers the gateway renders as strings (header
 * revision, create_revision, mod_revision, lease, count, ID, TTL).  The
 * first byte picks the layout's last ms; the rest is the reply.
 *
 * Checks: a mark is accepted only when its decoded value is exactly 20
 * digits of a value within [0, max]; an integer only when its JSON string
 * is exactly the decimal of the value (no sign, space, leading zero or
 * other type); "succeeded" only as a JSON boolean.
 */
#include <json-c/json.h>

#include "agent_fuzz.h"
#include "store_parse.h"

static void check_u64(struct json_object *o, const char *k)
{
	struct json_object *v;
	uint64_t n = 0;

	if (ag_etcd_u64(o, k, UINT64_MAX, &n) != AG_VAL_OK)
		return;
	ACHECK(json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string));
	ACHECK(is_decimal_of(json_object_get_string(v), (size_t)json_object_get_string_len(v), n, 0));
}

static void check_kv(struct json_object *kv, uint64_t max)
{
	struct json_object *v;
	char text[64], raw[128];
	uint64_t mark = 0;
	long n;

	if (!kv)
		return;
	check_u64(kv, "create_revision");
	check_u64(kv, "mod_revision");
	check_u64(kv, "lease");
	if (ag_etcd_kv_mark(kv, max, &mark, text, sizeof(text)) != AG_VAL_OK)
		return;
	ACHECK(mark <= max);
	ACHECK(json_object_object_get_ex(kv, "value", &v) && json_object_is_type(v, json_type_string));
	n = ag_unb64(json_object_get_string(v), (size_t)json_object_get_string_len(v), raw,
		     sizeof(raw));
	ACHECK(n == AG_MARK_DIGITS && is_decimal_of(raw, (size_t)n, mark, AG_MARK_DIGITS));
	ACHECK(!strcmp(text, raw));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *j, *hdr, *res;
	struct json_tokener *tok;
	uint64_t max;
	bool ok;
	size_t i;

	if (!size || size > 1 << 16)
		return 0;
	max = pick_max_ms(data[0]);
	tok = json_tokener_new();
	if (!tok)
		return 0;
	j = json_tokener_parse_ex(tok, (const char *)data + 1, (int)(size - 1));
	json_tokener_free(tok);
	if (!j)
		return 0;
	if (ag_etcd_succeeded(j, &ok) == AG_VAL_OK) {
		struct json_object *v;

		ACHECK(json_object_object_get_ex(j, "succeeded", &v) &&
		       json_object_is_type(v, json_type_boolean));
	}
	if (json_object_is_type(j, json_type_object)) {
		if (json_object_object_get_ex(j, "header", &hdr))
			check_u64(hdr, "revision");
		check_u64(j, "ID");
		check_u64(j, "TTL");
		if (json_object_object_get_ex(j, "result", &res))
			check_u64(res, "TTL");
	}
	for (i = 0; i < 3; i++) {
		struct json_object *range = ag_etcd_txn_range(j, i);

		if (!range)
			continue;
		check_u64(range, "count");
		check_kv(ag_etcd_range_kv(range), max);
	}
	json_object_put(j);
	return 0;
}
