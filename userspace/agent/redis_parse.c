// SPDX-License-Identifier: GPL-2.0
/*
 * The Redis store's reply checks of redis_parse.h: pure, built into the
 * agent and the libFuzzer target fuzz/redis_reply_fuzz.c.
 */
#include <string.h>

#include "redis_parse.h"

enum ag_redis_kind ag_redis_script_reply(const redisReply *r, uint64_t max_ms, long long *code,
					 uint64_t *mark, const char **text, size_t *text_len)
{
	if (!r)
		return AG_RS_ODD;
	if (r->type == REDIS_REPLY_INTEGER) {
		*code = r->integer;
		return AG_RS_INT;
	}
	if (r->type == REDIS_REPLY_STRING)
		return ag_mark_parse(r->str, r->len, AG_MARK_FIXED20, max_ms, mark) ? AG_RS_ODD :
										      AG_RS_MARK;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0] &&
	    r->element[0]->type == REDIS_REPLY_STRING) {
		*text = r->element[0]->str;
		*text_len = r->element[0]->len;
		return AG_RS_INVALID;
	}
	return AG_RS_ODD;
}

int ag_redis_init_reply(const redisReply *r, const char **text, size_t *text_len)
{
	const redisReply *t;
	long long code;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->elements > 2 ||
	    !r->element[0] || r->element[0]->type != REDIS_REPLY_INTEGER)
		return -1;
	code = r->element[0]->integer;
	t = r->elements == 2 ? r->element[1] : NULL;
	if ((code == 0 || code == 1) && !t)
		return (int)code;
	if ((code == 2 || code == 3) && t && t->type == REDIS_REPLY_STRING) {
		*text = t->str;
		*text_len = t->len;
		return (int)code;
	}
	return -1;
}

int ag_redis_info_field(const char *info, size_t len, const char *name, char *out,
			size_t out_len)
{
	size_t n = strlen(name), i = 0;

	while (i < len) {
		const char *line = info + i, *end = memchr(line, '\n', len - i);
		size_t ll;

		if (!end)
			end = info + len;
		i = (size_t)(end - info) + 1;
		if (end > line && end[-1] == '\r')
			end--;
		ll = (size_t)(end - line);
		if (ll <= n || memcmp(line, name, n) != 0 || line[n] != ':')
			continue;
		ll -= n + 1;
		if (ll >= out_len || memchr(line + n + 1, '\0', ll))
			return -1;
		memcpy(out, line + n + 1, ll);
		out[ll] = '\0';
		return 0;
	}
	return -1;
}
