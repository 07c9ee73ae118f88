// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the Redis store's reply checks (userspace/agent/
 * redis_parse.c) on any reply.  The input is decoded into a hiredis reply
 * tree (type, integer, string, up to 4 elements, 3 levels: what hiredis's
 * reader hands the agent, which allows at most 16 elements), checked as a
 * claim or renewal script's reply, as the init script's, and (the raw
 * bytes) as an INFO reply.  What is accepted must be what the agent wrote:
 * a mark of exactly 20 digits within the layout's range, texts within the
 * reply.  Self-contained: the agent's pure sources are included, hiredis
 * only by its header (no reader, no library).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../userspace/agent/validate.c"
#include "../userspace/agent/redis_parse.c"

#define MAX_MS	3487858230208ULL	/* the default layout's last timestamp */

struct in {
	const uint8_t *p;
	size_t left;
};

static uint8_t byte(struct in *in)
{
	if (!in->left)
		return 0;
	in->left--;
	return *in->p++;
}

static redisReply *build(struct in *in, int depth)
{
	redisReply *r = calloc(1, sizeof(*r));
	size_t i, n;

	if (!r)
		abort();
	switch (byte(in) % 6) {
	case 0:
		r->type = REDIS_REPLY_STRING;
		break;
	case 1:
		r->type = depth < 3 ? REDIS_REPLY_ARRAY : REDIS_REPLY_NIL;
		break;
	case 2:
		r->type = REDIS_REPLY_INTEGER;
		for (i = 0; i < 8; i++)
			r->integer = (long long)((unsigned long long)r->integer << 8 | byte(in));
		return r;
	case 3:
		r->type = REDIS_REPLY_NIL;
		return r;
	case 4:
		r->type = REDIS_REPLY_STATUS;
		break;
	default:
		r->type = REDIS_REPLY_ERROR;
		break;
	}
	if (r->type == REDIS_REPLY_ARRAY) {
		r->elements = byte(in) % 5;
		r->element = calloc(r->elements ? r->elements : 1, sizeof(*r->element));
		if (!r->element)
			abort();
		for (i = 0; i < r->elements; i++)
			r->element[i] = build(in, depth + 1);
		return r;
	}
	if (r->type == REDIS_REPLY_NIL)
		return r;
	n = byte(in) % 40;
	if (n > in->left)
		n = in->left;
	r->str = malloc(n + 1);
	if (!r->str)
		abort();
	memcpy(r->str, in->p, n);
	r->str[n] = '\0';
	r->len = n;
	in->p += n;
	in->left -= n;
	return r;
}

static void drop(redisReply *r)
{
	size_t i;

	for (i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
		drop(r->element[i]);
	free(r->element);
	free(r->str);
	free(r);
}

/* @text, @len lie within one of @r's strings. */
static int within(const redisReply *r, const char *text, size_t len)
{
	size_t i;

	if (r->str && text >= r->str && text + len <= r->str + r->len)
		return 1;
	for (i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
		if (within(r->element[i], text, len))
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	redisReply *r = build(&in, 0);
	const char *text = NULL;
	uint64_t mark = 0;
	long long code;
	char buf[64], out[41];
	size_t len = 0;
	int k;

	switch (ag_redis_script_reply(r, MAX_MS, &code, &mark, &text, &len)) {
	case AG_RS_MARK:
		snprintf(buf, sizeof(buf), "%020llu", (unsigned long long)mark);
		if (r->type != REDIS_REPLY_STRING || r->len != 20 || memcmp(buf, r->str, 20) ||
		    mark > MAX_MS) {
			fprintf(stderr, "accepted '%s' as mark %llu\n", r->str, (unsigned long long)mark);
			abort();
		}
		break;
	case AG_RS_INVALID:
		if (!within(r, text, len))
			abort();
		break;
	case AG_RS_INT:
		if (r->type != REDIS_REPLY_INTEGER || code != r->integer)
			abort();
		break;
	case AG_RS_ODD:
		break;
	}
	text = NULL;
	k = ag_redis_init_reply(r, &text, &len);
	if (k < -1 || k > 3 || (k >= 2 && !within(r, text, len)))
		abort();
	drop(r);
	if (!ag_redis_info_field((const char *)data, size, "run_id", out, sizeof(out)) &&
	    strlen(out) >= sizeof(out))
		abort();
	return 0;
}
